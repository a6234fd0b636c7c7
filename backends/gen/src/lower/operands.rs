//! The building blocks every other part lowers with: the virtual registers of values'
//! components, sources (immediates, push constants, registers), and instructions over the
//! dispatch width or one group of channels, immediates only where the hardware takes them.

use super::Lowering;
use super::payload::push_location;
use crate::isa::{CondMod, MathFn, Opcode, Type};
use crate::lir::{Base, Inst, Operand, Src, VReg};
use crate::simd_width::part;
use shrew_engine::ir::{AluSrc, InstKind, IntrinsicInst, Value};
use shrew_engine::ops::Intrinsic;
use shrew_engine::out_of_ssa::Reg;

impl Lowering<'_> {
    /// GRFs of one 32-bit component at the dispatch width.
    fn comp_regs(&self) -> u32 {
        self.width as u32 / 8
    }

    pub(super) fn emit(&mut self, inst: Inst) {
        self.program.insts.push(inst);
    }

    /// A SIMD instruction over the dispatch width.
    pub(super) fn op(&mut self, op: Opcode, dst: Operand, srcs: Vec<Src>) -> &mut Inst {
        let inst = Inst::new(op, self.width, Some(dst), srcs);
        self.program.insts.push(inst);
        self.program.insts.last_mut().expect("just pushed")
    }

    /// A fresh register of `comps` 32-bit components.
    pub(super) fn temp(&mut self, comps: u32) -> VReg {
        let size = comps * self.comp_regs();
        self.program.new_vreg(size)
    }

    pub(super) fn temp_operand(&mut self, ty: Type) -> Operand {
        let r = self.temp(ty.size().div_ceil(4) as u32);
        Operand::vector(r, 0, ty)
    }

    /// The virtual register of component `c` of shrew register `reg`. Components get registers
    /// of their own, so that each can be allocated, and coalesced into a payload, alone.
    pub(super) fn vreg(&mut self, reg: Reg, c: u8) -> VReg {
        if let Some(&v) = self.vregs.get(&(reg, c)) {
            return v;
        }
        let v = self.temp(self.regs.reg_shape(reg).bits.div_ceil(32).max(1) as u32);
        self.vregs.insert((reg, c), v);
        v
    }

    /// Component `c` of value `v`'s register, as `ty`.
    pub(super) fn comp(&mut self, v: Value, c: u8, ty: Type) -> Operand {
        if let Some((staged, temps)) = &self.staged
            && *staged == v
        {
            return Operand::vector(temps[c as usize], 0, ty);
        }
        let reg = self.vreg(self.regs.reg_of(v), c);
        Operand::vector(reg, 0, ty)
    }

    /// Whether `v` is a 64-bit value: each component two dwords.
    pub(super) fn is_wide(&self, v: Value) -> bool {
        self.func.value_type(v).is_some_and(|t| t.bits == 64)
    }

    /// Component `c` of a value as a source: an immediate for 32-bit constants (64-bit ones
    /// only `mov` takes: their register), the push constant for uniforms at constant offsets,
    /// else its register.
    pub(super) fn read(&mut self, v: Value, c: u8, ty: Type) -> Src {
        let size = if self.is_wide(v) { 8 } else { 4 };
        match &self.func.inst(v).kind {
            InstKind::Const(_) if size == 8 => Src::Reg(self.comp(v, c, ty)),
            InstKind::Const(values) => {
                let bits = values[c as usize];
                let bits = if self.func.inst(v).def.is_some_and(|d| d.bits == 1) {
                    if bits & 1 != 0 { u32::MAX as u64 } else { 0 }
                } else {
                    bits & 0xFFFF_FFFF
                };
                Src::Imm(ty, bits)
            }
            InstKind::Intrinsic(ii)
                if matches!(ii.op, Intrinsic::LoadUniform | Intrinsic::LoadUbo) =>
            {
                match self.push_constant(v, ii) {
                    Some((binding, offset)) => {
                        let (grf, byte) = self
                            .payload
                            .pushed(binding, offset + size * c as u32)
                            .expect("planned with the payload");
                        Src::Reg(Operand::scalar(Base::Fixed(grf), byte, ty))
                    }
                    None => Src::Reg(self.comp(v, c, ty)),
                }
            }
            _ => Src::Reg(self.comp(v, c, ty)),
        }
    }

    /// Dword `k` of `v` as a destination: component `k` of a 32-bit value; of a 64-bit one
    /// the low (`k` even) or high half of component `k / 2`.
    pub(super) fn dword(&mut self, v: Value, k: u8) -> Operand {
        if !self.is_wide(v) {
            return self.comp(v, k, Type::UD);
        }
        let whole = self.comp(v, k / 2, Type::UQ);
        let reg = whole.vreg().expect("values live in virtual registers");
        Operand::half_of_wide(reg, whole.offset, k as u32 % 2)
    }

    /// Dword `k` of `v` as a source (see [`Lowering::dword`]): constants as immediates, pushed
    /// uniforms as their dword of the payload.
    pub(super) fn read_dword(&mut self, v: Value, k: u8) -> Src {
        if !self.is_wide(v) {
            return self.read(v, k, Type::UD);
        }
        let half = k as u32 % 2;
        if let InstKind::Const(values) = &self.func.inst(v).kind {
            return Src::imm_ud((values[k as usize / 2] >> (32 * half)) as u32);
        }
        match self.read(v, k / 2, Type::UQ) {
            Src::Reg(r) if r.region.is_scalar() => {
                Src::Reg(Operand::scalar(r.base, r.offset + 4 * half, Type::UD))
            }
            Src::Reg(r) => {
                let reg = r.vreg().expect("values live in virtual registers");
                Src::Reg(Operand::half_of_wide(reg, r.offset, half))
            }
            imm => imm,
        }
    }

    /// Dwords each component of `v` takes: 2 for 64-bit values, else 1.
    pub(super) fn dwords_per_comp(&self, v: Value) -> u8 {
        if self.is_wide(v) { 2 } else { 1 }
    }

    pub(super) fn read_alu(&mut self, src: &AluSrc, c: u8, ty: Type) -> Src {
        self.read(src.value, src.swizzle[c as usize], ty)
    }

    /// The buffer and byte offset of a uniform or UBO load whose components are all pushed.
    pub(super) fn push_constant(&self, v: Value, ii: &IntrinsicInst) -> Option<(Option<u32>, u32)> {
        let (binding, offset) = push_location(self.func, ii)?;
        let def = self.func.inst(v).def?;
        let bytes = def.comps as u32 * def.bits.div_ceil(32).max(1) as u32 * 4;
        self.payload.pushed(binding, offset + bytes - 4)?;
        Some((binding, offset))
    }

    /// Copies one component's register into another: a qword per channel when `wide` (two
    /// dword moves before Gen8, which has no 64-bit integer type).
    pub(super) fn copy_component(&mut self, dst: VReg, src: VReg, wide: bool) {
        if !wide {
            let src = Src::Reg(Operand::vector(src, 0, Type::UD));
            self.op(Opcode::Mov, Operand::vector(dst, 0, Type::UD), vec![src]);
        } else if self.hw.is_gen8_plus() {
            let src = Src::Reg(Operand::vector(src, 0, Type::UQ));
            self.op(Opcode::Mov, Operand::vector(dst, 0, Type::UQ), vec![src]);
        } else {
            for half in 0..2 {
                let src = Src::Reg(Operand::half_of_wide(src, 0, half));
                self.op(Opcode::Mov, Operand::half_of_wide(dst, 0, half), vec![src]);
            }
        }
    }

    /// Puts an immediate in a register (for sources that cannot be immediates).
    pub(super) fn in_register(&mut self, src: Src) -> Src {
        match src {
            // Gen7 has no 64-bit immediates: a dword move for each half.
            Src::Imm(ty, bits) if ty.size() == 8 && !self.hw.is_gen8_plus() => {
                let t = self.temp_operand(ty);
                let reg = t.vreg().expect("temporaries live in virtual registers");
                for half in 0..2 {
                    let dword = Src::imm_ud((bits >> (32 * half)) as u32);
                    self.op(
                        Opcode::Mov,
                        Operand::half_of_wide(reg, t.offset, half),
                        vec![dword],
                    );
                }
                Src::Reg(t)
            }
            Src::Imm(ty, _) => {
                let t = self.temp_operand(ty);
                self.op(Opcode::Mov, t, vec![src]);
                Src::Reg(t)
            }
            reg => reg,
        }
    }

    /// A 2-source ALU instruction with its immediates where the hardware takes them: only the
    /// second source may be one; commutative operations swap.
    pub(super) fn alu2(
        &mut self,
        op: Opcode,
        dst: Operand,
        a: Src,
        b: Src,
        commutative: bool,
    ) -> &mut Inst {
        let (a, b) = match (a.is_imm(), b.is_imm()) {
            (true, false) if commutative => (b, a),
            (true, _) => (self.in_register(a), b),
            _ => (a, b),
        };
        self.op(op, dst, vec![a, b])
    }

    /// A 3-source (Align16) instruction: no immediates, and no replicated scalars of 64-bit
    /// types (copied to a vector first).
    pub(super) fn alu3(&mut self, op: Opcode, dst: Operand, srcs: [Src; 3]) {
        let srcs = srcs
            .map(|s| match self.in_register(s) {
                Src::Reg(r) if r.region.is_scalar() && r.ty.size() == 8 => {
                    let t = self.temp_operand(r.ty);
                    self.op(Opcode::Mov, t, vec![Src::Reg(r)]);
                    Src::Reg(t)
                }
                reg => reg,
            })
            .to_vec();
        self.op(op, dst, srcs);
    }

    pub(super) fn math(&mut self, f: MathFn, dst: Operand, srcs: Vec<Src>) {
        let srcs: Vec<Src> = srcs.into_iter().map(|s| self.in_register(s)).collect();
        self.op(Opcode::Math, dst, srcs).math = Some(f);
    }

    /// Sets flag `flag` to `src != 0` per channel.
    pub(super) fn flag_from_bool(&mut self, src: Src, flag: u8) {
        let src = self.in_register(src);
        let inst = self.op(
            Opcode::Cmp,
            Operand::null(Type::D),
            vec![src, Src::imm_d(0)],
        );
        inst.cond = Some(CondMod::Nz);
        inst.flag = flag;
    }

    /// `op` over the channels of one 16-channel half (all of them below SIMD16): messages and
    /// the per-half payload go this way.
    pub(super) fn on_half(
        &mut self,
        half: u8,
        op: Opcode,
        dst: Operand,
        srcs: Vec<Src>,
    ) -> &mut Inst {
        self.on_channels(16 * half, self.width.min(16), op, dst, srcs)
    }

    /// `op` over the `width` channels from `group`, reading each source's part for those
    /// channels and writing `dst` as given.
    pub(super) fn on_channels(
        &mut self,
        group: u8,
        width: u8,
        op: Opcode,
        dst: Operand,
        srcs: Vec<Src>,
    ) -> &mut Inst {
        let srcs = srcs
            .into_iter()
            .map(|s| match s {
                Src::Reg(o) => Src::Reg(part(o, group)),
                imm => imm,
            })
            .collect();
        self.emit(Inst {
            group,
            ..Inst::new(op, width, Some(dst), srcs)
        });
        self.program.insts.last_mut().expect("just pushed")
    }
}
