//! The Gen backend as the fragment and vertex stages of `shrew piglit --target gen*`: the
//! optimized shaders are lowered (the target's backend pipeline) and compiled once per test;
//! each triangle runs on the emulator with its varyings as attribute planes over the pixels'
//! barycentrics, and on Gen8 and later the vertices run on it too, their outputs read back from
//! their URB entries.

use crate::CliError;
use crate::pipeline::{Pipeline, Target};
use crate::varyings::{Places, components};
use shrew_engine::interp::Resources;
use shrew_engine::ir::{Builtin, Interp, Mode, Shader};
use shrew_engine::passes::lower_io::interp_of;
use shrew_frontend::piglit::run::{
    FragmentBackend, FragmentKernel, TriangleFragments, VertexKernel,
};
use shrew_gen::compile::{Kernel, compile_fragment, compile_vertex};
use shrew_gen::dispatch::{FragmentDraw, VertexDraw, run_fragment, run_vertex};
use shrew_gen::isa::Gen;
use shrew_gen::lower::VueSlot;
use std::collections::BTreeMap;

pub struct GenFragments {
    hw: Gen,
    simd: u8,
    lower: Pipeline,
}

impl GenFragments {
    pub fn new(hw: Gen, simd: u8, target: Target) -> Result<GenFragments, CliError> {
        Ok(GenFragments {
            hw,
            simd,
            lower: Pipeline::parse(&target.backend_pipeline(), target)?,
        })
    }
}

/// A compiled kernel and where each input's components are in the attribute slots.
struct GenKernel {
    kernel: Kernel,
    /// By input variable name: where each of its components is.
    inputs: Vec<(String, Vec<InputComponent>)>,
}

/// Where an input component is: its slot, its component in the slot, whether it is flat.
#[derive(Copy, Clone)]
struct InputComponent {
    slot: u32,
    comp: usize,
    flat: bool,
}

impl FragmentBackend for GenFragments {
    fn compile(&self, shader: &Shader) -> Result<Box<dyn FragmentKernel>, String> {
        let mut lowered = shader.clone();
        self.lower.run(&mut lowered)?;
        let kernel = compile_fragment(&lowered, self.hw, self.simd).map_err(|e| e.to_string())?;
        let inputs = components(&lowered, Mode::ShaderIn)?
            .into_iter()
            .map(|(name, slots)| {
                let components = slots
                    .into_iter()
                    .map(|(slot, comp)| InputComponent {
                        slot,
                        comp,
                        flat: interp_of(&lowered, slot) == Interp::Flat,
                    })
                    .collect();
                (name, components)
            })
            .collect();
        Ok(Box::new(GenKernel { kernel, inputs }))
    }

    fn compile_vertex(&self, shader: &Shader) -> Result<Option<Box<dyn VertexKernel>>, String> {
        if self.hw < Gen::Gen8 {
            return Ok(None);
        }
        let mut lowered = shader.clone();
        self.lower.run(&mut lowered)?;
        let kernel = compile_vertex(&lowered, self.hw).map_err(|e| e.to_string())?;
        let inputs = components(&lowered, Mode::ShaderIn)?;
        // Each output component's place in the URB entry: its VUE slot and component.
        let vue_index = |slot: &VueSlot| kernel.payload.vue.iter().position(|s| s == slot);
        let slots = components(&lowered, Mode::ShaderOut)?;
        let mut outputs = Vec::new();
        for var in lowered
            .variables
            .iter()
            .filter(|v| v.mode == Mode::ShaderOut)
        {
            let places = match var.builtin {
                Some(Builtin::Position) => {
                    (0..4).map(|c| (vue_index(&VueSlot::Position), c)).collect()
                }
                Some(Builtin::PointSize) => vec![(vue_index(&VueSlot::Header), 3)],
                Some(_) => continue,
                None => slots
                    .iter()
                    .find(|(name, _)| *name == var.name)
                    .map(|(_, slots)| {
                        slots
                            .iter()
                            .map(|&(slot, comp)| (vue_index(&VueSlot::Output(slot)), comp))
                            .collect()
                    })
                    .unwrap_or_default(),
            };
            outputs.push((var.name.clone(), places));
        }
        Ok(Some(Box::new(GenVertexKernel {
            kernel,
            inputs,
            outputs,
        })))
    }
}

/// A compiled vertex shader, where its inputs are in the attributes and its outputs in the URB
/// entry.
struct GenVertexKernel {
    kernel: Kernel,
    /// By input variable name: each component's attribute slot and component.
    inputs: Places<u32>,
    /// By output variable name: each component's VUE slot (if the entry has it) and component.
    outputs: Places<Option<usize>>,
}

impl VertexKernel for GenVertexKernel {
    fn run(
        &self,
        count: usize,
        inputs: &BTreeMap<String, Vec<Vec<u64>>>,
        resources: &mut Resources,
    ) -> Result<Vec<BTreeMap<String, Vec<u64>>>, String> {
        let mut draw = VertexDraw {
            vertices: vec![BTreeMap::new(); count],
            uniform_data: resources.uniform_data.clone(),
            ubos: resources.ubos.clone(),
            ssbos: std::mem::take(&mut resources.ssbos),
            textures: resources.textures.clone(),
            samplers: resources.samplers.clone(),
        };
        for (name, places) in &self.inputs {
            let Some(values) = inputs.get(name) else {
                continue;
            };
            for (v, attributes) in draw.vertices.iter_mut().enumerate() {
                // One value for all vertices, or one each.
                let value = &values[if values.len() == 1 { 0 } else { v }];
                for (&(slot, comp), &bits) in places.iter().zip(value) {
                    attributes.entry(slot).or_insert([0; 4])[comp] = bits as u32;
                }
            }
        }
        let entries = run_vertex(&self.kernel, &mut draw);
        resources.ssbos = draw.ssbos;
        let entries = entries.map_err(|e| format!("emulator: {e}"))?;
        Ok(entries
            .iter()
            .map(|entry| {
                self.outputs
                    .iter()
                    .map(|(name, places)| {
                        let values = places
                            .iter()
                            .map(|&(slot, comp)| slot.map_or(0, |s| entry[s][comp] as u64))
                            .collect();
                        (name.clone(), values)
                    })
                    .collect()
            })
            .collect())
    }
}

impl FragmentKernel for GenKernel {
    fn shade(
        &self,
        fragments: &TriangleFragments,
        resources: &mut Resources,
    ) -> Result<Vec<Option<[u32; 4]>>, String> {
        // A plane gives v0 + b1 (v1 - v0) + b2 (v2 - v0); a flat one the provoking vertex's value.
        let mut planes: BTreeMap<u32, [[f32; 4]; 4]> = BTreeMap::new();
        for (name, components) in &self.inputs {
            let Some(values) = fragments.varyings.get(name) else {
                continue;
            };
            for (k, &InputComponent { slot, comp, flat }) in components.iter().enumerate() {
                let at = |vertex: usize| {
                    values[vertex]
                        .get(k)
                        .map_or(0.0, |&bits| f32::from_bits(bits as u32))
                };
                planes.entry(slot).or_default()[comp] = if flat {
                    [0.0, 0.0, 0.0, at(2)]
                } else {
                    [at(1) - at(0), at(2) - at(0), 0.0, at(0)]
                };
            }
        }
        let mut draw = FragmentDraw {
            pixels: fragments.pixels.clone(),
            planes,
            uniform_data: resources.uniform_data.clone(),
            ubos: resources.ubos.clone(),
            ssbos: std::mem::take(&mut resources.ssbos),
            textures: resources.textures.clone(),
            samplers: resources.samplers.clone(),
        };
        let outputs = run_fragment(&self.kernel, &mut draw);
        resources.ssbos = draw.ssbos;
        let outputs = outputs.map_err(|e| format!("emulator: {e}"))?;
        Ok(outputs.iter().map(|pixel| pixel.get(&0).copied()).collect())
    }
}
