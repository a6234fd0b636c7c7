//! Control flow: the structured tree as `if`/`else`/`endif` and `do`…`while` with `break`
//! and `cont`, the out-of-SSA copies at block edges, and the live-pixel flag that discards
//! clear and memory and render-target writes are predicated on.

use super::{LIVE_FLAG, LowerError, Lowering, Subroutine, halves, uses_intrinsic, writes_memory};
use crate::encoding::Predicate;
use crate::isa::{CondMod, Opcode, Type};
use crate::lir::{Base, Inst, Op, Operand, Src};
use shrew_engine::deep::nested;
use shrew_engine::ir::{Stage, Terminator};
use shrew_engine::out_of_ssa::Reg;
use shrew_engine::structure::{Node, returns_early};

/// The any4h predicate control: a channel's quad has some flag bit set.
const ANY4H: u8 = 6;

impl Lowering<'_> {
    pub(super) fn lower(&mut self, tree: &[Node]) -> Result<(), LowerError> {
        if self.shader.stage == Stage::Vertex {
            self.plan_urb_writes();
        }
        if self.discards {
            // f1 starts as the dispatch's pixel mask (R1.7, and R2.7 for channels 16-31 at
            // SIMD32): helpers are not live.
            for half in 0..halves(self.width) {
                let pixel_mask = Operand::scalar(Base::Fixed(1 + half), 28, Type::UW);
                self.init_live_flag(half, Src::Reg(pixel_mask));
            }
        }
        if self.payload.simd4x2
            && (self.shader.functions.iter()).any(|f| uses_intrinsic(f, &writes_memory))
        {
            // Memory writes go from one channel of each vertex (0 and 4): f1.0 holds them.
            self.init_live_flag(0, Src::Imm(Type::UW, 0x11));
        }
        self.nodes(tree, true)?;
        if self.halts {
            self.emit(Inst::control(Op::HaltTarget, self.width));
        }
        match self.shader.stage {
            Stage::Vertex => self.urb_writes(),
            Stage::Compute => self.end_thread(),
            _ => self.color_writes(),
        }
    }

    /// A subroutine's body, then its return; one that returns early runs in a loop of one
    /// trip, which the returns leave.
    pub(super) fn lower_subroutine(&mut self, tree: &[Node]) -> Result<(), LowerError> {
        if returns_early(tree) {
            let returned = self.temp(1);
            self.op(
                Opcode::Mov,
                Operand::vector(returned, 0, Type::D),
                vec![Src::imm_d(0)],
            );
            self.subroutine_mut().returned = Some(returned);
            self.emit(Inst::control(Op::Do, self.width));
            self.nodes(tree, false)?;
            self.emit(Inst::control(Op::Hw(Opcode::Break), self.width));
            self.emit(Inst::control(Op::Hw(Opcode::While), self.width));
        } else {
            self.nodes(tree, true)?;
        }
        if self.halts {
            // Halted quads go back to the caller with the others.
            self.emit(Inst::control(Op::HaltTarget, self.width));
        }
        let address = self.subroutine_mut().return_address;
        let mut ret = Inst::control(Op::Return, 1);
        ret.mask_all = true;
        ret.dst = Some(Operand::null(Type::UD));
        ret.srcs = vec![Src::Reg(Operand::scalar(Base::Fixed(address), 0, Type::UD))];
        self.emit(ret);
        Ok(())
    }

    fn subroutine_mut(&mut self) -> &mut Subroutine {
        self.subroutine.as_mut().expect("lowering a subroutine")
    }

    /// Lowers a list of nodes; `tail` says nothing runs after it (the end of the shader).
    fn nodes(&mut self, nodes: &[Node], tail: bool) -> Result<(), LowerError> {
        for (i, node) in nodes.iter().enumerate() {
            let node_tail = tail && i + 1 == nodes.len();
            match node {
                Node::Block(b) => self.block(*b)?,
                Node::If {
                    cond,
                    then,
                    otherwise,
                } => {
                    let cond = self.read(*cond, 0, Type::D);
                    if let Some((op, inverse)) = leave_only(then, otherwise) {
                        self.branch_on(cond, op, inverse);
                        continue;
                    }
                    self.branch_on(cond, Opcode::If, false);
                    nested(|| self.nodes(then, node_tail))?;
                    if !otherwise.is_empty() {
                        self.emit(Inst::control(Op::Hw(Opcode::Else), self.width));
                        nested(|| self.nodes(otherwise, node_tail))?;
                    }
                    self.emit(Inst::control(Op::Hw(Opcode::Endif), self.width));
                }
                Node::Loop(body) => {
                    let returns_before = self.subroutine.as_mut().map(|s| {
                        s.loop_depth += 1;
                        s.early_returns
                    });
                    self.emit(Inst::control(Op::Do, self.width));
                    nested(|| self.nodes(body, false))?;
                    self.emit(Inst::control(Op::Hw(Opcode::While), self.width));
                    if let Some(before) = returns_before {
                        let s = self.subroutine_mut();
                        s.loop_depth -= 1;
                        // Channels that returned inside the loop leave the one around it too.
                        if s.early_returns > before
                            && let Some(returned) = s.returned
                        {
                            let returned = Src::Reg(Operand::vector(returned, 0, Type::D));
                            self.branch_on(returned, Opcode::Break, false);
                        }
                    }
                }
                Node::Break => self.emit(Inst::control(Op::Hw(Opcode::Break), self.width)),
                Node::Continue => self.emit(Inst::control(Op::Hw(Opcode::Cont), self.width)),
                Node::Return(_) if self.subroutine.is_some() => {
                    let s = self.subroutine_mut();
                    if let Some(returned) = s.returned {
                        s.early_returns += 1;
                        if s.loop_depth > 0 {
                            self.op(
                                Opcode::Mov,
                                Operand::vector(returned, 0, Type::D),
                                vec![Src::imm_d(-1)],
                            );
                        }
                        self.emit(Inst::control(Op::Hw(Opcode::Break), self.width));
                    }
                }
                Node::Return(_) => {
                    // Channels that return early wait at the end for the colour writes.
                    if !node_tail {
                        self.halts = true;
                        self.emit(Inst::control(Op::Hw(Opcode::Halt), self.width));
                    }
                }
                Node::Unreachable => {}
            }
        }
        Ok(())
    }

    /// Control-flow instruction `op` predicated on boolean `cond` (inverted with `inverse`),
    /// through f0.0.
    fn branch_on(&mut self, cond: Src, op: Opcode, inverse: bool) {
        self.flag_from_bool(cond, 0);
        let mut inst = Inst::control(Op::Hw(op), self.width);
        inst.predicate = Some(Predicate {
            control: 1,
            inverse,
        });
        self.emit(inst);
    }

    fn block(&mut self, b: shrew_engine::ir::BlockId) -> Result<(), LowerError> {
        for copy in self.regs.copies_at_start(b).to_vec() {
            self.copy(copy);
        }
        for &v in &self.func.block(b).insts.clone() {
            let first = self.program.insts.len();
            self.inst(v)?;
            if let Some(origin) = shrew_engine::provenance::origin(self.func, v) {
                for inst in &mut self.program.insts[first..] {
                    inst.origin = Some(origin.clone());
                }
            }
        }
        for copy in self.regs.copies_at_end(b).to_vec() {
            self.copy(copy);
        }
        if let Some(Terminator::Return { value: Some(_) }) = self.func.block(b).terminator {
            return Err(LowerError(format!(
                "fn {}: the entry point returns a value",
                self.func.name
            )));
        }
        Ok(())
    }

    fn copy(&mut self, (dst, src): (Reg, Reg)) {
        let shape = self.regs.reg_shape(dst);
        for c in 0..shape.comps {
            let (d, s) = (self.vreg(dst, c), self.vreg(src, c));
            self.copy_component(d, s, shape.bits == 64);
        }
    }

    /// Clears the live bit of the channels where `cond` holds (all active ones without a
    /// condition) and halts quads with no live pixel left.
    pub(super) fn kill(&mut self, cond: Option<Src>) {
        let (a, b) = match cond {
            Some(c) => (self.in_register(c), Src::imm_d(0)),
            // x != x is false for every channel: R0's first dword compared with itself.
            None => {
                let r0 = Src::Reg(Operand::scalar(Base::Fixed(0), 0, Type::UD));
                (r0, r0)
            }
        };
        let cmp = self.op(Opcode::Cmp, Operand::null(Type::D), vec![a, b]);
        cmp.cond = Some(if cond.is_some() {
            CondMod::Z
        } else {
            CondMod::Nz
        });
        cmp.flag = LIVE_FLAG;
        cmp.predicate = Some(Predicate {
            control: 1,
            inverse: false,
        });
        self.halt_dead_quads();
    }

    /// Halts the quads none of whose pixels is live (until the program's or the subroutine's
    /// halt target).
    pub(super) fn halt_dead_quads(&mut self) {
        let mut halt = Inst::control(Op::Hw(Opcode::Halt), self.width);
        // Inverted any4h: the quads none of whose pixels is live.
        halt.predicate = Some(Predicate {
            control: ANY4H,
            inverse: true,
        });
        halt.flag = LIVE_FLAG;
        self.emit(halt);
        self.halts = true;
    }

    /// Sets the live flag's 16 bits for channels `16 · half` on (f1.0, or f1.1) to `src`, for
    /// every channel.
    fn init_live_flag(&mut self, half: u8, src: Src) {
        let flag = Operand::scalar(
            Base::Arf(crate::isa::ARF_FLAG + 1),
            2 * half as u32,
            Type::UW,
        );
        let mut init = Inst::new(Opcode::Mov, 1, Some(flag), vec![src]);
        init.mask_all = true;
        self.emit(init);
    }

    /// Emits a message that only live pixels may send (memory writes, render-target writes):
    /// predicated on f1.0 when the shader keeps live pixels there, or, at SIMD4x2, the first
    /// channel of each vertex (its other three would repeat its atomic operations).
    pub(super) fn emit_for_live_pixels(&mut self, mut send: Inst) {
        if self.discards || self.payload.simd4x2 {
            send.predicate = Some(Predicate {
                control: 1,
                inverse: false,
            });
            send.flag = LIVE_FLAG;
        }
        self.emit(send);
    }
}

/// The opcode of an `If` whose arms only leave the loop (one empty, the other a lone `Break`
/// or `Continue`), and whether its predicate is inverted.
fn leave_only(then: &[Node], otherwise: &[Node]) -> Option<(Opcode, bool)> {
    let exit = |nodes: &[Node]| match nodes {
        [Node::Break] => Some(Opcode::Break),
        [Node::Continue] => Some(Opcode::Cont),
        _ => None,
    };
    match (exit(then), exit(otherwise)) {
        (Some(op), None) if otherwise.is_empty() => Some((op, false)),
        (None, Some(op)) if then.is_empty() => Some((op, true)),
        _ => None,
    }
}
