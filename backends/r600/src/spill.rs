//! Spilling: the values the GPRs have no room for wait in scratch memory between their
//! definitions and their uses.
//!
//! What: when register allocation ([`crate::regalloc`]) runs out of GPRs,
//! [`allocate_spilling`] spills values of the packed program and allocates again, in rounds.
//! A round counts the values live on each channel after each point of the program (a group, a
//! fetch, an export) and goes through the values cheapest first: a value's cost is its
//! definitions and reads, one per clause, fetch clause or export, each weighing
//! [`LOOP_WEIGHT`] more per loop around it, divided by the points it is live at (long ranges
//! with few uses, outside loops, go first). It spills a value when that relieves a point
//! where its channel holds more values than the round's target, and takes the value off the
//! counts of the points it relieves: those outside the clauses, fetch clauses and exports that
//! define or read it, where the value or its reload stays. A spilled value takes a component
//! of a scratch element, the one of its channel (a scratch write has no swizzle):
//! - each ALU clause or fetch clause that defines it defines a fresh value on its channel
//!   instead (which the clause's later reads read), and after it a MEM_SCRATCH writes that
//!   (at the start of both arms of the `if` when the clause is the `if`'s ALU_PUSH_BEFORE,
//!   whose predicate set already masks the lanes of one arm), so that every piece of the
//!   value's life between its definitions and reads is a short value of its own;
//! - before each ALU clause, fetch clause or export that reads it before defining it, a
//!   READ_SCRATCH loads it into a fresh value on its channel (so the packer's read-port checks
//!   still hold), which that item reads instead. A reload a fetch or an export reads joins
//!   the value's unit ([`crate::units`]), so that it is in the GPR the instruction reads.
//!
//! Once the program fits, spilled values whose times in scratch memory (the hulls of their
//! writes and reads, described below) do not overlap share a component of an element, so that
//! scratch memory holds at most as many elements as values overlap at one point. Only the
//! elements left then must be within reach of a scratch access ([`MAX_SCRATCH_ELEMENTS`]);
//! a program needing more is an [`AllocError`] that says how many.
//!
//! The emitter puts a WAIT_ACK before a read while a write may be in flight. Each round aims
//! lower than the one before ([`MARGINS`]) and never spills a value twice nor a reload, so the
//! rounds end: at most one per margin.
//!
//! A program with far more values live at once than the GPRs hold (more than [`HOPELESS`]
//! times) is first spilled without its liveness, from each value's live hull: the interval of
//! program points from its first to its last definition or read, widened to the loops it is
//! live around, which holds every point it is live at. The hulls and the pressure they put on
//! each point take time near-linear in the program, where the exact live sets of such a
//! program would take its points times its values; the exact rounds then finish the work.
//!
//! Why: scratch writes and reads are masked per lane as ALU writes are, so a lane that skips a
//! definition skips its write too and reads back what the GPR would have kept. Spilling after
//! packing keeps the schedule: the pressure it counts is the allocator's, and only the items
//! around the spilled values change.
//!
//! Invariants: a program that fits the GPRs is not touched; spilled values whose times overlap
//! never share an element component; the spilled values' elements follow
//! the temporaries' and the spilled values' of the parts compiled before (a subroutine's writes
//! do not overwrite its callers' values); spilled values' accesses are never indexed. R600
//! cannot read scratch memory (no READ_SCRATCH): there a shader that does not fit is an
//! [`AllocError`], as is one whose values live within single clauses need more GPRs than
//! there are.
//!
//! Options: none.

use crate::isa::{Chip, MAX_GPRS, MAX_SCRATCH_ELEMENTS};
use crate::lir::{Export, Fetch, Lane, Lir, Operand, VReg};
use crate::pack::{Item, PKind, PNode, Packed};
use crate::regalloc::{AllocError, Allocation, Flow, LoopSpan, SpillSlot, allocate_over};
use crate::units::Units;
use shrew_engine::deep::nested;
use std::borrow::Cow;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::ops::Range;

/// How far below the GPRs available each round aims: the allocator may need more GPRs than
/// the most values live at once, and reloads add to what the round counted.
const MARGINS: [u32; 6] = [0, 4, 12, 24, 48, 96];

/// How many times the GPRs available the values live at once on a channel may be before
/// spilling starts from live hulls rather than the exact liveness ([`choose_by_hulls`]).
const HOPELESS: u32 = 2;

/// How much more a definition or read weighs for each loop around it.
const LOOP_WEIGHT: f64 = 8.0;

/// Loops deeper than this weigh as this many.
const MAX_WEIGHED_LOOPS: u32 = 8;

/// Allocates the registers of `packed` (as [`crate::regalloc::allocate`] does) from GPR `first` up, spilling
/// values to scratch elements from `spill_base` up when they do not fit: the program (the
/// packer's, or a copy with the spill code) and its registers.
pub fn allocate_spilling<'p>(
    packed: &'p Packed,
    lir: &Lir,
    units: &Units,
    first: u8,
    spill_base: u16,
    chip: Chip,
) -> Result<(Cow<'p, Packed>, Allocation), AllocError> {
    let available = u32::from(MAX_GPRS - first).saturating_sub(u32::from(lir.indexed_gprs));
    let mut flow = Flow::unsolved(packed, lir);
    let mut spiller = None;
    if chip.reads_scratch() {
        let hopeless = choose_by_hulls(&flow, packed, lir, HOPELESS * available, available);
        if !hopeless.is_empty() {
            let mut s = Spiller::new(packed, lir, units, spill_base, chip);
            s.spill(&hopeless)?;
            flow = Flow::unsolved(&s.packed, lir);
            spiller = Some(s);
        }
    }
    let values = spiller.as_ref().map_or(packed, |s| &s.packed).chans.len();
    flow = flow.solve(values);
    let mut margins = MARGINS.into_iter();
    let needed = loop {
        let (program, program_units) = match &spiller {
            Some(s) => (&s.packed, &s.units),
            None => (packed, units),
        };
        let needed = match allocate_over(program, &flow, lir, program_units, first) {
            Ok(alloc) => {
                return Ok(match spiller {
                    None => (Cow::Borrowed(packed), alloc),
                    Some(mut s) => {
                        s.share_elements(&flow);
                        let needed = u32::from(s.packed.spill_elements.end);
                        if needed > MAX_SCRATCH_ELEMENTS {
                            return Err(AllocError::ScratchFull { needed });
                        }
                        let alloc = Allocation {
                            spills: s.spills,
                            fills: s.fills,
                            ..alloc
                        };
                        (Cow::Owned(s.packed), alloc)
                    }
                });
            }
            Err(overflow) => overflow.needed,
        };
        if !chip.reads_scratch() {
            return Err(AllocError::NoReadScratch { needed });
        }
        let s = spiller.get_or_insert_with(|| Spiller::new(packed, lir, units, spill_base, chip));
        // The allocator may need more GPRs than the most values live at once: a round whose
        // target the pressure already meets goes on to the next, lower one.
        let targets =
            (margins.by_ref()).map_while(|margin| available.checked_sub(margin).filter(|&t| t > 0));
        let Some(chosen) = targets
            .map(|target| s.choose(&flow, target))
            .find(|chosen| !chosen.is_empty())
        else {
            break needed;
        };
        s.spill(&chosen)?;
        flow = Flow::of(&s.packed, lir);
    };
    Err(AllocError::Unspillable {
        needed,
        spilled: spiller.map_or(0, |s| s.spilled),
    })
}

/// What spilling each value costs: a reload or write for each item (an ALU clause, a fetch, an
/// export) that reads or defines it, weighing [`LOOP_WEIGHT`] more per loop around it.
struct SpillCosts {
    /// By value: its items, once each.
    items: Vec<Vec<usize>>,
    cost: Vec<f64>,
    /// By value: whether some point defines it.
    defined: Vec<bool>,
}

impl SpillCosts {
    fn of(flow: &Flow, values: usize) -> SpillCosts {
        let mut costs = SpillCosts {
            items: vec![Vec::new(); values],
            cost: vec![0.0; values],
            defined: vec![false; values],
        };
        for (p, point) in flow.points.iter().enumerate() {
            let weight = LOOP_WEIGHT.powi(point.loop_depth.min(MAX_WEIGHED_LOOPS) as i32);
            let defs = point.defs.iter().map(|&(v, _)| (v, true));
            for (v, def) in point.uses.iter().map(|&v| (v, false)).chain(defs) {
                costs.defined[v as usize] |= def;
                let seen = &mut costs.items[v as usize];
                if seen.last() != Some(&item_of(flow, p)) {
                    seen.push(item_of(flow, p));
                    costs.cost[v as usize] += weight;
                }
            }
        }
        costs
    }
}

/// A point's item: its ALU clause, or the point itself (a fetch, an export).
fn item_of(flow: &Flow, p: usize) -> usize {
    flow.points[p].clause.unwrap_or(flow.clauses + p)
}

/// Spilling before the liveness is known, for programs whose values could never fit: when the
/// live hulls ([`live_hulls`]) of more than `bound` values on one channel overlap some point,
/// the values to spill so that no more than `target` overlap any point, cheapest per point
/// first as [`Spiller::choose`] goes; none otherwise. The exact rounds then start from a program
/// whose live sets hold at most about `target` values per channel at any point (a hull holds
/// every point its value is live at), so their work stays linear in its size.
fn choose_by_hulls(flow: &Flow, packed: &Packed, lir: &Lir, bound: u32, target: u32) -> Vec<u32> {
    // No more than `bound` values on any channel: nothing to look at (almost every program).
    let mut on_channel = [0u32; 4];
    for &c in packed.chans.iter().flatten() {
        on_channel[c as usize] += 1;
    }
    if on_channel.iter().all(|&n| n <= bound) {
        return Vec::new();
    }
    let values = packed.chans.len();
    let hulls = live_hulls(flow, values);
    let mut counts = vec![vec![0i32; flow.points.len() + 1]; 4];
    for (v, hull) in hulls.iter().enumerate() {
        if let (Some((lo, hi)), Some(c)) = (*hull, packed.chans[v]) {
            counts[c as usize][lo] += 1;
            counts[c as usize][hi + 1] -= 1;
        }
    }
    let mut pressure: Vec<RangeMax> = (counts.into_iter())
        .map(|mut diffs| {
            diffs.pop();
            let mut live = 0;
            for d in &mut diffs {
                live += *d;
                *d = live;
            }
            RangeMax::new(&diffs)
        })
        .collect();
    let (bound, target) = (bound as i32, target as i32);
    if pressure
        .iter()
        .all(|p| p.max(0, flow.points.len() - 1) <= bound)
    {
        return Vec::new();
    }
    let costs = SpillCosts::of(flow, values);
    let length = |v: u32| hulls[v as usize].map_or(0, |(lo, hi)| hi - lo + 1);
    // A value all of whose reads and definitions are in one item gains nothing from spilling.
    let mut candidates: Vec<u32> = (0..values as u32)
        .filter(|&v| {
            let i = v as usize;
            !lir.fixed.contains_key(&VReg(v))
                && costs.defined[i]
                && costs.items[i].len() > 1
                && hulls[i].is_some()
                && packed.chans[i].is_some()
        })
        .collect();
    let per_point = |v: u32| costs.cost[v as usize] / length(v) as f64;
    candidates.sort_by(|&a, &b| per_point(a).total_cmp(&per_point(b)).then(a.cmp(&b)));
    let mut chosen = Vec::new();
    for v in candidates {
        let (lo, hi) = hulls[v as usize].expect("a candidate has a hull");
        let on_channel = &mut pressure[packed.chans[v as usize].expect("a channel") as usize];
        if on_channel.max(lo, hi) > target {
            on_channel.add(lo, hi, -1);
            chosen.push(v);
        }
    }
    chosen
}

/// Each value's live hull: the points from its first to its last definition or read (from the
/// start when it is read before it is defined), widened to every loop it is live into or out
/// of; an interval of points holding every point the value is live at when a definition
/// reaches each of its reads on every path, found in time near-linear in the program, without
/// its liveness. None for a value nothing reads.
fn live_hulls(flow: &Flow, values: usize) -> Vec<Option<(usize, usize)>> {
    let accesses = flow.points.iter().enumerate().flat_map(|(p, point)| {
        // A point reads before it writes.
        let uses = point.uses.iter().map(move |&v| (p, v as usize, true));
        uses.chain(point.defs.iter().map(move |&(v, _)| (p, v as usize, false)))
    });
    (hulls(flow, values, accesses).into_iter())
        .map(|hull| hull.filter(|h| h.read).map(|h| (h.lo, h.hi)))
        .collect()
}

/// Where something written and read at points (a value, a scratch element) is live: the
/// points `lo..=hi`, and whether anything reads it.
#[derive(Copy, Clone, Debug)]
struct Hull {
    lo: usize,
    hi: usize,
    read: bool,
}

/// The hulls (as [`live_hulls`] describes them) of `keys` things from their `accesses`, in
/// the order of the points: (point, key, whether it reads; at one point, reads first). None
/// for a key never accessed.
fn hulls(
    flow: &Flow,
    keys: usize,
    accesses: impl Iterator<Item = (usize, usize, bool)>,
) -> Vec<Option<Hull>> {
    let mut found: Vec<Option<Hull>> = vec![None; keys];
    let mut read_first = vec![false; keys];
    for (p, key, is_read) in accesses {
        match &mut found[key] {
            Some(hull) => {
                hull.hi = p;
                hull.read |= is_read;
            }
            none => {
                *none = Some(Hull {
                    lo: p,
                    hi: p,
                    read: is_read,
                });
                read_first[key] = is_read;
            }
        }
    }
    let tree = LoopTree::new(&flow.loops);
    let innermost = |p: usize| flow.points[p].innermost_loop;
    for (hull, read_first) in found.iter_mut().zip(read_first) {
        let Some(Hull { lo, hi, .. }) = hull else {
            continue;
        };
        if read_first {
            *lo = 0;
        }
        // The loops around `lo` that end before `hi`, and those around `hi` that start after
        // `lo`: the key is live all around them.
        if let Some(l) = innermost(*lo).filter(|&l| flow.loops[l].end < *hi) {
            *lo = flow.loops[tree.outermost(l, |s| s.end < *hi)].start;
        }
        if let Some(l) = innermost(*hi).filter(|&l| flow.loops[l].start > *lo) {
            *hi = flow.loops[tree.outermost(l, |s| s.start > *lo)].end;
        }
    }
    found
}

/// The loops' tree, with each loop's ancestors 2^k levels out (or the outermost), so that a
/// walk outwards takes logarithmic time however deep the loops nest.
struct LoopTree<'f> {
    loops: &'f [LoopSpan],
    /// `up[k][l]`: the loop 2^k levels out of `l`, or the outermost loop around `l`.
    up: Vec<Vec<usize>>,
}

impl<'f> LoopTree<'f> {
    fn new(loops: &'f [LoopSpan]) -> LoopTree<'f> {
        let parents: Vec<usize> = (loops.iter().enumerate())
            .map(|(l, span)| span.parent.unwrap_or(l))
            .collect();
        let mut up = vec![parents];
        while (1usize << (up.len() - 1)) < loops.len() {
            let last = up.last().expect("one level");
            let next = last.iter().map(|&a| last[a]).collect();
            up.push(next);
        }
        LoopTree { loops, up }
    }

    /// The outermost of `l` and the loops around it for which `holds` is true, given that it
    /// holds for `l` and, going outwards, for a run of loops and then no more.
    fn outermost(&self, mut l: usize, holds: impl Fn(&LoopSpan) -> bool) -> usize {
        for level in self.up.iter().rev() {
            if holds(&self.loops[level[l]]) {
                l = level[l];
            }
        }
        l
    }
}

/// Counts at consecutive positions, with adding to a range of them and the most over a range,
/// each in logarithmic time.
struct RangeMax {
    /// Leaves: the positions, rounded up to a power of two.
    size: usize,
    /// By node: the most in its range, counting the additions at the node and below.
    most: Vec<i32>,
    /// By node: what was added to its whole range.
    added: Vec<i32>,
}

impl RangeMax {
    fn new(counts: &[i32]) -> RangeMax {
        let size = counts.len().next_power_of_two();
        let mut most = vec![i32::MIN / 2; 2 * size];
        most[size..size + counts.len()].copy_from_slice(counts);
        for node in (1..size).rev() {
            most[node] = most[2 * node].max(most[2 * node + 1]);
        }
        RangeMax {
            size,
            most,
            added: vec![0; 2 * size],
        }
    }

    /// The most at positions `lo..=hi`.
    fn max(&self, lo: usize, hi: usize) -> i32 {
        self.max_under(1, 0, self.size - 1, lo, hi)
    }

    fn max_under(&self, node: usize, from: usize, to: usize, lo: usize, hi: usize) -> i32 {
        if hi < from || to < lo {
            return i32::MIN / 2;
        }
        if lo <= from && to <= hi {
            return self.most[node];
        }
        let mid = (from + to) / 2;
        let below = (self.max_under(2 * node, from, mid, lo, hi)).max(self.max_under(
            2 * node + 1,
            mid + 1,
            to,
            lo,
            hi,
        ));
        below + self.added[node]
    }

    /// Adds `delta` at positions `lo..=hi`.
    fn add(&mut self, lo: usize, hi: usize, delta: i32) {
        self.add_under(1, 0, self.size - 1, lo, hi, delta);
    }

    fn add_under(&mut self, node: usize, from: usize, to: usize, lo: usize, hi: usize, delta: i32) {
        if hi < from || to < lo {
            return;
        }
        if lo <= from && to <= hi {
            self.most[node] += delta;
            self.added[node] += delta;
            return;
        }
        let mid = (from + to) / 2;
        self.add_under(2 * node, from, mid, lo, hi, delta);
        self.add_under(2 * node + 1, mid + 1, to, lo, hi, delta);
        self.most[node] = self.most[2 * node].max(self.most[2 * node + 1]) + self.added[node];
    }
}

/// The program being spilled and what spilling has done to it.
struct Spiller {
    packed: Packed,
    units: Units,
    chip: Chip,
    /// By value: its element once spilled.
    element: Vec<Option<u16>>,
    /// By value: whether the round being written spills it (the code of earlier rounds
    /// stays as it is).
    spilling_now: Vec<bool>,
    /// By value: whether it may not be spilled (a fixed input, a spilled value, a reload).
    unspillable: Vec<bool>,
    /// Elements taken on each channel.
    taken: [u32; 4],
    spilled: u32,
    spills: u32,
    fills: u32,
}

impl Spiller {
    fn new(packed: &Packed, lir: &Lir, units: &Units, spill_base: u16, chip: Chip) -> Spiller {
        let values = packed.chans.len();
        let mut unspillable = vec![false; values];
        for v in lir.fixed.keys() {
            unspillable[v.0 as usize] = true;
        }
        let mut packed = packed.clone();
        packed.spill_elements = spill_base..spill_base;
        Spiller {
            packed,
            units: units.clone(),
            chip,
            element: vec![None; values],
            spilling_now: vec![false; values],
            unspillable,
            taken: [0; 4],
            spilled: 0,
            spills: 0,
            fills: 0,
        }
    }

    fn chan(&self, v: u32) -> usize {
        self.packed.chans[v as usize].unwrap_or(0) as usize
    }

    fn is_spilled(&self, v: VReg) -> bool {
        self.spilling_now[v.0 as usize]
    }

    /// The values to spill so that no channel holds more than `target` live values after any
    /// point of `flow`, as far as spilling can relieve it.
    fn choose(&self, flow: &Flow, target: u32) -> Vec<u32> {
        let values = self.packed.chans.len();
        let mut pressure: Vec<[u32; 4]> = vec![[0; 4]; flow.points.len()];
        let mut live_at: Vec<Vec<u32>> = vec![Vec::new(); values];
        for (p, out) in flow.live_out.iter().enumerate() {
            for &v in out {
                pressure[p][self.chan(v)] += 1;
                live_at[v as usize].push(p as u32);
            }
        }
        let SpillCosts {
            items,
            cost,
            defined,
        } = SpillCosts::of(flow, values);
        let mut candidates: Vec<u32> = (0..values as u32)
            .filter(|&v| {
                let v = v as usize;
                !self.unspillable[v]
                    && defined[v]
                    && !live_at[v].is_empty()
                    && self.packed.chans[v].is_some()
            })
            .collect();
        let per_point = |v: u32| cost[v as usize] / live_at[v as usize].len() as f64;
        candidates.sort_by(|&a, &b| per_point(a).total_cmp(&per_point(b)).then(a.cmp(&b)));
        // By item: the candidate whose items are marked.
        let mut marked = vec![u32::MAX; flow.clauses + flow.points.len()];
        let mut chosen = Vec::new();
        for v in candidates {
            for &i in &items[v as usize] {
                marked[i] = v;
            }
            let c = self.chan(v);
            let relieved = || {
                (live_at[v as usize].iter())
                    .map(|&p| p as usize)
                    .filter(|&p| marked[item_of(flow, p)] != v)
            };
            if relieved().any(|p| pressure[p][c] > target) {
                for p in relieved() {
                    pressure[p][c] -= 1;
                }
                chosen.push(v);
            }
        }
        chosen
    }

    /// Spills `chosen`: gives each an element and adds its writes and reads.
    fn spill(&mut self, chosen: &[u32]) -> Result<(), AllocError> {
        let base = u32::from(self.packed.spill_elements.start);
        self.spilling_now = vec![false; self.packed.chans.len()];
        for &v in chosen {
            let c = self.chan(v);
            // Until the rounds end, every spilled value has a component of its own: only the
            // elements left once they share ([`Spiller::share_elements`]) must be within reach
            // of a scratch access. (Past what an element number holds, 65,535 with the elements
            // before the spilled values', no count is known but that it is more than the
            // hardware's.)
            let element = base + self.taken[c];
            self.taken[c] += 1;
            if element >= u32::from(u16::MAX) {
                return Err(AllocError::ScratchFull {
                    needed: element + 1,
                });
            }
            self.element[v as usize] = Some(element as u16);
            self.spilling_now[v as usize] = true;
            self.unspillable[v as usize] = true;
        }
        self.packed.spill_elements.end = (base + self.taken.iter().max().unwrap_or(&0)) as u16;
        self.spilled += chosen.len() as u32;
        let mut body = std::mem::take(&mut self.packed.body);
        self.nodes(&mut body);
        self.packed.body = body;
        Ok(())
    }

    fn nodes(&mut self, nodes: &mut [PNode]) {
        // The writes of the values the ALU_PUSH_BEFORE ending the last block defines.
        let mut for_arms = Vec::new();
        for node in nodes {
            match node {
                PNode::Block(items) => for_arms = self.block(items),
                PNode::If { then, otherwise } => {
                    nested(|| {
                        self.nodes(then);
                        self.nodes(otherwise);
                    });
                    let writes = std::mem::take(&mut for_arms);
                    self.spills += 2 * writes.len() as u32;
                    for arm in [&mut **then, &mut **otherwise] {
                        match arm.first_mut() {
                            Some(PNode::Block(items)) => {
                                items.splice(0..0, writes.iter().cloned());
                            }
                            _ => arm.insert(0, PNode::Block(writes.clone())),
                        }
                    }
                }
                PNode::Loop(body) => nested(|| self.nodes(body)),
                PNode::Break | PNode::Continue | PNode::Call(_) => {}
            }
        }
    }

    /// Rewrites the items of a block: the reloads before each item reading spilled values,
    /// the writes after each defining them. Gives the writes that go to the arms of the `if`
    /// after the block.
    ///
    /// An item defining a spilled value defines a fresh value on its channel instead, which
    /// the item's later reads and the write read: each piece of a spilled value's life is a
    /// value of its own, so that the allocator sees short ranges, not one value defined all
    /// over the program (which, coloured once, would have to avoid everything live at any of
    /// its definitions).
    fn block(&mut self, items: &mut Vec<Item>) -> Vec<Item> {
        let mut out = Vec::with_capacity(items.len());
        let mut for_arms = Vec::new();
        for mut item in std::mem::take(items) {
            // The spilled values the item reads before defining them, each with its reload,
            // and those it defines, each with the fresh value it defines instead.
            let mut reloads: Vec<(VReg, VReg)> = Vec::new();
            let mut defined: Vec<(VReg, VReg)> = Vec::new();
            match &mut item {
                Item::Alu(clause) => {
                    for group in &mut clause.groups {
                        for placed in group.iter_mut() {
                            for src in &mut placed.srcs {
                                if let PKind::Operand(Operand::Value(v)) = &mut src.kind {
                                    self.rename_read(v, &defined, &mut reloads, false);
                                }
                            }
                        }
                        // A group reads before it writes: its own reads read the reload.
                        for dst in group.iter_mut().filter_map(|p| p.dst.as_mut()) {
                            self.rename_definition(dst, &mut defined, false);
                        }
                    }
                }
                Item::Fetch(fetches) => {
                    for fetch in fetches.iter_mut() {
                        let lanes = std::iter::once(&mut fetch.srcs)
                            .chain(fetch.gradients.iter_mut().flatten());
                        for lane in lanes.flatten() {
                            if let Lane::Value(v) = lane {
                                self.rename_read(v, &defined, &mut reloads, true);
                            }
                        }
                        for dst in fetch.dsts.iter_mut().flatten() {
                            self.rename_definition(dst, &mut defined, true);
                        }
                    }
                }
                Item::Export(export) => {
                    for lane in export.srcs.iter_mut().chain(&mut export.index) {
                        if let Lane::Value(v) = lane {
                            self.rename_read(v, &defined, &mut reloads, true);
                        }
                    }
                }
            }
            for chunk in reloads.chunks(self.chip.max_fetches()) {
                let reads = chunk.iter().map(|&(v, r)| self.read(v, r)).collect();
                out.push(Item::Fetch(reads));
            }
            self.fills += reloads.len() as u32;
            let push = matches!(&item, Item::Alu(clause) if clause.push);
            out.push(item);
            let writes = defined.iter().map(|&(v, d)| Item::Export(self.write(v, d)));
            if push {
                for_arms = writes.collect();
            } else {
                out.extend(writes);
                self.spills += defined.len() as u32;
            }
        }
        *items = out;
        for_arms
    }

    /// A read of `v` in an item: when `v` is being spilled, the read takes the fresh value
    /// the item defined in its place, or else its reload (made if there is none yet, in `v`'s
    /// unit when `in_unit`).
    fn rename_read(
        &mut self,
        v: &mut VReg,
        defined: &[(VReg, VReg)],
        reloads: &mut Vec<(VReg, VReg)>,
        in_unit: bool,
    ) {
        if !self.is_spilled(*v) {
            return;
        }
        let found = |pairs: &[(VReg, VReg)]| pairs.iter().find(|(s, _)| s == v).map(|p| p.1);
        *v = match found(defined).or_else(|| found(reloads)) {
            Some(renamed) => renamed,
            None => {
                let reload = self.fresh(*v, in_unit);
                reloads.push((*v, reload));
                reload
            }
        };
    }

    /// A definition of `v` in an item: when `v` is being spilled, it defines the fresh value
    /// the item defines in its place (made at the item's first definition of `v`, in `v`'s
    /// unit when `in_unit`).
    fn rename_definition(&mut self, v: &mut VReg, defined: &mut Vec<(VReg, VReg)>, in_unit: bool) {
        if !self.is_spilled(*v) {
            return;
        }
        *v = match defined.iter().find(|(s, _)| s == v) {
            Some(&(_, renamed)) => renamed,
            None => {
                let renamed = self.fresh(*v, in_unit);
                defined.push((*v, renamed));
                renamed
            }
        };
    }

    /// A fresh value on `v`'s channel, in `v`'s unit when `in_unit`, which is never spilled.
    fn fresh(&mut self, v: VReg, in_unit: bool) -> VReg {
        let r = VReg(self.packed.chans.len() as u32);
        self.packed.chans.push(self.packed.chans[v.0 as usize]);
        self.element.push(None);
        self.spilling_now.push(false);
        self.unspillable.push(true);
        if in_unit && let Some(&unit) = self.units.of.get(&v) {
            self.units.of.insert(r, unit);
            self.units.members[unit].push(r);
        }
        r
    }

    /// The READ_SCRATCH of spilled value `v` into `reload`.
    fn read(&self, v: VReg, reload: VReg) -> Fetch {
        let mut dsts = [None; 4];
        dsts[self.chan(v.0)] = Some(reload);
        let element = self.element[v.0 as usize].expect("spilled");
        Fetch::read_scratch(element, 1, Lane::Unused, dsts)
    }

    /// Lets spilled values share a component of an element where their times in scratch
    /// memory do not overlap: a component's time is the hull ([`hulls`]) of its writes and
    /// reads in `flow`, the final program's; per component, the times in the order they begin
    /// take the lowest element none overlapping holds (for intervals, as few as the most that
    /// overlap at one point).
    fn share_elements(&mut self, flow: &Flow) {
        let Range { start, end } = self.packed.spill_elements;
        let elements = usize::from(end - start);
        let key = |slot: SpillSlot| 4 * usize::from(slot.element - start) + slot.component;
        let accesses = (flow.points.iter().enumerate()).filter_map(|(p, point)| {
            point
                .spill_access
                .map(|(slot, write)| (p, key(slot), !write))
        });
        let times = hulls(flow, 4 * elements, accesses);
        let mut renamed: Vec<u16> = vec![0; 4 * elements];
        let mut used = 0;
        for component in 0..4 {
            let mut order: Vec<(usize, usize, usize)> = (0..elements)
                .map(|e| 4 * e + component)
                .filter_map(|k| times[k].map(|time| (time.lo, time.hi, k)))
                .collect();
            order.sort_unstable();
            // Elements by when their times end, and those free again.
            let mut busy: BinaryHeap<Reverse<(usize, u16)>> = BinaryHeap::new();
            let mut free: BinaryHeap<Reverse<u16>> = BinaryHeap::new();
            let mut taken = 0;
            for (lo, hi, k) in order {
                while let Some(&Reverse((ends, e))) = busy.peek()
                    && ends < lo
                {
                    busy.pop();
                    free.push(Reverse(e));
                }
                let e = free.pop().map_or_else(
                    || {
                        taken += 1;
                        taken - 1
                    },
                    |Reverse(e)| e,
                );
                renamed[k] = start + e;
                busy.push(Reverse((hi, e)));
            }
            used = used.max(taken);
        }
        self.packed.spill_elements.end = start + used;
        let rename = |(element, component): (u16, usize)| {
            (start..end)
                .contains(&element)
                .then(|| renamed[key(SpillSlot { element, component })])
        };
        for item in self.packed.items_mut() {
            match item {
                Item::Fetch(fetches) => {
                    for fetch in fetches {
                        if let Some(element) = fetch.scratch_component_read().and_then(rename) {
                            fetch.vtx.mem.array_base = element;
                        }
                    }
                }
                Item::Export(export) => {
                    if let Some(element) = export.scratch_component_written().and_then(rename) {
                        export.base = element;
                    }
                }
                Item::Alu(_) => {}
            }
        }
    }

    /// The MEM_SCRATCH of spilled value `v`, defined as `piece`, to its element.
    fn write(&self, v: VReg, piece: VReg) -> Export {
        let mut srcs = [Lane::Unused; 4];
        srcs[self.chan(v.0)] = Lane::Value(piece);
        let element = self.element[v.0 as usize].expect("spilled");
        Export::write_scratch(element, srcs, Lane::Unused)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isa::AluOpcode;
    use crate::pack::{Clause, PSrc, Placed};
    use crate::program::{ExportType, Slot};
    use crate::regalloc::allocate;

    /// A MOV in slot x (channel x) of `src` to `dst`, or a PRED_SETGT of `src` when `dst` is
    /// none.
    fn mov(dst: Option<u32>, src: Operand) -> Placed {
        Placed {
            slot: Slot::X,
            op: if dst.is_some() {
                AluOpcode::Mov
            } else {
                AluOpcode::PredSetgt
            },
            dst: dst.map(VReg),
            indexed: None,
            chan: 0,
            srcs: vec![PSrc {
                kind: PKind::Operand(src),
                neg: false,
                abs: false,
            }],
            clamp: false,
            pred: dst.is_none(),
            origin: None,
        }
    }

    fn clause(groups: Vec<Placed>, push: bool) -> Item {
        Item::Alu(Clause {
            groups: groups.into_iter().map(|p| vec![p]).collect(),
            push,
            ..Clause::default()
        })
    }

    /// A clause of MOVs on channel x defining values `from..from + count`, each its own number.
    fn defining(from: u32, count: u32) -> Item {
        let movs = (from..from + count).map(|v| mov(Some(v), Operand::Const(v)));
        clause(movs.collect(), false)
    }

    /// A clause of MOVs on channel x reading values `from..from + count`, each into value
    /// `into` above it.
    fn reading(from: u32, count: u32, into: u32) -> Item {
        let movs = (from..from + count).map(|v| mov(Some(into + v), Operand::Value(VReg(v))));
        clause(movs.collect(), false)
    }

    /// Two clauses define 100 values each on channel x, four more read 50 each: 200 values
    /// live at once on one channel.
    fn two_hundred_on_x() -> Packed {
        Packed {
            body: vec![PNode::Block(vec![
                defining(0, 100),
                defining(100, 100),
                reading(0, 50, 200),
                reading(50, 50, 200),
                reading(100, 50, 200),
                reading(150, 50, 200),
            ])],
            chans: vec![Some(0); 400],
            ..Packed::default()
        }
    }

    #[test]
    fn values_that_do_not_fit_are_spilled_past_the_temporaries() {
        let packed = two_hundred_on_x();
        let (lir, units) = (Lir::default(), Units::default());
        assert_eq!(
            allocate(&packed, &lir, &units, 0).map(drop),
            Err(crate::regalloc::Overflow { needed: 200 })
        );
        let (spilled, alloc) = allocate_spilling(&packed, &lir, &units, 0, 7, Chip::Evergreen)
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(alloc.gprs <= MAX_GPRS, "{}", alloc.gprs);
        assert!(alloc.spills > 0 && alloc.fills == alloc.spills);
        let elements = spilled.spill_elements.clone();
        assert_eq!(elements.start, 7);
        let PNode::Block(items) = &spilled.body[0] else {
            panic!("a block")
        };
        // The first clause's spilled values are written after it, read back before the others.
        let mut writes = 0;
        for item in &items[1..] {
            let Item::Export(write) = item else { break };
            assert_eq!(write.kind, ExportType::Scratch);
            assert!(elements.contains(&write.base), "{}", write.base);
            writes += 1;
        }
        assert!(writes > 0);
        let reads: usize = (items.iter())
            .map(|item| match item {
                Item::Fetch(reads) => reads.len(),
                _ => 0,
            })
            .sum();
        assert_eq!(reads as u32, alloc.fills);
        // R600 cannot read them back.
        assert_eq!(
            allocate_spilling(&packed, &lir, &units, 0, 7, Chip::R600).map(drop),
            Err(AllocError::NoReadScratch { needed: 200 })
        );
    }

    /// A fetch clause defining a spilled value defines a fresh value in the value's unit
    /// instead, which a later fetch of the clause reads as it is and the write after the clause
    /// writes; a later clause reads it back.
    #[test]
    fn a_fetch_clause_defining_a_spilled_value_defines_a_fresh_one_in_its_unit() {
        let x = |v: u32| [Some(VReg(v)), None, None, None];
        let defining = Fetch::read_scratch(0, 1, Lane::Unused, x(1));
        let reading = Fetch::read_scratch(0, 4, Lane::Value(VReg(1)), x(2));
        let packed = Packed {
            body: vec![PNode::Block(vec![
                Item::Fetch(vec![defining, reading]),
                clause(vec![mov(Some(3), Operand::Value(VReg(1)))], false),
            ])],
            chans: vec![Some(0); 4],
            ..Packed::default()
        };
        let units = Units {
            of: [(VReg(1), 0)].into(),
            members: vec![vec![VReg(1)]],
            ..Units::default()
        };
        let mut spiller = Spiller::new(&packed, &Lir::default(), &units, 0, Chip::R700);
        spiller.spill(&[1]).unwrap();
        let PNode::Block(items) = &spiller.packed.body[0] else {
            panic!("a block")
        };
        let [
            Item::Fetch(fetches),
            write,
            Item::Fetch(reloads),
            Item::Alu(clause),
        ] = &items[..]
        else {
            panic!("{items:?}")
        };
        let fresh = fetches[0].dsts[0].expect("the fetch's result");
        assert_ne!(fresh, VReg(1));
        assert_eq!(spiller.units.of.get(&fresh), Some(&0));
        assert_eq!(fetches[1].srcs[0], Lane::Value(fresh));
        assert_eq!(write, &Item::Export(spiller.write(VReg(1), fresh)));
        let reload = reloads[0].dsts[0].expect("a reload");
        assert!(reload != fresh && reload != VReg(1));
        assert_eq!(
            clause.groups[0][0].srcs[0].kind,
            PKind::Operand(Operand::Value(reload))
        );
        assert_eq!((spiller.spills, spiller.fills), (1, 1));
    }

    /// Elements count against what a scratch access reaches only once spilled values share
    /// them: two regions, one after the other, each with 150 values live at once on channel
    /// x, spill into half the elements they take while the rounds go on.
    #[test]
    fn only_the_shared_elements_must_be_within_reach() {
        let region = |from: u32| {
            [
                defining(from, 75),
                defining(from + 75, 75),
                reading(from, 50, 600),
                reading(from + 50, 50, 600),
                reading(from + 100, 50, 600),
            ]
        };
        let packed = Packed {
            body: vec![PNode::Block(
                region(0).into_iter().chain(region(150)).collect(),
            )],
            chans: vec![Some(0); 900],
            ..Packed::default()
        };
        let (lir, units) = (Lir::default(), Units::default());
        let spill_from = |base: u16| allocate_spilling(&packed, &lir, &units, 0, base, Chip::R700);
        let (spilled, alloc) = spill_from(0).unwrap_or_else(|e| panic!("{e}"));
        let shared = spilled.spill_elements.end;
        // Each spilled value is defined once: one write each, one element each until they share.
        assert!(
            u32::from(shared) < alloc.spills,
            "{shared} {}",
            alloc.spills
        );
        let last_base = (MAX_SCRATCH_ELEMENTS - u32::from(shared)) as u16;
        assert!(spill_from(last_base).is_ok());
        assert_eq!(
            spill_from(last_base + 1).map(drop),
            Err(AllocError::ScratchFull {
                needed: MAX_SCRATCH_ELEMENTS + 1
            })
        );
    }

    /// A value the `if`'s ALU_PUSH_BEFORE defines is written at the start of both arms (an
    /// `else` made for it), read back where the `then` arm reads it; a clause that reads a
    /// spilled value before it redefines it reads the reload, then writes the new value. The
    /// original, its reload and the two values defined in its place are four values.
    #[test]
    fn writes_after_a_push_go_to_both_arms_and_reads_before_a_definition_reload() {
        let read_then_define = clause(
            vec![
                mov(Some(2), Operand::Value(VReg(0))),
                mov(Some(0), Operand::Value(VReg(2))),
            ],
            false,
        );
        let packed = Packed {
            body: vec![
                PNode::Block(vec![clause(
                    vec![
                        mov(Some(0), Operand::Const(1)),
                        mov(None, Operand::Value(VReg(1))),
                    ],
                    true,
                )]),
                PNode::If {
                    then: vec![PNode::Block(vec![read_then_define])].into(),
                    otherwise: Vec::new().into(),
                },
            ],
            chans: vec![Some(0); 3],
            ..Packed::default()
        };
        let mut spiller = Spiller::new(&packed, &Lir::default(), &Units::default(), 0, Chip::R700);
        spiller.spill(&[0]).unwrap();
        // Each clause defining the spilled value defines a fresh one instead, which it writes.
        let definition = |item: &Item| match item {
            Item::Alu(clause) => clause.groups.iter().flatten().find_map(|p| p.dst),
            _ => None,
        };
        let PNode::Block(head) = &spiller.packed.body[0] else {
            panic!("a block")
        };
        let pushed = definition(&head[0]).expect("the push clause's definition");
        let write = Item::Export(spiller.write(VReg(0), pushed));
        let PNode::If { then, otherwise } = &spiller.packed.body[1] else {
            panic!("an if")
        };
        assert_eq!(**otherwise, vec![PNode::Block(vec![write.clone()])]);
        let PNode::Block(items) = &then[0] else {
            panic!("a block")
        };
        let [first, Item::Fetch(reads), Item::Alu(clause), last] = &items[..] else {
            panic!("{items:?}")
        };
        assert_eq!(first, &write);
        let reload = reads[0].dsts[0].expect("a reload");
        assert_eq!(
            clause.groups[0][0].srcs[0].kind,
            PKind::Operand(Operand::Value(reload))
        );
        let redefined = clause.groups[1][0].dst.expect("the clause's definition");
        assert_eq!(last, &Item::Export(spiller.write(VReg(0), redefined)));
        let pieces = [VReg(0), pushed, reload, redefined];
        assert!(
            (1..4).all(|i| !pieces[..i].contains(&pieces[i])),
            "{pieces:?}"
        );
        assert_eq!((spiller.spills, spiller.fills), (3, 1));
    }

    /// Every point where a value is live lies in its hull: values live into, out of and around
    /// loops (one carried round an inner loop, one read after a `break`), in one arm of an `if`
    /// and across both.
    #[test]
    fn live_hulls_hold_every_point_a_value_is_live_at() {
        let value = |v: u32| Operand::Value(VReg(v));
        let block = |groups: Vec<Placed>, push: bool| PNode::Block(vec![clause(groups, push)]);
        let packed = Packed {
            body: vec![
                block(
                    (0..3).map(|v| mov(Some(v), Operand::Const(v))).collect(),
                    false,
                ),
                PNode::Loop(
                    vec![
                        block(vec![mov(Some(3), value(0))], false),
                        PNode::Loop(
                            vec![block(
                                vec![
                                    mov(Some(4), value(1)),
                                    mov(Some(1), value(4)),
                                    mov(Some(9), value(0)),
                                ],
                                false,
                            )]
                            .into(),
                        ),
                        block(vec![mov(Some(5), value(3)), mov(None, value(5))], true),
                        PNode::If {
                            then: vec![block(vec![mov(Some(6), value(2))], false), PNode::Break]
                                .into(),
                            otherwise: vec![block(vec![mov(Some(2), value(1))], false)].into(),
                        },
                    ]
                    .into(),
                ),
                block(vec![mov(Some(7), value(2)), mov(Some(8), value(1))], false),
            ],
            chans: vec![Some(0); 10],
            ..Packed::default()
        };
        let flow = Flow::of(&packed, &Lir::default());
        assert_eq!(flow.loops.len(), 2);
        let hulls = live_hulls(&flow, 10);
        let mut checked = 0;
        for (p, (live_in, live_out)) in flow.live_in.iter().zip(&flow.live_out).enumerate() {
            for &v in live_in.iter().chain(live_out) {
                let hull = hulls[v as usize].unwrap_or_else(|| panic!("v{v} has no hull"));
                assert!(
                    hull.0 <= p && p <= hull.1,
                    "v{v} is live at {p}, its hull is {hull:?}"
                );
                checked += 1;
            }
        }
        assert!(checked > 20, "{checked}");
        // Value 0, last read in the inner loop, is live around the outer one; value 4 only within
        // the inner loop.
        let outer = &flow.loops[0];
        assert!(hulls[0].is_some_and(|(lo, hi)| lo < outer.start && hi == outer.end));
        assert!(hulls[4].is_some_and(|(lo, hi)| lo > outer.start && hi < outer.end));
        assert_eq!(hulls[6], None, "nothing reads value 6");
    }

    /// Adding to ranges and asking for their most agrees with counting position by position.
    #[test]
    fn range_max_agrees_with_counting_each_position() {
        let mut counts: Vec<i32> = (0..37).map(|i| i * 7 % 11).collect();
        let mut tree = RangeMax::new(&counts);
        let mut seed = 12345u32;
        let mut next = |bound: usize| {
            seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
            (seed >> 8) as usize % bound
        };
        for _ in 0..500 {
            let (a, b) = (next(counts.len()), next(counts.len()));
            let (lo, hi) = (a.min(b), a.max(b));
            if next(2) == 0 {
                let delta = next(5) as i32 - 2;
                tree.add(lo, hi, delta);
                counts[lo..=hi].iter_mut().for_each(|c| *c += delta);
            } else {
                let most = *counts[lo..=hi].iter().max().expect("a range");
                assert_eq!(tree.max(lo, hi), most, "{lo}..={hi}");
            }
        }
    }

    /// Seven hundred values live at once on one channel, more than twice the GPRs: the hulls
    /// choose spills before the exact rounds, and the program then fits.
    #[test]
    fn far_more_values_than_gprs_are_spilled_from_their_hulls_first() {
        let clauses = (0..7).map(|k| defining(100 * k, 100));
        let reads = (0..7).map(|k| reading(100 * k, 100, 700));
        let packed = Packed {
            body: vec![PNode::Block(clauses.chain(reads).collect())],
            chans: vec![Some(0); 1400],
            ..Packed::default()
        };
        let lir = Lir::default();
        let flow = Flow::unsolved(&packed, &lir);
        let available = u32::from(MAX_GPRS);
        assert!(!choose_by_hulls(&flow, &packed, &lir, HOPELESS * available, available).is_empty());
        assert!(choose_by_hulls(&flow, &packed, &lir, 700, available).is_empty());
        let (_, alloc) = allocate_spilling(&packed, &lir, &Units::default(), 0, 0, Chip::Evergreen)
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(alloc.gprs <= MAX_GPRS && alloc.spills >= 700 - u32::from(MAX_GPRS));
    }

    /// Values spilled in two parts of a program, the first part's all read before the second's
    /// are defined, share scratch elements; within a part, where all are live at once, each
    /// keeps an element of its own.
    #[test]
    fn spilled_values_share_elements_where_their_times_do_not_overlap() {
        let part = |from: u32| {
            let defines = (0..3).map(move |k| defining(from + 100 * k, 100));
            defines.chain((0..3).map(move |k| reading(from + 100 * k, 100, 600)))
        };
        let packed = Packed {
            body: vec![PNode::Block(part(0).chain(part(300)).collect())],
            chans: vec![Some(0); 1200],
            ..Packed::default()
        };
        let (spilled, alloc) = allocate_spilling(
            &packed,
            &Lir::default(),
            &Units::default(),
            0,
            0,
            Chip::R700,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let PNode::Block(items) = &spilled.body[0] else {
            panic!("a block")
        };
        // By part: the elements its spilled values are written to.
        let mut written: [Vec<u16>; 2] = [Vec::new(), Vec::new()];
        let mut part_of_clause = 0;
        let mut clauses = 0;
        for item in items {
            match item {
                Item::Alu(_) => {
                    clauses += 1;
                    part_of_clause = usize::from(clauses > 6);
                }
                Item::Export(write) => written[part_of_clause].push(write.base),
                Item::Fetch(_) => {}
            }
        }
        for elements in &mut written {
            let count = elements.len();
            assert!(count > 100, "{count} values spilled in a part");
            elements.sort();
            elements.dedup();
            assert_eq!(
                elements.len(),
                count,
                "values live at once share an element"
            );
        }
        assert_eq!(written[0], written[1], "the parts share their elements");
        assert_eq!(spilled.spill_elements.len(), written[0].len());
        assert_eq!(alloc.spills as usize, 2 * written[0].len());
    }

    /// A second round leaves the first round's code alone: its writes and reads are not
    /// spilled again.
    #[test]
    fn a_later_round_adds_only_its_own_code() {
        let packed = two_hundred_on_x();
        let mut spiller = Spiller::new(&packed, &Lir::default(), &Units::default(), 0, Chip::R700);
        spiller.spill(&[0]).unwrap();
        spiller.spill(&[1]).unwrap();
        assert_eq!((spiller.spills, spiller.fills), (2, 2));
    }
}
