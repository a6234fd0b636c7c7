//! The module-level sections of a SPIR-V module read into tables: names, decorations, types,
//! constants, global variables, functions (as instruction ranges) and entry points.

use super::types::SpvType;
use super::{Inst, Result, SpirvError};
use rspirv::dr::Operand;
use rspirv::spirv::{self, Decoration, Op, StorageClass, Word};
use std::collections::HashMap;

/// A constant's value: scalars and vectors as raw components, composites as trees.
#[derive(Clone, Debug, PartialEq)]
pub enum Konst {
    /// Raw components of a scalar or vector (booleans as 0/1).
    Vector(Vec<u64>),
    Composite(Vec<Konst>),
    /// `OpUndef` at module level, or `OpConstantNull` of an opaque type.
    Undef,
}

/// The decorations of an id or struct member: kind and extra operands.
pub type Decorations = Vec<(Decoration, Vec<Operand>)>;

/// A global `OpVariable`.
#[derive(Clone, Debug)]
pub struct GlobalVar {
    pub storage: StorageClass,
    /// The pointee type.
    pub ty: Word,
    pub init: Option<Word>,
}

/// A function: its instruction range and its blocks.
#[derive(Clone, Debug)]
pub struct FunctionDef {
    pub id: Word,
    pub ret: Word,
    /// Parameter ids and types.
    pub params: Vec<(Word, Word)>,
    /// Blocks in module order: label id and the range of the instructions after the label.
    pub blocks: Vec<(Word, std::ops::Range<usize>)>,
    /// Index of the `OpFunction` instruction.
    pub start: usize,
}

#[derive(Clone, Debug)]
pub struct EntryPoint {
    pub model: spirv::ExecutionModel,
    pub function: Word,
    pub name: String,
    pub modes: Vec<(spirv::ExecutionMode, Vec<u32>)>,
}

/// The module's tables.
#[derive(Default)]
pub struct Module {
    pub names: HashMap<Word, String>,
    pub member_names: HashMap<(Word, u32), String>,
    pub decorations: HashMap<Word, Decorations>,
    pub member_decorations: HashMap<(Word, u32), Decorations>,
    pub types: HashMap<Word, SpvType>,
    pub constants: HashMap<Word, Konst>,
    /// The type of every constant, variable and function-level result.
    pub result_types: HashMap<Word, Word>,
    pub globals: HashMap<Word, GlobalVar>,
    /// Global variables in declaration order.
    pub global_order: Vec<Word>,
    pub functions: Vec<FunctionDef>,
    /// Each function's place in `functions`, by its id.
    function_index: HashMap<Word, usize>,
    pub entry_points: Vec<EntryPoint>,
    /// Ids of `OpExtInstImport "GLSL.std.450"`.
    pub glsl450: Vec<Word>,
    /// Ids of `OpExtInstImport "SPV_AMD_shader_trinary_minmax"`.
    pub trinary_minmax: Vec<Word>,
    /// Index of the instruction that defines each id.
    pub defs: HashMap<Word, usize>,
}

/// An operand as an id.
pub fn id(inst: &Inst, i: usize) -> Result<Word> {
    match inst.inst.operands.get(i) {
        Some(Operand::IdRef(w) | Operand::IdScope(w) | Operand::IdMemorySemantics(w)) => Ok(*w),
        other => Err(SpirvError::malformed(format!(
            "operand {i} should be an id, found {other:?}"
        ))
        .at(inst)),
    }
}

/// An operand as a 32-bit literal.
pub fn literal(inst: &Inst, i: usize) -> Result<u32> {
    match inst.inst.operands.get(i) {
        Some(Operand::LiteralBit32(w) | Operand::LiteralExtInstInteger(w)) => Ok(*w),
        other => Err(SpirvError::malformed(format!(
            "operand {i} should be a literal number, found {other:?}"
        ))
        .at(inst)),
    }
}

pub fn result_id(inst: &Inst) -> Result<Word> {
    inst.inst
        .result_id
        .ok_or_else(|| SpirvError::malformed("the instruction has no result id").at(inst))
}

pub fn result_type(inst: &Inst) -> Result<Word> {
    inst.inst
        .result_type
        .ok_or_else(|| SpirvError::malformed("the instruction has no result type").at(inst))
}

fn literal_u32(op: &Operand) -> Option<u32> {
    match op {
        Operand::LiteralBit32(v) => Some(*v),
        _ => None,
    }
}

impl Module {
    /// The function whose id is `id`, if the module defines one.
    pub fn function(&self, id: Word) -> Option<&FunctionDef> {
        self.function_index.get(&id).map(|&at| &self.functions[at])
    }

    /// Reads every module-level instruction and the outline of every function.
    pub fn read(insts: &[Inst]) -> Result<Module> {
        let mut m = Module::default();
        let mut groups: HashMap<Word, Decorations> = HashMap::new();
        let mut current: Option<FunctionDef> = None;
        for (index, inst) in insts.iter().enumerate() {
            let op = inst.inst.class.opcode;
            if let Some(id) = inst.inst.result_id {
                m.defs.insert(id, index);
                if let Some(ty) = inst.inst.result_type {
                    m.result_types.insert(id, ty);
                }
            }
            if let Some(func) = current.as_mut() {
                match op {
                    Op::FunctionParameter => {
                        func.params.push((result_id(inst)?, result_type(inst)?));
                    }
                    Op::Label => func.blocks.push((result_id(inst)?, index + 1..index + 1)),
                    Op::FunctionEnd => {
                        let func = current
                            .take()
                            .unwrap_or_else(|| unreachable!("inside a function"));
                        m.function_index.insert(func.id, m.functions.len());
                        m.functions.push(func);
                    }
                    _ => match func.blocks.last_mut() {
                        Some((_, range)) => range.end = index + 1,
                        None => {
                            return Err(SpirvError::malformed(
                                "an instruction before the function's first label",
                            )
                            .at(inst));
                        }
                    },
                }
                continue;
            }
            m.read_global(inst, index, &mut groups, &mut current)
                .map_err(|e| e.at(inst))?;
        }
        if current.is_some() {
            return Err(SpirvError::malformed("a function without OpFunctionEnd"));
        }
        Ok(m)
    }

    fn read_global(
        &mut self,
        inst: &Inst,
        index: usize,
        groups: &mut HashMap<Word, Decorations>,
        current: &mut Option<FunctionDef>,
    ) -> Result<()> {
        let ops = &inst.inst.operands;
        match inst.inst.class.opcode {
            Op::Name => {
                if let Some(Operand::LiteralString(s)) = ops.get(1) {
                    self.names.insert(id(inst, 0)?, s.clone());
                }
            }
            Op::MemberName => {
                if let Some(Operand::LiteralString(s)) = ops.get(2) {
                    self.member_names
                        .insert((id(inst, 0)?, literal(inst, 1)?), s.clone());
                }
            }
            Op::Decorate | Op::DecorateId => {
                let Some(Operand::Decoration(d)) = ops.get(1) else {
                    return Err(SpirvError::malformed("a decoration without its kind"));
                };
                self.decorations
                    .entry(id(inst, 0)?)
                    .or_default()
                    .push((*d, ops[2..].to_vec()));
            }
            Op::MemberDecorate => {
                let Some(Operand::Decoration(d)) = ops.get(2) else {
                    return Err(SpirvError::malformed("a decoration without its kind"));
                };
                self.member_decorations
                    .entry((id(inst, 0)?, literal(inst, 1)?))
                    .or_default()
                    .push((*d, ops[3..].to_vec()));
            }
            Op::DecorationGroup => {
                let group = result_id(inst)?;
                let decorations = self.decorations.remove(&group).unwrap_or_default();
                groups.insert(group, decorations);
            }
            Op::GroupDecorate => {
                let group = groups.get(&id(inst, 0)?).cloned().unwrap_or_default();
                for i in 1..ops.len() {
                    let target = id(inst, i)?;
                    self.decorations
                        .entry(target)
                        .or_default()
                        .extend(group.iter().cloned());
                }
            }
            Op::GroupMemberDecorate => {
                let group = groups.get(&id(inst, 0)?).cloned().unwrap_or_default();
                for pair in ops[1..].chunks(2) {
                    if let [Operand::IdRef(target), Operand::LiteralBit32(member)] = pair {
                        self.member_decorations
                            .entry((*target, *member))
                            .or_default()
                            .extend(group.iter().cloned());
                    }
                }
            }
            Op::ExtInstImport => match ops.first() {
                Some(Operand::LiteralString(name)) if name == "GLSL.std.450" => {
                    self.glsl450.push(result_id(inst)?);
                }
                Some(Operand::LiteralString(name)) if name == "SPV_AMD_shader_trinary_minmax" => {
                    self.trinary_minmax.push(result_id(inst)?);
                }
                _ => {}
            },
            Op::EntryPoint => {
                let (Some(Operand::ExecutionModel(model)), Some(Operand::LiteralString(name))) =
                    (ops.first(), ops.get(2))
                else {
                    return Err(SpirvError::malformed(
                        "an entry point without model or name",
                    ));
                };
                self.entry_points.push(EntryPoint {
                    model: *model,
                    function: id(inst, 1)?,
                    name: name.clone(),
                    modes: Vec::new(),
                });
            }
            Op::ExecutionMode | Op::ExecutionModeId => {
                let func = id(inst, 0)?;
                let Some(Operand::ExecutionMode(mode)) = ops.get(1) else {
                    return Err(SpirvError::malformed("an execution mode without its kind"));
                };
                let args = ops[2..].iter().filter_map(literal_u32).collect();
                if let Some(ep) = self.entry_points.iter_mut().find(|e| e.function == func) {
                    ep.modes.push((*mode, args));
                }
            }
            Op::Variable => {
                let ptr = result_type(inst)?;
                let Some(SpvType::Pointer { pointee, .. }) = self.types.get(&ptr) else {
                    return Err(SpirvError::malformed(
                        "a variable whose type is not a pointer",
                    ));
                };
                let Some(Operand::StorageClass(storage)) = ops.first() else {
                    return Err(SpirvError::malformed("a variable without storage class"));
                };
                let init = if ops.len() > 1 {
                    Some(id(inst, 1)?)
                } else {
                    None
                };
                let var = result_id(inst)?;
                self.globals.insert(
                    var,
                    GlobalVar {
                        storage: *storage,
                        ty: *pointee,
                        init,
                    },
                );
                self.global_order.push(var);
            }
            Op::Function => {
                *current = Some(FunctionDef {
                    id: result_id(inst)?,
                    ret: result_type(inst)?,
                    params: Vec::new(),
                    blocks: Vec::new(),
                    start: index,
                });
            }
            op if SpvType::is_type_op(op) => {
                let ty = SpvType::read(inst, self)?;
                self.types.insert(result_id(inst)?, ty);
            }
            _ => {
                if let Some(k) = self.read_constant(inst)? {
                    self.constants.insert(result_id(inst)?, k);
                }
            }
        }
        Ok(())
    }

    /// Reads a constant instruction; `None` for instructions that are not constants (ignored:
    /// capabilities, extensions, source and debug information, lines).
    fn read_constant(&self, inst: &Inst) -> Result<Option<Konst>> {
        let op = inst.inst.class.opcode;
        let k = match op {
            Op::ConstantTrue | Op::SpecConstantTrue => Konst::Vector(vec![1]),
            Op::ConstantFalse | Op::SpecConstantFalse => Konst::Vector(vec![0]),
            Op::Constant | Op::SpecConstant => {
                let ty = self.ty(result_type(inst)?)?;
                let bits = ty.scalar_bits(self).unwrap_or(32);
                let raw = match inst.inst.operands.first() {
                    Some(Operand::LiteralBit32(v)) => *v as u64,
                    Some(Operand::LiteralBit64(v)) => *v,
                    other => {
                        return Err(SpirvError::malformed(format!(
                            "a constant without a literal value: {other:?}"
                        )));
                    }
                };
                Konst::Vector(vec![shrew_engine::ops::eval::mask(raw, bits)])
            }
            Op::ConstantComposite | Op::SpecConstantComposite => {
                let ty = self.ty(result_type(inst)?)?;
                let parts = (0..inst.inst.operands.len())
                    .map(|i| self.constant(id(inst, i)?).cloned())
                    .collect::<Result<Vec<_>>>()?;
                if matches!(ty, SpvType::Vector { .. }) {
                    let mut comps = Vec::new();
                    for p in parts {
                        match p {
                            Konst::Vector(c) => comps.extend(c),
                            _ => return Err(SpirvError::malformed("a vector of composites")),
                        }
                    }
                    Konst::Vector(comps)
                } else {
                    Konst::Composite(parts)
                }
            }
            Op::ConstantNull => self.null(result_type(inst)?)?,
            Op::Undef => Konst::Undef,
            Op::SpecConstantOp => self.spec_constant_op(inst)?,
            Op::ConstantSampler => {
                return Err(SpirvError::unsupported("constant samplers"));
            }
            _ => return Ok(None),
        };
        Ok(Some(k))
    }

    /// Evaluates an `OpSpecConstantOp` with the default values of the specialization constants
    /// (the module is not specialized).
    fn spec_constant_op(&self, inst: &Inst) -> Result<Konst> {
        let Some(Operand::LiteralSpecConstantOpInteger(op)) = inst.inst.operands.first() else {
            return Err(SpirvError::malformed(
                "OpSpecConstantOp without an operation",
            ));
        };
        let comps = |i: usize| match self.constant(id(inst, i)?)? {
            Konst::Vector(c) => Ok(c.clone()),
            _ => Err(SpirvError::unsupported(format!(
                "OpSpecConstantOp Op{op:?} on composites"
            ))),
        };
        let bits_of = |i: usize| -> Result<u8> {
            let ty = self.result_types.get(&id(inst, i)?).copied();
            ty.and_then(|t| self.types.get(&t)?.scalar_bits(self))
                .ok_or_else(|| SpirvError::malformed("an operand without a scalar type"))
        };
        let dst_bits = self
            .ty(result_type(inst)?)?
            .scalar_bits(self)
            .ok_or_else(|| SpirvError::unsupported("OpSpecConstantOp with a composite result"))?;
        let n = inst.inst.operands.len();
        Ok(match op {
            Op::Select => {
                let (cond, a, b) = (comps(1)?, comps(2)?, comps(3)?);
                let pick = |c: usize| {
                    if cond[c.min(cond.len() - 1)] != 0 {
                        a[c]
                    } else {
                        b[c]
                    }
                };
                Konst::Vector((0..a.len().min(b.len())).map(pick).collect())
            }
            Op::VectorShuffle => {
                let both: Vec<u64> = comps(1)?.into_iter().chain(comps(2)?).collect();
                let picked = (3..n).map(|i| {
                    let at = literal(inst, i)? as usize;
                    // 0xFFFFFFFF selects an undefined component: 0 here.
                    Ok(both.get(at).copied().unwrap_or(0))
                });
                Konst::Vector(picked.collect::<Result<_>>()?)
            }
            Op::CompositeExtract => {
                let mut k = self.constant(id(inst, 1)?)?.clone();
                for i in 2..n {
                    let at = literal(inst, i)? as usize;
                    let out_of_range = || SpirvError::malformed("an index out of range");
                    k = match k {
                        Konst::Vector(c) => {
                            Konst::Vector(vec![*c.get(at).ok_or_else(out_of_range)?])
                        }
                        Konst::Composite(parts) => {
                            parts.get(at).cloned().ok_or_else(out_of_range)?
                        }
                        Konst::Undef => Konst::Undef,
                    };
                }
                k
            }
            _ => {
                let unsupported =
                    || SpirvError::unsupported(format!("OpSpecConstantOp with Op{op:?}"));
                let (alu, swap) = super::alu::constant_op(*op, dst_bits).ok_or_else(unsupported)?;
                let mut srcs = (1..n).map(comps).collect::<Result<Vec<_>>>()?;
                let mut src_bits = (1..n).map(bits_of).collect::<Result<Vec<_>>>()?;
                if swap {
                    srcs.swap(0, 1);
                    src_bits.swap(0, 1);
                }
                let len = srcs.iter().map(Vec::len).max().unwrap_or(1);
                if srcs.len() != alu.info().srcs.len() || srcs.iter().any(|s| s.len() != len) {
                    return Err(SpirvError::malformed(format!(
                        "OpSpecConstantOp Op{op:?} with operands of the wrong shape"
                    )));
                }
                let views: Vec<&[u64]> = srcs.iter().map(Vec::as_slice).collect();
                let mut dst = vec![0; len];
                let bits = shrew_engine::ops::eval::Bits {
                    src: &src_bits,
                    dst: dst_bits,
                };
                if !alu.eval(&views, bits, &mut dst) {
                    return Err(unsupported());
                }
                Konst::Vector(dst)
            }
        })
    }

    /// The zero value of a type.
    pub fn null(&self, ty: Word) -> Result<Konst> {
        Ok(match self.ty(ty)? {
            SpvType::Bool | SpvType::Int { .. } | SpvType::Float { .. } => Konst::Vector(vec![0]),
            SpvType::Vector { n, .. } => Konst::Vector(vec![0; *n as usize]),
            SpvType::Matrix { col, cols } => {
                Konst::Composite(vec![self.null(*col)?; *cols as usize])
            }
            SpvType::Array { elem, len } => {
                let n = self.array_len(*len)?;
                if n > 1 << 16 {
                    return Err(SpirvError::unsupported(format!(
                        "a null constant of {n} array elements"
                    )));
                }
                Konst::Composite(vec![self.null(*elem)?; n as usize])
            }
            SpvType::Struct { members } => Konst::Composite(
                members
                    .iter()
                    .map(|m| self.null(*m))
                    .collect::<Result<_>>()?,
            ),
            _ => Konst::Undef,
        })
    }

    pub fn ty(&self, id: Word) -> Result<&SpvType> {
        self.types
            .get(&id)
            .ok_or_else(|| SpirvError::malformed(format!("%{id} is not a type")))
    }

    pub fn constant(&self, id: Word) -> Result<&Konst> {
        self.constants
            .get(&id)
            .ok_or_else(|| SpirvError::malformed(format!("%{id} is not a constant")))
    }

    /// The length of an array type from its length constant.
    pub fn array_len(&self, len: Word) -> Result<u32> {
        match self.constant(len)? {
            Konst::Vector(v) if v.len() == 1 => u32::try_from(v[0])
                .map_err(|_| SpirvError::unsupported("an array longer than 2^32 elements")),
            _ => Err(SpirvError::malformed(
                "an array length that is not a scalar",
            )),
        }
    }

    pub fn name(&self, id: Word) -> Option<&str> {
        self.names
            .get(&id)
            .map(|s| s.as_str())
            .filter(|s| !s.is_empty())
    }

    /// The operands of the first decoration of a kind on an id.
    pub fn decoration(&self, id: Word, d: Decoration) -> Option<&[Operand]> {
        self.decorations
            .get(&id)?
            .iter()
            .find(|(kind, _)| *kind == d)
            .map(|(_, ops)| ops.as_slice())
    }

    pub fn has_decoration(&self, id: Word, d: Decoration) -> bool {
        self.decoration(id, d).is_some()
    }

    /// A decoration's first literal.
    pub fn decoration_u32(&self, id: Word, d: Decoration) -> Option<u32> {
        self.decoration(id, d)?.first().and_then(literal_u32)
    }

    pub fn member_decoration(&self, s: Word, member: u32, d: Decoration) -> Option<&[Operand]> {
        self.member_decorations
            .get(&(s, member))?
            .iter()
            .find(|(kind, _)| *kind == d)
            .map(|(_, ops)| ops.as_slice())
    }

    pub fn member_decoration_u32(&self, s: Word, member: u32, d: Decoration) -> Option<u32> {
        self.member_decoration(s, member, d)?
            .first()
            .and_then(literal_u32)
    }

    /// The built-in a variable or struct member is, if any.
    pub fn builtin(&self, id: Word, member: Option<u32>) -> Option<spirv::BuiltIn> {
        let ops = match member {
            Some(m) => self.member_decoration(id, m, Decoration::BuiltIn)?,
            None => self.decoration(id, Decoration::BuiltIn)?,
        };
        match ops.first() {
            Some(Operand::BuiltIn(b)) => Some(*b),
            _ => None,
        }
    }
}
