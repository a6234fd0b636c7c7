//! A builder for passes and front ends, in the spirit of `nir_builder`: it inserts instructions at
//! a cursor, infers result shapes from the opcode tables, and builds structured control flow.

use super::*;
use shrew_ops::eval::fput;

/// Where the builder inserts: before position `pos` of `block`, or at its end.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Cursor {
    pub block: BlockId,
    pub pos: Option<usize>,
}

impl Cursor {
    pub fn at_end(block: BlockId) -> Cursor {
        Cursor { block, pos: None }
    }
}

/// An `if` under construction (see [`Builder::push_if`]).
#[derive(Debug)]
pub struct IfBuilder {
    header: BlockId,
    cond: Value,
    then_block: BlockId,
    else_block: Option<BlockId>,
    merge: BlockId,
    /// Where the `then` side ended, once `push_else` moved on.
    then_end: Option<BlockId>,
}

/// A loop under construction (see [`Builder::push_loop`]).
#[derive(Debug)]
pub struct LoopBuilder {
    pub header: BlockId,
    pub cont: BlockId,
    pub merge: BlockId,
}

/// Inserts instructions into one function of a shader.
pub struct Builder<'a> {
    pub shader: &'a mut Shader,
    pub func: FuncId,
    pub cursor: Cursor,
}

impl<'a> Builder<'a> {
    /// A builder at the end of the entry block of `func`.
    pub fn new(shader: &'a mut Shader, func: FuncId) -> Builder<'a> {
        let entry = shader.functions[func.0 as usize].entry;
        Builder {
            shader,
            func,
            cursor: Cursor::at_end(entry),
        }
    }

    pub fn function(&self) -> &Function {
        &self.shader.functions[self.func.0 as usize]
    }

    pub fn function_mut(&mut self) -> &mut Function {
        &mut self.shader.functions[self.func.0 as usize]
    }

    /// Inserts an instruction at the cursor and moves the cursor past it. Code added after a
    /// block's terminator goes to a fresh block with no predecessors (it is dead).
    pub fn insert(&mut self, kind: InstKind, def: Option<ValType>) -> Value {
        self.ensure_open();
        let Cursor { block, pos } = self.cursor;
        let f = &mut self.shader.functions[self.func.0 as usize];
        let v = f.alloc_inst(Inst { kind, def, block });
        let insts = &mut f.cfg[block].insts;
        match pos {
            Some(pos) => {
                insts.insert(pos, v);
                self.cursor.pos = Some(pos + 1);
            }
            None => insts.push(v),
        }
        v
    }

    fn ensure_open(&mut self) {
        let block = self.cursor.block;
        if self.cursor.pos.is_none() && self.function().cfg[block].terminator.is_some() {
            let fresh = self.function_mut().add_block();
            self.cursor = Cursor::at_end(fresh);
        }
    }

    pub fn value_type(&self, v: Value) -> ValType {
        self.function()
            .value_type(v)
            .expect("builder source has no value")
    }

    /// An ALU instruction on whole values. Per-component sources of one component are
    /// replicated to the instruction's width; the width is the widest per-component source.
    pub fn alu(&mut self, op: AluOp, srcs: &[Value]) -> Value {
        let info = op.info();
        let comps = if info.dst.comps != 0 {
            info.dst.comps
        } else {
            srcs.iter()
                .map(|&s| self.value_type(s).comps)
                .max()
                .unwrap_or(1)
        };
        let alu_srcs: Vec<AluSrc> = srcs
            .iter()
            .zip(info.srcs)
            .map(|(&s, operand)| {
                if operand.comps == 0 && self.value_type(s).comps == 1 {
                    AluSrc::swizzled(s, &[0; 16])
                } else {
                    AluSrc::new(s)
                }
            })
            .collect();
        self.alu_swizzled(op, alu_srcs, comps)
    }

    /// An ALU instruction with explicit swizzles and destination width.
    pub fn alu_swizzled(&mut self, op: AluOp, srcs: Vec<AluSrc>, comps: u8) -> Value {
        let info = op.info();
        let bits = if info.dst.bits != 0 {
            info.dst.bits
        } else {
            srcs.iter()
                .zip(info.srcs)
                .find(|(_, operand)| operand.bits == 0)
                .map(|(s, _)| self.value_type(s.value).bits)
                .unwrap_or(32)
        };
        self.insert(
            InstKind::Alu(Alu {
                op,
                srcs,
                exact: false,
                fp: FpFlags::default(),
            }),
            Some(ValType::new(bits, comps)),
        )
    }

    /// Reads one component of a value.
    pub fn channel(&mut self, v: Value, comp: u8) -> Value {
        self.alu_swizzled(AluOp::Mov, vec![AluSrc::swizzled(v, &[comp])], 1)
    }

    /// Builds a vector from scalars (or returns the scalar).
    pub fn vec(&mut self, comps: &[Value]) -> Value {
        if let [one] = comps {
            return *one;
        }
        let n = comps.len();
        let op = u8::try_from(n)
            .ok()
            .and_then(AluOp::vec_of)
            .unwrap_or_else(|| panic!("no vector constructor for {n} components"));
        self.alu(op, comps)
    }

    pub fn imm(&mut self, bits: u8, comps: &[u64]) -> Value {
        let masked = comps
            .iter()
            .map(|&c| shrew_ops::eval::mask(c, bits))
            .collect();
        self.insert(
            InstKind::Const(masked),
            Some(ValType::new(bits, comps.len() as u8)),
        )
    }

    pub fn imm_float(&mut self, x: f64, bits: u8) -> Value {
        self.imm(bits, &[fput(x, bits)])
    }

    pub fn imm_f32(&mut self, x: f32) -> Value {
        self.imm(32, &[x.to_bits() as u64])
    }

    pub fn imm_vec_f32(&mut self, xs: &[f32]) -> Value {
        let bits: Vec<u64> = xs.iter().map(|x| x.to_bits() as u64).collect();
        self.imm(32, &bits)
    }

    pub fn imm_int(&mut self, x: i64, bits: u8) -> Value {
        self.imm(bits, &[x as u64])
    }

    pub fn imm_u32(&mut self, x: u32) -> Value {
        self.imm(32, &[x as u64])
    }

    pub fn imm_bool(&mut self, b: bool) -> Value {
        self.imm(1, &[b as u64])
    }

    pub fn undef(&mut self, ty: ValType) -> Value {
        self.insert(InstKind::Undef, Some(ty))
    }

    /// An intrinsic with the given indices (the rest are zero).
    pub fn intrinsic(
        &mut self,
        op: Intrinsic,
        srcs: &[Value],
        def: Option<ValType>,
        indices: &[(IndexKind, u32)],
    ) -> Value {
        let mut inst = IntrinsicInst::new(op, srcs.to_vec());
        for &(kind, value) in indices {
            assert!(
                inst.set_index(kind, value),
                "{} has no index {}",
                op.name(),
                kind.name()
            );
        }
        let def = def.or(match op.info().dest {
            shrew_ops::DestShape::Fixed { comps, bits } => Some(ValType::new(bits, comps)),
            _ => None,
        });
        self.insert(InstKind::Intrinsic(inst), def)
    }

    pub fn deref_var(&mut self, var: VarId) -> Value {
        self.insert(InstKind::Deref(Deref::Var(var)), Some(ValType::DEREF))
    }

    pub fn deref_array(&mut self, parent: Value, index: Value) -> Value {
        self.insert(
            InstKind::Deref(Deref::Array { parent, index }),
            Some(ValType::DEREF),
        )
    }

    pub fn deref_struct(&mut self, parent: Value, member: u32) -> Value {
        self.insert(
            InstKind::Deref(Deref::Struct { parent, member }),
            Some(ValType::DEREF),
        )
    }

    /// Loads the scalar or vector a deref points to.
    pub fn load_deref(&mut self, deref: Value) -> Value {
        let func = &self.shader.functions[self.func.0 as usize];
        let ty = self
            .shader
            .deref_target(func, deref)
            .and_then(|(_, ty)| ty.val_type());
        let ty = ty.expect("load_deref of a deref that is not a scalar or vector");
        self.intrinsic(Intrinsic::LoadDeref, &[deref], Some(ty), &[])
    }

    /// Stores the components of `value` selected by `write_mask`.
    pub fn store_deref(&mut self, deref: Value, value: Value, write_mask: u32) {
        self.intrinsic(
            Intrinsic::StoreDeref,
            &[deref, value],
            None,
            &[(IndexKind::WriteMask, write_mask)],
        );
    }

    /// Stores every component of `value`.
    pub fn store_deref_all(&mut self, deref: Value, value: Value) {
        let comps = self.value_type(value).comps as u32;
        self.store_deref(deref, value, (1 << comps) - 1);
    }

    pub fn copy_deref(&mut self, dst: Value, src: Value) {
        self.intrinsic(Intrinsic::CopyDeref, &[dst, src], None, &[]);
    }

    pub fn tex(&mut self, tex: Tex, def: ValType) -> Value {
        self.insert(InstKind::Tex(tex), Some(def))
    }

    pub fn call(&mut self, func: FuncId, args: &[Value]) -> Option<Value> {
        let ret = self.shader.functions[func.0 as usize].ret;
        let v = self.insert(
            InstKind::Call {
                func,
                args: args.to_vec(),
            },
            ret,
        );
        ret.map(|_| v)
    }

    /// A phi at the top of the cursor's block.
    pub fn phi(&mut self, def: ValType, srcs: Vec<(BlockId, Value)>) -> Value {
        let block = self.cursor.block;
        let f = self.function_mut();
        let v = f.alloc_inst(Inst {
            kind: InstKind::Phi(srcs),
            def: Some(def),
            block,
        });
        let insts = &mut f.cfg[block].insts;
        let first_non_phi = insts
            .iter()
            .position(|&i| !matches!(f.insts[i.index()].as_ref().unwrap().kind, InstKind::Phi(_)));
        insts.insert(first_non_phi.unwrap_or(insts.len()), v);
        if let Some(pos) = &mut self.cursor.pos {
            *pos += 1;
        }
        v
    }

    fn is_open(&self, b: BlockId) -> bool {
        self.function().cfg[b].terminator.is_none()
    }

    /// Ends the current block with a jump and continues in `target`.
    pub fn jump(&mut self, target: BlockId) {
        self.ensure_open();
        let block = self.cursor.block;
        self.function_mut().set_jump(block, target);
    }

    /// Ends the current block with `return`.
    pub fn ret(&mut self, value: Option<Value>) {
        self.ensure_open();
        let block = self.cursor.block;
        self.function_mut()
            .set_exit(block, Terminator::Return { value });
    }

    /// Starts `if (cond)`: the cursor moves into the `then` side.
    pub fn push_if(&mut self, cond: Value) -> IfBuilder {
        self.ensure_open();
        let header = self.cursor.block;
        let f = self.function_mut();
        let then_block = f.add_block();
        let merge = f.add_block();
        f.set_branch(header, cond, then_block, merge);
        f.cfg[header].structure = Some(Structure::Selection { merge });
        self.cursor = Cursor::at_end(then_block);
        IfBuilder {
            header,
            cond,
            then_block,
            else_block: None,
            merge,
            then_end: None,
        }
    }

    /// Moves to the `else` side of an `if`.
    pub fn push_else(&mut self, nif: &mut IfBuilder) {
        assert!(nif.else_block.is_none(), "push_else twice");
        nif.then_end = Some(self.cursor.block);
        let f = self.function_mut();
        let else_block = f.add_block();
        f.set_branch(nif.header, nif.cond, nif.then_block, else_block);
        nif.else_block = Some(else_block);
        self.cursor = Cursor::at_end(else_block);
    }

    /// Closes an `if`: open sides jump to the merge block, where the cursor continues.
    pub fn pop_if(&mut self, nif: IfBuilder) {
        let current = self.cursor.block;
        for end in [nif.then_end, Some(current)].into_iter().flatten() {
            if self.is_open(end) {
                self.function_mut().set_jump(end, nif.merge);
            }
        }
        self.cursor = Cursor::at_end(nif.merge);
    }

    /// Starts a loop: the cursor moves into its body.
    pub fn push_loop(&mut self) -> LoopBuilder {
        self.ensure_open();
        let pre = self.cursor.block;
        let f = self.function_mut();
        let header = f.add_block();
        let body = f.add_block();
        let cont = f.add_block();
        let merge = f.add_block();
        f.set_jump(pre, header);
        f.set_jump(header, body);
        f.set_jump(cont, header);
        f.cfg[header].structure = Some(Structure::Loop { merge, cont });
        self.cursor = Cursor::at_end(body);
        LoopBuilder {
            header,
            cont,
            merge,
        }
    }

    /// `break`: jumps to the loop's merge block.
    pub fn break_loop(&mut self, lp: &LoopBuilder) {
        self.jump(lp.merge);
    }

    /// `continue`: jumps to the loop's continue block.
    pub fn continue_loop(&mut self, lp: &LoopBuilder) {
        self.jump(lp.cont);
    }

    /// Closes a loop body (falling through continues) and moves after the loop.
    pub fn pop_loop(&mut self, lp: LoopBuilder) {
        let current = self.cursor.block;
        if self.is_open(current) {
            self.function_mut().set_jump(current, lp.cont);
        }
        self.cursor = Cursor::at_end(lp.merge);
    }
}
