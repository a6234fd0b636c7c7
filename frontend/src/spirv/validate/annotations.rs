//! What the module says about its ids: names, decorations, entry points and execution modes.
//!
//! What: a member name or decoration names a struct and one of its members; a decoration is
//! on what it applies to (an interface or resource decoration on a variable, `Block` on a
//! struct, `ArrayStride` on an array or pointer, layout decorations on members) and layout
//! (offset, array and matrix stride, order) is given once; the structs of uniform and storage
//! blocks are laid out explicitly (every member an `Offset`, matrices a `MatrixStride`, arrays
//! an `ArrayStride`); a struct with built-in members is a block; an entry point is a function
//! returning void without parameters, named once per execution model, whose interface is
//! input and output variables, with at most one input and one output block of built-ins, and
//! lists every input and output the functions use; execution modes are an entry point's and
//! fit its model, and a fragment entry point has an origin; a GLSL memory model comes with the
//! `Shader` capability.
//!
//! Why: the translator reads interfaces, bindings, block layouts and built-ins from these
//! tables. A location on a constant, an offset missing from a uniform block member or an
//! interface that is not a variable would be translated into a shader that reads the wrong
//! memory or nothing at all.

use super::Checker;
use crate::spirv::module::{id, literal};
use crate::spirv::{Inst, Result, SpirvError};
use rspirv::dr::Operand;
use rspirv::spirv::{
    Capability, Decoration, ExecutionMode, ExecutionModel, MemoryModel, Op, StorageClass, Word,
};
use std::collections::{BTreeMap, HashSet};

/// The target of a decoration: an id, or one member of a struct.
type Target = (Word, Option<u32>);

impl Checker<'_> {
    /// Checks every debug name, decoration, entry point and execution mode.
    pub(super) fn check_annotations(&self) -> Result<()> {
        let mut decorations: BTreeMap<Target, Vec<Decoration>> = BTreeMap::new();
        let mut entry_points: BTreeMap<Word, ExecutionModel> = BTreeMap::new();
        let mut entry_names = HashSet::new();
        let mut origins = HashSet::new();
        // Every entry point's interface, and the input and output variables declared.
        let mut interfaces: Vec<&Inst> = Vec::new();
        let mut listed = HashSet::new();
        let mut inputs_and_outputs = HashSet::new();
        let mut in_function = false;
        for inst in self.insts {
            let at = |e: SpirvError| e.at(inst);
            let op = inst.inst.class.opcode;
            in_function = (in_function || op == Op::Function) && op != Op::FunctionEnd;
            if in_function {
                // The functions come last: every interface has been listed.
                let unlisted = super::referenced(inst)
                    .find(|id| inputs_and_outputs.contains(id) && !listed.contains(id));
                if let Some(variable) = unlisted {
                    return Err(at(SpirvError::malformed(format!(
                        "the input or output %{variable} is in no entry point's interface"
                    ))));
                }
                continue;
            }
            match op {
                Op::Variable if is_input_or_output(inst) => {
                    inputs_and_outputs.insert(inst.inst.result_id.unwrap_or(0));
                }
                Op::MemoryModel => {
                    let glsl = matches!(
                        inst.inst.operands.get(1),
                        Some(Operand::MemoryModel(
                            MemoryModel::GLSL450 | MemoryModel::Simple
                        ))
                    );
                    let shader = [
                        Capability::Shader,
                        Capability::Geometry,
                        Capability::Tessellation,
                    ];
                    if glsl && !shader.iter().any(|c| self.capabilities.contains(c)) {
                        return Err(at(SpirvError::malformed(
                            "a GLSL memory model without the Shader capability",
                        )));
                    }
                }
                Op::MemberName => {
                    self.check_struct_member(id(inst, 0)?, literal(inst, 1)?)
                        .map_err(at)?;
                }
                Op::Decorate | Op::MemberDecorate => {
                    let target = id(inst, 0)?;
                    let member = (inst.inst.class.opcode == Op::MemberDecorate)
                        .then(|| literal(inst, 1))
                        .transpose()?;
                    let Some(&Operand::Decoration(decoration)) =
                        inst.inst.operands.get(if member.is_some() { 2 } else { 1 })
                    else {
                        return Err(at(SpirvError::malformed("a decoration without its kind")));
                    };
                    if let Some(member) = member {
                        self.check_struct_member(target, member).map_err(at)?;
                    }
                    self.check_decoration_target(target, member, decoration)
                        .map_err(at)?;
                    let on_target = decorations.entry((target, member)).or_default();
                    // Layout is given once (other decorations may be repeated).
                    let layout = [
                        Decoration::Offset,
                        Decoration::ArrayStride,
                        Decoration::MatrixStride,
                        Decoration::RowMajor,
                        Decoration::ColMajor,
                    ];
                    let conflicting = |d: &Decoration| {
                        *d == decoration
                            || matches!(
                                (d, decoration),
                                (Decoration::RowMajor, Decoration::ColMajor)
                                    | (Decoration::ColMajor, Decoration::RowMajor)
                            )
                    };
                    if layout.contains(&decoration) && on_target.iter().any(conflicting) {
                        let what = match member {
                            Some(member) => format!("member {member} of %{target}"),
                            None => format!("%{target}"),
                        };
                        return Err(at(SpirvError::malformed(format!(
                            "{what} decorated {decoration:?} again"
                        ))));
                    }
                    // The largest offset leaves no room for a member: it is none (as
                    // spirv-val has it).
                    let no_offset = decoration == Decoration::Offset
                        && inst.inst.operands.last() == Some(&Operand::LiteralBit32(u32::MAX));
                    if !no_offset {
                        on_target.push(decoration);
                    }
                }
                Op::EntryPoint => {
                    self.check_entry_point(inst, &mut entry_points, &mut entry_names)?;
                    listed.extend(super::referenced(inst).skip(1));
                    interfaces.push(inst);
                }
                Op::ExecutionMode | Op::ExecutionModeId => {
                    let function = id(inst, 0)?;
                    let Some(&model) = entry_points.get(&function) else {
                        return Err(at(SpirvError::malformed(format!(
                            "%{function} is not an entry point"
                        ))));
                    };
                    let Some(&Operand::ExecutionMode(mode)) = inst.inst.operands.get(1) else {
                        return Err(at(SpirvError::malformed(
                            "an execution mode without its kind",
                        )));
                    };
                    if !mode_fits(mode, model) {
                        return Err(at(SpirvError::malformed(format!(
                            "the execution mode {mode:?} on a {model:?} entry point"
                        ))));
                    }
                    if matches!(
                        mode,
                        ExecutionMode::OriginUpperLeft | ExecutionMode::OriginLowerLeft
                    ) {
                        origins.insert(function);
                    }
                }
                _ => {}
            }
        }
        for (&function, &model) in &entry_points {
            if model == ExecutionModel::Fragment && !origins.contains(&function) {
                let inst = &self.insts[self.defs[&function]];
                return Err(SpirvError::malformed(
                    "a fragment entry point without an origin execution mode",
                )
                .at(inst));
            }
        }
        self.check_block_layouts(&decorations)?;
        self.check_builtin_structs(&decorations)?;
        for entry_point in interfaces {
            self.check_builtin_blocks(entry_point, &decorations)
                .map_err(|e| e.at(entry_point))?;
        }
        Ok(())
    }

    /// An entry point's interface holds at most one input and one output variable of a struct
    /// (or array of structs) with built-in members: the per-vertex blocks.
    fn check_builtin_blocks(
        &self,
        entry_point: &Inst,
        decorations: &BTreeMap<Target, Vec<Decoration>>,
    ) -> Result<()> {
        let mut storages = HashSet::new();
        for variable in super::referenced(entry_point).skip(1) {
            let Some(def) = self.def(variable) else {
                continue;
            };
            let Some(&Operand::StorageClass(storage)) = def.inst.operands.first() else {
                continue;
            };
            let mut ty = (def.inst.result_type)
                .and_then(|ptr| self.def(ptr))
                .and_then(|ptr| id(ptr, 1).ok());
            while let Some(array) = ty
                .and_then(|t| self.def(t))
                .filter(|d| matches!(d.inst.class.opcode, Op::TypeArray | Op::TypeRuntimeArray))
            {
                ty = id(array, 0).ok();
            }
            let has_builtins = ty.is_some_and(|ty| {
                decorations
                    .range((ty, Some(0))..=(ty, Some(u32::MAX)))
                    .any(|(_, list)| list.contains(&Decoration::BuiltIn))
            });
            if has_builtins && !storages.insert(storage) {
                return Err(SpirvError::malformed(format!(
                    "a second {storage:?} block of built-ins, %{variable}"
                )));
            }
        }
        Ok(())
    }

    /// `member` is one of the struct `target`'s members.
    fn check_struct_member(&self, target: Word, member: u32) -> Result<()> {
        let def = self
            .def(target)
            .filter(|def| def.inst.class.opcode == Op::TypeStruct)
            .ok_or_else(|| SpirvError::malformed(format!("%{target} is not a struct type")))?;
        let count = def.inst.operands.len();
        if member as usize >= count {
            return Err(SpirvError::malformed(format!(
                "member {member} of %{target}, which has {count}"
            )));
        }
        Ok(())
    }

    /// A decoration of `target` (or of its `member`) is on what the decoration applies to.
    fn check_decoration_target(
        &self,
        target: Word,
        member: Option<u32>,
        decoration: Decoration,
    ) -> Result<()> {
        let op = self.op_of(target);
        let (ok, what) = match decoration {
            Decoration::Binding | Decoration::DescriptorSet => {
                (member.is_none() && op == Some(Op::Variable), "a variable")
            }
            Decoration::Location
            | Decoration::Component
            | Decoration::Index
            | Decoration::Invariant => (
                member.is_some() || op == Some(Op::Variable),
                "a variable or struct member",
            ),
            Decoration::Flat
            | Decoration::NoPerspective
            | Decoration::Centroid
            | Decoration::Sample
            | Decoration::NonWritable
            | Decoration::NonReadable
            | Decoration::Coherent
            | Decoration::Volatile
            | Decoration::Restrict => (
                member.is_some() || matches!(op, Some(Op::Variable | Op::FunctionParameter)),
                "a variable or parameter",
            ),
            Decoration::Block | Decoration::BufferBlock => (
                member.is_none() && op == Some(Op::TypeStruct),
                "a struct type",
            ),
            Decoration::ArrayStride => (
                member.is_none()
                    && matches!(
                        op,
                        Some(Op::TypeArray | Op::TypeRuntimeArray | Op::TypePointer)
                    ),
                "an array or pointer type",
            ),
            // A variable's offset is its place in a transform feedback buffer.
            Decoration::Offset => (
                member.is_some() || op == Some(Op::Variable),
                "a struct member or variable",
            ),
            Decoration::MatrixStride | Decoration::RowMajor | Decoration::ColMajor => {
                (member.is_some(), "a struct member")
            }
            Decoration::BuiltIn => (
                member.is_some()
                    || op == Some(Op::Variable)
                    || op.is_some_and(super::layout::is_constant),
                "a variable, struct member or constant",
            ),
            Decoration::SpecId => (
                matches!(
                    op,
                    Some(Op::SpecConstant | Op::SpecConstantTrue | Op::SpecConstantFalse)
                ),
                "a specialization constant",
            ),
            _ => (true, ""),
        };
        if ok {
            Ok(())
        } else {
            Err(SpirvError::malformed(format!(
                "{decoration:?} on %{target}, which is not {what}"
            )))
        }
    }

    /// The entry point names a function returning void without parameters, once per
    /// execution model and name, and its interface is input and output variables.
    fn check_entry_point(
        &self,
        inst: &Inst,
        models: &mut BTreeMap<Word, ExecutionModel>,
        names: &mut HashSet<(ExecutionModel, String)>,
    ) -> Result<()> {
        let at = |e: SpirvError| e.at(inst);
        let (Some(&Operand::ExecutionModel(model)), Some(Operand::LiteralString(name))) =
            (inst.inst.operands.first(), inst.inst.operands.get(2))
        else {
            return Err(at(SpirvError::malformed(
                "an entry point without model or name",
            )));
        };
        let function = id(inst, 1)?;
        let def = self
            .def(function)
            .filter(|def| def.inst.class.opcode == Op::Function)
            .ok_or_else(|| {
                at(SpirvError::malformed(format!(
                    "%{function} is not a function"
                )))
            })?;
        let no_parameters = (self.insts.get(self.defs[&function] + 1))
            .is_none_or(|next| next.inst.class.opcode != Op::FunctionParameter);
        if self.op_of(def.inst.result_type.unwrap_or(0)) != Some(Op::TypeVoid) || !no_parameters {
            return Err(at(SpirvError::malformed(format!(
                "%{function} returns a value or takes parameters"
            ))));
        }
        if !names.insert((model, name.clone())) {
            return Err(at(SpirvError::malformed(format!(
                "a second {model:?} entry point named {name:?}"
            ))));
        }
        models.insert(function, model);
        for operand in &inst.inst.operands[3..] {
            let &Operand::IdRef(variable) = operand else {
                return Err(at(SpirvError::malformed("an interface that is not an id")));
            };
            if !self.def(variable).is_some_and(is_input_or_output) {
                return Err(at(SpirvError::malformed(format!(
                    "%{variable} is not an input or output variable"
                ))));
            }
        }
        Ok(())
    }

    /// Every struct of a uniform, storage or push-constant block, and every struct inside one,
    /// gives each member an offset, each matrix a stride and each array a stride.
    fn check_block_layouts(&self, decorations: &BTreeMap<Target, Vec<Decoration>>) -> Result<()> {
        let has = |target: Target, decoration| {
            decorations
                .get(&target)
                .is_some_and(|list| list.contains(&decoration))
        };
        let mut checked = HashSet::new();
        for inst in self.insts {
            let explicit = inst.inst.class.opcode == Op::Variable
                && matches!(
                    inst.inst.operands.first(),
                    Some(Operand::StorageClass(
                        StorageClass::Uniform
                            | StorageClass::StorageBuffer
                            | StorageClass::PushConstant
                    ))
                );
            if !explicit {
                continue;
            }
            let pointee = (inst.inst.result_type)
                .and_then(|ty| self.def(ty))
                .and_then(|ty| id(ty, 1).ok());
            // Types to check, and whether they are inside the block (the variable may be an
            // array, or an array of arrays, of blocks: those arrays have no stride).
            let mut pending: Vec<(Word, bool)> =
                pointee.map(|ty| (ty, false)).into_iter().collect();
            while let Some((ty, inside)) = pending.pop() {
                if !checked.insert(ty) {
                    continue;
                }
                let Some(def) = self.def(ty) else { continue };
                match def.inst.class.opcode {
                    Op::TypeArray | Op::TypeRuntimeArray => {
                        if inside && !has((ty, None), Decoration::ArrayStride) {
                            return Err(SpirvError::malformed(format!(
                                "the array %{ty} in a block has no ArrayStride"
                            ))
                            .at(def));
                        }
                        pending.push((id(def, 0)?, inside));
                    }
                    Op::TypeStruct => {
                        for (member, operand) in def.inst.operands.iter().enumerate() {
                            let &Operand::IdRef(member_type) = operand else {
                                continue;
                            };
                            let target = (ty, Some(member as u32));
                            if !has(target, Decoration::Offset) {
                                return Err(SpirvError::malformed(format!(
                                    "member {member} of the block struct %{ty} has no Offset"
                                ))
                                .at(def));
                            }
                            if self.holds_matrix(member_type)
                                && !has(target, Decoration::MatrixStride)
                            {
                                return Err(SpirvError::malformed(format!(
                                    "the matrix member {member} of %{ty} has no MatrixStride"
                                ))
                                .at(def));
                            }
                            pending.push((member_type, true));
                        }
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// Whether `ty` is a matrix or an array of matrices.
    fn holds_matrix(&self, mut ty: Word) -> bool {
        while let Some(def) = self.def(ty) {
            match def.inst.class.opcode {
                Op::TypeMatrix => return true,
                Op::TypeArray | Op::TypeRuntimeArray => match id(def, 0) {
                    Ok(elem) => ty = elem,
                    Err(_) => return false,
                },
                _ => return false,
            }
        }
        false
    }

    /// A struct with a built-in member is a block. (Its other members need not be built-ins:
    /// glslang's compatibility-profile `gl_PerVertex` holds `gl_ClipVertex` and the colors,
    /// which are not, and the translator splits such blocks member by member.)
    fn check_builtin_structs(&self, decorations: &BTreeMap<Target, Vec<Decoration>>) -> Result<()> {
        let mut seen = HashSet::new();
        for (&(ty, member), list) in decorations {
            if member.is_none() || !list.contains(&Decoration::BuiltIn) || !seen.insert(ty) {
                continue;
            }
            let def = &self.insts[self.defs[&ty]];
            if !decorations
                .get(&(ty, None))
                .is_some_and(|list| list.contains(&Decoration::Block))
            {
                return Err(SpirvError::malformed(format!(
                    "the struct of built-ins %{ty} is not a block"
                ))
                .at(def));
            }
        }
        Ok(())
    }
}

/// Whether an execution mode applies to an execution model.
fn mode_fits(mode: ExecutionMode, model: ExecutionModel) -> bool {
    use ExecutionMode as M;
    match mode {
        M::OriginUpperLeft
        | M::OriginLowerLeft
        | M::PixelCenterInteger
        | M::EarlyFragmentTests
        | M::DepthReplacing
        | M::DepthGreater
        | M::DepthLess
        | M::DepthUnchanged => model == ExecutionModel::Fragment,
        M::LocalSize | M::LocalSizeHint | M::LocalSizeId => {
            matches!(model, ExecutionModel::GLCompute | ExecutionModel::Kernel)
        }
        _ => true,
    }
}

/// Whether `inst` declares an input or output variable.
fn is_input_or_output(inst: &Inst) -> bool {
    inst.inst.class.opcode == Op::Variable
        && matches!(
            inst.inst.operands.first(),
            Some(Operand::StorageClass(
                StorageClass::Input | StorageClass::Output
            ))
        )
}
