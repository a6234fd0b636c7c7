//! Register allocation: a GPR number for every value that needs one.
//!
//! What: the packed program becomes a graph of points (a group, a fetch, an export) with the
//! control flow of its tree (an `if` may skip either arm, a loop may go round, be skipped, or
//! be left by a `break`); liveness is the usual backward dataflow over it, reading only what
//! each point reads from GPRs (PV and PS reads are not). Two values interfere when they have
//! the same channel (the packer chose channels) and one is live just after a definition of the
//! other, or both are written at one point. Values then take, in the order of their first
//! definition, the lowest GPR number no interfering value has; the values of a unit
//! ([`crate::units`]) take one number together. A value that lives only within one ALU clause
//! tries the clause temporaries T0-T3 first. Values the hardware loads keep their GPRs.
//!
//! Why: per-lane masked writes make the scalar liveness of the structured control flow right
//! for the whole wavefront: a lane that skips a definition keeps its old value.
//!
//! Invariants: interfering values never share a GPR component; a value no point reads from a
//! GPR after its definition, and whose definitions can all leave the write out (not three-source
//! instructions), gets no register (it is read as PV or PS, or not at all). More than
//! [`MAX_GPRS`] GPRs is an [`Overflow`]: then [`crate::spill`] spills values to scratch memory
//! and allocates again, and what is left is an [`AllocError`] (on R600, which cannot read
//! scratch memory back, any overflow is).

use crate::isa::{CLAUSE_TEMP_BASE, MAX_GPRS, MAX_SCRATCH_ELEMENTS};
use crate::lir::{Lir, Operand, VReg, channel};
use crate::pack::{Item, PKind, PNode, Packed};
use crate::units::Units;
use shrew_engine::deep::nested;
use shrew_engine::liveness::{Live, LiveRangeSearch};
use shrew_engine::passes::machine::MachineIr;
use std::borrow::Cow;
use std::ops::Range;

/// The register of each value.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Allocation {
    /// By value: its GPR (124-127 are the clause temporaries), if it has one.
    pub gpr: Vec<Option<u8>>,
    /// GPRs the program uses.
    pub gprs: u8,
    /// The first of the GPRs the indexed registers take ([`Lir::indexed_gprs`]).
    pub indexed_base: u8,
    /// The scratch writes and reads spilling added ([`crate::spill`]).
    pub spills: u32,
    pub fills: u32,
}

/// More values live at once than there are GPRs: `needed` GPRs at the least.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Overflow {
    pub needed: u32,
}

/// Why a shader's values do not fit the GPRs.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AllocError {
    #[error(
        "GPR limit exceeded: the shader needs at least {needed} GPRs, at most {MAX_GPRS} are \
         available, and R600 cannot spill values to scratch memory: reading them back needs \
         READ_SCRATCH, which R600 lacks (R700 and later have it)"
    )]
    NoReadScratch { needed: u32 },
    #[error(
        "GPR limit exceeded: the shader needs at least {needed} GPRs, at most {MAX_GPRS} are \
         available, after spilling {spilled} values to scratch memory (a value live only \
         within one ALU clause, fetch clause or export cannot be spilled)"
    )]
    Unspillable { needed: u32, spilled: u32 },
    #[error(
        "spilling needs {needed} vec4 elements of scratch memory per lane, more than the \
         {MAX_SCRATCH_ELEMENTS} a scratch access can address"
    )]
    ScratchFull { needed: u32 },
}

/// A point of the program.
#[derive(Clone, Debug, Default)]
pub(crate) struct Point {
    pub(crate) uses: Vec<u32>,
    /// Values written, and whether the write cannot be left out.
    pub(crate) defs: Vec<(u32, bool)>,
    succs: Vec<usize>,
    /// The ALU clause the point is a group of.
    pub(crate) clause: Option<usize>,
    /// The loops around the point.
    pub(crate) loop_depth: u32,
    /// The innermost loop around the point, an index into [`Flow::loops`].
    pub(crate) innermost_loop: Option<usize>,
    /// The component of a spilled value's scratch element the point writes (`true`) or reads.
    pub(crate) spill_access: Option<(SpillSlot, bool)>,
}

/// A component of a scratch element that holds spilled values.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct SpillSlot {
    pub(crate) element: u16,
    pub(crate) component: usize,
}

/// A loop's points, which are consecutive: its header, then its body up to the last point
/// before the join its exits go to.
#[derive(Clone, Debug)]
pub(crate) struct LoopSpan {
    pub(crate) start: usize,
    pub(crate) end: usize,
    /// The loop around it.
    pub(crate) parent: Option<usize>,
}

struct Graph {
    points: Vec<Point>,
    /// The scratch elements of spilled values.
    spill_elements: Range<u16>,
    /// The loops being built, innermost last: (header, breaks, span).
    open_loops: Vec<(usize, Vec<usize>, usize)>,
    spans: Vec<LoopSpan>,
    clauses: usize,
}

impl Graph {
    fn add(&mut self, from: usize, point: Point) -> usize {
        let p = self.push(point);
        self.points[from].succs.push(p);
        p
    }

    fn empty(&mut self) -> usize {
        self.push(Point::default())
    }

    fn push(&mut self, point: Point) -> usize {
        self.points.push(Point {
            loop_depth: self.open_loops.len() as u32,
            innermost_loop: self.open_loops.last().map(|&(_, _, span)| span),
            ..point
        });
        self.points.len() - 1
    }

    /// Adds `nodes` after point `cur`; gives the last point.
    fn build(&mut self, nodes: &[PNode], mut cur: usize) -> usize {
        for node in nodes {
            match node {
                PNode::Block(items) => {
                    for item in items {
                        cur = self.item(item, cur);
                    }
                }
                PNode::If { then, otherwise } => {
                    let t = nested(|| self.build(then, cur));
                    let e = nested(|| self.build(otherwise, cur));
                    let join = self.empty();
                    self.points[t].succs.push(join);
                    self.points[e].succs.push(join);
                    cur = join;
                }
                PNode::Loop(body) => {
                    let span = self.spans.len();
                    self.spans.push(LoopSpan {
                        start: self.points.len(),
                        end: self.points.len(),
                        parent: self.open_loops.last().map(|&(_, _, span)| span),
                    });
                    self.open_loops.push((self.points.len(), Vec::new(), span));
                    let header = self.add(cur, Point::default());
                    let end = nested(|| self.build(body, header));
                    self.points[end].succs.push(header);
                    let (_, breaks, _) = self.open_loops.pop().expect("pushed");
                    self.spans[span].end = self.points.len() - 1;
                    let join = self.empty();
                    // No lane may enter the loop: LOOP_START jumps past it.
                    self.points[cur].succs.push(join);
                    for b in breaks {
                        self.points[b].succs.push(join);
                    }
                    cur = join;
                }
                PNode::Break => {
                    self.open_loops
                        .last_mut()
                        .expect("a break inside a loop")
                        .1
                        .push(cur);
                    cur = self.empty();
                }
                PNode::Continue => {
                    let header = self.open_loops.last().expect("a continue inside a loop").0;
                    self.points[cur].succs.push(header);
                    cur = self.empty();
                }
                // The subroutine's registers lie above the caller's: the call reads and
                // writes none of them.
                PNode::Call(_) => {}
            }
        }
        cur
    }

    fn item(&mut self, item: &Item, mut cur: usize) -> usize {
        match item {
            Item::Alu(clause) => {
                let id = self.clauses;
                self.clauses += 1;
                for group in &clause.groups {
                    let mut point = Point {
                        clause: Some(id),
                        ..Point::default()
                    };
                    for p in group {
                        for s in &p.srcs {
                            if let PKind::Operand(Operand::Value(v)) = s.kind {
                                point.uses.push(v.0);
                            }
                        }
                        if let Some(v) = p.dst {
                            point.defs.push((v.0, p.op.is_op3()));
                        }
                    }
                    cur = self.add(cur, point);
                }
            }
            Item::Fetch(fetches) => {
                for f in fetches {
                    let read = f.scratch_component_read();
                    let point = Point {
                        uses: f.reads().iter().map(|v| v.0).collect(),
                        defs: f.dsts.iter().flatten().map(|v| (v.0, false)).collect(),
                        spill_access: self.spill_slot(read).map(|slot| (slot, false)),
                        ..Point::default()
                    };
                    cur = self.add(cur, point);
                }
            }
            Item::Export(e) => {
                let written = e.scratch_component_written();
                let point = Point {
                    uses: e.reads().iter().map(|v| v.0).collect(),
                    spill_access: self.spill_slot(written).map(|slot| (slot, true)),
                    ..Point::default()
                };
                cur = self.add(cur, point);
            }
        }
        cur
    }

    /// The component of a spilled value's element that a scratch access reaches, if it does.
    fn spill_slot(&self, access: Option<(u16, usize)>) -> Option<SpillSlot> {
        access
            .filter(|(element, _)| self.spill_elements.contains(element))
            .map(|(element, component)| SpillSlot { element, component })
    }
}

/// The values live into and out of each point, each list ascending: live-in = uses ∪
/// (live-out − defs), live-out = ∪ live-in of the successors, the least solution, found one
/// value at a time by a search back from its uses ([`LiveRangeSearch`]).
fn liveness(points: &[Point], values: usize) -> (Vec<Vec<u32>>, Vec<Vec<u32>>) {
    let mut used_at = vec![Vec::new(); values];
    let mut defined_at = vec![Vec::new(); values];
    for (p, point) in points.iter().enumerate() {
        for &u in &point.uses {
            used_at[u as usize].push(p);
        }
        for &(d, _) in &point.defs {
            defined_at[d as usize].push(p);
        }
    }
    let mut live_in = vec![Vec::new(); points.len()];
    let mut live_out = vec![Vec::new(); points.len()];
    let mut search = LiveRangeSearch::new(points.len(), |p| points[p].succs.iter().copied());
    for (v, (uses, defs)) in (0..values as u32).zip(used_at.iter().zip(&defined_at)) {
        search.search(
            uses.iter().copied(),
            defs.iter().copied(),
            |live| match live {
                Live::In(p) => live_in[p].push(v),
                Live::Out(p) => live_out[p].push(v),
            },
        );
    }
    (live_in, live_out)
}

/// The points of a packed program (the fixed inputs' definitions first, then each group,
/// fetch and export in program order) with the values live out of each.
pub(crate) struct Flow {
    pub(crate) points: Vec<Point>,
    /// In the order of their headers.
    pub(crate) loops: Vec<LoopSpan>,
    /// By point, ascending (empty until [`Flow::solve`]).
    pub(crate) live_in: Vec<Vec<u32>>,
    /// By point, ascending (empty until [`Flow::solve`]).
    pub(crate) live_out: Vec<Vec<u32>>,
    /// ALU clauses: the points' `clause` numbers are below it.
    pub(crate) clauses: usize,
}

impl Flow {
    pub(crate) fn of(packed: &Packed, lir: &Lir) -> Flow {
        Flow::unsolved(packed, lir).solve(packed.chans.len())
    }

    /// The points and loops of `packed`, without their liveness.
    pub(crate) fn unsolved(packed: &Packed, lir: &Lir) -> Flow {
        let mut graph = Graph {
            points: vec![Point {
                defs: lir.fixed.keys().map(|v| (v.0, false)).collect(),
                ..Point::default()
            }],
            spill_elements: packed.spill_elements.clone(),
            open_loops: Vec::new(),
            spans: Vec::new(),
            clauses: 0,
        };
        graph.build(&packed.body, 0);
        Flow {
            points: graph.points,
            loops: graph.spans,
            live_in: Vec::new(),
            live_out: Vec::new(),
            clauses: graph.clauses,
        }
    }

    /// Finds the liveness of the `values`.
    pub(crate) fn solve(self, values: usize) -> Flow {
        let (live_in, live_out) = liveness(&self.points, values);
        Flow {
            live_in,
            live_out,
            ..self
        }
    }
}

/// Clause temporaries (T0-T3, from [`CLAUSE_TEMP_BASE`]).
const CLAUSE_TEMPS: u8 = 4;

/// GPRs the most values live at once on one channel take: what an allocation needs at the
/// least.
fn peak_gprs(live_out: &[Vec<u32>], needs: &[bool], chan: impl Fn(u32) -> u8) -> u32 {
    let mut peak = 0;
    for out in live_out {
        let mut on = [0u32; 4];
        for &v in out.iter().filter(|&&v| needs[v as usize]) {
            on[chan(v) as usize] += 1;
        }
        peak = peak.max(on.into_iter().max().unwrap_or(0));
    }
    peak
}

/// Allocates the registers of `lir` from GPR `first` up (a subroutine's window lies above its
/// callers' registers).
pub fn allocate(
    packed: &Packed,
    lir: &Lir,
    units: &Units,
    first: u8,
) -> Result<Allocation, Overflow> {
    allocate_over(packed, &Flow::of(packed, lir), lir, units, first)
}

/// [`allocate`] over `flow`, the points and liveness of `packed`.
pub(crate) fn allocate_over(
    packed: &Packed,
    flow: &Flow,
    lir: &Lir,
    units: &Units,
    first: u8,
) -> Result<Allocation, Overflow> {
    // The packer's copies follow the values of `lir`.
    let n = packed.chans.len();
    let chan = |v: u32| packed.chans[v as usize].unwrap_or(0);
    let Flow {
        points,
        live_in,
        live_out,
        ..
    } = flow;

    // Which values need a register, and where they live.
    let mut needs = vec![false; n];
    let mut first_def = vec![usize::MAX; n];
    // The one ALU clause a value is live, read or written in: `Some(None)` once it is seen
    // outside a clause or in two.
    let mut clause_of: Vec<Option<Option<usize>>> = vec![None; n];
    for (p, point) in points.iter().enumerate() {
        let seen = (live_in[p].iter().chain(&live_out[p]).copied())
            .chain(point.uses.iter().copied())
            .chain(point.defs.iter().map(|&(d, _)| d));
        for v in seen {
            let entry = &mut clause_of[v as usize];
            *entry = match *entry {
                None => Some(point.clause),
                Some(c) if c == point.clause => Some(c),
                Some(_) => Some(None),
            };
        }
        for &(d, must_write) in &point.defs {
            first_def[d as usize] = first_def[d as usize].min(p);
            if must_write || live_out[p].binary_search(&d).is_ok() {
                needs[d as usize] = true;
            }
        }
    }
    for v in lir.fixed.keys() {
        needs[v.0 as usize] = true;
    }
    // Values live at once on one channel interfere with one another: more of them than the
    // GPRs and clause temporaries cannot fit, in any order. Found before the interference is
    // built, which is as large as such a program's pressure makes it.
    let peak = peak_gprs(live_out, &needs, chan);
    let room = u32::from(MAX_GPRS - first).saturating_sub(u32::from(lir.indexed_gprs));
    if peak > room + u32::from(CLAUSE_TEMPS) {
        return Err(Overflow {
            needed: peak.max(u32::from(MAX_GPRS) + 1),
        });
    }
    // Interference, on one channel only.
    let mut neighbours: Vec<Vec<u32>> = vec![Vec::new(); n];
    for (p, point) in points.iter().enumerate() {
        for &(d, _) in &point.defs {
            for &l in &live_out[p] {
                if l != d && chan(l) == chan(d) {
                    neighbours[d as usize].push(l);
                    neighbours[l as usize].push(d);
                }
            }
            for &(e, _) in &point.defs {
                if e != d && chan(e) == chan(d) {
                    neighbours[d as usize].push(e);
                }
            }
        }
    }

    let mut gpr: Vec<Option<u8>> = vec![None; n];
    for (v, &(g, _)) in &lir.fixed {
        gpr[v.0 as usize] = Some(g);
    }
    // Allocation groups: units (their members that need a register) and single values.
    let mut groups: Vec<Vec<u32>> = units
        .members
        .iter()
        .map(|m| {
            m.iter()
                .map(|v| v.0)
                .filter(|&v| needs[v as usize])
                .collect()
        })
        .collect();
    for v in 0..n as u32 {
        if needs[v as usize]
            && !units.of.contains_key(&VReg(v))
            && !lir.fixed.contains_key(&VReg(v))
        {
            groups.push(vec![v]);
        }
    }
    groups.retain(|g| !g.is_empty() && g.iter().any(|&v| gpr[v as usize].is_none()));
    groups.sort_by_key(|g| g.iter().map(|&v| first_def[v as usize]).min());
    let mut most = lir
        .fixed
        .values()
        .map(|&(g, _)| g as u32 + 1)
        .max()
        .unwrap_or(0)
        .max(u32::from(first));
    // The indexed registers follow the GPRs the hardware loads, for the whole program.
    let indexed_base = most;
    let indexed = indexed_base..indexed_base + u32::from(lir.indexed_gprs);
    most = indexed.end;
    if most > MAX_GPRS as u32 {
        return Err(Overflow { needed: most });
    }
    for group in groups {
        let fits = |g: u8, gpr: &[Option<u8>]| {
            group.iter().all(|&v| {
                neighbours[v as usize]
                    .iter()
                    .all(|&w| gpr[w as usize] != Some(g))
            })
        };
        let temporary = group.len() == 1
            && !units.of.contains_key(&VReg(group[0]))
            && matches!(clause_of[group[0] as usize], Some(Some(_)));
        let g = (CLAUSE_TEMP_BASE..CLAUSE_TEMP_BASE + CLAUSE_TEMPS)
            .filter(|_| temporary)
            .chain((first..MAX_GPRS).filter(|&g| !indexed.contains(&u32::from(g))))
            .find(|&g| fits(g, &gpr))
            .ok_or(Overflow {
                needed: peak.max(u32::from(MAX_GPRS) + 1),
            })?;
        for &v in &group {
            gpr[v as usize] = Some(g);
        }
        if g < CLAUSE_TEMP_BASE {
            most = most.max(g as u32 + 1);
        }
    }
    Ok(Allocation {
        gpr,
        gprs: most as u8,
        indexed_base: indexed_base as u8,
        ..Allocation::default()
    })
}

/// A packed program with its registers: what emission reads.
#[derive(Clone, Debug, PartialEq)]
pub struct Allocated<'p> {
    /// The packer's program, or its copy with the code spilling added.
    pub packed: Cow<'p, Packed>,
    pub alloc: Allocation,
}

impl Allocated<'_> {
    /// `v`'s register and channel (`R3.y`, `T1.x` for a clause temporary), `-` without one.
    fn register(&self, v: VReg) -> String {
        let chan = self.packed.chans.get(v.0 as usize).copied().flatten();
        let chan = chan.map_or('?', channel);
        match self.alloc.gpr.get(v.0 as usize).copied().flatten() {
            Some(gpr) if gpr >= CLAUSE_TEMP_BASE => format!("T{}.{chan}", gpr - CLAUSE_TEMP_BASE),
            Some(gpr) => format!("R{gpr}.{chan}"),
            None => "-".into(),
        }
    }

    /// Every value read from a GPR: ALU operands, fetch and export lanes.
    fn values_read(&self) -> Vec<VReg> {
        let mut out: Vec<VReg> = Vec::new();
        for item in self.packed.items() {
            match item {
                Item::Alu(clause) => {
                    let srcs = clause.groups.iter().flatten().flat_map(|p| &p.srcs);
                    out.extend(srcs.filter_map(|src| match src.kind {
                        PKind::Operand(Operand::Value(v)) => Some(v),
                        _ => None,
                    }))
                }
                Item::Fetch(fetches) => out.extend(fetches.iter().flat_map(|f| f.reads())),
                Item::Export(export) => out.extend(export.reads()),
            }
        }
        out.sort();
        out.dedup();
        out
    }
}

impl MachineIr for Allocated<'_> {
    /// The registers of the values that have one, then the packed program.
    fn print(&self) -> String {
        let registers: Vec<String> = (0..self.alloc.gpr.len() as u32)
            .map(VReg)
            .filter(|&v| self.alloc.gpr[v.0 as usize].is_some())
            .map(|v| format!("{v}={}", self.register(v)))
            .collect();
        format!(
            "{} GPRs: {}\n{}",
            self.alloc.gprs,
            registers.join(" "),
            self.packed.print()
        )
    }

    /// Every value read from a GPR has one, below the program's count or among the clause
    /// temporaries, and no group writes one GPR component twice.
    fn validate(&self) -> Result<(), String> {
        let mut errors = Vec::new();
        for v in self.values_read() {
            match self.alloc.gpr.get(v.0 as usize).copied().flatten() {
                None => errors.push(format!("{v} is read from a GPR but has none")),
                Some(gpr) if gpr >= self.alloc.gprs && gpr < CLAUSE_TEMP_BASE => errors.push(
                    format!("{v} is in R{gpr}, past the {} GPRs", self.alloc.gprs),
                ),
                Some(_) => {}
            }
        }
        for (c, clause) in self.packed.clauses().iter().enumerate() {
            for (g, group) in clause.groups.iter().enumerate() {
                let mut written: Vec<String> = (group.iter())
                    .filter_map(|p| p.dst)
                    .map(|v| self.register(v))
                    .filter(|register| register != "-")
                    .collect();
                written.sort();
                if let Some(pair) = written.windows(2).find(|pair| pair[0] == pair[1]) {
                    errors.push(format!("clause {c} group {g} writes {} twice", pair[0]));
                }
            }
        }
        match errors.is_empty() {
            true => Ok(()),
            false => Err(errors.join("\n")),
        }
    }

    fn instruction_count(&self) -> usize {
        self.packed.instruction_count()
    }
}
