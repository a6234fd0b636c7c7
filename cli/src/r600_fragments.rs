//! The R600 backend as the fragment stage of `shrew piglit --target r600|r700|evergreen|cayman`:
//! the optimized fragment shader is lowered (the target's backend pipeline) and compiled once
//! per test; each triangle runs on the emulator with each input component as `[p0, p10, p20]`
//! over the pixels' barycentrics (flat ones the provoking vertex's value). The interpreter
//! runs the vertices.

use crate::CliError;
use crate::pipeline::{Pipeline, Target};
use crate::varyings::components;
use shrew_engine::interp::Resources;
use shrew_engine::ir::{Interp, Mode, Shader};
use shrew_frontend::piglit::run::{
    FragmentBackend, FragmentKernel, TriangleFragments, VertexKernel,
};
use shrew_r600::compile::{Kernel, compile_fragment};
use shrew_r600::dispatch::{FragmentDraw, run_fragment};
use shrew_r600::isa::Chip;
use std::sync::Arc;

pub struct R600Fragments {
    chip: Chip,
    lower: Pipeline,
}

impl R600Fragments {
    pub fn new(chip: Chip, target: Target) -> Result<R600Fragments, CliError> {
        Ok(R600Fragments {
            chip,
            lower: Pipeline::parse(&target.backend_pipeline(), target)?,
        })
    }
}

/// A compiled shader and where each input variable's components are: slot and component.
struct R600Kernel {
    kernel: Kernel,
    inputs: Vec<(String, Vec<(u32, usize)>)>,
}

impl FragmentBackend for R600Fragments {
    fn compile(&self, shader: &Shader) -> Result<Box<dyn FragmentKernel>, String> {
        let mut lowered = shader.clone();
        self.lower.run(&mut lowered)?;
        let kernel = compile_fragment(&lowered, self.chip).map_err(|e| e.to_string())?;
        let inputs = components(&lowered, Mode::ShaderIn)?;
        Ok(Box::new(R600Kernel { kernel, inputs }))
    }

    fn compile_vertex(&self, _: &Shader) -> Result<Option<Box<dyn VertexKernel>>, String> {
        Ok(None)
    }
}

impl FragmentKernel for R600Kernel {
    fn shade(
        &self,
        fragments: &TriangleFragments,
        resources: &mut Resources,
    ) -> Result<Vec<Option<[u32; 4]>>, String> {
        let mut draw = FragmentDraw {
            pixels: fragments.pixels.clone(),
            resources: Arc::new(resources.clone()),
            ..FragmentDraw::default()
        };
        for (name, places) in &self.inputs {
            let Some(values) = fragments.varyings.get(name) else {
                continue;
            };
            for (k, &(slot, comp)) in places.iter().enumerate() {
                let at = |vertex: usize| {
                    values[vertex]
                        .get(k)
                        .map_or(0.0, |&bits| f32::from_bits(bits as u32))
                };
                let flat = self.kernel.interface.interp.get(&slot) == Some(&Interp::Flat);
                draw.inputs.entry(slot).or_default()[comp] = if flat {
                    [at(2), 0.0, 0.0]
                } else {
                    [at(0), at(1) - at(0), at(2) - at(0)]
                };
            }
        }
        let outputs = run_fragment(&self.kernel, &draw).map_err(|e| format!("emulator: {e}"))?;
        Ok(outputs.iter().map(|pixel| pixel.get(&0).copied()).collect())
    }
}
