//! The reference interpreter behind the draw contract's stage traits, so that the executor runs
//! a draw the same way whether the interpreter or an emulator shades it.
//!
//! A vertex kernel runs its vertices as invocations of the shader, a compute kernel its
//! workgroups. A fragment kernel shades a triangle's grid of pixels as one launch: each input
//! interpolated at every pixel from its values at the three vertices and the pixel's
//! barycentrics (in `f64`, rounded once; a flat or non-float input takes the provoking
//! vertex's value), helpers where the triangle does not cover the pixel, and colour output 0
//! of every covered pixel that was not discarded (missing components as `(0, 0, 0, 1)` fill
//! them). Out-of-bounds array accesses read zero and drop writes ([`Launch::robust_access`]),
//! as GL drivers behave, unless the stages are [`Interpreter::STRICT`].

use shrew_engine::draw::{
    ComputeDispatch, ComputeKernel, DrawStages, FragmentKernel, QuadGrid, TriangleFragments,
    VertexKernel,
};
use shrew_engine::interp::{Launch, Resources, run};
use shrew_engine::ir::{Interp, Mode, Shader, Type};
use shrew_engine::ops::BaseType;
use std::collections::BTreeMap;

/// The interpreter's stages: every shader "compiles".
#[derive(Clone, Copy, Debug)]
pub struct Interpreter {
    robust_access: bool,
}

impl Interpreter {
    /// Out-of-bounds accesses read zero and drop writes, as GL drivers do (piglit runs).
    pub const ROBUST: Interpreter = Interpreter {
        robust_access: true,
    };
    /// Out-of-bounds accesses are errors: a reference whose result is undefined for its inputs
    /// cannot judge another run (differential checks).
    pub const STRICT: Interpreter = Interpreter {
        robust_access: false,
    };
}

impl DrawStages for Interpreter {
    fn compile_fragment(&self, shader: &Shader) -> Result<Box<dyn FragmentKernel>, String> {
        Ok(Box::new(Fragments::new(shader, self.robust_access)))
    }

    fn compile_vertex(&self, shader: &Shader) -> Result<Option<Box<dyn VertexKernel>>, String> {
        Ok(Some(Box::new(Vertices {
            shader: shader.clone(),
            robust_access: self.robust_access,
        })))
    }

    fn compile_compute(&self, shader: &Shader) -> Result<Box<dyn ComputeKernel>, String> {
        Ok(Box::new(Workgroups {
            shader: shader.clone(),
            robust_access: self.robust_access,
        }))
    }
}

/// A compute shader the interpreter runs.
struct Workgroups {
    shader: Shader,
    robust_access: bool,
}

impl ComputeKernel for Workgroups {
    fn dispatch(&self, dispatch: &mut ComputeDispatch) -> Result<(), String> {
        let launch = Launch {
            workgroups: dispatch.workgroups,
            robust_access: self.robust_access,
            ..Launch::default()
        };
        run(&self.shader, &launch, &mut dispatch.resources)
            .map(drop)
            .map_err(|e| e.to_string())
    }
}

/// A vertex shader the interpreter runs.
pub(crate) struct Vertices {
    pub(crate) shader: Shader,
    pub(crate) robust_access: bool,
}

impl VertexKernel for Vertices {
    fn run(
        &self,
        count: usize,
        inputs: &BTreeMap<String, Vec<Vec<u64>>>,
        resources: &mut Resources,
    ) -> Result<Vec<BTreeMap<String, Vec<u64>>>, String> {
        let mut launch = Launch::invocations(count);
        launch.robust_access = self.robust_access;
        launch.inputs = inputs.clone();
        let result = run(&self.shader, &launch, resources).map_err(|e| e.to_string())?;
        Ok(result
            .invocations()
            .map(|inv| {
                inv.outputs()
                    .map(|(name, values)| (name.to_string(), values.to_vec()))
                    .collect()
            })
            .collect())
    }
}

/// A fragment shader the interpreter runs, with what it needs of its variables.
struct Fragments {
    shader: Shader,
    /// Each input (built-ins left out): its name, interpolation and whether all its components
    /// are 32-bit floats (the others are flat).
    inputs: Vec<(String, Interp, bool)>,
    /// The colour output 0, if the shader has one.
    color: Option<String>,
    robust_access: bool,
}

impl Fragments {
    fn new(shader: &Shader, robust_access: bool) -> Fragments {
        let inputs = shader
            .variables
            .iter()
            .filter(|v| v.mode == Mode::ShaderIn && v.builtin.is_none())
            .map(|v| (v.name.clone(), v.interp, is_f32(shader, &v.ty)))
            .collect();
        Fragments {
            inputs,
            color: color_output(shader),
            shader: shader.clone(),
            robust_access,
        }
    }
}

impl FragmentKernel for Fragments {
    fn shade(
        &self,
        fragments: &TriangleFragments,
        resources: &mut Resources,
    ) -> Result<Vec<Option<[u32; 4]>>, String> {
        let grid = &fragments.pixels;
        let n = (grid.width * grid.height) as usize;
        let mut launch = Launch::invocations(n);
        launch.robust_access = self.robust_access;
        launch.width = grid.width;
        launch.origin = grid.origin;
        launch.covered = grid.covered.clone();
        launch.frag_coord_zw = grid.depth_w.clone();
        launch.system.primitive_id = fragments.primitive.id;
        launch.system.front_face = !fragments.primitive.back_facing;
        for (name, interp, is_float) in &self.inputs {
            if let Some(at) = fragments.varyings.get(name) {
                let values = (0..n)
                    .map(|i| interpolate(at, grid, i, *interp, *is_float))
                    .collect();
                launch.inputs.insert(name.clone(), values);
            }
        }
        let result = run(&self.shader, &launch, resources).map_err(|e| e.to_string())?;
        // A shader without a colour output leaves the framebuffer undefined.
        let Some(color) = &self.color else {
            return Ok(vec![None; n]);
        };
        Ok(result
            .invocations()
            .enumerate()
            .map(|(i, inv)| {
                if !grid.covered[i] {
                    return None;
                }
                let out = inv.output(color)?;
                let mut rgba = [0, 0, 0, 1f32.to_bits()];
                for (c, &bits) in rgba.iter_mut().zip(out) {
                    *c = bits as u32;
                }
                Some(rgba)
            })
            .collect())
    }
}

/// An input's components at pixel `i` of the grid, from their values at the three vertices.
fn interpolate(
    at: &[Vec<u64>; 3],
    grid: &QuadGrid,
    i: usize,
    interp: Interp,
    is_float: bool,
) -> Vec<u64> {
    if interp == Interp::Flat || !is_float {
        return at[2].clone();
    }
    let [b1, b2] = if interp == Interp::NoPerspective {
        grid.linear[i]
    } else {
        grid.perspective[i]
    };
    let (b1, b2) = (b1 as f64, b2 as f64);
    (0..at[0].len())
        .map(|k| {
            let v = |vertex: usize| {
                at[vertex]
                    .get(k)
                    .map_or(0.0, |&bits| f32::from_bits(bits as u32) as f64)
            };
            let x = v(0) + b1 * (v(1) - v(0)) + b2 * (v(2) - v(0));
            (x as f32).to_bits() as u64
        })
        .collect()
}

/// The name of the fragment shader's colour output 0.
fn color_output(shader: &Shader) -> Option<String> {
    let outputs = || {
        shader
            .variables
            .iter()
            .filter(|v| v.mode == Mode::ShaderOut && v.builtin.is_none())
    };
    outputs()
        .find(|v| v.location == Some(0))
        .or_else(|| outputs().next())
        .map(|v| v.name.clone())
}

/// Whether every component of a type is a 32-bit float (so it can be interpolated).
fn is_f32(shader: &Shader, ty: &Type) -> bool {
    shrew_engine::interp::memory::flatten_type(shader, ty)
        .iter()
        .all(|s| s.base == BaseType::Float && s.bits == 32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_interpolate_from_the_vertices() {
        let grid = QuadGrid {
            perspective: vec![[0.25, 0.5]],
            linear: vec![[0.5, 0.25]],
            ..QuadGrid::default()
        };
        let bits = |xs: &[f32]| xs.iter().map(|x| x.to_bits() as u64).collect::<Vec<_>>();
        let at = [bits(&[1.0, 0.3]), bits(&[3.0, 0.3]), bits(&[5.0, 0.3])];
        // 1 + 0.25·2 + 0.5·4, and a constant stays exact.
        assert_eq!(
            interpolate(&at, &grid, 0, Interp::Smooth, true),
            bits(&[3.5, 0.3])
        );
        assert_eq!(
            interpolate(&at, &grid, 0, Interp::NoPerspective, true),
            bits(&[3.0, 0.3])
        );
        // Flat inputs, and inputs with integer components, take the provoking vertex's value.
        assert_eq!(interpolate(&at, &grid, 0, Interp::Flat, true), at[2]);
        assert_eq!(interpolate(&at, &grid, 0, Interp::Smooth, false), at[2]);
    }
}
