//! Messages about the thread itself, each a copy of its R0 header: memory fences, the
//! workgroup barrier and the end of a compute thread.

use super::{LowerError, Lowering};
use crate::fields::desc;
use crate::isa::{ARF_NOTIFICATION, Gen, Opcode, Type};
use crate::lir::{Base, Inst, Message, Operand, Src, VReg};
use shrew_engine::ir::{IntrinsicInst, Stage, Value};
use shrew_engine::ops::IndexKind;

impl Lowering<'_> {
    /// A barrier: a memory fence when it orders memory, then, when it synchronizes the
    /// workgroup, the gateway's barrier message and a `wait` on n0 until every thread of the
    /// group has sent it. (A subgroup's channels run together: they need no message.)
    pub(super) fn barrier(&mut self, v: Value, ii: &IntrinsicInst) -> Result<(), LowerError> {
        const WORKGROUP_SCOPE: u32 = 3;
        let orders_memory = ii.index(IndexKind::MemorySemantics).unwrap_or(0) != 0
            && ii.index(IndexKind::MemoryModes).unwrap_or(0) != 0;
        let synchronizes = ii.index(IndexKind::ExecutionScope).unwrap_or(0) >= WORKGROUP_SCOPE;
        if synchronizes && self.shader.stage != Stage::Compute {
            return Err(self.error(v, "only compute shaders synchronize workgroups"));
        }
        let send = desc::Send::of(self.hw);
        if orders_memory {
            // The data cache's fence requires its header (the copy of R0); binding table
            // index 0.
            let fence = self.message(
                v,
                desc::DataCache::SFID,
                &[
                    (send.mlen, 1),
                    (send.header_present, 1),
                    (
                        desc::DataCache::of(self.hw).message_type,
                        desc::DataCache::MEMORY_FENCE,
                    ),
                ],
            )?;
            let header = self.header();
            self.send_header(header, fence);
        }
        if synchronizes {
            // Gateway messages have no header bit: their one GRF holds the barrier's ID (R0.2).
            let barrier = self.message(
                v,
                desc::Gateway::SFID,
                &[
                    (send.mlen, 1),
                    (
                        desc::Gateway::of(self.hw).subfunction,
                        desc::Gateway::BARRIER,
                    ),
                ],
            )?;
            // The barrier's ID comes from R0.2 (bits 27:24; Gen9 also keeps bit 31).
            let header = self.header();
            let mask = if self.hw >= Gen::Gen9 {
                0x8f00_0000
            } else {
                0x0f00_0000
            };
            let id = Operand::scalar(Base::Fixed(0), 8, Type::UD);
            let mut and = Inst::new(
                Opcode::And,
                1,
                Some(Operand::scalar(Base::Vgrf(header), 8, Type::UD)),
                vec![Src::Reg(id), Src::imm_ud(mask)],
            );
            and.mask_all = true;
            self.emit(and);
            self.send_header(header, barrier);
            let n0 = Operand::scalar(Base::Arf(ARF_NOTIFICATION), 0, Type::UD);
            let mut wait = Inst::new(Opcode::Wait, 1, Some(n0), vec![Src::Reg(n0)]);
            wait.mask_all = true;
            self.emit(wait);
        }
        Ok(())
    }

    /// A copy of the thread's header R0 (WE_all), the payload of the gateway's messages, the
    /// data port's fences and the thread spawner's.
    fn header(&mut self) -> VReg {
        let header = self.temp(1);
        self.copy_header(header);
        header
    }

    /// Copies R0 into the first GRF of `payload` (WE_all).
    pub(super) fn copy_header(&mut self, payload: VReg) {
        let mut copy = Inst::new(
            Opcode::Mov,
            8,
            Some(Operand::vector(payload, 0, Type::UD)),
            vec![Src::Reg(Operand::payload(0, 0, Type::UD))],
        );
        copy.mask_all = true;
        self.emit(copy);
    }

    /// Sends a one-GRF message of `header` (WE_all).
    fn send_header(&mut self, header: VReg, message: Message) {
        let mut send = simd8_send(header, message);
        send.mask_all = true;
        self.emit(send);
    }

    /// The end of a compute thread: the thread spawner's message with EOT.
    pub(super) fn end_thread(&mut self) -> Result<(), LowerError> {
        let send = desc::Send::of(self.hw);
        let end = self.final_message(
            "the thread spawner's end of thread",
            desc::ThreadSpawner::SFID,
            &[
                (send.eot, 1),
                (send.mlen, 1),
                // The fixed-function unit frees the thread's resources.
                (desc::ThreadSpawner::of(self.hw).resource_select, 1),
            ],
        )?;
        let header = self.header();
        self.send_header(header, end);
        Ok(())
    }
}

/// A SIMD8 send of `message` from `payload`, answering nothing.
pub(super) fn simd8_send(payload: VReg, message: Message) -> Inst {
    Inst {
        send: Some(message),
        ..Inst::new(
            Opcode::Send,
            8,
            Some(Operand::null(Type::UD)),
            vec![
                Src::Reg(Operand::vector(payload, 0, Type::UD)),
                Src::imm_ud(message.descriptor()),
            ],
        )
    }
}
