//! Rasterization: a draw's vertices to window positions, and its triangles to the grids of
//! pixels a fragment stage shades, one triangle at a time as hardware does.
//!
//! A triangle covers the pixels whose centres lie inside it (all three barycentrics at least
//! zero, within its bounding box on the framebuffer); a pixel on an edge two triangles share
//! belongs to the first. Each triangle's grid spans, in whole 2×2 quads, the pixels it covers
//! that the draw needs (those some probe looks at): those are covered, the grid's other pixels
//! run as helpers with the triangle's barycentrics extrapolated to them, so that derivatives
//! are the triangle's own. Why here: the executor owns the framebuffer and the probes, and the
//! stages see only the draw contract's [`QuadGrid`].

use shrew_engine::draw::QuadGrid;

/// The triangles of a rectangle drawn as a strip of its four corners, the provoking (last)
/// vertex third.
pub(crate) const STRIP: [[usize; 3]; 2] = [[0, 1, 2], [2, 1, 3]];

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

/// A triangle ready to rasterize: its vertices' window positions, twice its signed area and
/// the columns and rows of its bounding box on the framebuffer.
struct Setup {
    vertices: [[f32; 4]; 3],
    area: f32,
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
        Some(Setup {
            vertices: [a, b, c],
            area,
            x: low(0)..high(0, width),
            y: low(1)..high(1, height),
        })
    }

    /// The window-space barycentrics of the centre of pixel `(x, y)`.
    fn barycentrics(&self, x: u32, y: u32) -> [f32; 3] {
        let [a, b, c] = self.vertices;
        let p = [x as f32 + 0.5, y as f32 + 0.5, 0.0, 0.0];
        [
            edge(b, c, p) / self.area,
            edge(c, a, p) / self.area,
            edge(a, b, p) / self.area,
        ]
    }

    /// Whether the triangle covers pixel `(x, y)`.
    fn covers(&self, x: u32, y: u32) -> bool {
        self.x.contains(&x)
            && self.y.contains(&y)
            && !self.barycentrics(x, y).iter().any(|&l| l < 0.0)
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
    // The triangle covering each wanted pixel, the first where two do.
    let mut owner = vec![None; (width * height) as usize];
    let mut extent: Vec<Option<[u32; 4]>> = vec![None; triangles.len()];
    for y in 0..height {
        for x in 0..width {
            let index = (y * width + x) as usize;
            if !wanted[index] {
                continue;
            }
            let covering = setups
                .iter()
                .position(|s| s.as_ref().is_some_and(|s| s.covers(x, y)));
            if let Some(t) = covering {
                owner[index] = Some(t);
                let [x0, y0, x1, y1] = extent[t].get_or_insert([x, y, x, y]);
                (*x0, *y0, *x1, *y1) = ((*x0).min(x), (*y0).min(y), (*x1).max(x), (*y1).max(y));
            }
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
