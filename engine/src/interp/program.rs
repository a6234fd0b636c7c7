//! Decoding a shader into the form the interpreter executes: per function, a flat register file
//! layout (one `u64` per component, offsets per value), blocks with their non-phi instructions
//! decoded, phi moves per incoming edge, and an execution order used to schedule quads.
//!
//! Decoding never fails: malformed pieces become [`Op::Invalid`] / [`Term::Invalid`], which raise
//! an error only if they are executed.

use super::InterpError;
use super::memory::{Layout, LayoutRule, VarLayout, place_variables};
use crate::cfg::DomTree;
use crate::ir::*;
use shrew_ops::alu::{Axis, DerivativePrecision};
use shrew_ops::{Eval, IndexKind, Intrinsic};
use std::collections::{BinaryHeap, HashMap};

/// A deref value whose array index was out of range: accesses through it are errors.
pub(crate) const PTR_OOB: u64 = 1 << 63;

/// Encodes a deref value: the variable in bits 32–47, the block of an array of blocks in bits
/// 48–62, the byte offset (element index for opaque variables) in bits 0–31.
pub(crate) fn make_ptr(var: u32, offset: u32) -> u64 {
    ((var as u64) << 32) | offset as u64
}

/// The variable of a deref value.
pub(crate) fn ptr_var(p: u64) -> usize {
    ((p >> 32) & 0xffff) as usize
}

/// The block a deref value into an array of blocks points to.
pub(crate) fn ptr_block(p: u64) -> u32 {
    ((p >> BLOCK_SHIFT) & 0x7fff) as u32
}

/// Where the block index sits in a deref value.
pub(crate) const BLOCK_SHIFT: u32 = 48;

/// Registers of a source read through a swizzle.
#[derive(Clone, Debug)]
pub(crate) struct SrcCode {
    pub off: u32,
    pub n: u32,
    pub swizzle: [u8; 16],
}

#[derive(Clone, Debug)]
pub(crate) struct AluCode {
    pub op: shrew_ops::AluOp,
    /// The opcode's evaluation component by component, when it has one (`Eval::Comp`).
    pub per_component: Option<shrew_ops::alu::CompEval>,
    pub dst: u32,
    pub comps: u32,
    pub dst_bits: u8,
    pub srcs: Box<[SrcCode]>,
    pub src_bits: Box<[u8]>,
}

/// A decoded instruction.
#[derive(Clone, Debug)]
pub(crate) enum Op {
    Alu(Box<AluCode>),
    Derivative(Box<AluCode>, Axis, DerivativePrecision),
    Const {
        dst: u32,
        vals: Box<[u64]>,
    },
    Undef {
        dst: u32,
        n: u32,
    },
    DerefVar {
        dst: u32,
        ptr: u64,
    },
    DerefArray {
        dst: u32,
        parent: u32,
        index: u32,
        index_bits: u8,
        stride: u32,
        /// 0 for runtime-sized arrays (checked by the access instead).
        len: u32,
    },
    /// Selects the block of an array-of-blocks variable.
    DerefBlock {
        dst: u32,
        parent: u32,
        index: u32,
        index_bits: u8,
        len: u32,
    },
    DerefStruct {
        dst: u32,
        parent: u32,
        offset: u32,
    },
    /// `load_deref` of a scalar or vector, or `store_deref` of one to a writable variable.
    DerefAccess(Box<DerefAccess>),
    /// Executed from the IR instruction itself.
    Intrinsic(Value),
    /// `sync`: a workgroup execution barrier of a compute shader.
    Barrier {
        sync: bool,
    },
    /// A ballot, vote or read of other invocations: executed for the invocations of a
    /// subgroup that wait at it together (see [`super::launch::resolve`]).
    Subgroup(Value),
    /// `implicit`: needs the quad's coordinates for its LOD.
    Tex {
        value: Value,
        implicit: bool,
    },
    Call {
        func: u32,
        args: Box<[(u32, u32)]>,
        /// Register offset and component count of the result (count 0 without one).
        dst: (u32, u32),
    },
    Invalid(String),
}

/// A `load_deref` or `store_deref` of a scalar or vector, decoded once.
#[derive(Clone, Debug)]
pub(crate) struct DerefAccess {
    /// A `store_deref` (else a `load_deref`).
    pub store: bool,
    pub var: VarId,
    /// The register of the deref value.
    pub ptr: u32,
    /// The loaded value's registers (offset and count; none without a result), or the stored
    /// value's.
    pub data: (u32, u32),
    pub scalar: Scalar,
    /// Components of the pointee.
    pub n: u32,
    /// Bit size of the loaded value.
    pub bits: u8,
    /// Bytes of one component in the variable's memory.
    pub bytes: u32,
    pub write_mask: u32,
}

#[derive(Clone, Debug)]
pub(crate) enum Term {
    Jump(u32),
    Branch { cond: u32, t: u32, f: u32 },
    Return(Option<(u32, u32)>),
    Unreachable,
    Invalid(String),
}

/// Register copies done by the phis of a block when it is entered from `pred`.
#[derive(Clone, Debug)]
pub(crate) struct PhiEdge {
    pub pred: u32,
    /// `(dst, src, count)`, or why the edge has no complete set of phi sources.
    pub moves: Result<Vec<(u32, u32, u32)>, String>,
}

#[derive(Clone, Debug)]
pub(crate) struct BlockCode {
    pub id: BlockId,
    /// Position in the scheduling order (a topological order of the forward CFG in which a
    /// loop's merge block follows its continue block).
    pub order: u32,
    pub vals: Vec<Value>,
    pub ops: Vec<Op>,
    pub phis: Vec<PhiEdge>,
    pub term: Term,
}

pub(crate) struct FuncCode {
    pub reg_off: Vec<u32>,
    pub reg_comps: Vec<u32>,
    pub reg_bits: Vec<u8>,
    pub nregs: usize,
    pub blocks: Vec<BlockCode>,
    pub entry: u32,
    /// The variable and pointee type of each deref value.
    pub derefs: HashMap<Value, (VarId, Type)>,
}

/// A decoded shader.
pub(crate) struct Program<'s> {
    pub shader: &'s Shader,
    pub funcs: Vec<FuncCode>,
    pub vars: Vec<VarLayout>,
    /// The shader's types under [`LayoutRule::Std430`] and [`LayoutRule::Slots`].
    layouts: [Layout<'s>; 2],
    /// Whether the shader has subgroup operations or reads its subgroup's values: then its
    /// invocations run in groups of whole subgroups.
    pub uses_subgroups: bool,
}

/// Whether an instruction of `shader` is a subgroup operation or system value.
fn uses_subgroups(shader: &Shader) -> bool {
    shader.functions.iter().any(|f| {
        f.all_insts().any(|v| match &f.inst(v).kind {
            InstKind::Intrinsic(i) => i.op.is_subgroup(),
            _ => false,
        })
    })
}

impl<'s> Program<'s> {
    /// Lays out the variables and decodes every function; fails when a variable has no layout
    /// or a function has no entry block.
    pub fn new(shader: &'s Shader) -> Result<Program<'s>, InterpError> {
        let layouts = [
            Layout::new(shader, LayoutRule::Std430),
            Layout::new(shader, LayoutRule::Slots),
        ];
        let vars = place_variables(shader, &layouts[0], &layouts[1])?;
        let mut prog = Program {
            shader,
            funcs: Vec::new(),
            vars,
            layouts,
            uses_subgroups: uses_subgroups(shader),
        };
        prog.funcs = shader
            .functions
            .iter()
            .map(|f| decode_function(&prog, f))
            .collect::<Result<_, _>>()
            .map_err(InterpError::Setup)?;
        Ok(prog)
    }

    /// The shader's types under `rule`.
    pub fn layout(&self, rule: LayoutRule) -> &Layout<'s> {
        match rule {
            LayoutRule::Std430 => &self.layouts[0],
            LayoutRule::Slots => &self.layouts[1],
        }
    }

    /// The layout of a variable's types.
    pub fn var_layout(&self, var: VarId) -> &Layout<'s> {
        self.layout(self.vars[var.0 as usize].rule)
    }

    /// Whether some function reads or writes inputs or outputs by location (`load_input`,
    /// `load_output`, `store_output`) rather than through variables.
    pub fn accesses_io_by_location(&self) -> bool {
        self.shader.functions.iter().any(|f| {
            f.insts.iter().flatten().any(|inst| {
                matches!(&inst.kind, InstKind::Intrinsic(ii) if matches!(
                    ii.op,
                    Intrinsic::LoadInput | Intrinsic::LoadOutput | Intrinsic::StoreOutput
                ))
            })
        })
    }
}

/// Most components an ALU instruction reads over all its sources.
pub(crate) const MAX_ALU_READS: usize = 64;

fn decode_function(prog: &Program, func: &Function) -> Result<FuncCode, String> {
    let shader = prog.shader;
    let mut reg_off = vec![0u32; func.insts.len()];
    let mut reg_comps = vec![0u32; func.insts.len()];
    let mut reg_bits = vec![0u8; func.insts.len()];
    let mut nregs = 0usize;
    for (i, inst) in func.insts.iter().enumerate() {
        if let Some(def) = inst.as_ref().and_then(|i| i.def) {
            reg_off[i] = nregs as u32;
            reg_comps[i] = def.comps as u32;
            reg_bits[i] = def.bits;
            nregs += def.comps as usize;
        }
    }
    let ids = func.blocks();
    let local: HashMap<BlockId, u32> = ids
        .iter()
        .enumerate()
        .map(|(i, b)| (*b, i as u32))
        .collect();
    let order = schedule_order(func, &ids);
    let mut code = FuncCode {
        reg_off,
        reg_comps,
        reg_bits,
        nregs,
        blocks: Vec::new(),
        entry: *local
            .get(&func.entry)
            .ok_or_else(|| format!("function {} has no entry block", func.name))?,
        derefs: HashMap::new(),
    };
    for v in func.all_insts() {
        if matches!(
            func.get_inst(v),
            Some(Inst {
                kind: InstKind::Deref(_),
                ..
            })
        ) && let Some(target) = shader.deref_target(func, v)
        {
            code.derefs.insert(v, target);
        }
    }
    let dec = Decoder {
        prog,
        func,
        code: &code,
    };
    let blocks = ids
        .iter()
        .map(|&b| dec.block(b, &local, order[&b]))
        .collect();
    code.blocks = blocks;
    Ok(code)
}

/// Orders blocks for scheduling: Kahn's algorithm on the CFG without back edges (edges to a
/// dominator), plus an edge from each loop's continue block to its merge block, ties broken by
/// reverse post-order. Unreachable blocks come last.
fn schedule_order(func: &Function, ids: &[BlockId]) -> HashMap<BlockId, u32> {
    let dom = DomTree::new(func);
    let mut succs: HashMap<BlockId, Vec<BlockId>> = HashMap::new();
    let mut indeg: HashMap<BlockId, usize> = ids.iter().map(|b| (*b, 0)).collect();
    let mut add = |from: BlockId, to: BlockId, indeg: &mut HashMap<BlockId, usize>| {
        succs.entry(from).or_default().push(to);
        *indeg.get_mut(&to).unwrap() += 1;
    };
    for &b in ids.iter().filter(|b| dom.is_reachable(**b)) {
        for s in func.successors(b) {
            if !dom.dominates(s, b) {
                add(b, s, &mut indeg);
            }
        }
        if let Some(Structure::Loop { merge, cont }) = func.block(b).structure
            && dom.is_reachable(cont)
            && dom.is_reachable(merge)
            && !dom.dominates(merge, cont)
        {
            add(cont, merge, &mut indeg);
        }
    }
    let rpo = |b: BlockId| dom.rpo_index(b).unwrap_or(usize::MAX);
    let mut ready: BinaryHeap<std::cmp::Reverse<(usize, BlockId)>> = BinaryHeap::new();
    ready.push(std::cmp::Reverse((rpo(func.entry), func.entry)));
    let mut order = HashMap::new();
    while let Some(std::cmp::Reverse((_, b))) = ready.pop() {
        if order.contains_key(&b) {
            continue;
        }
        order.insert(b, order.len() as u32);
        for &s in succs.get(&b).into_iter().flatten() {
            let d = indeg.get_mut(&s).unwrap();
            *d -= 1;
            if *d == 0 {
                ready.push(std::cmp::Reverse((rpo(s), s)));
            }
        }
    }
    // Blocks left over (unreachable, or on a malformed cycle) go last in id order.
    for &b in ids {
        let next = order.len() as u32;
        order.entry(b).or_insert(next);
    }
    order
}

struct Decoder<'a> {
    prog: &'a Program<'a>,
    func: &'a Function,
    code: &'a FuncCode,
}

impl Decoder<'_> {
    /// Register offset and count of a value that must exist and have a result.
    fn reg(&self, v: Value) -> Result<(u32, u32), String> {
        match self.func.get_inst(v) {
            Some(Inst { def: Some(d), .. }) if d.comps > 0 => {
                Ok((self.code.reg_off[v.index()], self.code.reg_comps[v.index()]))
            }
            _ => Err(format!("{v} is not a value")),
        }
    }

    fn block(&self, b: BlockId, local: &HashMap<BlockId, u32>, order: u32) -> BlockCode {
        let blk = self.func.block(b);
        let is_phi = |v: &Value| {
            matches!(
                self.func.get_inst(*v),
                Some(Inst {
                    kind: InstKind::Phi(_),
                    ..
                })
            )
        };
        let nphis = blk.insts.iter().take_while(|v| is_phi(v)).count();
        let (phis, rest) = blk.insts.split_at(nphis);
        let mut preds = self.func.predecessors(b);
        preds.dedup();
        let phi_edges = if phis.is_empty() {
            Vec::new()
        } else {
            preds
                .iter()
                .map(|&p| PhiEdge {
                    pred: local[&p],
                    moves: phis.iter().map(|&phi| self.phi_move(phi, p)).collect(),
                })
                .collect()
        };
        let ops = rest
            .iter()
            .map(|&v| {
                if is_phi(&v) {
                    Op::Invalid("phi after a non-phi instruction".into())
                } else {
                    self.op(v).unwrap_or_else(Op::Invalid)
                }
            })
            .collect();
        BlockCode {
            id: b,
            order,
            vals: rest.to_vec(),
            ops,
            phis: phi_edges,
            term: self.term(b, local).unwrap_or_else(Term::Invalid),
        }
    }

    fn phi_move(&self, phi: Value, pred: BlockId) -> Result<(u32, u32, u32), String> {
        let InstKind::Phi(srcs) = &self.func.inst(phi).kind else {
            unreachable!()
        };
        let (_, src) = srcs
            .iter()
            .find(|(p, _)| *p == pred)
            .ok_or_else(|| format!("phi {phi} has no value for b{}", pred.index()))?;
        let (dst, n) = self.reg(phi)?;
        let (src, m) = self.reg(*src)?;
        Ok((dst, src, n.min(m)))
    }

    fn term(&self, b: BlockId, local: &HashMap<BlockId, u32>) -> Result<Term, String> {
        let succ = |kind: Edge| {
            self.func
                .successor(b, kind)
                .map(|s| local[&s])
                .ok_or_else(|| format!("missing {kind:?} successor"))
        };
        Ok(match &self.func.block(b).terminator {
            None => return Err("block has no terminator".into()),
            Some(Terminator::Jump) => Term::Jump(succ(Edge::Jump)?),
            Some(Terminator::Branch { cond }) => Term::Branch {
                cond: self.reg(*cond)?.0,
                t: succ(Edge::True)?,
                f: succ(Edge::False)?,
            },
            Some(Terminator::Return { value }) => {
                Term::Return(value.map(|v| self.reg(v)).transpose()?)
            }
            Some(Terminator::Unreachable) => Term::Unreachable,
        })
    }

    fn dst(&self, v: Value) -> Result<(u32, u32), String> {
        self.reg(v)
    }

    fn op(&self, v: Value) -> Result<Op, String> {
        let inst = self
            .func
            .get_inst(v)
            .ok_or_else(|| format!("{v} was deleted but is still in its block"))?;
        Ok(match &inst.kind {
            InstKind::Alu(alu) => self.alu(v, alu)?,
            InstKind::Const(vals) => {
                let (dst, n) = self.dst(v)?;
                let mut vals = vals.clone();
                vals.resize(n as usize, 0);
                Op::Const {
                    dst,
                    vals: vals.into(),
                }
            }
            InstKind::Undef => {
                let (dst, n) = self.dst(v)?;
                Op::Undef { dst, n }
            }
            InstKind::Phi(_) => unreachable!("phis are decoded per edge"),
            InstKind::Intrinsic(i) => {
                for &s in &i.srcs {
                    self.reg(s)?;
                }
                if i.srcs.len() != i.op.info().srcs.len() {
                    return Err(format!(
                        "{} takes {} sources",
                        i.op.name(),
                        i.op.info().srcs.len()
                    ));
                }
                if matches!(i.op, Intrinsic::LoadDeref | Intrinsic::StoreDeref) {
                    self.deref_access(v, inst, i).unwrap_or_else(Op::Invalid)
                } else if i.op.info().is_cross_invocation() {
                    self.dst(v)?;
                    Op::Subgroup(v)
                } else if i.op == Intrinsic::Barrier {
                    // Scopes: none, invocation, subgroup, workgroup, … (the index's order).
                    let scope = i.index(IndexKind::ExecutionScope).unwrap_or(0);
                    Op::Barrier {
                        sync: self.prog.shader.stage == Stage::Compute && scope >= 3,
                    }
                } else {
                    Op::Intrinsic(v)
                }
            }
            InstKind::Tex(t) => {
                for &(_, s) in &t.srcs {
                    self.reg(s)?;
                }
                self.dst(v)?;
                Op::Tex {
                    value: v,
                    implicit: self.prog.shader.stage == Stage::Fragment
                        && t.op.uses_implicit_derivatives(),
                }
            }
            InstKind::Deref(d) => self.deref(v, d)?,
            InstKind::Call { func, args } => {
                let callee = self
                    .prog
                    .shader
                    .functions
                    .get(func.0 as usize)
                    .ok_or_else(|| format!("no function {}", func.0))?;
                if callee.params.len() != args.len() {
                    return Err(format!(
                        "{} takes {} arguments",
                        callee.name,
                        callee.params.len()
                    ));
                }
                let args = args
                    .iter()
                    .map(|&a| self.reg(a))
                    .collect::<Result<Vec<_>, _>>()?;
                let dst = if inst.def.is_some() {
                    self.dst(v)?
                } else {
                    (0, 0)
                };
                Op::Call {
                    func: func.0,
                    args: args.into(),
                    dst,
                }
            }
        })
    }

    /// A `load_deref` or `store_deref`, or why it cannot execute (the reasons the interpreter
    /// reports when it reaches the instruction).
    fn deref_access(&self, v: Value, inst: &Inst, i: &IntrinsicInst) -> Result<Op, String> {
        let (var, ty) = self
            .code
            .derefs
            .get(&i.srcs[0])
            .cloned()
            .ok_or_else(|| format!("{} is not a well-formed deref", i.srcs[0]))?;
        let variable = self.prog.shader.variable(var);
        let store = i.op == Intrinsic::StoreDeref;
        if store && !variable.mode.is_writable() {
            return Err(format!(
                "write to @{}, a read-only {} variable",
                variable.name,
                variable.mode.name()
            ));
        }
        let (scalar, n) = match ty {
            Type::Scalar(s) => (s, 1),
            Type::Vector(s, n) => (s, n as u32),
            _ => return Err(format!("{} of an aggregate", i.op.name())),
        };
        let data = if store {
            self.reg(i.srcs[1])?
        } else {
            inst.def.map_or(Ok((0, 0)), |_| self.dst(v))?
        };
        Ok(Op::DerefAccess(Box::new(DerefAccess {
            store,
            var,
            ptr: self.reg(i.srcs[0])?.0,
            data,
            scalar,
            n,
            bits: inst.def.map_or(32, |d| d.bits),
            bytes: self.prog.var_layout(var).comp_bytes(scalar),
            write_mask: i.index(IndexKind::WriteMask).unwrap_or(0),
        })))
    }

    fn alu(&self, v: Value, alu: &Alu) -> Result<Op, String> {
        let info = alu.op.info();
        let (dst, comps) = self.dst(v)?;
        if alu.srcs.len() != info.srcs.len() {
            return Err(format!("{} takes {} sources", info.name, info.srcs.len()));
        }
        if comps as usize > shrew_ops::MAX_COMPONENTS {
            return Err("too many components".into());
        }
        let def = self.func.inst(v).def.unwrap();
        let src_bits = alu.src_bit_sizes(self.func, def);
        let mut srcs = Vec::with_capacity(alu.srcs.len());
        for (i, s) in alu.srcs.iter().enumerate() {
            let (off, avail) = self.reg(s.value)?;
            let n = alu.src_components(i, def) as u32;
            if let Some(c) = s.swizzle[..n as usize].iter().find(|&&c| c as u32 >= avail) {
                return Err(format!(
                    "swizzle reads component {c} of {} with {avail}",
                    s.value
                ));
            }
            srcs.push(SrcCode {
                off,
                n,
                swizzle: s.swizzle,
            });
        }
        if srcs.iter().map(|s| s.n as usize).sum::<usize>() > MAX_ALU_READS {
            return Err("too many source components".into());
        }
        let code = Box::new(AluCode {
            op: alu.op,
            per_component: match info.eval {
                Eval::Comp(f) => Some(f),
                _ => None,
            },
            dst,
            comps,
            dst_bits: def.bits,
            srcs: srcs.into(),
            src_bits: src_bits.into(),
        });
        Ok(match info.eval {
            Eval::Derivative { axis, precision } => Op::Derivative(code, axis, precision),
            _ => Op::Alu(code),
        })
    }

    fn deref(&self, v: Value, d: &Deref) -> Result<Op, String> {
        let (dst, _) = self.dst(v)?;
        let parent_info = |p: Value| {
            let (var, ty) = self
                .code
                .derefs
                .get(&p)
                .cloned()
                .ok_or_else(|| format!("{p} is not a well-formed deref"))?;
            Ok::<_, String>((ty, self.prog.var_layout(var), self.reg(p)?.0))
        };
        Ok(match d {
            Deref::Var(var) => {
                if var.0 as usize >= self.prog.vars.len() {
                    return Err(format!("no variable {}", var.0));
                }
                Op::DerefVar {
                    dst,
                    ptr: make_ptr(var.0, 0),
                }
            }
            Deref::Array { parent, index }
                if matches!(
                    self.func.get_inst(*parent).map(|i| &i.kind),
                    Some(InstKind::Deref(Deref::Var(var)))
                        if self.prog.shader.variables[var.0 as usize].array_of_blocks
                ) =>
            {
                let (ty, _, parent) = parent_info(*parent)?;
                let index_bits = self.func.value_type(*index).map_or(32, |t| t.bits);
                let (index, _) = self.reg(*index)?;
                Op::DerefBlock {
                    dst,
                    parent,
                    index,
                    index_bits,
                    len: ty.element_count().unwrap_or(0),
                }
            }
            Deref::Array { parent, index } => {
                let (ty, layout, parent) = parent_info(*parent)?;
                let len = ty
                    .element_count()
                    .ok_or_else(|| "array deref of a type without elements".to_string())?;
                let index_bits = self.func.value_type(*index).map_or(32, |t| t.bits);
                let (index, _) = self.reg(*index)?;
                Op::DerefArray {
                    dst,
                    parent,
                    index,
                    index_bits,
                    stride: layout.array_stride(&ty)?,
                    len,
                }
            }
            Deref::Struct { parent, member } => {
                let (ty, layout, parent) = parent_info(*parent)?;
                let Type::Struct(id) = ty else {
                    return Err("struct deref of a non-struct".into());
                };
                let offset = *layout
                    .member_offsets(id)?
                    .get(*member as usize)
                    .ok_or_else(|| format!("no member {member}"))?;
                Op::DerefStruct {
                    dst,
                    parent,
                    offset,
                }
            }
        })
    }
}
