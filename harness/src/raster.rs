//! Rasterization: a draw's vertices to window positions, and its triangles to the grids of
//! pixels a fragment stage shades, one triangle at a time as hardware does.
//!
//! A triangle covers the pixels whose centres lie inside it, within its bounding box on the
//! framebuffer; a centre on an edge belongs to the triangle for which it is a left edge (the
//! inside to its right) or a top one (horizontal, the inside below), so that of two triangles
//! sharing an edge exactly one covers it. Where triangles of a draw overlap, the last one drawn
//! owns the pixel, as without a depth test. Each triangle's grid spans, in whole 2×2 quads,
//! the pixels it covers
//! that the draw needs (those some probe looks at): those are covered, the grid's other pixels
//! run as helpers with the triangle's barycentrics extrapolated to them, so that derivatives
//! are the triangle's own. Why here: the executor owns the framebuffer and the probes, and the
//! stages see only the draw contract's [`QuadGrid`].

use shrew_engine::draw::QuadGrid;

/// The triangles of a rectangle drawn as a strip of its four corners, the provoking (last)
/// vertex third.
pub(crate) const STRIP: [[usize; 3]; 2] = [[0, 1, 2], [2, 1, 3]];

/// Whether triangle `tri` of window positions `window` winds counter-clockwise (y up): GL's
/// default front face.
pub(crate) fn counter_clockwise(window: &[[f32; 4]], tri: [usize; 3]) -> bool {
    let [a, b, c] = tri.map(|i| window[i]);
    (b[0] - a[0]) * (c[1] - a[1]) - (c[0] - a[0]) * (b[1] - a[1]) > 0.0
}

/// The window position of each clip-space position on a `width`×`height` framebuffer: `x`,
/// `y`, the depth and 1/w.
pub(crate) fn window_positions(positions: &[[f32; 4]], width: u32, height: u32) -> Vec<[f32; 4]> {
    positions
        .iter()
        .map(|p| {
            let inv_w = 1.0 / p[3];
            [
                (p[0] * inv_w + 1.0) * 0.5 * width as f32,
                (p[1] * inv_w + 1.0) * 0.5 * height as f32,
                (p[2] * inv_w + 1.0) * 0.5,
                inv_w,
            ]
        })
        .collect()
}

/// A triangle ready to rasterize: its vertices' window positions, twice its signed area,
/// which of its edges (opposite each vertex) own the centres on them, and the columns and rows
/// of its bounding box on the framebuffer.
struct Setup {
    vertices: [[f32; 4]; 3],
    area: f32,
    owns_edge: [bool; 3],
    x: std::ops::Range<u32>,
    y: std::ops::Range<u32>,
}

impl Setup {
    /// The triangle `tri` of `window` on a `width`×`height` framebuffer; `None` when it has no
    /// area.
    fn new(window: &[[f32; 4]], tri: [usize; 3], width: u32, height: u32) -> Option<Setup> {
        let [a, b, c] = tri.map(|i| window[i]);
        let area = edge(a, b, c);
        if area == 0.0 || !area.is_finite() {
            return None;
        }
        let low = |k: usize| a[k].min(b[k]).min(c[k]).floor().max(0.0) as u32;
        let high =
            |k: usize, size: u32| (a[k].max(b[k]).max(c[k]).ceil().max(0.0) as u32).min(size);
        // The gradient of the barycentric of the vertex opposite edge (p, q) points inside.
        let owns = |p: [f32; 4], q: [f32; 4]| {
            let (nx, ny) = (-(q[1] - p[1]) / area, (q[0] - p[0]) / area);
            nx > 0.0 || (nx == 0.0 && ny < 0.0)
        };
        Some(Setup {
            vertices: [a, b, c],
            area,
            owns_edge: [owns(b, c), owns(c, a), owns(a, b)],
            x: low(0)..high(0, width),
            y: low(1)..high(1, height),
        })
    }

    /// The window-space barycentrics of the centre of pixel `(x, y)`.
    fn barycentrics(&self, x: u32, y: u32) -> [f32; 3] {
        let [a, b, c] = self.vertices;
        let p = [x as f32 + 0.5, y as f32 + 0.5, 0.0, 0.0];
        [
            shared_edge(b, c, p) / self.area,
            shared_edge(c, a, p) / self.area,
            shared_edge(a, b, p) / self.area,
        ]
    }

    /// Whether the triangle covers pixel `(x, y)`.
    fn covers(&self, x: u32, y: u32) -> bool {
        self.x.contains(&x)
            && self.y.contains(&y)
            && self
                .barycentrics(x, y)
                .iter()
                .zip(self.owns_edge)
                .all(|(&l, owns)| l > 0.0 || (l == 0.0 && owns))
    }
}

/// Rasterizes `triangles` of the vertices at `window` (from [`window_positions`]) on a
/// `width`×`height` framebuffer: for each triangle, the grid of the `wanted` pixels (row-major
/// over the framebuffer) it covers, `None` when it covers none of them.
pub(crate) fn rasterize(
    window: &[[f32; 4]],
    triangles: &[[usize; 3]],
    width: u32,
    height: u32,
    wanted: &[bool],
) -> Vec<Option<QuadGrid>> {
    let setups: Vec<Option<Setup>> = triangles
        .iter()
        .map(|&tri| Setup::new(window, tri, width, height))
        .collect();
    // The triangle covering each wanted pixel, the last drawn where several do (each
    // triangle visits its bounding box only).
    let mut owner = vec![None; (width * height) as usize];
    for (t, setup) in setups.iter().enumerate() {
        let Some(setup) = setup else { continue };
        for y in setup.y.clone() {
            for x in setup.x.clone() {
                let index = (y * width + x) as usize;
                if wanted[index] && setup.covers(x, y) {
                    owner[index] = Some(t);
                }
            }
        }
    }
    let mut extent: Vec<Option<[u32; 4]>> = vec![None; triangles.len()];
    for (index, t) in owner.iter().enumerate() {
        if let Some(t) = *t {
            let (x, y) = (index as u32 % width, index as u32 / width);
            let [x0, y0, x1, y1] = extent[t].get_or_insert([x, y, x, y]);
            (*x0, *y0, *x1, *y1) = ((*x0).min(x), (*y0).min(y), (*x1).max(x), (*y1).max(y));
        }
    }
    setups
        .iter()
        .zip(extent)
        .enumerate()
        .map(|(t, (setup, extent))| {
            let (setup, [x0, y0, x1, y1]) = (setup.as_ref()?, extent?);
            let (min_x, min_y) = (x0 & !1, y0 & !1);
            let mut grid = QuadGrid {
                width: (x1 + 1 - min_x).next_multiple_of(2),
                height: (y1 + 1 - min_y).next_multiple_of(2),
                origin: [min_x, min_y],
                ..QuadGrid::default()
            };
            let [a, b, c] = setup.vertices;
            let pixels = (grid.width * grid.height) as usize;
            grid.covered.reserve_exact(pixels);
            grid.linear.reserve_exact(pixels);
            grid.perspective.reserve_exact(pixels);
            grid.depth_w.reserve_exact(pixels);
            for gy in 0..grid.height {
                for gx in 0..grid.width {
                    let (x, y) = (min_x + gx, min_y + gy);
                    let l = setup.barycentrics(x, y);
                    let inv_w = l[0] * a[3] + l[1] * b[3] + l[2] * c[3];
                    let covered =
                        x < width && y < height && owner[(y * width + x) as usize] == Some(t);
                    grid.covered.push(covered);
                    grid.linear.push([l[1], l[2]]);
                    grid.perspective
                        .push([l[1] * b[3] / inv_w, l[2] * c[3] / inv_w]);
                    grid.depth_w
                        .push([l[0] * a[2] + l[1] * b[2] + l[2] * c[2], inv_w]);
                }
            }
            Some(grid)
        })
        .collect()
}

/// [`edge`] computed the same way whichever way round the edge is given, so that two
/// triangles sharing an edge get exactly opposite values (both zero on it).
fn shared_edge(a: [f32; 4], b: [f32; 4], p: [f32; 4]) -> f32 {
    if (a[0], a[1]) <= (b[0], b[1]) {
        edge(a, b, p)
    } else {
        -edge(b, a, p)
    }
}

/// Twice the signed area of (a, b, p).
fn edge(a: [f32; 4], b: [f32; 4], p: [f32; 4]) -> f32 {
    (b[0] - a[0]) * (p[1] - a[1]) - (b[1] - a[1]) * (p[0] - a[0])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The window positions of a rectangle over the whole `width`×`height` framebuffer.
    fn full_screen(width: u32, height: u32) -> Vec<[f32; 4]> {
        let corners = [[-1.0, -1.0], [1.0, -1.0], [-1.0, 1.0], [1.0, 1.0]];
        let positions: Vec<[f32; 4]> = corners.iter().map(|&[x, y]| [x, y, 0.0, 1.0]).collect();
        window_positions(&positions, width, height)
    }

    #[test]
    fn every_wanted_pixel_is_covered_by_one_triangle() {
        let (width, height) = (6, 4);
        let window = full_screen(width, height);
        let grids = rasterize(&window, &STRIP, width, height, &[true; 24]);
        let mut covered = [0; 24];
        for grid in grids.iter().flatten() {
            assert_eq!(grid.origin.map(|o| o % 2), [0, 0]);
            assert_eq!((grid.width % 2, grid.height % 2), (0, 0));
            for (i, _) in grid.covered.iter().enumerate().filter(|(_, c)| **c) {
                let x = grid.origin[0] + i as u32 % grid.width;
                let y = grid.origin[1] + i as u32 / grid.width;
                covered[(y * width + x) as usize] += 1;
            }
        }
        assert_eq!(covered, [1; 24]);
    }

    /// How many of the triangles' grids cover each pixel of a `width`×`height` framebuffer.
    fn coverage(
        window: &[[f32; 4]],
        triangles: &[[usize; 3]],
        width: u32,
        height: u32,
    ) -> Vec<Vec<usize>> {
        let wanted = vec![true; (width * height) as usize];
        let mut owners = vec![Vec::new(); (width * height) as usize];
        for (t, grid) in rasterize(window, triangles, width, height, &wanted)
            .iter()
            .enumerate()
        {
            let Some(grid) = grid else { continue };
            for (i, _) in grid.covered.iter().enumerate().filter(|(_, c)| **c) {
                let x = grid.origin[0] + i as u32 % grid.width;
                let y = grid.origin[1] + i as u32 / grid.width;
                owners[(y * width + x) as usize].push(t);
            }
        }
        owners
    }

    #[test]
    fn centres_on_a_shared_edge_belong_to_one_triangle() {
        // A 250×250 window and an off-centre 4×4 square: its diagonal runs through pixel
        // centres, where the two triangles' edge functions round differently unless computed
        // the same way.
        let to_ndc = |v: f32| 2.0 * v / 250.0 - 1.0;
        let (x0, x1, y0, y1) = (to_ndc(16.0), to_ndc(20.0), to_ndc(0.0), to_ndc(4.0));
        let positions: Vec<[f32; 4]> = [[x0, y0], [x1, y0], [x0, y1], [x1, y1]]
            .iter()
            .map(|&[x, y]| [x, y, 0.0, 1.0])
            .collect();
        let window = window_positions(&positions, 250, 250);
        let owners = coverage(&window, &STRIP, 250, 250);
        for y in 0..250 {
            for x in 0..250 {
                let inside = (16..20).contains(&x) && y < 4;
                let n = owners[(y * 250 + x) as usize].len();
                assert_eq!(n, inside as usize, "pixel ({x}, {y})");
            }
        }
    }

    #[test]
    fn the_last_of_overlapping_triangles_owns_their_pixels() {
        let mut window = full_screen(4, 4);
        window.extend(full_screen(4, 4));
        let owners = coverage(&window, &[[0, 1, 2], [4, 5, 6]], 4, 4);
        // Pixel (0, 0) is inside both copies of the same triangle.
        assert_eq!(owners[0], [1]);
    }

    #[test]
    fn a_grid_spans_the_wanted_pixels_in_whole_quads() {
        let (width, height) = (6, 4);
        let window = full_screen(width, height);
        // Pixel (4, 0), below the diagonal: the first triangle's, in the quad at (4, 0).
        let mut wanted = [false; 24];
        wanted[4] = true;
        let grids = rasterize(&window, &STRIP, width, height, &wanted);
        let grid = grids[0].as_ref().unwrap();
        assert!(grids[1].is_none());
        assert_eq!((grid.width, grid.height, grid.origin), (2, 2, [4, 0]));
        assert_eq!(grid.covered, [true, false, false, false]);
        // The helpers, (5, 0) outside the triangle included, extrapolate its barycentrics: b1
        // grows with x.
        assert!(grid.linear[1][0] > grid.linear[0][0]);
    }
}
