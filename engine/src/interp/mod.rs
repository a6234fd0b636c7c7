//! The reference interpreter: executes a [`Shader`] exactly, as the oracle for differential
//! testing of every pass and backend.
//!
//! [`run`] takes the shader, a [`Launch`] (how many invocations, their inputs, the fragment grid
//! or compute workgroups) and [`Resources`] (buffers, textures, samplers, images; SSBOs and images
//! are written in place) and returns each invocation's outputs in a [`RunResult`].
//!
//! # Execution model
//!
//! Every invocation has its own call stack; a frame holds a flat register file with one `u64`
//! per component of every SSA value. Invocations of a group run one after another until they
//! reach a *synchronisation point* or finish; then the earliest sync point (in a structured
//! order of the program where a loop's blocks come before its merge block, outer call frames
//! compared first) is resolved for all invocations waiting at exactly that point, and they go
//! on. Groups are:
//! - fragment shaders: 2×2 quads; sync points are derivatives and implicit-LOD texture
//!   operations (`tex`, `txb`, `lod`);
//! - compute shaders: a workgroup; the sync point is a `barrier` whose execution scope is
//!   workgroup or wider, which every live (not yet finished) invocation must reach at the same
//!   point, else the run fails with [`InterpError::Barrier`];
//! - every other stage: one invocation (vertex shaders and the stages without special support
//!   run this way).
//!
//! **Subgroups.** A program with subgroup operations or subgroup system values runs its
//! fragment invocations in groups of [`Launch::subgroup_size`] / 4 quads (taken in rows of
//! quads; quad `q` of the group is lanes `4q` to `4q + 3`, its members in quad order) and the
//! other non-compute stages in groups of `subgroup_size` invocations in order; a compute
//! workgroup holds subgroups of `subgroup_size` consecutive local invocation indices (the last
//! one may be partial). Every subgroup operation (`ballot`, `vote_*`, `read_*invocation`) is a
//! sync point: the invocations of one subgroup waiting at it together are its *active* lanes,
//! so that after a divergent branch each side's lanes see only each other, and a loop's
//! iteration is shared by the lanes still in the loop (maximal reconvergence). A read of a lane
//! that is not active, or past the subgroup, gives 0. Masks have one bit per lane of the
//! subgroup, lane 0 in bit 0 of component x.
//!
//! Within a group invocations run in order (quad position, or local invocation index), so
//! memory is sequentially consistent in that order; workgroups and quads run one after another.
//! [`run`] gets the same results faster from its wide executor where a program allows it (see
//! `wide.rs`): no calls and no writes to memory other invocations read; [`run_reference`] always
//! runs this way.
//!
//! # Fixed choices
//!
//! Besides the arithmetic choices of [`shrew_ops::eval`] (shift counts modulo the size, division
//! by zero giving 0, saturating float-to-int conversions, preserved denormals, …):
//! - `undef` is 0 in every component.
//! - **Derivatives.** Quad positions are `0 1` over `2 3` (x right, y down). `fddx` is
//!   right − left of a row pair, `fddy` bottom − top of a column pair, computed in `f64` and
//!   rounded once. Fine derivatives use the invocation's own row (column); coarse and
//!   unqualified ones use the top row (left column). Only quad members waiting at the same
//!   point participate; when the chosen pair has a non-participating member (terminated,
//!   diverged, or outside the launch) the other row (column) is used, and when neither pair is
//!   complete the derivative is 0. Derivatives outside fragment shaders are 0. Implicit texture
//!   LODs use coarse derivatives of the coordinates.
//! - **Fragment launch.** Invocation `i` is pixel `(i mod width, i div width)` of the grid, and
//!   pixel `(x, y)` of the grid is window pixel [`Launch::origin`] + `(x, y)`; its `frag_coord`
//!   is that window pixel's centre `(x + 0.5, y + 0.5)` with `z`, `w` from [`Launch::frag_coord_zw`]
//!   (default `0, 1`). Quads are aligned 2×2 blocks. A pixel not covered (see
//!   [`Launch::covered`]) in a quad with a covered pixel runs as a helper; quads without a covered
//!   pixel do not run. Pixels past the last invocation do not exist.
//! - **Helpers and kills.** Helper invocations (uncovered or demoted) execute, but their SSBO and
//!   image writes are dropped (their atomics return the current value and write nothing) and
//!   their outputs are not reported. `discard`/`terminate` end the invocation and drop its
//!   outputs. `load_helper_invocation` is the initial helper state (uncovered pixel);
//!   `is_helper_invocation` also reflects `demote`.
//! - **Memory.** Layouts are described in [`memory`] and placements in [`layout_variables`].
//!   `function_temp` variables belong to the invocation, not to a call: they start at 0 and keep
//!   their value across calls. Shared memory is `max(variables, Launch::shared_memory_size)`
//!   bytes, zeroed per workgroup; `load_shared`/`store_shared` offsets address the same bytes as
//!   shared variables. `load_uniform` byte offsets address the default uniform block;
//!   `load_push_constant` the push constants; `load_ubo`/`load_ssbo` use the block index as the
//!   binding (descriptor sets are ignored). Input and output slots hold at least 32 locations.
//! - **Deref values** are 64-bit in registers: the variable index in bits 32–62 and the byte
//!   offset (for textures, samplers and images: the array element) in bits 0–31. An array index
//!   outside its array sets bit 63; the access through such a deref is the error, not the deref.
//! - **Out-of-bounds** accesses — variables, buffers, shared memory, push constants, images,
//!   `txf`/`txs` — are errors ([`InterpError::OutOfBounds`]) naming the instruction, except in
//!   helpers where dropped writes are not checked, and for variables and images under
//!   [`Launch::robust_access`] (reads and atomics see zero, writes are dropped, as GL's
//!   robust buffer access and image accesses have it). Missing resources are
//!   [`InterpError::Invalid`].
//! - Shader inputs are taken as given by the launch (already interpolated): `interp`
//!   qualifiers and `location` only place them.
//! - Booleans are 4-byte 0/1 in memory; a nonzero value reads as true.
//! - Texture sampling: see [`sampler`]. Storage images hold raw 32-bit components and are
//!   accessed with 32-bit values; the sample index and the LOD of `image_deref_size` are
//!   ignored.
//! - `barrier` with an execution scope narrower than the workgroup, and every barrier outside
//!   compute shaders, only orders memory, which is already sequentially consistent: a no-op.
//! - System values: `vertex_id = base_vertex + i`; other per-draw values come from
//!   [`SystemValues`]; compute ids follow the workgroup size with x varying fastest.
//! - A run stops with [`InterpError::StepLimit`] when one invocation executes more than
//!   [`Launch::step_limit`] instructions (terminators included), and calls nest at most
//!   [`MAX_CALL_DEPTH`] deep.
//! - **Limits.** So that any shader, launch and resources take bounded memory and (with the step
//!   limit) bounded time, a run fails with [`InterpError::Setup`] before running anything when:
//!   - a variable's type has no layout: types nested deeper than [`memory::MAX_TYPE_DEPTH`]
//!     (256) levels, sizes or strides over [`memory::MAX_LAYOUT_BYTES`] (1 GiB), explicit member
//!     offsets below the previous member's end, explicit strides below the element's size (see
//!     [`memory`]); or a variable ends past 1 GiB of its storage (locations included), so byte
//!     offsets fit the 32 bits of deref values;
//!   - there are more than [`MAX_INVOCATIONS`] (2²⁴) invocations, or a workgroup has more than
//!     that or a zero size (a dispatch of zero workgroups runs nothing);
//!   - an invocation's or workgroup's area (inputs, outputs, private variables, shared memory,
//!     the uniform block) is over [`MAX_AREA_BYTES`] (256 MiB), or a group's areas, shared
//!     memory and entry registers together are over [`MAX_GROUP_BYTES`] (1 GiB);
//!   - the result would hold more than [`MAX_RESULT_VALUES`] (2²⁶) values: per invocation, one
//!     plus one per output variable and output component;
//!   - a texture level or image has a size outside `1..=16384` ([`sampler::MAX_TEXTURE_DIM`]),
//!     more than 2²⁸ texels ([`sampler::MAX_TEXELS`]), or not as many texels as its size says
//!     (the error names the binding; see [`Resources::validate`]).
//!
//!   While running, a call whose frame would take the group's frame registers (one `u64` per
//!   component) past [`MAX_GROUP_BYTES`], and a `copy_deref` of more than
//!   [`memory::MAX_COMPONENTS`] (2²⁴) components, are [`InterpError::Unsupported`]. Listing a
//!   value's components ([`parse_value`], [`Resources::set_variable`], [`Resources::variable`])
//!   stops at 2²⁴ components, and [`Resources::set_variable`] grows a buffer to at most 1 GiB;
//!   [`variable_size`] tells the bytes a buffer variable needs.

mod exec;
mod launch;
pub mod memory;
mod program;
pub mod sampler;
mod tex;
mod value;
mod wide;

#[cfg(test)]
mod tests;

pub use exec::atomic_result;
pub use memory::{
    LayoutRule, Storage, VarLayout, flatten_type, layout_variables, try_flatten_type,
};
pub use sampler::{CompareFunc, Filter, Image, MipLevel, SamplerState, Texture, Wrap};
pub use tex::{TexKind, TexOperands, texture_op};
pub use value::{
    format_scalar, format_value, format_variable, parse_scalar, parse_value, parse_variable,
};

use crate::ir::Shader;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Deepest call nesting before a run fails.
pub const MAX_CALL_DEPTH: usize = 256;

/// Most invocations of one run, and of one compute workgroup.
pub const MAX_INVOCATIONS: u64 = 1 << 24;

/// Largest memory area (inputs, outputs, private variables, shared memory, the default uniform
/// block) a run allocates per invocation or workgroup.
pub const MAX_AREA_BYTES: u64 = 1 << 28;

/// Most memory the invocations of one group (quad, workgroup) may hold at once: their areas,
/// the shared memory, and the registers of their call frames.
pub const MAX_GROUP_BYTES: u64 = 1 << 30;

/// Most values a run's result may hold: per invocation, one plus one per output variable plus
/// one per output component.
pub const MAX_RESULT_VALUES: u64 = 1 << 26;

/// Everything a shader reads or writes outside its invocation. SSBOs and images are updated in
/// place by [`run`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Resources {
    /// The default uniform block: non-opaque `uniform` variables, placed by
    /// [`layout_variables`]. Shorter than the block, it reads as zero-padded.
    pub uniform_data: Vec<u8>,
    /// UBO contents by binding.
    pub ubos: BTreeMap<u32, Vec<u8>>,
    /// SSBO contents by binding.
    pub ssbos: BTreeMap<u32, Vec<u8>>,
    pub push_constants: Vec<u8>,
    /// Textures by binding.
    pub textures: BTreeMap<u32, Texture>,
    /// Samplers by binding (a combined texture-sampler uses the texture's binding).
    pub samplers: BTreeMap<u32, SamplerState>,
    /// Storage images by binding.
    pub images: BTreeMap<u32, Image>,
}

/// Per-draw system values shared by every invocation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SystemValues {
    pub base_vertex: u32,
    pub base_instance: u32,
    pub instance_id: u32,
    pub draw_id: u32,
    pub primitive_id: u32,
    pub sample_id: u32,
    /// `load_invocation_id` (tessellation and geometry stages).
    pub invocation_id: u32,
    pub front_face: bool,
    pub point_coord: [f32; 2],
}

impl Default for SystemValues {
    fn default() -> SystemValues {
        SystemValues {
            base_vertex: 0,
            base_instance: 0,
            instance_id: 0,
            draw_id: 0,
            primitive_id: 0,
            sample_id: 0,
            invocation_id: 0,
            front_face: true,
            point_coord: [0.5, 0.5],
        }
    }
}

/// What to run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Launch {
    /// Number of invocations of vertex and fragment (and other non-compute) shaders.
    pub invocations: usize,
    /// Fragment shaders: pixels per row. 0 picks the smallest even width at least
    /// `√invocations`, so 4 invocations make one full quad.
    pub width: u32,
    /// Values of `shader_in` variables by name, as flattened components: one entry for all
    /// invocations, or one per invocation. Missing inputs are 0.
    pub inputs: BTreeMap<String, Vec<Vec<u64>>>,
    /// Fragment shaders: which pixels are covered (empty: all).
    pub covered: Vec<bool>,
    /// Fragment shaders: `z` and `w` of each pixel's `frag_coord` (empty: `0, 1`).
    pub frag_coord_zw: Vec<[f32; 2]>,
    /// Fragment shaders: the window position of the grid's first pixel, so a launch can cover
    /// any rectangle of a framebuffer (keep it even to keep quads aligned with the window's).
    pub origin: [u32; 2],
    /// Compute shaders: number of workgroups.
    pub workgroups: [u32; 3],
    pub system: SystemValues,
    /// Compute shaders: minimum shared memory bytes per workgroup.
    pub shared_memory_size: u32,
    /// Most instructions one invocation may execute.
    pub step_limit: u64,
    /// Accesses to variables out of bounds read zero and drop their writes (and atomics) instead
    /// of failing, as GL robustness and most drivers behave; piglit's array-bounds tests rely on
    /// it. Off by default, so that optimization tests catch any access a pass moves out of bounds.
    pub robust_access: bool,
    /// Invocations per subgroup, a power of two from 4 to 128 (see the execution model).
    pub subgroup_size: u32,
}

impl Default for Launch {
    fn default() -> Launch {
        Launch {
            invocations: 1,
            width: 0,
            inputs: BTreeMap::new(),
            covered: Vec::new(),
            frag_coord_zw: Vec::new(),
            origin: [0, 0],
            workgroups: [1, 1, 1],
            system: SystemValues::default(),
            shared_memory_size: 32768,
            step_limit: 10_000_000,
            robust_access: false,
            subgroup_size: DEFAULT_SUBGROUP_SIZE,
        }
    }
}

/// [`Launch::subgroup_size`] unless a launch sets it: the widest SIMD dispatch of the Gen
/// fragment and compute kernels.
pub const DEFAULT_SUBGROUP_SIZE: u32 = 16;

impl Launch {
    /// A launch of `n` invocations with defaults otherwise.
    pub fn invocations(n: usize) -> Launch {
        Launch {
            invocations: n,
            ..Launch::default()
        }
    }

    /// Sets an input's value for all invocations (`values.len() == 1`) or per invocation.
    pub fn with_input(mut self, name: &str, values: Vec<Vec<u64>>) -> Launch {
        self.inputs.insert(name.to_string(), values);
        self
    }

    /// The fragment grid width this launch uses (at most `u32::MAX - 1` when picked).
    pub fn grid_width(&self) -> u32 {
        if self.width != 0 {
            return self.width;
        }
        let n = self.invocations;
        let root = n.isqrt();
        let ceil_root = if root * root < n { root + 1 } else { root };
        u32::try_from(ceil_root.max(2).next_multiple_of(2)).unwrap_or(u32::MAX - 1)
    }
}

/// Counts of executed work, over all invocations including helpers.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stats {
    /// Instructions executed (phis included, terminators not).
    pub instructions: u64,
    /// ALU instructions executed.
    pub alu: u64,
}

/// The result of a run, stored by output (one array of every invocation's components per
/// output variable), as a GPU writes render targets: a draw's result takes a few allocations,
/// not a few per invocation.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    /// Every `shader_out` variable, by name.
    pub outputs: Vec<OutputValues>,
    /// Per invocation: ended by `discard` or `terminate`.
    pub discarded: Vec<bool>,
    /// Per invocation: ran (or would have run) as a helper: not covered, or demoted.
    pub helper: Vec<bool>,
    pub stats: Stats,
}

/// One output variable's flattened components for every invocation, invocation by invocation
/// (zeros for helpers and discarded invocations, which produce no outputs).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct OutputValues {
    pub name: String,
    /// Components per invocation.
    pub components: usize,
    pub values: Vec<u64>,
}

impl RunResult {
    /// The number of invocations: in launch order for vertex and fragment shaders, workgroup by
    /// workgroup (x fastest) and local index within each for compute shaders.
    pub fn len(&self) -> usize {
        self.discarded.len()
    }

    pub fn is_empty(&self) -> bool {
        self.discarded.is_empty()
    }

    /// What invocation `index` produced.
    pub fn invocation(&self, index: usize) -> InvocationResult<'_> {
        InvocationResult {
            run: self,
            index,
            discarded: self.discarded[index],
            helper: self.helper[index],
        }
    }

    /// What every invocation produced, in order.
    pub fn invocations(&self) -> impl ExactSizeIterator<Item = InvocationResult<'_>> + '_ {
        (0..self.len()).map(|i| self.invocation(i))
    }
}

/// What one invocation of a run produced.
#[derive(Copy, Clone, Debug)]
pub struct InvocationResult<'r> {
    run: &'r RunResult,
    index: usize,
    /// Ended by `discard` or `terminate`.
    pub discarded: bool,
    /// Ran (or would have run) as a helper: not covered, or demoted.
    pub helper: bool,
}

impl<'r> InvocationResult<'r> {
    /// Whether the invocation produced outputs: it was neither discarded nor a helper.
    pub fn has_outputs(&self) -> bool {
        !self.discarded && !self.helper
    }

    /// The flattened components of output variable `name`, when the invocation produced outputs.
    pub fn output(&self, name: &str) -> Option<&'r [u64]> {
        self.outputs().find(|(n, _)| *n == name).map(|(_, v)| v)
    }

    /// Every output variable's components by name (none for helpers and discarded
    /// invocations).
    pub fn outputs(&self) -> impl Iterator<Item = (&'r str, &'r [u64])> + 'r {
        let (index, shown) = (self.index, self.has_outputs());
        self.run
            .outputs
            .iter()
            .filter(move |_| shown)
            .map(move |o| {
                let at = index * o.components;
                (o.name.as_str(), &o.values[at..at + o.components])
            })
    }
}

impl PartialEq for InvocationResult<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.discarded == other.discarded
            && self.helper == other.helper
            && self.outputs().eq(other.outputs())
    }
}

/// Where an error happened.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Site {
    pub invocation: usize,
    pub function: String,
    pub block: String,
    /// The instruction, as `%12 = load_ssbo`, `store_ssbo (id %12)` or a terminator.
    pub inst: String,
}

impl std::fmt::Display for Site {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "invocation {}, fn {}, {}, `{}`",
            self.invocation, self.function, self.block, self.inst
        )
    }
}

/// Why a run failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
pub enum InterpError {
    #[error("{site}: out-of-bounds access: {detail}")]
    OutOfBounds { site: Site, detail: String },
    #[error("{site}: unsupported: {detail}")]
    Unsupported { site: Site, detail: String },
    /// Malformed IR reached at run time, or a missing resource.
    #[error("{site}: {detail}")]
    Invalid { site: Site, detail: String },
    #[error("{site}: more than {limit} instructions executed")]
    StepLimit { site: Site, limit: u64 },
    /// The time limit of the run ([`crate::deadline`]) passed.
    #[error("{site}: the time limit passed")]
    TimeLimit { site: Site },
    #[error("{site}: barrier: {detail}")]
    Barrier { site: Site, detail: String },
    /// A bad launch or resource description.
    #[error("setup: {0}")]
    Setup(String),
}

/// An error before its site is known.
#[derive(Debug)]
pub(crate) struct Fault {
    kind: FaultKind,
    detail: String,
}

#[derive(Debug)]
enum FaultKind {
    OutOfBounds,
    Unsupported,
    Invalid,
}

impl Fault {
    pub(crate) fn oob(detail: String) -> Fault {
        Fault {
            kind: FaultKind::OutOfBounds,
            detail,
        }
    }
    pub(crate) fn invalid(detail: String) -> Fault {
        Fault {
            kind: FaultKind::Invalid,
            detail,
        }
    }
    pub(crate) fn unsupported(detail: String) -> Fault {
        Fault {
            kind: FaultKind::Unsupported,
            detail,
        }
    }

    pub(crate) fn at(self, site: Site) -> InterpError {
        let detail = self.detail;
        match self.kind {
            FaultKind::OutOfBounds => InterpError::OutOfBounds { site, detail },
            FaultKind::Unsupported => InterpError::Unsupported { site, detail },
            FaultKind::Invalid => InterpError::Invalid { site, detail },
        }
    }
}

/// Runs a shader: on the wide executor where the program allows it (see [`wide`]), else on the
/// reference scheduler; the results are the same. Debug builds run the reference too after a
/// wide run and panic if anything differs, so every test checks the wide executor against it.
pub fn run(
    shader: &Shader,
    launch: &Launch,
    resources: &mut Resources,
) -> Result<RunResult, InterpError> {
    crate::meter::executing(|| run_checked(shader, launch, resources))
}

fn run_checked(
    shader: &Shader,
    launch: &Launch,
    resources: &mut Resources,
) -> Result<RunResult, InterpError> {
    let before = cfg!(debug_assertions).then(|| resources.clone());
    let (result, executor) = launch::run(shader, launch, resources, launch::Executor::Wide)?;
    if let Some(mut reference_resources) = before
        && executor == launch::Executor::Wide
    {
        // Not through `run_reference`: the check's run is not counted as the caller's work.
        let reference = launch::run(
            shader,
            launch,
            &mut reference_resources,
            launch::Executor::Reference,
        )
        .map(|(reference, _)| reference);
        assert_eq!(
            reference.as_ref(),
            Ok(&result),
            "the wide executor and the reference differ"
        );
        assert_eq!(
            &reference_resources, resources,
            "the wide executor and the reference leave different resources"
        );
    }
    crate::meter::add(result.stats.instructions);
    Ok(result)
}

/// Runs a shader one invocation after another, on the reference scheduler only: the oracle
/// [`run`]'s wide executor is tested against.
pub fn run_reference(
    shader: &Shader,
    launch: &Launch,
    resources: &mut Resources,
) -> Result<RunResult, InterpError> {
    let (result, _) = crate::meter::executing(|| {
        launch::run(shader, launch, resources, launch::Executor::Reference)
    })?;
    crate::meter::add(result.stats.instructions);
    Ok(result)
}

impl Resources {
    /// Checks every texture and image: each size 1 to [`sampler::MAX_TEXTURE_DIM`], at most
    /// [`sampler::MAX_TEXELS`] texels per level, and as many texels as the size says. [`run`]
    /// does this first.
    pub fn validate(&self) -> Result<(), InterpError> {
        for (binding, tex) in &self.textures {
            tex.validate()
                .map_err(|e| InterpError::Setup(format!("texture {binding}: {e}")))?;
        }
        for (binding, img) in &self.images {
            img.validate()
                .map_err(|e| InterpError::Setup(format!("image {binding}: {e}")))?;
        }
        Ok(())
    }

    /// Makes the buffer behind the variable `name` (uniform, UBO, SSBO or push constant) at least
    /// as large as the variable, padding with zeros and keeping what it holds: how a caller binds
    /// a buffer it has no data for.
    pub fn zero_variable(&mut self, shader: &Shader, name: &str) -> Result<(), InterpError> {
        let (layout, _) = buffer_variable(shader, name)?;
        // Layouts are already limited to MAX_LAYOUT_BYTES, so this end fits in memory.
        let end = layout.offset as usize + layout.size as usize;
        let buf = self.buffer_mut(layout.storage);
        if buf.len() < end {
            buf.resize(end, 0);
        }
        Ok(())
    }

    /// Writes the flattened components of a `uniform`, `ubo`, `ssbo` or `push_const` variable
    /// into its storage, growing the buffer as needed (up to [`memory::MAX_LAYOUT_BYTES`]). For
    /// a variable ending in a runtime-sized array, components past the fixed part fill as many
    /// elements as they make.
    pub fn set_variable(
        &mut self,
        shader: &Shader,
        name: &str,
        comps: &[u64],
    ) -> Result<(), InterpError> {
        let (layout, ty) = buffer_variable(shader, name)?;
        let fail = |e: String| InterpError::Setup(format!("@{name}: {e}"));
        let types = memory::Layout::new(shader, layout.rule);
        let leaves = memory::leaves_for_count(&types, &ty, comps.len()).map_err(fail)?;
        let end = leaves
            .iter()
            .map(|l| l.offset as u64 + l.bytes as u64)
            .max()
            .unwrap_or(0)
            .max(layout.size as u64)
            + layout.offset as u64;
        if end > memory::MAX_LAYOUT_BYTES as u64 {
            return Err(fail(format!(
                "the values need {end} bytes, more than the limit of {} bytes",
                memory::MAX_LAYOUT_BYTES
            )));
        }
        let buf = self.buffer_mut(layout.storage);
        if buf.len() < end as usize {
            buf.resize(end as usize, 0);
        }
        for (leaf, &v) in leaves.iter().zip(comps) {
            let off = layout.offset as u64 + leaf.offset as u64;
            memory::write_bytes(buf, off, leaf.bytes, memory::to_memory(v, leaf.scalar));
        }
        Ok(())
    }

    /// Reads the flattened components of a `uniform`, `ubo`, `ssbo` or `push_const` variable;
    /// a runtime-sized array contributes as many elements as the buffer holds.
    pub fn variable(&self, shader: &Shader, name: &str) -> Result<Vec<u64>, InterpError> {
        let (layout, ty) = buffer_variable(shader, name)?;
        let empty = Vec::new();
        let buf = match layout.storage {
            Storage::Uniform => &self.uniform_data,
            Storage::Ubo { binding } => self.ubos.get(&binding).unwrap_or(&empty),
            Storage::Ssbo { binding } => self.ssbos.get(&binding).unwrap_or(&empty),
            _ => &self.push_constants,
        };
        let types = memory::Layout::new(shader, layout.rule);
        let room = (buf.len() as u64).saturating_sub(layout.offset as u64);
        let leaves = memory::leaves_fitting(&types, &ty, room)
            .map_err(|e| InterpError::Setup(format!("@{name}: {e}")))?;
        Ok(leaves
            .iter()
            .map(|l| {
                let off = layout.offset as u64 + l.offset as u64;
                let raw = memory::read_bytes(buf, off, l.bytes);
                memory::from_memory(raw.unwrap_or(0), l.scalar)
            })
            .collect())
    }

    fn buffer_mut(&mut self, storage: Storage) -> &mut Vec<u8> {
        match storage {
            Storage::Uniform => &mut self.uniform_data,
            Storage::Ubo { binding } => self.ubos.entry(binding).or_default(),
            Storage::Ssbo { binding } => self.ssbos.entry(binding).or_default(),
            _ => &mut self.push_constants,
        }
    }
}

/// The bytes the type of the variable `name` occupies, a runtime-sized array counting as empty:
/// what a buffer must hold for the fixed part of an `ssbo` or `ubo` variable. Fails when the type
/// has no layout (see [`memory`]), so the size is at most [`memory::MAX_LAYOUT_BYTES`].
pub fn variable_size(shader: &Shader, name: &str) -> Result<u64, InterpError> {
    let var = shader
        .find_variable(name)
        .ok_or_else(|| InterpError::Setup(format!("no variable @{name}")))?;
    let v = shader.variable(var);
    memory::Layout::new(shader, LayoutRule::for_mode(v.mode))
        .info(&v.ty)
        .map(|info| info.size as u64)
        .map_err(|e| InterpError::Setup(format!("@{name}: {e}")))
}

/// The layout and type of a variable that lives in a caller-supplied buffer.
fn buffer_variable(
    shader: &Shader,
    name: &str,
) -> Result<(VarLayout, crate::ir::Type), InterpError> {
    let var = shader
        .find_variable(name)
        .ok_or_else(|| InterpError::Setup(format!("no variable @{name}")))?;
    let layout = layout_variables(shader)?[var.0 as usize];
    match layout.storage {
        Storage::Uniform | Storage::Ubo { .. } | Storage::Ssbo { .. } | Storage::PushConst => {
            Ok((layout, shader.variable(var).ty.clone()))
        }
        _ => Err(InterpError::Setup(format!(
            "@{name} is a {} variable, not one backed by a buffer",
            shader.variable(var).mode.name()
        ))),
    }
}
