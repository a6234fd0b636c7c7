//! SPIR-V → shrew IR, the way Mesa's `spirv_to_nir` turns SPIR-V into NIR.
//!
//! `rspirv` parses the binary into a flat list of instructions, each remembered with its word
//! offset so every error can name the instruction and where it is. [`validate`] checks the
//! structure the translator relies on (ids, layout, decorations, types of every operand,
//! structured control flow) the way `spirv-val` does, [`module`]
//! then reads the module-level sections (types, constants, decorations, names, global variables, entry points)
//! into tables, and [`function`] translates each function reachable from the entry point:
//!
//! - SPIR-V blocks become IR blocks one to one; `OpSelectionMerge`/`OpLoopMerge` become the IR's
//!   structure annotations; `OpSwitch` becomes a flat sequence of selections, one per case
//!   target in fall-through order, inside a loop that runs once when a break is nested in a
//!   construct of its case ([`switch`]).
//! - Scalars and vectors are IR values. Composites (structs, arrays, matrices) are trees of IR
//!   values ([`function::Val`]); matrices are arrays of column vectors, in memory too, with the
//!   `MatrixStride` of their member decoration as the array stride.
//! - Pointers are IR deref chains. Built-in inputs become system-value intrinsics, and output
//!   blocks whose members are built-ins (`gl_PerVertex`) are split into one variable per member.
//! - Functions become IR functions. Scalar and vector parameters are IR parameters; pointer and
//!   composite parameters go through one variable per parameter, copied in before the call and
//!   (for pointers) out after it — GLSL's own copy-in/copy-out semantics, which is what glslang's
//!   temporaries already do. Composite results go through one variable per function.
//! - Module-level constants are materialised on first use in a block at the top of each function,
//!   which then jumps to the function's first SPIR-V block.
//!
//! The result is checked by the IR verifier; a module that translates into invalid IR is an
//! error, never silently wrong code. Anything unsupported is an error naming the instruction.

mod alu;
mod function;
mod glsl450;
mod image;
mod memory;
mod module;
pub mod mutate;
mod opaque;
mod subgroup;
mod switch;
mod types;
mod validate;

use rspirv::binary::{Consumer, ParseAction};
use rspirv::dr;
use rspirv::spirv;
use shrew_engine::ir::{Mode, Shader, Stage, Type};
use std::collections::{HashMap, HashSet};

/// Why a SPIR-V module could not be translated.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}{kind}: {message}", location(.offset, .opcode))]
pub struct SpirvError {
    /// Word offset of the instruction in the module, when the error is about one.
    pub offset: Option<usize>,
    /// The instruction's opcode name (`OpFAdd`).
    pub opcode: Option<String>,
    pub kind: ErrorKind,
    pub message: String,
}

fn location(offset: &Option<usize>, opcode: &Option<String>) -> String {
    match (offset, opcode) {
        (Some(o), Some(op)) => format!("word {o} ({op}): "),
        (Some(o), None) => format!("word {o}: "),
        (None, Some(op)) => format!("{op}: "),
        (None, None) => String::new(),
    }
}

/// What kind of problem a [`SpirvError`] is.
#[derive(Copy, Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ErrorKind {
    /// Not a valid SPIR-V module (or not one the translator can make sense of).
    #[error("malformed SPIR-V")]
    Malformed,
    /// Valid SPIR-V using something the translator or the IR does not support.
    #[error("unsupported")]
    Unsupported,
    /// The translated IR fails the verifier: a translator defect on this input.
    #[error("invalid translation")]
    Invalid,
}

impl SpirvError {
    pub(crate) fn malformed(message: impl Into<String>) -> SpirvError {
        SpirvError {
            offset: None,
            opcode: None,
            kind: ErrorKind::Malformed,
            message: message.into(),
        }
    }

    pub(crate) fn unsupported(message: impl Into<String>) -> SpirvError {
        SpirvError {
            kind: ErrorKind::Unsupported,
            ..SpirvError::malformed(message)
        }
    }

    /// Attaches an instruction, unless the error already names one.
    pub(crate) fn at(mut self, inst: &Inst) -> SpirvError {
        if self.offset.is_none() {
            self.offset = Some(inst.offset);
            self.opcode = Some(format!("Op{}", inst.inst.class.opname));
        }
        self
    }
}

pub(crate) type Result<T> = std::result::Result<T, SpirvError>;

/// One instruction of the module with its word offset.
#[derive(Clone, Debug)]
pub(crate) struct Inst {
    pub offset: usize,
    pub inst: dr::Instruction,
}

/// Options of a translation.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// The entry point to translate (by name); the first one when `None`.
    pub entry_point: Option<String>,
}

/// Translates a SPIR-V module given as bytes (either endianness).
pub fn translate_bytes(bytes: &[u8], options: &Options) -> std::result::Result<Shader, SpirvError> {
    if !bytes.len().is_multiple_of(4) {
        return Err(SpirvError::malformed(format!(
            "{} bytes is not a whole number of 32-bit words",
            bytes.len()
        )));
    }
    let mut words: Vec<u32> = bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    if words.first().map(|w| w.swap_bytes()) == Some(rspirv::spirv::MAGIC_NUMBER) {
        words.iter_mut().for_each(|w| *w = w.swap_bytes());
    }
    translate(&words, options)
}

/// Translates a SPIR-V module into a verified shader.
pub fn translate(words: &[u32], options: &Options) -> std::result::Result<Shader, SpirvError> {
    let insts = parse(words)?;
    // The parser accepted the module, so its header (with the version and id bound) is there.
    validate::check(words[1], words[3], &insts)?;
    let module = module::Module::read(&insts)?;
    let mut shader = function::translate_module(&module, &insts, options)?;
    opaque::opaque_members_as_variables(&mut shader);
    if shader.stage == Stage::Vertex {
        vertex_inputs_in_slots(&mut shader);
    }
    arrays_in_bindings(&mut shader);
    if let Err(errors) = shrew_engine::verify::verify(&shader) {
        let first = errors.first().map(|e| e.to_string()).unwrap_or_default();
        return Err(SpirvError {
            kind: ErrorKind::Invalid,
            ..SpirvError::malformed(format!(
                "the translated IR fails verification ({} errors; first: {first})",
                errors.len()
            ))
        });
    }
    Ok(shader)
}

/// Renumbers the locations of a vertex shader's inputs into the IR's 16-byte slots. GLSL gives
/// a vertex input one location per vector (per matrix column), a 64-bit three- or
/// four-component one included, where every other interface (and the IR) takes two for those:
/// each input moves up by the extra slots of the inputs below it. Inputs keep their order, so a
/// module whose locations already leave room stays without overlaps.
fn vertex_inputs_in_slots(shader: &mut Shader) {
    let mut inputs: Vec<(u32, usize)> = shader
        .variables
        .iter()
        .enumerate()
        .filter(|(_, v)| v.mode == Mode::ShaderIn)
        .filter_map(|(i, v)| Some((v.location?, i)))
        .collect();
    inputs.sort();
    let mut extra = 0;
    for (_, i) in inputs {
        let var = &mut shader.variables[i];
        if let Some(location) = &mut var.location {
            *location = location.saturating_add(extra);
        }
        extra += wide_columns(&var.ty);
    }
}

/// Renumbers bindings so that each element of an array of blocks, textures, samplers or images
/// has one of its own, as the IR and GL count them (element `i` at the array's binding plus
/// `i`). SPIR-V for Vulkan gives such an array one binding, and glslang's automatic bindings
/// put the next resource right after it: a resource whose binding falls inside an earlier
/// array's elements moves up past them, the others after it keeping their order. Resources
/// that share a binding (GL allows it) keep sharing it. Blocks, textures, samplers and images
/// number their bindings apart, per descriptor set.
fn arrays_in_bindings(shader: &mut Shader) {
    let class = |mode: Mode, ty: &Type| match (mode, ty.innermost_element().0) {
        (Mode::Ubo, _) => Some(0),
        (Mode::Ssbo, _) => Some(1),
        (_, Type::Texture { .. }) => Some(2),
        (_, Type::Sampler { .. }) => Some(3),
        (_, Type::Image { .. }) => Some(4),
        _ => None,
    };
    let mut resources: Vec<((u8, u32), u32, usize)> = shader
        .variables
        .iter()
        .enumerate()
        .filter_map(|(i, v)| {
            let class = class(v.mode, &v.ty)?;
            Some(((class, v.desc_set.unwrap_or(0)), v.binding?, i))
        })
        .collect();
    resources.sort();
    // Per class: the first binding past the elements placed so far, and the last resource's
    // binding before and after renumbering.
    let mut placed: HashMap<(u8, u32), (u32, u32, u32)> = HashMap::new();
    for (key, binding, i) in resources {
        let var = &shader.variables[i];
        let elements = match (var.mode, &var.ty) {
            (Mode::Ubo | Mode::Ssbo, Type::Array { len, .. }) if var.array_of_blocks => *len,
            (Mode::Ubo | Mode::Ssbo, _) => 1,
            (_, ty) => ty.innermost_element().1,
        };
        let new = match placed.get(&key) {
            Some(&(_, last, last_new)) if binding == last => last_new,
            Some(&(next_free, ..)) => binding.max(next_free),
            None => binding,
        };
        let next_free = placed.get(&key).map_or(0, |p| p.0);
        let end = new.saturating_add(elements.max(1));
        placed.insert(key, (next_free.max(end), binding, new));
        shader.variables[i].binding = Some(new);
    }
}

/// How many vectors of 64-bit components wider than two (each two slots, one GLSL vertex
/// input location) a type holds.
fn wide_columns(ty: &Type) -> u32 {
    let (inner, elements) = ty.innermost_element();
    let columns = match *inner {
        Type::Vector(s, n) if s.bits == 64 && n > 2 => 1,
        Type::Matrix { elem, cols, rows } if elem.bits == 64 && rows > 2 => cols as u32,
        _ => 0,
    };
    columns * elements
}

/// Collects the parser's instructions in module order.
#[derive(Default)]
struct Collector {
    insts: Vec<dr::Instruction>,
}

impl Consumer for Collector {
    fn initialize(&mut self) -> ParseAction {
        ParseAction::Continue
    }
    fn finalize(&mut self) -> ParseAction {
        ParseAction::Continue
    }
    fn consume_header(&mut self, _: dr::ModuleHeader) -> ParseAction {
        ParseAction::Continue
    }
    fn consume_instruction(&mut self, inst: dr::Instruction) -> ParseAction {
        self.insts.push(inst);
        ParseAction::Continue
    }
}

/// Parses the module and pairs every instruction with its word offset.
fn parse(words: &[u32]) -> Result<Vec<Inst>> {
    check_instruction_words(words)?;
    let mut collector = Collector::default();
    rspirv::binary::parse_words(words, &mut collector)
        .map_err(|state| SpirvError::malformed(format!("the binary does not parse: {state}")))?;
    // The parser accepted the module, so the word counts walk it exactly.
    let mut offset = 5;
    let mut out = Vec::with_capacity(collector.insts.len());
    for inst in collector.insts {
        out.push(Inst { offset, inst });
        let count = words.get(offset).map_or(1, |w| (w >> 16).max(1)) as usize;
        offset += count;
    }
    Ok(out)
}

/// Checks what rspirv's parser trusts, so that it runs only on words it handles: every
/// instruction's word count is non-zero and stays inside the module (rspirv decodes strings by
/// the last instruction's count and panics past the end), and every `OpSpecConstantOp`'s
/// operation is one SPIR-V allows there (rspirv panics on operations whose operands are
/// literals of kinds it cannot decode in that position, such as `OpConstant`'s or
/// `OpSwitch`'s).
fn check_instruction_words(words: &[u32]) -> Result<()> {
    let mut offset = 5;
    while offset < words.len() {
        let located = |message: String| SpirvError {
            offset: Some(offset),
            ..SpirvError::malformed(message)
        };
        let count = (words[offset] >> 16) as usize;
        if count == 0 {
            return Err(located("an instruction with a word count of 0".into()));
        }
        if offset + count > words.len() {
            return Err(located(format!(
                "an instruction of {count} words, but the module ends {} words after it starts",
                words.len() - offset
            )));
        }
        let opcode = words[offset] & 0xffff;
        if opcode == spirv::Op::SpecConstantOp as u32 && count >= 4 {
            let operation = words[offset + 3];
            if !spirv::Op::from_u32(operation).is_some_and(allowed_in_spec_constant_op) {
                return Err(located(format!(
                    "OpSpecConstantOp with operation {operation}, which SPIR-V does not allow there"
                )));
            }
        }
        offset += count;
    }
    Ok(())
}

/// The operations `OpSpecConstantOp` may compute: those of every environment, then the one
/// `Shader` adds and those `Kernel` adds.
fn allowed_in_spec_constant_op(op: spirv::Op) -> bool {
    use spirv::Op::*;
    matches!(
        op,
        SConvert
            | UConvert
            | FConvert
            | SNegate
            | Not
            | IAdd
            | ISub
            | IMul
            | UDiv
            | SDiv
            | UMod
            | SRem
            | SMod
            | ShiftRightLogical
            | ShiftRightArithmetic
            | ShiftLeftLogical
            | BitwiseOr
            | BitwiseXor
            | BitwiseAnd
            | VectorShuffle
            | CompositeExtract
            | CompositeInsert
            | LogicalOr
            | LogicalAnd
            | LogicalNot
            | LogicalEqual
            | LogicalNotEqual
            | Select
            | IEqual
            | INotEqual
            | ULessThan
            | SLessThan
            | UGreaterThan
            | SGreaterThan
            | ULessThanEqual
            | SLessThanEqual
            | UGreaterThanEqual
            | SGreaterThanEqual
            | QuantizeToF16
            | ConvertFToS
            | ConvertSToF
            | ConvertFToU
            | ConvertUToF
            | ConvertPtrToU
            | ConvertUToPtr
            | GenericCastToPtr
            | PtrCastToGeneric
            | Bitcast
            | FNegate
            | FAdd
            | FSub
            | FMul
            | FDiv
            | FRem
            | FMod
            | AccessChain
            | InBoundsAccessChain
            | PtrAccessChain
            | InBoundsPtrAccessChain
    )
}

/// Names given out once each: `base`, or when that is taken `base_1`, `base_2`, ...: the first
/// not taken.
#[derive(Default)]
pub(crate) struct UniqueNames {
    taken: HashSet<String>,
    /// Per base, the first suffix that may still be free: every one below it is taken, so
    /// each suffix is tried once however many names share a base.
    next_suffix: HashMap<String, usize>,
}

impl UniqueNames {
    /// The first free name of `base`, taken from now on.
    pub(crate) fn claim(&mut self, base: &str) -> String {
        let mut name = base.to_string();
        if self.taken.contains(&name) {
            let suffix = self.next_suffix.entry(name.clone()).or_insert(1);
            loop {
                name = format!("{base}_{suffix}");
                *suffix += 1;
                if !self.taken.contains(&name) {
                    break;
                }
            }
        }
        self.taken.insert(name.clone());
        name
    }
}

#[cfg(test)]
mod tests {
    use super::{
        Mode, Shader, Stage, Type, UniqueNames, arrays_in_bindings, vertex_inputs_in_slots,
    };

    #[test]
    fn names_are_the_first_free_of_their_base() {
        let mut names = UniqueNames::default();
        let claimed: Vec<String> = ["x", "x_2", "x", "x", "x", "y", "x_1"]
            .iter()
            .map(|base| names.claim(base))
            .collect();
        assert_eq!(claimed, ["x", "x_2", "x_1", "x_3", "x_4", "y", "x_1_1"]);
    }

    #[test]
    fn wide_vertex_inputs_take_two_slots() {
        use shrew_engine::ir::{Scalar, Variable};
        use shrew_engine::ops::BaseType;
        let f64s = Scalar::new(BaseType::Float, 64);
        let mut shader = Shader::new(Stage::Vertex);
        let mut add = |name: &str, ty: Type, location: u32| {
            let mut var = Variable::new(name, Mode::ShaderIn, ty);
            var.location = Some(location);
            shader.variables.push(var);
        };
        // GLSL's locations: a dmat2x3 (two dvec3 columns) at 1 and 2, then a vec3 at 3.
        add(
            "position",
            Type::Vector(Scalar::new(BaseType::Float, 32), 3),
            3,
        );
        add("ints", Type::Vector(Scalar::new(BaseType::Int, 32), 2), 0);
        add(
            "m",
            Type::Matrix {
                elem: f64s,
                cols: 2,
                rows: 3,
            },
            1,
        );
        vertex_inputs_in_slots(&mut shader);
        let locations: Vec<Option<u32>> = shader.variables.iter().map(|v| v.location).collect();
        assert_eq!(locations, [Some(5), Some(0), Some(1)]);
    }

    /// glslang's automatic bindings for `uniform A {..} a[5]; uniform B {..} b[2]; uniform C
    /// {..} c;` are 0, 1 and 2: each array moves the blocks after it past its elements; two
    /// textures sharing a binding keep sharing it, and a texture array's elements push the
    /// images' numbers nowhere (each kind counts apart).
    #[test]
    fn arrays_take_a_binding_per_element() {
        use shrew_engine::ir::{Dim, StructType, Variable};
        use shrew_engine::ops::BaseType;
        let mut shader = Shader::new(Stage::Fragment);
        let block = shader.add_struct(StructType {
            name: "Block".into(),
            members: Vec::new(),
        });
        let array = |elem: Type, len| Type::Array {
            elem: Box::new(elem),
            len,
            stride: 0,
        };
        let texture = Type::Texture {
            dim: Dim::D2,
            arrayed: false,
            shadow: false,
            base: BaseType::Float,
        };
        let image = Type::Image {
            dim: Dim::D2,
            arrayed: false,
            base: BaseType::Float,
        };
        let mut add = |mode, ty, binding, blocks| {
            let mut var = Variable::new("v", mode, ty);
            var.binding = Some(binding);
            var.array_of_blocks = blocks;
            shader.variables.push(var);
        };
        add(Mode::Ubo, array(Type::Struct(block), 5), 0, true);
        add(Mode::Ubo, array(Type::Struct(block), 2), 1, true);
        add(Mode::Ubo, Type::Struct(block), 2, false);
        add(Mode::Uniform, array(texture.clone(), 3), 0, false);
        add(Mode::Uniform, texture.clone(), 1, false);
        add(Mode::Uniform, texture, 1, false);
        add(Mode::Uniform, image, 1, false);
        arrays_in_bindings(&mut shader);
        let bindings: Vec<u32> = shader.variables.iter().filter_map(|v| v.binding).collect();
        assert_eq!(bindings, [0, 5, 7, 0, 3, 3, 1]);
    }
}
