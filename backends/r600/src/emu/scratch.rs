//! Scratch memory: each lane's elements, written by MEM_SCRATCH and read by READ_SCRATCH,
//! and the writes in flight between them.
//!
//! # Scratch memory
//!
//! Each lane has `program.scratch_elements` vec4 elements of scratch memory, zero at the
//! start. MEM_SCRATCH (element size 3, one vec4 per element) writes, for each active lane,
//! the components of its COMP_MASK of each GPR of the burst to element `base + k`, plus the x
//! channel of `index_gpr` when indexed; an indexed write whose index is at or past
//! `array_size` is dropped, and an element past the lane's memory is an error. READ_SCRATCH
//! (R700 and later, FMT_32_32_32_32) reads element `array_base`, plus channel `src_sel[0]` of
//! its source GPR when indexed, the same way (zero past `array_size`). A write is in flight
//! until a WAIT_ACK after it, which only waits for acknowledged writes (WRITE_ACK,
//! WRITE_IND_ACK): a READ_SCRATCH while a write is in flight is an error, the hazard the
//! hardware leaves to the program.

use super::{Machine, Why, invalid, lanes, unsupported};
use crate::isa::CLAUSE_TEMP_BASE;
use crate::program::{Export, ExportType, Fetch};

/// Scratch writes that may not have landed yet.
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub(super) struct InFlight {
    /// Acknowledged writes since the last WAIT_ACK.
    pub(super) acknowledged: bool,
    /// Writes without acknowledgement: nothing waits for them.
    unacknowledged: bool,
}

impl Machine<'_> {
    /// The scratch element of `lane` at `base` plus `index` (when indexed): `None` when an
    /// index is at or past `array_size` (the access is dropped).
    fn scratch_element(
        &self,
        lane: usize,
        base: u32,
        index: Option<u32>,
        array_size: u16,
    ) -> Result<Option<usize>, Why> {
        let element = match index {
            Some(i) if i >= u32::from(array_size) => return Ok(None),
            Some(i) => base + i,
            None => base,
        };
        let elements = u32::from(self.program.scratch_elements);
        if element >= elements {
            return Err(invalid(format!(
                "scratch element {element}, past the {elements} the program declares"
            )));
        }
        Ok(Some(lane * elements as usize + element as usize))
    }

    pub(super) fn scratch_write(&mut self, w: &Export) -> Result<(), Why> {
        if w.kind != ExportType::Scratch || w.elem_size != 3 || w.burst == 0 {
            return Err(unsupported(format!(
                "a scratch write of type {:?}, element size {} and burst {}",
                w.kind, w.elem_size, w.burst
            )));
        }
        for k in 0..w.burst {
            let gpr = w.gpr as usize + k as usize;
            let registers = [Some(gpr), w.index_gpr.map(usize::from)];
            if let Some(g) = registers
                .into_iter()
                .flatten()
                .find(|&g| g >= CLAUSE_TEMP_BASE as usize)
            {
                return Err(invalid(format!("reads R{g}, not a GPR of the program")));
            }
            for lane in lanes(self.active) {
                let index = w.index_gpr.map(|g| self.wave.gprs[lane][g as usize][0]);
                let base = u32::from(w.base) + u32::from(k);
                let Some(at) = self.scratch_element(lane, base, index, w.array_size)? else {
                    continue;
                };
                let value = self.wave.gprs[lane][gpr];
                for (c, &component) in value.iter().enumerate() {
                    if usize::from(w.swizzle[c]) == c {
                        self.scratch[at][c] = component;
                    }
                }
            }
        }
        self.note_write(w.ack);
        Ok(())
    }

    /// Records a write to memory: an acknowledged one is in flight until a WAIT_ACK.
    pub(super) fn note_write(&mut self, ack: bool) {
        if ack {
            self.in_flight.acknowledged = true;
        } else {
            self.in_flight.unacknowledged = true;
        }
    }

    /// Whether an acknowledged write is in flight.
    pub(super) fn writes_in_flight(&self) -> bool {
        self.in_flight.acknowledged
    }

    /// READ_SCRATCH's results.
    pub(super) fn scratch_read(
        &self,
        fetch: &Fetch,
        exec: u64,
    ) -> Result<Vec<Option<[u32; 4]>>, Why> {
        let mem = &fetch.vtx.mem;
        if mem.elem_size != 3 || fetch.vtx.data_format != 34 {
            return Err(unsupported(format!(
                "a scratch read of element size {} and data format {}",
                mem.elem_size, fetch.vtx.data_format
            )));
        }
        let InFlight {
            acknowledged,
            unacknowledged,
        } = self.in_flight;
        if acknowledged || unacknowledged {
            return Err(invalid(
                "a scratch read while a scratch write may be in flight (no WAIT_ACK after it)",
            ));
        }
        let chan = fetch.src_sel[0] as usize;
        if chan > 3 {
            return Err(invalid(format!("address component select {chan}")));
        }
        let mut out = vec![None; self.wave.lanes];
        for lane in lanes(exec) {
            let index = mem
                .indexed
                .then(|| self.wave.gprs[lane][fetch.src_gpr as usize][chan]);
            let at = self.scratch_element(lane, mem.array_base.into(), index, mem.array_size)?;
            out[lane] = Some(at.map_or([0; 4], |at| self.scratch[at]));
        }
        Ok(out)
    }
}
