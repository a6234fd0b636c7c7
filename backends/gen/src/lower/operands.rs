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
        let r = self.temp(1);
        Operand::vector(r, 0, ty)
    }

    /// The virtual register of component `c` of shrew register `reg`. Components get registers
    /// of their own, so that each can be allocated, and coalesced into a payload, alone.
    pub(super) fn vreg(&mut self, reg: Reg, c: u8) -> VReg {
        if let Some(&v) = self.vregs.get(&(reg, c)) {
            return v;
        }
        let v = self.temp(1);
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

    /// Component `c` of a value as a source: an immediate for constants, the push constant for
    /// uniforms at constant offsets, else its register.
    pub(super) fn read(&mut self, v: Value, c: u8, ty: Type) -> Src {
        match &self.func.inst(v).kind {
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
                            .pushed(binding, offset + 4 * c as u32)
                            .expect("planned with the payload");
                        Src::Reg(Operand::scalar(Base::Fixed(grf), byte, ty))
                    }
                    None => Src::Reg(self.comp(v, c, ty)),
                }
            }
            _ => Src::Reg(self.comp(v, c, ty)),
        }
    }

    pub(super) fn read_alu(&mut self, src: &AluSrc, c: u8, ty: Type) -> Src {
        self.read(src.value, src.swizzle[c as usize], ty)
    }

    /// The buffer and byte offset of a uniform or UBO load whose components are all pushed.
    pub(super) fn push_constant(&self, v: Value, ii: &IntrinsicInst) -> Option<(Option<u32>, u32)> {
        let (binding, offset) = push_location(self.func, ii)?;
        let comps = self.func.inst(v).def?.comps as u32;
        self.payload.pushed(binding, offset + 4 * comps - 4)?;
        Some((binding, offset))
    }

    /// Puts an immediate in a register (for sources that cannot be immediates).
    pub(super) fn in_register(&mut self, src: Src) -> Src {
        match src {
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

    /// A 3-source (Align16) instruction: no immediates.
    pub(super) fn alu3(&mut self, op: Opcode, dst: Operand, srcs: [Src; 3]) {
        let srcs = srcs.map(|s| self.in_register(s)).to_vec();
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
