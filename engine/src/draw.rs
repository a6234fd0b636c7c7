//! The draw contract: what a rasterizer hands a shader stage, the same for the reference
//! interpreter and for every emulator.
//!
//! What: a fragment stage shades one triangle at a time. The triangle's pixels lie on a grid of
//! whole 2×2 quads ([`QuadGrid`]) with each pixel's barycentrics; its inputs are their values
//! at the triangle's three vertices, the third the provoking one (flat inputs take its value).
//! A vertex stage runs a number of vertices, each input one value for all of them or one each.
//! A compute stage runs a number of workgroups over the resources ([`ComputeDispatch`]).
//! The stages see the inputs by variable name ([`TriangleFragments`], [`VertexKernel::run`]),
//! as [`DrawStages`] compiles them; an emulator's dispatcher sees them in the kernel's slots
//! ([`FragmentDraw`], [`VertexDraw`]) and derives its hardware's form from them itself (Gen's
//! attribute planes, R600's interpolation parameters), flat or not as the kernel interpolates.
//!
//! Why: the piglit executor runs every draw, on the interpreter or on an emulator, through one
//! path, and the backends' differential tests give the interpreter and the emulators the same
//! inputs; one contract keeps the rasterizer, the interpreter and the dispatchers apart.

use crate::interp::Resources;
use crate::ir::Shader;
use std::collections::BTreeMap;

/// One primitive's pixels on a grid of whole quads, row-major.
#[derive(Clone, Debug, Default)]
pub struct QuadGrid {
    /// Even width and height.
    pub width: u32,
    pub height: u32,
    /// Window position of the grid's top-left pixel (even).
    pub origin: [u32; 2],
    /// Whether each pixel is covered; the others run as helpers, for their quads' derivatives.
    pub covered: Vec<bool>,
    /// The weights of the primitive's second and third vertex at each pixel (b1, b2),
    /// perspective-correct.
    pub perspective: Vec<[f32; 2]>,
    /// The same weights in screen space.
    pub linear: Vec<[f32; 2]>,
    /// Window depth and interpolated 1/w of each pixel.
    pub depth_w: Vec<[f32; 2]>,
}

impl QuadGrid {
    /// The top-left pixel `(x, y)` of quad `q` (quads are the grid's 2x2 blocks, row-major).
    pub fn quad_origin(&self, q: usize) -> (usize, usize) {
        let quads_x = self.width as usize / 2;
        (2 * (q % quads_x), 2 * (q / quads_x))
    }

    /// The pixels (row-major indices) of quad `q`: top-left, top-right, bottom-left,
    /// bottom-right.
    pub fn quad_pixels(&self, q: usize) -> [usize; 4] {
        let (x, y) = self.quad_origin(q);
        std::array::from_fn(|k| (y + k / 2) * self.width as usize + x + k % 2)
    }

    /// The quads with a covered pixel: those the hardware dispatches.
    pub fn covered_quads(&self) -> Vec<usize> {
        let quads = (self.width as usize / 2) * (self.height as usize / 2);
        (0..quads)
            .filter(|&q| {
                self.quad_pixels(q)
                    .iter()
                    .any(|&i| self.covered.get(i).copied().unwrap_or(false))
            })
            .collect()
    }
}

/// One triangle's fragments as a fragment stage sees them: its pixels (covered where the
/// triangle covers them and the draw needs them) and its varyings.
#[derive(Clone, Debug, Default)]
pub struct TriangleFragments {
    pub pixels: QuadGrid,
    /// Each fragment input's components (raw bits) at the three vertices, by variable name; the
    /// third vertex is the provoking one.
    pub varyings: BTreeMap<String, [Vec<u64>; 3]>,
    pub primitive: Primitive,
}

/// What a fragment knows of the primitive it belongs to.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Primitive {
    /// `gl_PrimitiveID`: the primitive's index in its draw (a quad's two triangles are one).
    pub id: u32,
    /// Whether it faces away (winds clockwise in the window): `gl_FrontFacing` is false.
    pub back_facing: bool,
}

/// The stages of a draw (and of a compute dispatch): shaders compiled into kernels that run
/// vertices, shade fragments and run workgroups.
pub trait DrawStages: Sync {
    /// Compiles the (optimized) fragment shader, or says why it cannot.
    fn compile_fragment(&self, shader: &Shader) -> Result<Box<dyn FragmentKernel>, String>;

    /// Compiles the (optimized) vertex shader, or says why it cannot; `None` when these stages
    /// have no vertex stage (the reference interpreter runs the vertices).
    fn compile_vertex(&self, shader: &Shader) -> Result<Option<Box<dyn VertexKernel>>, String>;

    /// Compiles the (optimized) compute shader, or says why it cannot.
    fn compile_compute(&self, shader: &Shader) -> Result<Box<dyn ComputeKernel>, String>;

    /// Why these stages cannot run shaders that use the GL extension `name`, when their
    /// hardware lacks what it needs (so a driver would not expose the extension); `None`
    /// when they can.
    fn lacks_extension(&self, _name: &str) -> Option<&'static str> {
        None
    }
}

/// A compiled compute shader.
pub trait ComputeKernel {
    /// Runs the dispatch's workgroups and leaves its SSBOs as the invocations wrote them.
    fn dispatch(&self, dispatch: &mut ComputeDispatch) -> Result<(), String>;
}

/// A compute dispatch: how many workgroups, and the resources the shader reads and writes.
#[derive(Clone, Debug, Default)]
pub struct ComputeDispatch {
    pub workgroups: [u32; 3],
    /// The buffers, textures and samplers the shader reads; the SSBOs as the invocations leave
    /// them.
    pub resources: Resources,
}

/// A compiled vertex shader.
pub trait VertexKernel {
    /// Runs `count` vertices with their inputs by variable name (a value per vertex, or one
    /// for all); gives each vertex's outputs by variable name (raw bits) and leaves the SSBOs
    /// as the vertices wrote them.
    fn run(
        &self,
        count: usize,
        inputs: &BTreeMap<String, Vec<Vec<u64>>>,
        resources: &mut Resources,
    ) -> Result<Vec<BTreeMap<String, Vec<u64>>>, String>;
}

/// A compiled fragment shader.
pub trait FragmentKernel {
    /// Shades one triangle's fragments; gives each pixel's colour output 0 (raw bits), `None`
    /// where nothing was written, and leaves the SSBOs as the fragments wrote them.
    fn shade(
        &self,
        fragments: &TriangleFragments,
        resources: &mut Resources,
    ) -> Result<Vec<Option<[u32; 4]>>, String>;
}

/// One triangle's fragments as an emulator's dispatcher takes them: the pixels, the inputs in
/// the kernel's slots and the shader's resources.
#[derive(Clone, Debug, Default)]
pub struct FragmentDraw {
    pub pixels: QuadGrid,
    /// Per input slot, its four components (raw bits) at the first, second and third vertex;
    /// the third is the provoking one.
    pub inputs: BTreeMap<u32, [[u32; 4]; 3]>,
    pub primitive: Primitive,
    /// The buffers, textures and samplers the shader reads; the SSBOs as the fragments leave
    /// them.
    pub resources: Resources,
}

impl FragmentDraw {
    /// Component `comp` of input `slot` at the three vertices (zero where the draw has none).
    pub fn at_vertices(&self, slot: u32, comp: usize) -> [f32; 3] {
        self.inputs
            .get(&slot)
            .map_or([0.0; 3], |v| v.map(|vertex| f32::from_bits(vertex[comp])))
    }
}

/// One draw's vertices as an emulator's dispatcher takes them: how many, their attributes in
/// the kernel's slots and the shader's resources.
#[derive(Clone, Debug, Default)]
pub struct VertexDraw {
    pub count: usize,
    /// Per attribute slot, each vertex's four components (raw bits); one entry stands for
    /// every vertex.
    pub attributes: BTreeMap<u32, Vec<[u32; 4]>>,
    /// The buffers, textures and samplers the shader reads; the SSBOs as the vertices leave
    /// them.
    pub resources: Resources,
}

impl VertexDraw {
    /// The attribute at `slot` of vertex `vertex` (zero where the draw has none).
    pub fn attribute(&self, slot: u32, vertex: usize) -> [u32; 4] {
        match self.attributes.get(&slot).map(Vec::as_slice) {
            Some([one]) => *one,
            Some(each) => each.get(vertex).copied().unwrap_or_default(),
            None => [0; 4],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::QuadGrid;

    #[test]
    fn only_quads_with_a_covered_pixel_are_dispatched() {
        // 6x4 pixels: quads 0..3 on the top row, 3..6 below. One pixel of quad 1 (its
        // bottom-right) and one of quad 5 (its top-left) are covered.
        let mut covered = vec![false; 24];
        covered[6 + 3] = true;
        covered[2 * 6 + 4] = true;
        let grid = QuadGrid {
            width: 6,
            height: 4,
            covered,
            ..QuadGrid::default()
        };
        assert_eq!(grid.covered_quads(), [1, 5]);
    }
}
