//! Fetch clauses: vertex fetches and gradients, texture fetches through the texture unit
//! (`crate::texture`) and scratch reads through `scratch`.
//!
//! # Fetch clauses
//!
//! A fetch runs for the active lanes, in order (in a clause with VALID_PIXEL_MODE, for those
//! of them that are not helper pixels); each reads its source GPR, then writes its
//! destination through `dst_sel` (0-3 a result component, 4 zero, 5 1.0, 7 unwritten).
//! - Texture instructions (SAMPLE*, LD, GET_TEXTURE_RESINFO): [`crate::texture`].
//! - GDS operations (in GDS clauses, and only there): `gds`.
//! - VFETCH (in VTX clauses, and in TEX clauses on Evergreen and Cayman): the element index is
//!   component `src_sel[0]` of the source GPR; the data is at byte `stride·index + offset` of
//!   buffer `resource` ([`Env::buffers`], each with its stride). FMT_32 (13),
//!   FMT_32_32 (29), FMT_32_32_32 (47) and FMT_32_32_32_32 (34) read 1-4 dwords; the other
//!   components are 0; bytes past the end (or of a buffer not given) read as zero. The number
//!   format, fetch type, mega-fetch count and swizzle flags are not interpreted; endian swaps
//!   are not modelled. The RAT resources read RAT memory and atomics' returns (`rat`).
//! - GET_GRADIENTS_H/V give the derivative of each source channel (after `src_sel`) along x
//!   (right − left of the quad's top row) or y (bottom − top of its left column) over the
//!   quad's lanes that run the fetch, falling back to the other row (column), 0 when neither
//!   pair runs it: the interpreter's coarse derivatives. The _FINE forms take the lane's own
//!   row (column) first: its fine derivatives.
//!   SET_GRADIENTS_H/V keep each lane's source channels as the gradients of a later SAMPLE_G
//!   of the same clause.
//!
//! [`Env::buffers`]: super::Env::buffers

use super::{At, EmuError, Machine, ONE, Why, Within, bit, dword, invalid, lanes, unsupported};
use crate::isa::{CLAUSE_TEMP_BASE, CfOp, FetchOp};
use crate::program::Fetch;
use crate::texture::{self, COARSE_X, COARSE_Y, Gradients};

impl Machine<'_> {
    pub(super) fn fetch_clause(
        &mut self,
        at: &At,
        fetches: &[Fetch],
        clause: CfOp,
        valid_pixels: bool,
    ) -> Result<(), EmuError> {
        if fetches.len() > self.chip.max_fetches() {
            return Err(invalid(format!(
                "{} fetches, {:?} clauses hold {}",
                fetches.len(),
                self.chip,
                self.chip.max_fetches()
            ))
            .at(at.clone()));
        }
        let mut gradients: Vec<Gradients> = vec![[None, None]; self.wave.lanes];
        for (index, fetch) in fetches.iter().enumerate() {
            let at = at.within(Within::Fetch {
                index,
                op: fetch.op,
            });
            self.fetch(&at, fetch, clause, valid_pixels, &mut gradients)?;
        }
        Ok(())
    }

    /// Runs one fetch of a clause launched by `clause`.
    fn fetch(
        &mut self,
        at: &At,
        fetch: &Fetch,
        clause: CfOp,
        valid_pixels: bool,
        gradients: &mut [Gradients],
    ) -> Result<(), EmuError> {
        let bad = |why: String| Err(invalid(why).at(at.clone()));
        let op = fetch.op;
        if op.opcode(self.chip).is_none() {
            return Err(unsupported(format!("{op} on {:?}", self.chip)).at(at.clone()));
        }
        let vertex = matches!(clause, CfOp::Vtx | CfOp::VtxTc);
        if vertex && !op.is_vertex_fetch() {
            return bad(format!("{op} in a vertex-fetch clause"));
        }
        if op.is_gds() != (clause == CfOp::Gds) {
            return bad(format!("{op} in a {clause} clause"));
        }
        if op.is_vertex_fetch() && !vertex && !self.chip.is_evergreen_class() {
            return bad(format!("{op} in a TEX clause before Evergreen"));
        }
        for (what, gpr) in [("reads", fetch.src_gpr), ("writes", fetch.dst_gpr)] {
            if gpr >= CLAUSE_TEMP_BASE {
                return bad(format!("{what} R{gpr}, not a GPR of the program"));
            }
        }
        let sels = fetch.src_sel.iter().chain(&fetch.dst_sel);
        if let Some(&s) = sels.clone().find(|&&s| s == 6 || s > 7) {
            return bad(format!("component select {s}"));
        }
        // In valid pixel mode helper pixels do not run it.
        let exec = if valid_pixels {
            self.active & !self.wave.helpers
        } else {
            self.active
        };
        let lanes_n = self.wave.lanes;
        let srcs: Vec<[u32; 4]> = (0..lanes_n)
            .map(|lane| {
                let r = self.wave.gprs[lane][fetch.src_gpr as usize];
                fetch.src_sel.map(|s| match s {
                    0..=3 => r[s as usize],
                    5 => ONE,
                    _ => 0,
                })
            })
            .collect();
        let results: Vec<Option<[u32; 4]>> = match op {
            FetchOp::Vfetch => self.vfetch(fetch, exec).map_err(|w| w.at(at.clone()))?,
            FetchOp::ReadScratch => self
                .scratch_read(fetch, exec)
                .map_err(|w| w.at(at.clone()))?,
            _ if op.is_gds() => self.gds(op, &srcs, exec).map_err(|w| w.at(at.clone()))?,
            FetchOp::GetGradientsH
            | FetchOp::GetGradientsHFine
            | FetchOp::GetGradientsV
            | FetchOp::GetGradientsVFine => {
                let along_x = matches!(op, FetchOp::GetGradientsH | FetchOp::GetGradientsHFine);
                let fine = matches!(op, FetchOp::GetGradientsHFine | FetchOp::GetGradientsVFine);
                gradients_of(&srcs, exec, along_x, fine)
            }
            FetchOp::SetGradientsH | FetchOp::SetGradientsV => {
                let which = (op == FetchOp::SetGradientsV) as usize;
                for lane in lanes(exec) {
                    gradients[lane][which] = Some(srcs[lane]);
                }
                return Ok(());
            }
            _ if op.is_vertex_fetch() => {
                return Err(unsupported(op.mnemonic()).at(at.clone()));
            }
            _ => {
                texture::run(&self.env.textures, fetch, &srcs, exec, gradients).map_err(|why| {
                    EmuError::Texture {
                        at: at.clone(),
                        why,
                    }
                })?
            }
        };
        let dst = fetch.dst_gpr as usize;
        for (lane, result) in results.iter().enumerate() {
            let Some(r) = result else {
                continue;
            };
            for (c, &s) in fetch.dst_sel.iter().enumerate() {
                let v = match s {
                    0..=3 => r[s as usize],
                    4 => 0,
                    5 => ONE,
                    _ => continue,
                };
                self.wave.gprs[lane][dst][c] = v;
                self.wave.written |= 1 << dst;
            }
        }
        Ok(())
    }

    /// A vertex fetch for the lanes of `exec`.
    fn vfetch(&self, fetch: &Fetch, exec: u64) -> Result<Vec<Option<[u32; 4]>>, Why> {
        let vtx = &fetch.vtx;
        let dwords = match vtx.data_format {
            13 => 1,
            29 => 2,
            47 => 3,
            34 => 4,
            f => return Err(unsupported(format!("vertex data format {f}"))),
        };
        if vtx.endian_swap != 0 {
            return Err(unsupported("endian swapping"));
        }
        let chan = fetch.src_sel[0];
        if chan > 3 {
            return Err(invalid(format!("address component select {chan}")));
        }
        if let Some(results) = self.rat_fetch(fetch, dwords, exec) {
            return results;
        }
        let (bytes, stride) = self
            .env
            .buffers
            .get(&fetch.resource)
            .map_or((&[][..], 0), |b| (b.bytes.as_slice(), b.stride as u64));
        let mut out = vec![None; self.wave.lanes];
        for lane in lanes(exec) {
            let index = self.wave.gprs[lane][fetch.src_gpr as usize][chan as usize] as u64;
            let base = stride * index + vtx.offset as u64;
            out[lane] = Some(std::array::from_fn(|k| {
                if k < dwords {
                    dword(bytes, base + 4 * k as u64)
                } else {
                    0
                }
            }));
        }
        Ok(out)
    }
}

/// The fine derivatives of each lane's source channels along x (`along_x`) or y over the
/// quad's lanes in `exec`.
fn gradients_of(srcs: &[[u32; 4]], exec: u64, along_x: bool, fine: bool) -> Vec<Option<[u32; 4]>> {
    let value = |lane: usize| {
        (lane < srcs.len() && bit(exec, lane)).then(|| srcs[lane].map(|x| f32::from_bits(x) as f64))
    };
    (0..srcs.len())
        .map(|lane| {
            if !bit(exec, lane) {
                return None;
            }
            let (first, pos) = (lane - lane % 4, lane % 4);
            let at: [Option<[f64; 4]>; 4] = std::array::from_fn(|k| value(first + k));
            // Fine: the lane's own row (column) first; coarse: the top row (left column).
            let (row, col) = if fine { (pos / 2, pos % 2) } else { (0, 0) };
            let pairs = if along_x {
                [COARSE_X[row], COARSE_X[1 - row]]
            } else {
                [COARSE_Y[col], COARSE_Y[1 - col]]
            };
            Some(texture::quad_difference(&at, pairs).map(|d| (d as f32).to_bits()))
        })
        .collect()
}
