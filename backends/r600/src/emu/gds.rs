//! The global data share (Evergreen, Cayman): memory every wavefront of a draw or dispatch
//! shares, which GDS clauses reach. The dispatcher binds it ([`Wavefront::gds`], dwords) with
//! the atomic counter buffers in it and takes them back after the draw.
//!
//! # GDS operations
//!
//! A GDS operation runs for the lanes its clause runs on (in valid pixel mode not for helper
//! pixels), in lane order: source x is a byte address, which must be a multiple of 4; an
//! address past the memory reads 0 and writes nothing. The atomic `_RET` operations store
//! `old op y` (GDS_CMP_XCHG_RET: z where the old dword equals y), with the interpreter's
//! arithmetic (`atomic_result`); GDS_READ_RET only reads. Each returns the dword as it was
//! before the operation, as result component x (the others are 0).
//!
//! [`Wavefront::gds`]: super::Wavefront::gds

use super::{Machine, Why, invalid, lanes};
use crate::isa::FetchOp;
use shrew_engine::interp::atomic_result;
use shrew_engine::ops::AtomicOp;

/// The atomic operation of a GDS `_RET` operation, `None` for GDS_READ_RET.
fn atomic_op(op: FetchOp) -> Option<AtomicOp> {
    Some(match op {
        FetchOp::GdsAddRet => AtomicOp::Iadd,
        FetchOp::GdsMinIntRet => AtomicOp::Imin,
        FetchOp::GdsMaxIntRet => AtomicOp::Imax,
        FetchOp::GdsMinUintRet => AtomicOp::Umin,
        FetchOp::GdsMaxUintRet => AtomicOp::Umax,
        FetchOp::GdsAndRet => AtomicOp::Iand,
        FetchOp::GdsOrRet => AtomicOp::Ior,
        FetchOp::GdsXorRet => AtomicOp::Ixor,
        FetchOp::GdsXchgRet => AtomicOp::Xchg,
        FetchOp::GdsCmpXchgRet => AtomicOp::Cmpxchg,
        _ => return None,
    })
}

impl Machine<'_> {
    /// Runs GDS operation `op` for the lanes of `exec`, their sources `srcs` (after the
    /// selects); gives each lane's result.
    pub(super) fn gds(
        &mut self,
        op: FetchOp,
        srcs: &[[u32; 4]],
        exec: u64,
    ) -> Result<Vec<Option<[u32; 4]>>, Why> {
        let mut out = vec![None; self.wave.lanes];
        for lane in lanes(exec) {
            let [address, operand, swap, _] = srcs[lane];
            if !address.is_multiple_of(4) {
                return Err(invalid(format!(
                    "lane {lane}: GDS address {address} is not a multiple of 4"
                )));
            }
            let index = address as usize / 4;
            let old = self.wave.gds.get(index).copied().unwrap_or(0);
            let new = atomic_op(op).and_then(|atomic| {
                let swap = (op == FetchOp::GdsCmpXchgRet).then_some(swap.into());
                atomic_result(atomic, 32, old.into(), operand.into(), swap).map(|v| v as u32)
            });
            if let (Some(new), Some(slot)) = (new, self.wave.gds.get_mut(index)) {
                *slot = new;
            }
            out[lane] = Some([old, 0, 0, 0]);
        }
        Ok(out)
    }
}
