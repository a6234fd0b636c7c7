//! Setting up a run — invocations, inputs, system values, groups — and the scheduler that runs a
//! group to its sync points and resolves them (derivatives, implicit LODs, barriers).

use super::exec::{Flow, InvState, Invocation, Machine, Status};
use super::memory::{self, Layout, LayoutRule, Leaf, SLOT_BYTES, Storage, storage_extent};
use super::program::{FuncCode, Op, Program};
use super::{InterpError, InvocationResult, Launch, Resources, RunResult};
use crate::ir::{Shader, Stage, Type};
use shrew_ops::alu::{Axis, DerivativePrecision};
use shrew_ops::eval::{fget, fput};
use std::collections::BTreeMap;

/// Largest memory area a run allocates per invocation or workgroup.
const MAX_AREA_BYTES: usize = 1 << 28;

/// I/O slots every invocation has at least, so lowered accesses to locations without a
/// variable still work.
const MIN_IO_SLOTS: usize = 32;

fn setup(msg: String) -> InterpError {
    InterpError::Setup(msg)
}

/// Rejects struct types that refer to undeclared (or later, hence possibly recursive) structs.
pub(crate) fn check_types(shader: &Shader) -> Result<(), InterpError> {
    fn ok(ty: &Type, limit: usize) -> bool {
        match ty {
            Type::Struct(id) => (id.0 as usize) < limit,
            Type::Array { elem, .. } => ok(elem, limit),
            _ => true,
        }
    }
    for (i, st) in shader.structs.iter().enumerate() {
        if let Some(m) = st.members.iter().find(|m| !ok(&m.ty, i)) {
            return Err(setup(format!(
                "member {} of struct {} uses a struct not declared before it",
                m.name, st.name
            )));
        }
    }
    if let Some(v) = shader
        .variables
        .iter()
        .find(|v| !ok(&v.ty, shader.structs.len()))
    {
        return Err(setup(format!("@{} has an undeclared struct type", v.name)));
    }
    Ok(())
}

/// Sizes of the per-invocation and per-workgroup areas.
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

struct Runner<'p, 's> {
    m: Machine<'p, 's>,
    areas: Areas,
    inputs: Vec<Input<'p>>,
    entry: u32,
}

pub(crate) fn run(
    shader: &Shader,
    launch: &Launch,
    res: &mut Resources,
) -> Result<RunResult, InterpError> {
    check_types(shader)?;
    let entry = shader.entry.0;
    let entry_fn = shader
        .functions
        .get(entry as usize)
        .ok_or_else(|| setup("the entry function does not exist".into()))?;
    if !entry_fn.params.is_empty() {
        return Err(setup("the entry function takes parameters".into()));
    }
    let prog = Program::new(shader).map_err(setup)?;
    let extent = |s: Storage| storage_extent(&prog.vars, s) as usize;
    let io_min = MIN_IO_SLOTS * SLOT_BYTES as usize;
    let areas = Areas {
        input: extent(Storage::Input).max(io_min),
        output: extent(Storage::Output).max(io_min),
        private: extent(Storage::Private),
        shared: extent(Storage::Shared).max(launch.shared_memory_size as usize),
    };
    let uniform_size = extent(Storage::Uniform);
    for (what, size) in [
        ("inputs", areas.input),
        ("outputs", areas.output),
        ("private variables", areas.private),
        ("shared memory", areas.shared),
        ("the uniform block", uniform_size),
    ] {
        if size > MAX_AREA_BYTES {
            return Err(setup(format!(
                "{what} need {size} bytes, more than the interpreter allows"
            )));
        }
    }
    let total = match shader.stage {
        Stage::Compute => {
            let wg: u64 = launch.workgroups.iter().map(|&x| x as u64).product();
            let size: u64 = shader.workgroup_size.iter().map(|&x| x as u64).product();
            (wg * size) as usize
        }
        _ => launch.invocations,
    };
    let inputs = prepare_inputs(&prog, launch, total)?;
    let mut uniform = res.uniform_data.clone();
    if uniform.len() < uniform_size {
        uniform.resize(uniform_size, 0);
    }
    let mut runner = Runner {
        m: Machine::new(&prog, launch, res, uniform),
        areas,
        inputs,
        entry,
    };
    let invocations = match shader.stage {
        Stage::Compute => runner.compute()?,
        Stage::Fragment => runner.fragment()?,
        _ => runner.independent()?,
    };
    Ok(RunResult {
        invocations,
        stats: runner.m.stats,
    })
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
            Layout::new(shader, LayoutRule::Slots).leaves(&v.ty, layout.offset, &mut leaves);
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
    fn invocation(&self, index: usize, quad_pos: usize, state: InvState) -> Invocation {
        let mut state = state;
        for input in &self.inputs {
            let vals = if input.values.len() == 1 {
                &input.values[0]
            } else {
                &input.values[index]
            };
            for (leaf, &v) in input.leaves.iter().zip(vals) {
                let bytes = memory::to_memory(v, leaf.scalar);
                memory::write_bytes(&mut state.input, leaf.offset as u64, leaf.bytes, bytes);
            }
        }
        Invocation {
            index,
            quad_pos,
            status: Status::Running,
            steps: 0,
            frames: vec![self.m.frame(self.entry, Vec::new(), (0, 0))],
            state,
        }
    }

    fn state(&self) -> InvState {
        InvState {
            input: vec![0; self.areas.input],
            output: vec![0; self.areas.output],
            private: vec![0; self.areas.private],
            helper: false,
            initially_helper: false,
            frag_coord: [0.0, 0.0, 0.0, 1.0],
            vertex_id: 0,
            local_id: [0; 3],
            workgroup_id: [0; 3],
        }
    }

    fn result(&self, inv: &Invocation) -> InvocationResult {
        let discarded = inv.status == Status::Terminated;
        let helper = inv.state.helper;
        let mut outputs = BTreeMap::new();
        if !discarded && !helper {
            let shader = self.m.prog.shader;
            for (v, layout) in shader.variables.iter().zip(&self.m.prog.vars) {
                if layout.storage == Storage::Output {
                    let mut leaves = Vec::new();
                    Layout::new(shader, LayoutRule::Slots).leaves(
                        &v.ty,
                        layout.offset,
                        &mut leaves,
                    );
                    let vals = leaves
                        .iter()
                        .map(|l| {
                            let raw =
                                memory::read_bytes(&inv.state.output, l.offset as u64, l.bytes);
                            memory::from_memory(raw.unwrap_or(0), l.scalar)
                        })
                        .collect();
                    outputs.insert(v.name.clone(), vals);
                }
            }
        }
        InvocationResult {
            outputs,
            discarded,
            helper,
        }
    }

    /// Vertex shaders and every stage without groups: each invocation on its own.
    fn independent(&mut self) -> Result<Vec<InvocationResult>, InterpError> {
        let base_vertex = self.m.launch.system.base_vertex;
        (0..self.m.launch.invocations)
            .map(|i| {
                let state = InvState {
                    vertex_id: base_vertex.wrapping_add(i as u32),
                    ..self.state()
                };
                let mut group = [self.invocation(i, 0, state)];
                self.run_group(&mut group, &mut [])?;
                Ok(self.result(&group[0]))
            })
            .collect()
    }

    fn fragment(&mut self) -> Result<Vec<InvocationResult>, InterpError> {
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
        let covered = |i: usize| launch.covered.get(i).copied().unwrap_or(true);
        let mut results = vec![InvocationResult::default(); n];
        for qy in 0..h.div_ceil(2) {
            for qx in 0..w.div_ceil(2) {
                let members: Vec<(usize, usize, usize, usize)> = (0..4)
                    .map(|pos| (pos, 2 * qx + pos % 2, 2 * qy + pos / 2))
                    .filter(|&(_, x, _)| x < w)
                    .map(|(pos, x, y)| (y * w + x, pos, x, y))
                    .filter(|&(i, ..)| i < n)
                    .collect();
                if !members.iter().any(|&(i, ..)| covered(i)) {
                    for &(i, ..) in &members {
                        results[i].helper = true;
                    }
                    continue;
                }
                let mut group: Vec<Invocation> = members
                    .iter()
                    .map(|&(i, pos, x, y)| {
                        let [z, wc] = launch.frag_coord_zw.get(i).copied().unwrap_or([0.0, 1.0]);
                        let state = InvState {
                            helper: !covered(i),
                            initially_helper: !covered(i),
                            frag_coord: [x as f32 + 0.5, y as f32 + 0.5, z, wc],
                            ..self.state()
                        };
                        self.invocation(i, pos, state)
                    })
                    .collect();
                self.run_group(&mut group, &mut [])?;
                for inv in &group {
                    results[inv.index] = self.result(inv);
                }
            }
        }
        Ok(results)
    }

    fn compute(&mut self) -> Result<Vec<InvocationResult>, InterpError> {
        let [gx, gy, gz] = self.m.launch.workgroups;
        let [sx, sy, sz] = self.m.prog.shader.workgroup_size;
        let per_group = sx as usize * sy as usize * sz as usize;
        let mut results = Vec::new();
        let mut group_index = 0;
        for wz in 0..gz {
            for wy in 0..gy {
                for wx in 0..gx {
                    let mut shared = vec![0u8; self.areas.shared];
                    let mut group = Vec::with_capacity(per_group);
                    for lz in 0..sz {
                        for ly in 0..sy {
                            for lx in 0..sx {
                                let state = InvState {
                                    local_id: [lx, ly, lz],
                                    workgroup_id: [wx, wy, wz],
                                    ..self.state()
                                };
                                let index = group_index * per_group + group.len();
                                group.push(self.invocation(index, 0, state));
                            }
                        }
                    }
                    self.run_group(&mut group, &mut shared)?;
                    results.extend(group.iter().map(|inv| self.result(inv)));
                    group_index += 1;
                }
            }
        }
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
            self.resolve(group, &parts, waiting.len())?;
        }
    }

    /// Executes the sync instruction the invocations `parts` of `group` wait at.
    fn resolve(
        &mut self,
        group: &mut [Invocation],
        parts: &[usize],
        waiting: usize,
    ) -> Result<(), InterpError> {
        let prog = self.m.prog;
        let first = &group[parts[0]];
        let frame = first.frames.last().unwrap();
        let fc: &FuncCode = &prog.funcs[frame.func as usize];
        let op = &fc.blocks[frame.block as usize].ops[frame.pos as usize];
        match op {
            Op::Barrier { .. } => {
                if parts.len() != waiting {
                    return Err(InterpError::Barrier {
                        site: self.m.site(first),
                        detail: format!(
                            "{} of the {waiting} live invocations of the workgroup reached it, the \
                             others wait at another barrier",
                            parts.len()
                        ),
                    });
                }
            }
            Op::Derivative(a, axis, precision) => {
                let s = &a.srcs[0];
                let mut vals: [Option<Vec<f64>>; 4] = Default::default();
                for &p in parts {
                    let regs = &group[p].frames.last().unwrap().regs;
                    vals[group[p].quad_pos] = Some(
                        s.swizzle[..s.n as usize]
                            .iter()
                            .map(|&c| fget(regs[(s.off + c as u32) as usize], a.src_bits[0]))
                            .collect(),
                    );
                }
                let avail = vals.clone().map(|v| v.is_some());
                let fine = *precision == DerivativePrecision::Fine;
                for &p in parts {
                    let pair = quad_pair(avail, group[p].quad_pos, *axis, fine);
                    let regs = &mut group[p].frames.last_mut().unwrap().regs;
                    for c in 0..a.comps as usize {
                        regs[a.dst as usize + c] = match pair {
                            Some((from, to)) => {
                                let d =
                                    vals[to].as_ref().unwrap()[c] - vals[from].as_ref().unwrap()[c];
                                fput(d, a.dst_bits)
                            }
                            None => 0,
                        };
                    }
                    self.m.stats.alu += 1;
                }
            }
            Op::Tex { value, .. } => {
                let value = *value;
                let mut coords = [None; 4];
                for &p in parts {
                    let frame = group[p].frames.last().unwrap();
                    coords[group[p].quad_pos] = Some(self.m.tex_deriv_coord(fc, frame, value));
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
                    if let Err(f) = self.m.exec_tex(fc, frame, value, Some([dx, dy])) {
                        return Err(f.at(self.m.site(inv)));
                    }
                }
            }
            _ => unreachable!("only barriers, derivatives and texture operations wait"),
        }
        for &p in parts {
            group[p].frames.last_mut().unwrap().pos += 1;
            group[p].status = Status::Running;
        }
        Ok(())
    }
}
