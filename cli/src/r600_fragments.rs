//! The R600 backend as the vertex and fragment stages of `shrew piglit --target
//! r600|r700|evergreen|cayman`: the optimized shaders are lowered (the target's backend
//! pipeline) and compiled once per test; the vertices run on the emulator with their
//! attributes where the fetch shader would load them, their outputs read from the exports;
//! each triangle runs on it with each input component as `[p0, p10, p20]` over the pixels'
//! barycentrics (flat ones the provoking vertex's value).

use crate::CliError;
use crate::pipeline::Target;
use crate::r600_lowering::R600Lowering;
use crate::varyings::{Places, components};
use shrew_engine::interp::Resources;
use shrew_engine::ir::{Builtin, Interp, Mode, Shader};
use shrew_frontend::piglit::run::{
    FragmentBackend, FragmentKernel, TriangleFragments, VertexKernel,
};
use shrew_r600::compile::Kernel;
use shrew_r600::dispatch::{FragmentDraw, VertexDraw, run_fragment, run_vertex};
use shrew_r600::isa::Chip;
use std::collections::BTreeMap;
use std::sync::Arc;

pub struct R600Fragments {
    lowering: R600Lowering,
}

impl R600Fragments {
    pub fn new(chip: Chip, target: Target) -> Result<R600Fragments, CliError> {
        Ok(R600Fragments {
            lowering: R600Lowering::new(chip, target)?,
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
        let (lowered, kernel) = self.lowering.compile(shader)?;
        let inputs = components(&lowered, Mode::ShaderIn)?;
        Ok(Box::new(R600Kernel { kernel, inputs }))
    }

    fn compile_vertex(&self, shader: &Shader) -> Result<Option<Box<dyn VertexKernel>>, String> {
        let (lowered, kernel) = self.lowering.compile(shader)?;
        let inputs = components(&lowered, Mode::ShaderIn)?;
        let mut outputs: Vec<(String, VertexPlace)> = components(&lowered, Mode::ShaderOut)?
            .into_iter()
            .map(|(name, places)| (name, VertexPlace::Slots(places)))
            .collect();
        for var in lowered
            .variables
            .iter()
            .filter(|v| v.mode == Mode::ShaderOut)
        {
            match var.builtin {
                Some(Builtin::Position) => outputs.push((var.name.clone(), VertexPlace::Position)),
                Some(Builtin::PointSize) => {
                    outputs.push((var.name.clone(), VertexPlace::PointSize))
                }
                _ => {}
            }
        }
        Ok(Some(Box::new(R600VertexKernel {
            kernel,
            inputs,
            outputs,
        })))
    }
}

/// A compiled vertex shader, where its attributes go and where its outputs come from.
struct R600VertexKernel {
    kernel: Kernel,
    /// By input variable name: each component's attribute location and component.
    inputs: Places<u32>,
    /// By output variable name: where its components are exported.
    outputs: Vec<(String, VertexPlace)>,
}

/// Where a vertex output is exported.
enum VertexPlace {
    Position,
    PointSize,
    /// Each component's output slot and component in it.
    Slots(Vec<(u32, usize)>),
}

impl VertexKernel for R600VertexKernel {
    fn run(
        &self,
        count: usize,
        inputs: &BTreeMap<String, Vec<Vec<u64>>>,
        resources: &mut Resources,
    ) -> Result<Vec<BTreeMap<String, Vec<u64>>>, String> {
        let mut draw = VertexDraw {
            count,
            resources: Arc::new(resources.clone()),
            ..VertexDraw::default()
        };
        for (name, places) in &self.inputs {
            let Some(values) = inputs.get(name) else {
                continue;
            };
            // One value for all vertices, or one each.
            for (v, value) in values.iter().enumerate() {
                for (&(slot, comp), &bits) in places.iter().zip(value) {
                    let attribute = draw.attributes.entry(slot).or_default();
                    if attribute.len() <= v {
                        attribute.resize(v + 1, [0; 4]);
                    }
                    attribute[v][comp] = bits as u32;
                }
            }
        }
        let exports = run_vertex(&self.kernel, &draw).map_err(|e| format!("emulator: {e}"))?;
        Ok(exports
            .iter()
            .map(|vertex| {
                self.outputs
                    .iter()
                    .map(|(name, place)| {
                        let values = match place {
                            VertexPlace::Position => vertex.position.map(u64::from).to_vec(),
                            VertexPlace::PointSize => {
                                vec![vertex.point_size.unwrap_or_default() as u64]
                            }
                            VertexPlace::Slots(places) => places
                                .iter()
                                .map(|(slot, comp)| {
                                    vertex.slots.get(slot).map_or(0, |s| s[*comp] as u64)
                                })
                                .collect(),
                        };
                        (name.clone(), values)
                    })
                    .collect()
            })
            .collect())
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
