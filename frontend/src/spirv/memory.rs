//! Memory access: pointers as IR deref chains (with row-major matrices, blocks split into a
//! variable per member, and built-in inputs), loads and stores through them member by member,
//! atomics and barriers, kept apart from the functions, blocks and calls of
//! [`super::function`].

use super::function::{Translator, Val, describe, expect_ssa};
use super::module::{id, result_type};
use super::types::SpvType;
use super::{Inst, Result, SpirvError};
use rspirv::spirv::{self, BuiltIn, Decoration, Op, Word};
use shrew_engine::ir::{Value, VarId};
use shrew_engine::ops::{AluOp, IndexKind, Intrinsic};

/// A pointer.
#[derive(Clone, Debug)]
pub enum Ptr {
    /// A deref chain into an IR variable.
    Deref(Value),
    /// A built-in input, read as a system value; the indices chosen so far.
    Builtin { builtin: BuiltIn, path: Vec<Value> },
    /// A block split into one variable per member (built-in outputs, or interface blocks whose
    /// members interpolate their own ways), with the indices chosen so far in an array of
    /// such blocks: member `j` of that element is `vars[j]` at those indices.
    Split {
        vars: Vec<VarId>,
        indices: Vec<Value>,
    },
    /// A deref of a row-major matrix (or an array of them), which the IR holds as its rows.
    RowMajor(Value),
    /// Column `column` of a row-major matrix: component `column` of each row of `rows`.
    RowMajorColumn { rows: Value, column: Value },
}

impl Translator<'_> {
    pub fn access_chain(&mut self, base: Ptr, base_ty: Word, indices: &[Word]) -> Result<Ptr> {
        let mut p = base;
        let mut ty = base_ty;
        let mut indices = indices;
        // An array of arrays of blocks is one array in the IR, its elements in row-major
        // order (as GL numbers their bindings): the indices over its dimensions make one.
        if let Some((dims, block)) = self.nested_block_array(base_ty)? {
            let Ptr::Deref(d) = p else {
                return Err(SpirvError::malformed(
                    "an array of blocks that is not a variable",
                ));
            };
            if indices.len() < dims.len() {
                return Err(SpirvError::unsupported(
                    "a pointer to an array inside an array of arrays of blocks",
                ));
            }
            let mut flat = self.index32(indices[0])?;
            for (k, &len) in dims.iter().enumerate().skip(1) {
                let len = self.builder().imm_u32(len);
                let scaled = self.builder().alu(AluOp::Imul, &[flat, len]);
                let i = self.index32(indices[k])?;
                flat = self.builder().alu(AluOp::Iadd, &[scaled, i]);
            }
            p = Ptr::Deref(self.builder().deref_array(d, flat));
            ty = block;
            indices = &indices[dims.len()..];
        }
        for &index in indices {
            let is_struct = matches!(self.module.ty(ty)?, SpvType::Struct { .. });
            let next_ty = if is_struct {
                self.element_type(ty, self.const_u32(index)?)?
            } else {
                self.element_type(ty, 0)?
            };
            p = match p {
                Ptr::Deref(d) if is_struct => {
                    let member = self.const_u32(index)?;
                    let e = self.builder().deref_struct(d, member);
                    if self.is_row_major(ty, member) {
                        Ptr::RowMajor(e)
                    } else {
                        Ptr::Deref(e)
                    }
                }
                Ptr::Deref(d) => {
                    let i = self.index32(index)?;
                    Ptr::Deref(self.builder().deref_array(d, i))
                }
                Ptr::RowMajor(d) => {
                    let i = self.index32(index)?;
                    match self.module.ty(ty)? {
                        SpvType::Matrix { .. } => Ptr::RowMajorColumn { rows: d, column: i },
                        SpvType::Array { .. } | SpvType::RuntimeArray { .. } => {
                            Ptr::RowMajor(self.builder().deref_array(d, i))
                        }
                        _ => return Err(SpirvError::malformed("RowMajor on a non-matrix member")),
                    }
                }
                Ptr::RowMajorColumn { rows, column } => {
                    let r = self.index32(index)?;
                    let row = self.builder().deref_array(rows, r);
                    Ptr::Deref(self.builder().deref_array(row, column))
                }
                Ptr::Split { vars, mut indices } if !is_struct => {
                    indices.push(self.index32(index)?);
                    Ptr::Split { vars, indices }
                }
                Ptr::Split { vars, indices } => {
                    let member = self.const_u32(index)?;
                    let var = *vars
                        .get(member as usize)
                        .ok_or_else(|| SpirvError::malformed("a member index out of range"))?;
                    Ptr::Deref(self.split_member(var, &indices))
                }
                Ptr::Builtin { builtin, mut path } => {
                    path.push(self.index32(index)?);
                    Ptr::Builtin { builtin, path }
                }
            };
            ty = next_ty;
        }
        Ok(p)
    }

    /// The lengths of the dimensions of an array of arrays of blocks (outermost first) and its
    /// block type; `None` for other types, one-dimensional arrays of blocks among them.
    pub fn nested_block_array(&self, ty: Word) -> Result<Option<(Vec<u32>, Word)>> {
        let mut dims = Vec::new();
        let mut elem_ty = ty;
        while let SpvType::Array { elem, len } = self.module.ty(elem_ty)? {
            dims.push(self.module.array_len(*len)?);
            elem_ty = *elem;
        }
        let block = [Decoration::Block, Decoration::BufferBlock]
            .iter()
            .any(|&d| self.module.has_decoration(elem_ty, d));
        Ok((dims.len() > 1 && block).then_some((dims, elem_ty)))
    }

    /// Loads a value of type `ty` through a pointer, member by member for composites.
    pub fn load(&mut self, ptr: &Ptr, ty: Word) -> Result<Val> {
        match ptr {
            Ptr::Deref(d) => self.load_deref(*d, ty),
            Ptr::Split { vars, indices } => {
                let types = self.split_member_types(ty)?;
                let mut out = Vec::new();
                for (&var, t) in vars.iter().zip(types) {
                    let d = self.split_member(var, indices);
                    out.push(self.load_deref(d, t)?);
                }
                Ok(Val::Composite(out))
            }
            Ptr::Builtin { builtin, path } => self.load_builtin(*builtin, path),
            Ptr::RowMajor(d) => self.load_row_major(*d, ty),
            Ptr::RowMajorColumn { rows, column } => {
                let (elem, n) = self.vector_parts(ty)?;
                let mut comps = Vec::new();
                for r in 0..n {
                    let e = self.row_major_element(*rows, r, *column);
                    comps.push(expect_ssa(&self.load_deref(e, elem)?)?);
                }
                Ok(Val::Ssa(self.builder().vec(&comps)))
            }
        }
    }

    /// The member types of a split block, which is loaded and stored one block at a time.
    fn split_member_types(&self, ty: Word) -> Result<Vec<Word>> {
        match self.module.ty(ty)? {
            SpvType::Struct { members } => Ok(members.clone()),
            _ => Err(SpirvError::unsupported(
                "a whole array of blocks whose members interpolate their own ways",
            )),
        }
    }

    /// The deref of a split block's member variable at the indices of an array of blocks.
    fn split_member(&mut self, var: VarId, indices: &[Value]) -> Value {
        let mut d = self.in_consts(|b| b.deref_var(var));
        for &i in indices {
            d = self.builder().deref_array(d, i);
        }
        d
    }

    /// Whether member `member` of struct type `ty` holds row-major matrices.
    fn is_row_major(&self, ty: Word, member: u32) -> bool {
        self.module
            .member_decoration(ty, member, Decoration::RowMajor)
            .is_some()
    }

    /// The component type and count of a vector type.
    fn vector_parts(&self, ty: Word) -> Result<(Word, u32)> {
        match self.module.ty(ty)? {
            SpvType::Vector { elem, n } => Ok((*elem, *n as u32)),
            _ => Err(SpirvError::malformed(
                "a matrix column that is not a vector",
            )),
        }
    }

    /// The deref of element (`row`, `column`) of a row-major matrix.
    fn row_major_element(&mut self, rows: Value, row: u32, column: Value) -> Value {
        let r = self.builder().imm_u32(row);
        let row = self.builder().deref_array(rows, r);
        self.builder().deref_array(row, column)
    }

    /// Loads a row-major matrix (or an array of them): its rows, transposed into columns.
    fn load_row_major(&mut self, d: Value, ty: Word) -> Result<Val> {
        match self.module.ty(ty)?.clone() {
            SpvType::Matrix { col, cols } => {
                let (_, rows) = self.vector_parts(col)?;
                let bits = self.val_type(col)?.bits;
                let row_values: Vec<Value> = (0..rows)
                    .map(|r| {
                        let e = self.child_deref(d, false, r);
                        let vt = shrew_engine::ir::ValType::new(bits, cols);
                        self.builder()
                            .intrinsic(Intrinsic::LoadDeref, &[e], Some(vt), &[])
                    })
                    .collect();
                let columns = (0..cols)
                    .map(|c| {
                        let comps: Vec<Value> = row_values
                            .iter()
                            .map(|&row| self.builder().channel(row, c))
                            .collect();
                        Val::Ssa(self.builder().vec(&comps))
                    })
                    .collect();
                Ok(Val::Composite(columns))
            }
            SpvType::Array { elem, len } => {
                let mut out = Vec::new();
                for i in 0..self.module.array_len(len)? {
                    let e = self.child_deref(d, false, i);
                    out.push(self.load_row_major(e, elem)?);
                }
                Ok(Val::Composite(out))
            }
            _ => Err(SpirvError::malformed("RowMajor on a non-matrix member")),
        }
    }

    /// Stores a row-major matrix (or an array of them): its columns, transposed into rows.
    fn store_row_major(&mut self, d: Value, ty: Word, v: &Val) -> Result<()> {
        let Val::Composite(parts) = v else {
            return Err(SpirvError::malformed("a stored value of the wrong shape"));
        };
        match self.module.ty(ty)?.clone() {
            SpvType::Matrix { col, cols } if parts.len() == cols as usize => {
                let (_, rows) = self.vector_parts(col)?;
                let columns = parts.iter().map(expect_ssa).collect::<Result<Vec<_>>>()?;
                for r in 0..rows {
                    let comps: Vec<Value> = columns
                        .iter()
                        .map(|&c| self.builder().channel(c, r as u8))
                        .collect();
                    let row = self.builder().vec(&comps);
                    let e = self.child_deref(d, false, r);
                    self.builder().store_deref_all(e, row);
                }
                Ok(())
            }
            SpvType::Array { elem, len } if parts.len() as u32 == self.module.array_len(len)? => {
                for (i, part) in parts.iter().enumerate() {
                    let e = self.child_deref(d, false, i as u32);
                    self.store_row_major(e, elem, part)?;
                }
                Ok(())
            }
            _ => Err(SpirvError::malformed("a stored value of the wrong shape")),
        }
    }

    fn load_deref(&mut self, d: Value, ty: Word) -> Result<Val> {
        let t = self.module.ty(ty)?.clone();
        match t {
            SpvType::Image(_) | SpvType::Sampler => Ok(Val::Handle(d)),
            SpvType::SampledImage { .. } => Ok(Val::Sampled {
                texture: d,
                sampler: None,
            }),
            SpvType::Matrix { .. } | SpvType::Array { .. } | SpvType::Struct { .. } => {
                let is_struct = matches!(t, SpvType::Struct { .. });
                let mut out = Vec::new();
                for (i, et) in self.member_types(ty)?.into_iter().enumerate() {
                    let i = i as u32;
                    let e = self.child_deref(d, is_struct, i);
                    out.push(if is_struct && self.is_row_major(ty, i) {
                        self.load_row_major(e, et)?
                    } else {
                        self.load_deref(e, et)?
                    });
                }
                Ok(Val::Composite(out))
            }
            SpvType::RuntimeArray { .. } => {
                Err(SpirvError::malformed("loading a whole runtime-sized array"))
            }
            _ => {
                let vt = self.val_type(ty)?;
                Ok(Val::Ssa(self.builder().intrinsic(
                    Intrinsic::LoadDeref,
                    &[d],
                    Some(vt),
                    &[],
                )))
            }
        }
    }

    /// The deref of member or element `i` of a struct or array (matrix) deref.
    fn child_deref(&mut self, d: Value, is_struct: bool, i: u32) -> Value {
        if is_struct {
            self.builder().deref_struct(d, i)
        } else {
            let idx = self.builder().imm_u32(i);
            self.builder().deref_array(d, idx)
        }
    }

    /// Stores a value of type `ty` through a pointer, member by member for composites.
    pub fn store(&mut self, ptr: &Ptr, ty: Word, v: &Val) -> Result<()> {
        match ptr {
            Ptr::Deref(d) => self.store_deref(*d, ty, v),
            Ptr::Split { vars, indices } => {
                let Val::Composite(parts) = v else {
                    return Err(SpirvError::malformed("storing a non-composite to a block"));
                };
                let types = self.split_member_types(ty)?;
                for ((&var, t), part) in vars.iter().zip(types).zip(parts) {
                    let d = self.split_member(var, indices);
                    self.store_deref(d, t, part)?;
                }
                Ok(())
            }
            Ptr::Builtin { .. } => Err(SpirvError::malformed("a store to a built-in input")),
            Ptr::RowMajor(d) => self.store_row_major(*d, ty, v),
            Ptr::RowMajorColumn { rows, column } => {
                let (_, n) = self.vector_parts(ty)?;
                let column_value = expect_ssa(v)?;
                for r in 0..n {
                    let comp = self.builder().channel(column_value, r as u8);
                    let e = self.row_major_element(*rows, r, *column);
                    self.builder().store_deref_all(e, comp);
                }
                Ok(())
            }
        }
    }

    fn store_deref(&mut self, d: Value, ty: Word, v: &Val) -> Result<()> {
        match v {
            Val::Ssa(value) => {
                let comps = self.builder().value_type(*value).comps as u32;
                self.builder().store_deref(d, *value, (1u32 << comps) - 1);
                Ok(())
            }
            Val::Composite(parts) => {
                let is_struct = matches!(self.module.ty(ty)?, SpvType::Struct { .. });
                let types = self.member_types(ty)?;
                if types.len() != parts.len() {
                    return Err(SpirvError::malformed("a stored value of the wrong shape"));
                }
                for (i, (part, et)) in parts.iter().zip(types).enumerate() {
                    let i = i as u32;
                    let e = self.child_deref(d, is_struct, i);
                    if is_struct && self.is_row_major(ty, i) {
                        self.store_row_major(e, et, part)?;
                    } else {
                        self.store_deref(e, et, part)?;
                    }
                }
                Ok(())
            }
            other => Err(SpirvError::unsupported(format!(
                "storing {} to memory",
                describe(other)
            ))),
        }
    }

    /// Reads a built-in input as a system value, then selects along the access chain.
    fn load_builtin(&mut self, builtin: BuiltIn, path: &[Value]) -> Result<Val> {
        use shrew_engine::ops::AluOp;
        let load = |translator: &mut Self, op: Intrinsic| {
            translator.builder().intrinsic(op, &[], None, &[])
        };
        let v = match builtin {
            BuiltIn::FragCoord => load(self, Intrinsic::LoadFragCoord),
            BuiltIn::FrontFacing => load(self, Intrinsic::LoadFrontFace),
            BuiltIn::PointCoord => load(self, Intrinsic::LoadPointCoord),
            BuiltIn::SampleId => load(self, Intrinsic::LoadSampleId),
            BuiltIn::HelperInvocation => load(self, Intrinsic::IsHelperInvocation),
            BuiltIn::VertexId | BuiltIn::VertexIndex => load(self, Intrinsic::LoadVertexId),
            BuiltIn::InstanceId => load(self, Intrinsic::LoadInstanceId),
            BuiltIn::InstanceIndex => {
                let id = load(self, Intrinsic::LoadInstanceId);
                let base = load(self, Intrinsic::LoadBaseInstance);
                self.builder().alu(AluOp::Iadd, &[id, base])
            }
            BuiltIn::BaseVertex => load(self, Intrinsic::LoadBaseVertex),
            BuiltIn::BaseInstance => load(self, Intrinsic::LoadBaseInstance),
            BuiltIn::DrawIndex => load(self, Intrinsic::LoadDrawId),
            BuiltIn::PrimitiveId => load(self, Intrinsic::LoadPrimitiveId),
            BuiltIn::InvocationId => load(self, Intrinsic::LoadInvocationId),
            BuiltIn::LocalInvocationId => load(self, Intrinsic::LoadLocalInvocationId),
            BuiltIn::LocalInvocationIndex => load(self, Intrinsic::LoadLocalInvocationIndex),
            BuiltIn::GlobalInvocationId => load(self, Intrinsic::LoadGlobalInvocationId),
            BuiltIn::WorkgroupId => load(self, Intrinsic::LoadWorkgroupId),
            BuiltIn::NumWorkgroups => load(self, Intrinsic::LoadNumWorkgroups),
            BuiltIn::WorkgroupSize => load(self, Intrinsic::LoadWorkgroupSize),
            BuiltIn::SubgroupLocalInvocationId => load(self, Intrinsic::LoadSubgroupInvocation),
            BuiltIn::SubgroupSize => load(self, Intrinsic::LoadSubgroupSize),
            BuiltIn::SubgroupEqMask => load(self, Intrinsic::LoadSubgroupEqMask),
            BuiltIn::SubgroupGeMask => load(self, Intrinsic::LoadSubgroupGeMask),
            BuiltIn::SubgroupGtMask => load(self, Intrinsic::LoadSubgroupGtMask),
            BuiltIn::SubgroupLeMask => load(self, Intrinsic::LoadSubgroupLeMask),
            BuiltIn::SubgroupLtMask => load(self, Intrinsic::LoadSubgroupLtMask),
            other => {
                return Err(SpirvError::unsupported(format!(
                    "the built-in input {other:?}"
                )));
            }
        };
        match path {
            [] => Ok(Val::Ssa(v)),
            [i] => Ok(Val::Ssa(self.extract_dynamic(v, *i))),
            _ => Err(SpirvError::malformed(
                "indexing a built-in input too deeply",
            )),
        }
    }

    /// Whether stores through a pointer are allowed.
    pub fn is_writable(&self, p: &Ptr) -> bool {
        match p {
            Ptr::Deref(d) | Ptr::RowMajor(d) | Ptr::RowMajorColumn { rows: d, .. } => self
                .shader
                .deref_target(self.func(), *d)
                .is_some_and(|(var, _)| self.shader.variable(var).mode.is_writable()),
            Ptr::Split { vars, .. } => vars
                .first()
                .is_some_and(|&var| self.shader.variable(var).mode.is_writable()),
            Ptr::Builtin { .. } => false,
        }
    }

    pub fn barrier(&mut self, inst: &Inst) -> Result<()> {
        let control = inst.inst.class.opcode == Op::ControlBarrier;
        let (exec, mem, sem) = if control {
            (
                self.const_u32(id(inst, 0)?)?,
                self.const_u32(id(inst, 1)?)?,
                self.const_u32(id(inst, 2)?)?,
            )
        } else {
            (
                spirv::Scope::Invocation as u32,
                self.const_u32(id(inst, 0)?)?,
                self.const_u32(id(inst, 1)?)?,
            )
        };
        let scope = |s: u32| match s {
            0 | 5 => 4, // cross-device, queue family → queue_family
            1 => 5,     // device
            2 => 3,     // workgroup
            3 => 2,     // subgroup
            _ => 1,     // invocation
        };
        let sem_flags = spirv::MemorySemantics::from_bits_truncate(sem);
        let mut semantics = 0;
        use spirv::MemorySemantics as S;
        if sem_flags.intersects(S::ACQUIRE | S::ACQUIRE_RELEASE | S::SEQUENTIALLY_CONSISTENT) {
            semantics |= 1;
        }
        if sem_flags.intersects(S::RELEASE | S::ACQUIRE_RELEASE | S::SEQUENTIALLY_CONSISTENT) {
            semantics |= 2;
        }
        let mut modes = 0;
        if sem_flags.intersects(S::UNIFORM_MEMORY) {
            modes |= 1;
        }
        if sem_flags.intersects(S::WORKGROUP_MEMORY) {
            modes |= 4;
        }
        if sem_flags.intersects(S::IMAGE_MEMORY) {
            modes |= 2;
        }
        let exec_scope = if control { scope(exec) } else { 0 };
        let mem_scope = if sem_flags.is_empty() { 0 } else { scope(mem) };
        self.builder().intrinsic(
            Intrinsic::Barrier,
            &[],
            None,
            &[
                (IndexKind::ExecutionScope, exec_scope),
                (IndexKind::MemoryScope, mem_scope),
                (IndexKind::MemorySemantics, semantics),
                (IndexKind::MemoryModes, modes),
            ],
        );
        Ok(())
    }

    /// Atomic instructions on pointers (buffers, shared memory) and image texels.
    pub fn atomic(&mut self, inst: &Inst) -> Result<bool> {
        use Op::*;
        let op = inst.inst.class.opcode;
        let kind = match op {
            AtomicIAdd | AtomicISub => 0,
            AtomicSMin => 1,
            AtomicUMin => 2,
            AtomicSMax => 3,
            AtomicUMax => 4,
            AtomicAnd => 5,
            AtomicOr => 6,
            AtomicXor => 7,
            AtomicExchange => 8,
            AtomicCompareExchange => 9,
            AtomicFAddEXT => 10,
            AtomicIIncrement | AtomicIDecrement | AtomicLoad | AtomicStore => 0,
            _ => return Ok(false),
        };
        let ptr_id = id(inst, 0)?;
        let target = self.val(ptr_id)?;
        if op == AtomicStore {
            let v = self.val(id(inst, 3)?)?;
            let ty = self.type_of(id(inst, 3)?)?;
            let Val::Ptr(p) = target else {
                return Err(SpirvError::unsupported("atomic stores to images"));
            };
            return self.store(&p, ty, &v).map(|_| true);
        }
        let ty = result_type(inst)?;
        let vt = self.val_type(ty)?;
        if op == AtomicLoad {
            let Val::Ptr(p) = target else {
                return Err(SpirvError::unsupported("atomic loads of images"));
            };
            let v = self.load(&p, ty)?;
            self.set(inst, v)?;
            return Ok(true);
        }
        // Data operands come after the pointer, scope and semantics (two for compare-exchange).
        let mut data = match op {
            AtomicIIncrement | AtomicIDecrement => {
                let one = self.builder().imm(vt.bits, &[1]);
                vec![one]
            }
            AtomicCompareExchange => {
                // SPIR-V gives (value, comparator); the IR swap takes (compare, new).
                let value = self.ssa(id(inst, 4)?)?;
                let comparator = self.ssa(id(inst, 5)?)?;
                vec![comparator, value]
            }
            _ => vec![self.ssa(id(inst, 3)?)?],
        };
        if matches!(op, AtomicISub | AtomicIDecrement) {
            data[0] = self
                .builder()
                .alu(shrew_engine::ops::AluOp::Ineg, &[data[0]]);
        }
        let swap = data.len() == 2;
        let v = match target {
            Val::Ptr(Ptr::Deref(d)) => {
                let intr = if swap {
                    Intrinsic::DerefAtomicSwap
                } else {
                    Intrinsic::DerefAtomic
                };
                let mut srcs = vec![d];
                srcs.extend(data);
                self.builder()
                    .intrinsic(intr, &srcs, Some(vt), &[(IndexKind::AtomicOp, kind)])
            }
            Val::Texel {
                image,
                coord,
                sample,
            } => {
                let intr = if swap {
                    Intrinsic::ImageDerefAtomicSwap
                } else {
                    Intrinsic::ImageDerefAtomic
                };
                let (dim, arrayed) = self.image_dim(image)?;
                let mut srcs = vec![image, coord, sample];
                srcs.extend(data);
                self.builder().intrinsic(
                    intr,
                    &srcs,
                    Some(vt),
                    &[
                        (IndexKind::AtomicOp, kind),
                        (IndexKind::ImageDim, dim.index_value()),
                        (IndexKind::ImageArray, arrayed as u32),
                    ],
                )
            }
            other => {
                return Err(SpirvError::unsupported(format!(
                    "atomics on {}",
                    describe(&other)
                )));
            }
        };
        self.set(inst, Val::Ssa(v))?;
        Ok(true)
    }
}
