//! Setting up a run — invocations, inputs, system values, groups — and the scheduler that runs a
//! group to its sync points and resolves them (derivatives, implicit LODs, barriers).

use super::exec::{Flow, InvState, Invocation, Machine, Status, mask_words};
use super::memory::{self, LayoutRule, Leaf, SLOT_BYTES, Storage, constant_data, storage_extent};
use super::program::{FuncCode, Op, Program};
use super::tex::TexOperands;
use super::wide::{self, WideCode};
use super::{
    InterpError, Launch, MAX_AREA_BYTES, MAX_GROUP_BYTES, MAX_INVOCATIONS, MAX_RESULT_VALUES,
    OutputValues, Resources, RunResult,
};
use crate::deadline;
use crate::ir::{InstKind, Shader, Stage, Value};
use shrew_ops::alu::{Axis, DerivativePrecision};
use shrew_ops::eval::Bits;
use shrew_ops::eval::{fget, fput};
use shrew_ops::intrinsics::{reduction_identity, reduction_op};
use shrew_ops::{IndexKind, Intrinsic};
use std::collections::BTreeMap;
use std::ops::Range;

/// I/O slots every invocation of a program that accesses inputs or outputs by location has at
/// least, so accesses to locations without a variable still work.
const MIN_IO_SLOTS: usize = 32;

fn setup(msg: String) -> InterpError {
    InterpError::Setup(msg)
}

/// Sizes of the per-invocation and per-workgroup areas.
#[derive(Clone, Copy)]
struct Areas {
    input: usize,
    output: usize,
    private: usize,
    shared: usize,
}

/// One launch input: where its components go and their values.
struct Input<'l> {
    leaves: Vec<Leaf>,
    values: &'l [Vec<u64>],
}

/// One output variable: its name and where its components are.
struct Output {
    name: String,
    leaves: Vec<Leaf>,
}

struct Runner<'p, 's> {
    m: Machine<'p, 's>,
    areas: Areas,
    inputs: &'p [Input<'p>],
    outputs: &'p [Output],
    entry: u32,
    /// [`Machine::call_words_left`] at the start of every group.
    call_words: usize,
    /// Invocations per wave of the wide executor; 0 runs groups on the reference scheduler.
    wave_lanes: usize,
    /// Finished invocations whose memory and registers the next ones reuse.
    spare: Vec<Invocation>,
    /// What the wide executor adds to the program, when it runs.
    wide: Option<&'p WideCode>,
}

/// Groups gathered into a wave of the wide executor.
#[derive(Default)]
struct Wave {
    lanes: Vec<Invocation>,
    groups: Vec<Range<usize>>,
    /// Space for the wave's register file, kept from wave to wave.
    regs: Vec<u64>,
}

/// The number of invocations of a run and of its largest group, checked against
/// [`MAX_INVOCATIONS`].
fn invocation_counts(
    shader: &Shader,
    launch: &Launch,
    uses_subgroups: bool,
) -> Result<(u64, u64), InterpError> {
    let limit = MAX_INVOCATIONS;
    if shader.stage != Stage::Compute {
        let n = launch.invocations as u64;
        if n > limit {
            return Err(setup(format!(
                "{n} invocations are more than the limit of {limit}"
            )));
        }
        let group = if uses_subgroups {
            launch.subgroup_size as u64
        } else if shader.stage == Stage::Fragment {
            4
        } else {
            1
        };
        return Ok((n, n.min(group)));
    }
    let [sx, sy, sz] = shader.workgroup_size;
    let per_group = sx as u64 * sy as u64 * sz as u64;
    if per_group == 0 || per_group > limit {
        return Err(setup(format!(
            "a workgroup of {sx}x{sy}x{sz} invocations: the size must be 1 to {limit} invocations"
        )));
    }
    let [gx, gy, gz] = launch.workgroups;
    // At most 2^96 · 2^24 = 2^120: no overflow.
    let total = gx as u128 * gy as u128 * gz as u128 * per_group as u128;
    if total > limit as u128 {
        return Err(setup(format!(
            "{gx}x{gy}x{gz} workgroups of {per_group} invocations are {total} invocations, more \
             than the limit of {limit}"
        )));
    }
    Ok((total as u64, per_group))
}

/// Which executor runs the invocations.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Executor {
    /// One invocation after another ([`Runner::run_group`]).
    Reference,
    /// Waves of invocations on [`wide`], where the program allows it.
    Wide,
}

/// Most invocations of one wave of the wide executor.
const MAX_WAVE_LANES: u64 = 256;

/// Most memory the invocations of one wave hold (a wave always takes at least one group).
const MAX_WAVE_BYTES: u64 = 1 << 26;

/// Runs a shader on `executor`, which also tells which executor produced the result (the
/// reference when the program is not eligible for the wide one or the wide run failed).
pub(crate) fn run(
    shader: &Shader,
    launch: &Launch,
    res: &mut Resources,
    executor: Executor,
) -> Result<(RunResult, Executor), InterpError> {
    let size = launch.subgroup_size;
    if !size.is_power_of_two() || !(4..=128).contains(&size) {
        return Err(setup(format!(
            "a subgroup size of {size}: it must be a power of two from 4 to 128"
        )));
    }
    res.validate()?;
    let entry = shader.entry.0;
    let entry_fn = shader
        .functions
        .get(entry as usize)
        .ok_or_else(|| setup("the entry function does not exist".into()))?;
    if !entry_fn.params.is_empty() {
        return Err(setup("the entry function takes parameters".into()));
    }
    let prog = Program::new(shader)?;
    let (total, group) = invocation_counts(shader, launch, prog.uses_subgroups)?;
    let extent = |s: Storage| storage_extent(&prog.vars, s) as u64;
    // Without accesses by location, invocations touch only their variables' bytes.
    let io_min = if prog.accesses_io_by_location() {
        (MIN_IO_SLOTS * SLOT_BYTES as usize) as u64
    } else {
        0
    };
    let (input, output) = (
        extent(Storage::Input).max(io_min),
        extent(Storage::Output).max(io_min),
    );
    let private = extent(Storage::Private);
    let shared = extent(Storage::Shared).max(launch.shared_memory_size as u64);
    let uniform_size = extent(Storage::Uniform);
    for (what, size) in [
        ("inputs", input),
        ("outputs", output),
        ("private variables", private),
        ("shared memory", shared),
        ("the uniform block", uniform_size),
        ("the constant data", extent(Storage::Constant)),
    ] {
        if size > MAX_AREA_BYTES {
            return Err(setup(format!(
                "{what} need {size} bytes, more than the limit of {MAX_AREA_BYTES}"
            )));
        }
    }
    // Every size is at most 2^28 and `group` at most 2^24: no overflow.
    let entry_regs = prog.funcs[entry as usize].nregs as u64 * 8;
    let group_bytes = shared + group * (input + output + private + entry_regs);
    if group_bytes > MAX_GROUP_BYTES {
        return Err(setup(format!(
            "a group of {group} invocations needs {group_bytes} bytes of memory, more than the \
             limit of {MAX_GROUP_BYTES}"
        )));
    }
    let outputs = output_leaves(&prog)?;
    let per_invocation = 1 + outputs
        .iter()
        .map(|o| 1 + o.leaves.len() as u64)
        .sum::<u64>();
    if total.saturating_mul(per_invocation) > MAX_RESULT_VALUES {
        return Err(setup(format!(
            "{total} invocations with {per_invocation} result values each are more than the \
             limit of {MAX_RESULT_VALUES} values"
        )));
    }
    let areas = Areas {
        input: input as usize,
        output: output as usize,
        private: private as usize,
        shared: shared as usize,
    };
    let invocation_bytes = input + output + private + entry_regs;
    let wave_lanes = (MAX_WAVE_BYTES / invocation_bytes.max(1)).clamp(1, MAX_WAVE_LANES) as usize;
    let inputs = prepare_inputs(&prog, launch, total as usize)?;
    let constant = constant_data(shader, &prog.vars)?;
    let wide_code =
        (executor == Executor::Wide && wide::eligible(&prog)).then(|| WideCode::new(&prog));
    let attempt =
        |res: &mut Resources, wide: Option<&WideCode>| -> Result<RunResult, InterpError> {
            let mut uniform = res.uniform_data.clone();
            if uniform.len() < uniform_size as usize {
                uniform.resize(uniform_size as usize, 0);
            }
            let mut runner = Runner {
                m: Machine::new(&prog, launch, res, uniform, constant.clone()),
                areas,
                inputs: &inputs,
                outputs: &outputs,
                entry,
                call_words: ((MAX_GROUP_BYTES - group_bytes) / 8) as usize,
                wave_lanes: if wide.is_some() { wave_lanes } else { 0 },
                spare: Vec::new(),
                wide,
            };
            let mut result = match shader.stage {
                Stage::Compute => runner.compute(total as usize)?,
                Stage::Fragment => runner.fragment()?,
                _ => runner.independent()?,
            };
            result.stats = std::mem::take(&mut runner.m.stats);
            Ok(result)
        };
    if let Some(code) = &wide_code {
        // An error may be another invocation's than the reference's first: the reference
        // finds it again.
        match attempt(res, Some(code)) {
            Ok(result) => return Ok((result, Executor::Wide)),
            Err(wide_error) => {
                let reference = attempt(res, None);
                debug_assert!(
                    reference.is_err(),
                    "the wide executor failed where the reference runs: {wide_error}"
                );
                return reference.map(|result| (result, Executor::Reference));
            }
        }
    }
    attempt(res, None).map(|result| (result, Executor::Reference))
}

/// Where the components of every output variable are, by name.
fn output_leaves(prog: &Program) -> Result<Vec<Output>, InterpError> {
    let slots = prog.layout(LayoutRule::Slots);
    let mut outputs: Vec<Output> = prog
        .shader
        .variables
        .iter()
        .zip(&prog.vars)
        .filter(|(_, layout)| layout.storage == Storage::Output)
        .map(|(v, layout)| {
            let mut leaves = Vec::new();
            slots
                .leaves(&v.ty, layout.offset, 0, &mut leaves)
                .map_err(|e| setup(format!("output @{}: {e}", v.name)))?;
            Ok(Output {
                name: v.name.clone(),
                leaves,
            })
        })
        .collect::<Result<_, InterpError>>()?;
    // Of two variables with one name, the later one's values are the name's.
    outputs.sort_by(|a, b| a.name.cmp(&b.name));
    outputs.dedup_by(|later, earlier| {
        let same = later.name == earlier.name;
        if same {
            std::mem::swap(later, earlier);
        }
        same
    });
    Ok(outputs)
}

fn prepare_inputs<'l>(
    prog: &Program,
    launch: &'l Launch,
    total: usize,
) -> Result<Vec<Input<'l>>, InterpError> {
    let shader = prog.shader;
    launch
        .inputs
        .iter()
        .map(|(name, values)| {
            let var = shader
                .find_variable(name)
                .ok_or_else(|| setup(format!("input @{name}: no such variable")))?;
            let v = shader.variable(var);
            let layout = prog.vars[var.0 as usize];
            if layout.storage != Storage::Input {
                return Err(setup(format!(
                    "input @{name}: a {} variable, not shader_in",
                    v.mode.name()
                )));
            }
            let mut leaves = Vec::new();
            prog.layout(LayoutRule::Slots)
                .leaves(&v.ty, layout.offset, 0, &mut leaves)
                .map_err(|e| setup(format!("input @{name}: {e}")))?;
            if values.len() != 1 && values.len() != total {
                return Err(setup(format!(
                    "input @{name}: {} values for {total} invocations",
                    values.len()
                )));
            }
            if let Some(bad) = values.iter().find(|x| x.len() != leaves.len()) {
                return Err(setup(format!(
                    "input @{name}: {} components, the type has {}",
                    bad.len(),
                    leaves.len()
                )));
            }
            Ok(Input { leaves, values })
        })
        .collect()
}

/// Which quad members a derivative along `axis` subtracts for the member at `pos`: its own (fine)
/// or the first (coarse) row or column, else the other one, if both members take part.
fn quad_pair(avail: [bool; 4], pos: usize, axis: Axis, fine: bool) -> Option<(usize, usize)> {
    let pair = |k: usize| match axis {
        Axis::X => (2 * k, 2 * k + 1),
        Axis::Y => (k, k + 2),
    };
    let own = match (fine, axis) {
        (false, _) => 0,
        (true, Axis::X) => pos / 2,
        (true, Axis::Y) => pos % 2,
    };
    [own, 1 - own]
        .into_iter()
        .map(pair)
        .find(|&(a, b)| avail[a] && avail[b])
}

/// Scheduling key of an invocation: per frame, outermost first, the function, the block's
/// scheduling order and the position in the block.
fn key(prog: &Program, inv: &Invocation) -> Vec<(u32, u32, u32)> {
    inv.frames
        .iter()
        .map(|f| {
            let order = prog.funcs[f.func as usize].blocks[f.block as usize].order;
            (f.func, order, f.pos)
        })
        .collect()
}

impl<'p, 's> Runner<'p, 's> {
    /// A new invocation with `state`'s identity, its memory and registers zeroed: taken from a
    /// finished invocation when there is one, so a run allocates them once per group or wave.
    fn invocation(&mut self, index: usize, quad_pos: usize, state: InvState) -> Invocation {
        let mut inv = match self.spare.pop() {
            Some(mut inv) => {
                inv.frames.truncate(1);
                let frame = &mut inv.frames[0];
                frame.block = self.m.prog.funcs[self.entry as usize].entry;
                frame.pos = 0;
                if self.wide.is_none() {
                    // The wide executor keeps registers in the wave's file, zeroed per wave,
                    // and copies into these only what an instruction reads and writes.
                    frame.regs.fill(0);
                }
                // Inputs are read-only: only the input values below write the input area, at
                // the same places for every invocation of the run.
                memory::zero(&mut inv.state.output);
                memory::zero(&mut inv.state.private);
                inv.state = InvState {
                    input: std::mem::take(&mut inv.state.input),
                    output: std::mem::take(&mut inv.state.output),
                    private: std::mem::take(&mut inv.state.private),
                    ..state
                };
                inv
            }
            None => Invocation {
                index,
                quad_pos,
                status: Status::Running,
                steps: 0,
                frames: vec![self.m.frame(self.entry, Vec::new(), (0, 0))],
                state: InvState {
                    input: vec![0; self.areas.input],
                    output: vec![0; self.areas.output],
                    private: vec![0; self.areas.private],
                    ..state
                },
            },
        };
        inv.index = index;
        inv.quad_pos = quad_pos;
        inv.status = Status::Running;
        inv.steps = 0;
        for input in self.inputs {
            let vals = if input.values.len() == 1 {
                &input.values[0]
            } else {
                &input.values[index]
            };
            for (leaf, &v) in input.leaves.iter().zip(vals) {
                let bytes = memory::to_memory(v, leaf.scalar);
                memory::write_bytes(&mut inv.state.input, leaf.offset as u64, leaf.bytes, bytes);
            }
        }
        inv
    }

    /// The identity of an invocation before its own values are set; its memory comes with it
    /// from [`Runner::invocation`].
    fn state(&self) -> InvState {
        InvState {
            input: Vec::new(),
            output: Vec::new(),
            private: Vec::new(),
            helper: false,
            initially_helper: false,
            frag_coord: [0.0, 0.0, 0.0, 1.0],
            vertex_id: 0,
            local_id: [0; 3],
            workgroup_id: [0; 3],
            subgroup_lane: 0,
            subgroup: 0,
        }
    }

    /// A result for `n` invocations with nothing recorded yet.
    fn empty_result(&self, n: usize) -> RunResult {
        RunResult {
            outputs: self
                .outputs
                .iter()
                .map(|o| OutputValues {
                    name: o.name.clone(),
                    components: o.leaves.len(),
                    values: vec![0; n * o.leaves.len()],
                })
                .collect(),
            discarded: vec![false; n],
            helper: vec![false; n],
            stats: Default::default(),
        }
    }

    /// Records what a finished invocation produced at its index.
    fn record(&self, result: &mut RunResult, inv: &Invocation) {
        let discarded = inv.status == Status::Terminated;
        let helper = inv.state.helper;
        result.discarded[inv.index] = discarded;
        result.helper[inv.index] = helper;
        if discarded || helper {
            return;
        }
        for (o, column) in self.outputs.iter().zip(&mut result.outputs) {
            let at = inv.index * column.components;
            for (slot, l) in column.values[at..at + column.components]
                .iter_mut()
                .zip(&o.leaves)
            {
                let raw = memory::read_bytes(&inv.state.output, l.offset as u64, l.bytes);
                *slot = memory::from_memory(raw.unwrap_or(0), l.scalar);
            }
        }
    }

    /// How many invocations run together as a group outside compute shaders: `alone`, or a
    /// subgroup's when the program has subgroup operations.
    fn subgroup_lanes(&self, alone: usize) -> usize {
        if self.m.prog.uses_subgroups {
            self.m.launch.subgroup_size as usize
        } else {
            alone
        }
    }

    /// Vertex shaders and every stage without groups: each invocation on its own.
    fn independent(&mut self) -> Result<RunResult, InterpError> {
        let base_vertex = self.m.launch.system.base_vertex;
        let n = self.m.launch.invocations;
        let mut results = self.empty_result(n);
        let mut wave = Wave::default();
        // One invocation at a time, or a subgroup's when they work together.
        let per_group = self.subgroup_lanes(1);
        let mut group = Vec::with_capacity(per_group);
        for i in 0..n {
            let state = InvState {
                vertex_id: base_vertex.wrapping_add(i as u32),
                subgroup_lane: (i % per_group) as u32,
                ..self.state()
            };
            group.push(self.invocation(i, 0, state));
            if group.len() == per_group || i + 1 == n {
                self.submit(&mut wave, &mut group, &mut [], &mut results)?;
            }
        }
        self.flush(&mut wave, &mut [], &mut results)?;
        Ok(results)
    }

    /// Runs a group now on the reference scheduler, or adds it to the wave and runs the wave
    /// once it is full; each invocation's result goes to its index in `results`. `group` is
    /// left empty for the next group (one buffer for the run).
    fn submit(
        &mut self,
        wave: &mut Wave,
        group: &mut Vec<Invocation>,
        shared: &mut [u8],
        results: &mut RunResult,
    ) -> Result<(), InterpError> {
        if self.wave_lanes == 0 {
            self.run_group(group, shared)?;
            for inv in group.iter() {
                self.record(results, inv);
            }
            self.spare.append(group);
            return Ok(());
        }
        let start = wave.lanes.len();
        wave.lanes.append(group);
        wave.groups.push(start..wave.lanes.len());
        if wave.lanes.len() >= self.wave_lanes {
            self.flush(wave, shared, results)?;
        }
        Ok(())
    }

    /// Runs the groups gathered in the wave, if any.
    fn flush(
        &mut self,
        wave: &mut Wave,
        shared: &mut [u8],
        results: &mut RunResult,
    ) -> Result<(), InterpError> {
        if wave.lanes.is_empty() {
            return Ok(());
        }
        let code = self
            .wide
            .expect("waves run only with the wide executor's code");
        wide::run_wave(
            &mut self.m,
            code,
            &mut wave.lanes,
            &wave.groups,
            shared,
            &mut wave.regs,
        )?;
        for inv in &wave.lanes {
            self.record(results, inv);
        }
        self.spare.append(&mut wave.lanes);
        wave.groups.clear();
        Ok(())
    }

    fn fragment(&mut self) -> Result<RunResult, InterpError> {
        let launch = self.m.launch;
        let n = launch.invocations;
        for (what, len) in [
            ("covered", launch.covered.len()),
            ("frag_coord_zw", launch.frag_coord_zw.len()),
        ] {
            if len != 0 && len != n {
                return Err(setup(format!(
                    "{what} has {len} entries for {n} invocations"
                )));
            }
        }
        let w = launch.grid_width() as usize;
        let h = n.div_ceil(w);
        // Columns past the last invocation are empty (only when the grid is one row).
        let columns = w.min(n);
        let covered = |i: usize| launch.covered.get(i).copied().unwrap_or(true);
        let mut results = self.empty_result(n);
        let mut wave = Wave::default();
        // A quad at a time, or a subgroup's quads when they work together: quad `q` of the
        // group is lanes `4q` to `4q + 3`.
        let quads_per_group = self.subgroup_lanes(4) / 4;
        let mut quads = 0;
        let mut group = Vec::with_capacity(4 * quads_per_group);
        for qy in 0..h.div_ceil(2) {
            for qx in 0..columns.div_ceil(2) {
                // The quad's pixels inside the grid: (index, position in the quad, x, y).
                let mut members = [(0, 0, 0, 0); 4];
                let mut count = 0;
                for pos in 0..4 {
                    let (x, y) = (2 * qx + pos % 2, 2 * qy + pos / 2);
                    if x < w && y * w + x < n {
                        members[count] = (y * w + x, pos, x, y);
                        count += 1;
                    }
                }
                let members = &members[..count];
                if !members.iter().any(|&(i, ..)| covered(i)) {
                    for &(i, ..) in members {
                        results.helper[i] = true;
                    }
                    continue;
                }
                for &(i, pos, x, y) in members {
                    let [z, wc] = launch.frag_coord_zw.get(i).copied().unwrap_or([0.0, 1.0]);
                    let state = InvState {
                        helper: !covered(i),
                        initially_helper: !covered(i),
                        frag_coord: [
                            (launch.origin[0] as f64 + x as f64 + 0.5) as f32,
                            (launch.origin[1] as f64 + y as f64 + 0.5) as f32,
                            z,
                            wc,
                        ],
                        subgroup_lane: (4 * quads + pos) as u32,
                        ..self.state()
                    };
                    group.push(self.invocation(i, pos, state));
                }
                quads += 1;
                if quads == quads_per_group {
                    self.submit(&mut wave, &mut group, &mut [], &mut results)?;
                    quads = 0;
                }
            }
        }
        if !group.is_empty() {
            self.submit(&mut wave, &mut group, &mut [], &mut results)?;
        }
        self.flush(&mut wave, &mut [], &mut results)?;
        Ok(results)
    }

    /// Compute shaders: `total` invocations in workgroups.
    fn compute(&mut self, total: usize) -> Result<RunResult, InterpError> {
        if total == 0 {
            // Some workgroup count is 0: the other counts may be huge.
            return Ok(self.empty_result(0));
        }
        let [gx, gy, gz] = self.m.launch.workgroups;
        let [sx, sy, sz] = self.m.prog.shader.workgroup_size;
        let per_group = sx as usize * sy as usize * sz as usize;
        let mut results = self.empty_result(total);
        let mut wave = Wave::default();
        // Zeroed for every workgroup the reference runs; a program the wide executor runs
        // never writes it.
        let mut shared = vec![0u8; self.areas.shared];
        let mut group = Vec::with_capacity(per_group);
        let mut group_index = 0;
        let subgroup_size = self.m.launch.subgroup_size;
        for wz in 0..gz {
            for wy in 0..gy {
                for wx in 0..gx {
                    for lz in 0..sz {
                        for ly in 0..sy {
                            for lx in 0..sx {
                                let local_index = group.len() as u32;
                                let state = InvState {
                                    local_id: [lx, ly, lz],
                                    workgroup_id: [wx, wy, wz],
                                    subgroup_lane: local_index % subgroup_size,
                                    subgroup: local_index / subgroup_size,
                                    ..self.state()
                                };
                                let index = group_index * per_group + group.len();
                                group.push(self.invocation(index, 0, state));
                            }
                        }
                    }
                    if self.wave_lanes == 0 {
                        shared.fill(0);
                    }
                    self.submit(&mut wave, &mut group, &mut shared, &mut results)?;
                    group_index += 1;
                }
            }
        }
        self.flush(&mut wave, &mut shared, &mut results)?;
        Ok(results)
    }

    /// Runs one invocation until it finishes or stops at a sync point.
    fn run_until_stop(
        &mut self,
        inv: &mut Invocation,
        shared: &mut [u8],
    ) -> Result<(), InterpError> {
        let limit = self.m.launch.step_limit;
        loop {
            inv.steps += 1;
            if inv.steps > limit {
                return Err(InterpError::StepLimit {
                    site: self.m.site(inv),
                    limit,
                });
            }
            if inv.steps.is_multiple_of(deadline::CHECK_EVERY) && deadline::expired() {
                return Err(InterpError::TimeLimit {
                    site: self.m.site(inv),
                });
            }
            match self.m.step(inv, shared) {
                Ok(Flow::Next) => {}
                Ok(Flow::Sync) => {
                    inv.status = Status::Waiting;
                    return Ok(());
                }
                Ok(Flow::Done) => {
                    inv.status = Status::Done;
                    return Ok(());
                }
                Ok(Flow::Terminate) => {
                    inv.status = Status::Terminated;
                    return Ok(());
                }
                Err(f) => return Err(f.at(self.m.site(inv))),
            }
        }
    }

    /// Runs a group: every running invocation up to its next stop, then the earliest sync
    /// point for the invocations waiting there, until all have finished.
    fn run_group(
        &mut self,
        group: &mut [Invocation],
        shared: &mut [u8],
    ) -> Result<(), InterpError> {
        self.m.call_words_left = self.call_words;
        loop {
            for inv in group.iter_mut() {
                if inv.status == Status::Running {
                    self.run_until_stop(inv, shared)?;
                }
            }
            let waiting: Vec<usize> = (0..group.len())
                .filter(|&i| group[i].status == Status::Waiting)
                .collect();
            let prog = self.m.prog;
            let Some(first) = waiting.iter().map(|&i| key(prog, &group[i])).min() else {
                return Ok(());
            };
            let parts: Vec<usize> = waiting
                .iter()
                .copied()
                .filter(|&i| key(prog, &group[i]) == first)
                .collect();
            resolve(&mut self.m, group, &parts, waiting.len())?;
        }
    }
}

/// Executes the sync instruction the invocations `parts` of `group` wait at.
pub(crate) fn resolve(
    m: &mut Machine,
    group: &mut [Invocation],
    parts: &[usize],
    waiting: usize,
) -> Result<(), InterpError> {
    let prog = m.prog;
    let first = &group[parts[0]];
    let frame = first.frames.last().unwrap();
    let fc: &FuncCode = &prog.funcs[frame.func as usize];
    let op = &fc.blocks[frame.block as usize].ops[frame.pos as usize];
    match op {
        Op::Barrier { .. } => {
            if parts.len() != waiting {
                return Err(InterpError::Barrier {
                    site: m.site(first),
                    detail: format!(
                        "{} of the {waiting} live invocations of the workgroup reached it, the \
                         others wait at another barrier",
                        parts.len()
                    ),
                });
            }
        }
        Op::Derivative(..) | Op::Tex { .. } => {
            // Each quad's members, lanes 4q to 4q + 3 of the group.
            for quad in runs(parts, |p| group[p].state.subgroup_lane / 4) {
                resolve_quad(m, fc, op, group, &parts[quad])?;
            }
        }
        Op::Subgroup(v) => {
            for subgroup in runs(parts, |p| group[p].state.subgroup) {
                resolve_subgroup(prog, fc, *v, group, &parts[subgroup]);
            }
        }
        _ => unreachable!("only barriers, derivatives, texture and subgroup operations wait"),
    }
    for &p in parts {
        group[p].frames.last_mut().unwrap().pos += 1;
        group[p].status = Status::Running;
    }
    Ok(())
}

/// `parts` split into runs of members with equal `key`: ranges of `parts`.
fn runs(parts: &[usize], key: impl Fn(usize) -> u32) -> Vec<Range<usize>> {
    let mut runs: Vec<Range<usize>> = Vec::new();
    for (i, &p) in parts.iter().enumerate() {
        match runs.last_mut() {
            Some(run) if key(parts[run.start]) == key(p) => run.end = i + 1,
            _ => runs.push(i..i + 1),
        }
    }
    runs
}

/// Executes a derivative or implicit-LOD texture operation for the members `parts` of one quad.
fn resolve_quad(
    m: &mut Machine,
    fc: &FuncCode,
    op: &Op,
    group: &mut [Invocation],
    parts: &[usize],
) -> Result<(), InterpError> {
    match op {
        Op::Derivative(a, axis, precision) => {
            let s = &a.srcs[0];
            let n = s.n as usize;
            // Each quad member's source components, and which members take part.
            let mut vals = [[0f64; 16]; 4];
            let mut avail = [false; 4];
            for &p in parts {
                let regs = &group[p].frames.last().unwrap().regs;
                let pos = group[p].quad_pos;
                avail[pos] = true;
                for (v, &c) in vals[pos].iter_mut().zip(&s.swizzle[..n]) {
                    *v = fget(regs[(s.off + c as u32) as usize], a.src_bits[0]);
                }
            }
            let fine = *precision == DerivativePrecision::Fine;
            for &p in parts {
                let pair = quad_pair(avail, group[p].quad_pos, *axis, fine);
                let regs = &mut group[p].frames.last_mut().unwrap().regs;
                for c in 0..a.comps as usize {
                    regs[a.dst as usize + c] = match pair {
                        Some((from, to)) => fput(vals[to][c] - vals[from][c], a.dst_bits),
                        None => 0,
                    };
                }
                m.stats.alu += 1;
            }
        }
        Op::Tex { value, .. } => {
            let value = *value;
            // Each member's operands, read once for its coordinates and its sample.
            let mut operands: [TexOperands; 4] = Default::default();
            let mut coords = [None; 4];
            for &p in parts {
                let frame = group[p].frames.last().unwrap();
                let pos = group[p].quad_pos;
                operands[pos] = m.tex_operands(fc, frame, value);
                coords[pos] = Some(m.tex_deriv_coord(frame, value, &operands[pos]));
            }
            let avail = coords.map(|c| c.is_some());
            let diff = |pair: Option<(usize, usize)>| match pair {
                Some((from, to)) => {
                    let (a, b) = (coords[from].unwrap(), coords[to].unwrap());
                    [b[0] - a[0], b[1] - a[1], b[2] - a[2]]
                }
                None => [0.0; 3],
            };
            for &p in parts {
                let pos = group[p].quad_pos;
                let dx = diff(quad_pair(avail, pos, Axis::X, false));
                let dy = diff(quad_pair(avail, pos, Axis::Y, false));
                let inv = &mut group[p];
                let frame = inv.frames.last_mut().unwrap();
                if let Err(f) = m.exec_tex(fc, frame, value, &operands[pos], Some([dx, dy])) {
                    return Err(f.at(m.site(inv)));
                }
            }
        }
        _ => unreachable!("only derivatives and texture operations need the quad"),
    }
    Ok(())
}

/// Executes a subgroup operation for the members `parts` of one subgroup, the invocations
/// active at it. A read of an invocation that is not active (or past the subgroup) gives 0.
fn resolve_subgroup(
    prog: &Program,
    fc: &FuncCode,
    v: Value,
    group: &mut [Invocation],
    parts: &[usize],
) {
    let func = &prog.shader.functions[group[parts[0]].frames.last().unwrap().func as usize];
    let InstKind::Intrinsic(ii) = &func.inst(v).kind else {
        unreachable!("decoded from an intrinsic")
    };
    let regs_of = |value: Value| {
        let i = value.index();
        let off = fc.reg_off[i] as usize;
        off..off + fc.reg_comps[i] as usize
    };
    let sources: Vec<Range<usize>> = ii.srcs.iter().map(|&s| regs_of(s)).collect();
    let source = |p: usize, k: usize| &group[p].frames.last().unwrap().regs[sources[k].clone()];
    let lane = |p: usize| group[p].state.subgroup_lane;
    let cond = |p: usize| source(p, 0)[0] & 1 != 0;
    // The active lanes' sources, by lane (at most 128).
    let value_at = |lane_wanted: u32| {
        parts
            .iter()
            .find(|&&p| lane(p) == lane_wanted)
            .map(|&p| source(p, 0).to_vec())
    };
    let results: Vec<Vec<u64>> = match ii.op {
        Intrinsic::Ballot => {
            let mask = parts
                .iter()
                .filter(|&&p| cond(p))
                .fold(0u128, |mask, &p| mask | 1 << lane(p));
            vec![mask_words(mask); parts.len()]
        }
        Intrinsic::VoteAll | Intrinsic::VoteAny | Intrinsic::VoteAllEqual => {
            let trues = parts.iter().filter(|&&p| cond(p)).count();
            let vote = match ii.op {
                Intrinsic::VoteAll => trues == parts.len(),
                Intrinsic::VoteAny => trues > 0,
                _ => trues == 0 || trues == parts.len(),
            };
            vec![vec![vote as u64]; parts.len()]
        }
        Intrinsic::ReadFirstInvocation => {
            let first = parts.iter().map(|&p| lane(p)).min().unwrap();
            vec![value_at(first).unwrap(); parts.len()]
        }
        Intrinsic::ReadInvocation => parts
            .iter()
            .map(|&p| {
                let wanted = source(p, 1)[0] as u32;
                value_at(wanted).unwrap_or_else(|| vec![0; regs_of(v).len()])
            })
            .collect(),
        Intrinsic::Reduce | Intrinsic::InclusiveScan | Intrinsic::ExclusiveScan => {
            let op = (ii.index(IndexKind::ReductionOp))
                .and_then(reduction_op)
                .expect("the verifier checks the reduction operation");
            let bits = func.inst(v).def.map_or(32, |d| d.bits);
            // The active lanes in index order, each combining the ones before it.
            let mut order: Vec<usize> = parts.to_vec();
            order.sort_by_key(|&p| lane(p));
            let mut running = vec![reduction_identity(op, bits); regs_of(v).len()];
            // Each lane's scan, by its place in `group`.
            let mut scans = BTreeMap::new();
            for &p in &order {
                if ii.op == Intrinsic::ExclusiveScan {
                    scans.insert(p, running.clone());
                }
                for (acc, &x) in running.iter_mut().zip(source(p, 0)) {
                    let mut out = [0];
                    let srcs: [&[u64]; 2] = [&[*acc], &[x]];
                    op.eval(
                        &srcs,
                        Bits {
                            src: &[bits, bits],
                            dst: bits,
                        },
                        &mut out,
                    );
                    *acc = out[0];
                }
                if ii.op == Intrinsic::InclusiveScan {
                    scans.insert(p, running.clone());
                }
            }
            parts
                .iter()
                .map(|p| scans.remove(p).unwrap_or_else(|| running.clone()))
                .collect()
        }
        other => unreachable!("{} is not a subgroup operation", other.name()),
    };
    let dst = regs_of(v);
    for (&p, result) in parts.iter().zip(results) {
        group[p].frames.last_mut().unwrap().regs[dst.clone()].copy_from_slice(&result);
    }
}
