//! Random access targets (Evergreen, Cayman): MEM_RAT writes and atomics, and the vertex
//! fetches that read RAT memory and atomics' results.
//!
//! # RATs
//!
//! The dispatcher binds each RAT's memory ([`super::Wavefront::rats`]): an image or a buffer.
//! MEM_RAT runs for the active lanes in lane order (in valid pixel mode only for lanes that are
//! not helpers):
//! - STORE_TYPED: the image texel at the index GPR's x, y, z (signed integers; z is the layer
//!   of a layered image) takes the data GPR's components of its COMP_MASK;
//! - STORE_RAW: the buffer dwords from the index GPR's x on take the data GPR's components of
//!   its COMP_MASK (component c at dword x + c);
//! - NOP_RTN: nothing is written; the lane's return is the image texel at the index GPR's
//!   x, y, z (its four components), or the buffer dword at x;
//! - the `_RTN` atomics: the buffer dword at the index GPR's x, or the first component of the
//!   image texel at x, y, z, becomes the operation of its old value with the data GPR's x
//!   (CMPXCHG_INT_RTN stores x where the old value equals w), and the old value is the lane's
//!   return for the RAT.
//!
//! Writes outside the memory, or to a RAT with none bound, are dropped (an atomic there
//! returns 0). A write whose TYPE has
//! the acknowledge bit is in flight until a WAIT_ACK: a vertex fetch of RAT memory or of
//! returns while one is in flight is an error, the hazard the hardware leaves to the program.
//!
//! VFETCH from [`RAT_BUFFER_RESOURCE`]` + r` reads RAT `r`'s buffer (its elements dwords), and
//! from [`RAT_RETURN_RESOURCE`]` + r` gives each lane its return for RAT `r`, as many
//! components as the fetch's format has (the hardware fetches it at the lane's own index in
//! the return buffer; the index GPR is not read).

use super::{Machine, RatMemory, Why, dword, invalid, lanes, unsupported};
use crate::isa::CLAUSE_TEMP_BASE;
use crate::program::rat_inst::*;
use crate::program::{Export, ExportType, Fetch, RAT_BUFFER_RESOURCE, RAT_RETURN_RESOURCE, RATS};
use shrew_engine::interp::atomic_result;
use shrew_engine::ops::AtomicOp;

/// The atomic operation of a `_RTN` RAT instruction.
fn atomic_op(inst: u8) -> Option<AtomicOp> {
    Some(match inst {
        XCHG_RTN => AtomicOp::Xchg,
        CMPXCHG_INT_RTN => AtomicOp::Cmpxchg,
        ADD_RTN => AtomicOp::Iadd,
        MIN_INT_RTN => AtomicOp::Imin,
        MIN_UINT_RTN => AtomicOp::Umin,
        MAX_INT_RTN => AtomicOp::Imax,
        MAX_UINT_RTN => AtomicOp::Umax,
        AND_RTN => AtomicOp::Iand,
        OR_RTN => AtomicOp::Ior,
        XOR_RTN => AtomicOp::Ixor,
        _ => return None,
    })
}

impl Machine<'_> {
    /// Runs a MEM_RAT instruction (see the module documentation); `valid_pixels`: its valid
    /// pixel mode.
    pub(super) fn rat_write(&mut self, w: &Export, valid_pixels: bool) -> Result<(), Why> {
        let Some(index) = w.index_gpr else {
            return Err(invalid("a RAT write without an index GPR"));
        };
        if w.kind != ExportType::Rat || w.burst != 1 || w.base >= u16::from(RATS) {
            return Err(unsupported(format!(
                "a RAT write of type {:?}, burst {} to RAT {}",
                w.kind, w.burst, w.base
            )));
        }
        if let Some(g) = [w.gpr, index].into_iter().find(|&g| g >= CLAUSE_TEMP_BASE) {
            return Err(invalid(format!("reads R{g}, not a GPR of the program")));
        }
        let rat = w.base as u8;
        let enabled = |c: usize| usize::from(w.swizzle[c]) == c;
        let exec = if valid_pixels {
            self.active & !self.wave.helpers
        } else {
            self.active
        };
        for lane in lanes(exec) {
            let at = self.wave.gprs[lane][index as usize];
            let data = self.wave.gprs[lane][w.gpr as usize];
            let memory = self.wave.rats.get_mut(&rat);
            let returned = match (w.rat_inst, memory) {
                (STORE_TYPED, Some(RatMemory::Image(image))) => {
                    if let Some(texel) = image.index(texel_coord(image, at)) {
                        for c in (0..4).filter(|&c| enabled(c)) {
                            image.texels[texel][c] = data[c];
                        }
                    }
                    None
                }
                (STORE_RAW, Some(RatMemory::Buffer(bytes))) => {
                    for c in (0..4).filter(|&c| enabled(c)) {
                        let offset = (u64::from(at[0]) + c as u64) * 4;
                        store_dword(bytes, offset, data[c]);
                    }
                    None
                }
                (STORE_TYPED | STORE_RAW, None) => None,
                (NOP_RTN, memory) => Some(match memory {
                    Some(RatMemory::Image(image)) => image
                        .index(texel_coord(image, at))
                        .map_or([0; 4], |texel| image.texels[texel]),
                    Some(RatMemory::Buffer(bytes)) => [dword(bytes, u64::from(at[0]) * 4), 0, 0, 0],
                    None => [0; 4],
                }),
                (inst, memory) if atomic_op(inst).is_some() => {
                    let op = atomic_op(inst).expect("an atomic");
                    let (a, b) = match op {
                        AtomicOp::Cmpxchg => (data[3], Some(data[0])),
                        _ => (data[0], None),
                    };
                    let update = |old: u32| {
                        atomic_result(op, 32, old.into(), a.into(), b.map(u64::from))
                            .expect("a compare-exchange has both operands")
                            as u32
                    };
                    // A buffer's dword at the index, or an image texel's first component.
                    let old = match memory {
                        Some(RatMemory::Buffer(bytes)) => {
                            let offset = u64::from(at[0]) * 4;
                            let old = dword(bytes, offset);
                            store_dword(bytes, offset, update(old));
                            old
                        }
                        Some(RatMemory::Image(image)) => {
                            match image.index(texel_coord(image, at)) {
                                Some(texel) => {
                                    let old = image.texels[texel][0];
                                    image.texels[texel][0] = update(old);
                                    old
                                }
                                None => 0,
                            }
                        }
                        None => 0,
                    };
                    Some([old, 0, 0, 0])
                }
                (inst, memory) => {
                    let holds = match memory {
                        Some(RatMemory::Image(_)) => "an image",
                        _ => "a buffer",
                    };
                    return Err(invalid(format!(
                        "RAT operation {inst} on RAT {rat}, which holds {holds}"
                    )));
                }
            };
            if let Some(value) = returned {
                let lanes_n = self.wave.lanes;
                self.wave
                    .returns
                    .entry(rat)
                    .or_insert_with(|| vec![[0; 4]; lanes_n])[lane] = value;
            }
        }
        self.note_write(w.ack);
        Ok(())
    }

    /// A vertex fetch's results when it reads RAT memory or returns (`None` for other
    /// resources).
    pub(super) fn rat_fetch(
        &self,
        fetch: &Fetch,
        dwords: usize,
        exec: u64,
    ) -> Option<Result<Vec<Option<[u32; 4]>>, Why>> {
        let resource = fetch.resource;
        let (rat, returns) = match resource {
            r if (RAT_BUFFER_RESOURCE..RAT_BUFFER_RESOURCE + RATS).contains(&r) => {
                (r - RAT_BUFFER_RESOURCE, false)
            }
            r if (RAT_RETURN_RESOURCE..RAT_RETURN_RESOURCE + RATS).contains(&r) => {
                (r - RAT_RETURN_RESOURCE, true)
            }
            _ => return None,
        };
        if self.writes_in_flight() {
            return Some(Err(invalid(
                "a fetch of RAT memory while an acknowledged write is in flight (no WAIT_ACK)",
            )));
        }
        let mut out = vec![None; self.wave.lanes];
        if returns {
            let values = self.wave.returns.get(&rat);
            for lane in lanes(exec) {
                let value = values.map_or([0; 4], |v| v[lane]);
                out[lane] = Some(std::array::from_fn(
                    |k| if k < dwords { value[k] } else { 0 },
                ));
            }
            return Some(Ok(out));
        }
        let bytes = match self.wave.rats.get(&rat) {
            Some(RatMemory::Buffer(bytes)) => bytes.as_slice(),
            _ => &[],
        };
        let chan = fetch.src_sel[0] as usize;
        for lane in lanes(exec) {
            let index = u64::from(self.wave.gprs[lane][fetch.src_gpr as usize][chan]);
            let base = 4 * index + u64::from(fetch.vtx.offset);
            out[lane] = Some(std::array::from_fn(|k| {
                if k < dwords {
                    dword(bytes, base + 4 * k as u64)
                } else {
                    0
                }
            }));
        }
        Some(Ok(out))
    }
}

/// The texel an image RAT operation addresses: the index GPR's x, y, z as signed integers, z
/// the layer of a layered image.
fn texel_coord(image: &shrew_engine::interp::Image, at: [u32; 4]) -> [i64; 4] {
    let [x, y, z] = [0, 1, 2].map(|c| i64::from(at[c] as i32));
    if image.depth <= 1 {
        [x, y, 0, z]
    } else {
        [x, y, z, 0]
    }
}

/// Writes the little-endian dword `value` at byte `offset` of `bytes`, if it is inside.
fn store_dword(bytes: &mut [u8], offset: u64, value: u32) {
    if let Some(slot) = usize::try_from(offset)
        .ok()
        .and_then(|at| bytes.get_mut(at..at.checked_add(4)?))
    {
        slot.copy_from_slice(&value.to_le_bytes());
    }
}
