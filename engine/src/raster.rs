//! What a rasterizer hands a fragment stage: a grid of pixels in whole 2×2 quads, which of them
//! the primitive covers, and where each lies in it. The piglit runner fills it; the backends'
//! fragment dispatchers read it.

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
