//! The Gen backend as the fragment stage of `shrew piglit --target gen*`: the optimized fragment
//! shader is lowered (`shrew_rules::BACKEND_PIPELINE`) and compiled once per test, and each triangle runs on the
//! emulator with its varyings as attribute planes over the pixels' barycentrics.

use crate::CliError;
use crate::pipeline::{Pipeline, Target};
use shrew_engine::interp::Resources;
use shrew_engine::interp::memory::{Layout, LayoutRule, layout_variables};
use shrew_engine::ir::{Interp, Mode, Shader};
use shrew_frontend::piglit::run::{FragmentBackend, FragmentKernel, TriangleFragments};
use shrew_gen::compile::{Kernel, compile_fragment};
use shrew_gen::dispatch::{FragmentDraw, run_fragment};
use shrew_gen::isa::Gen;
use shrew_gen::lower::interp_of;
use std::collections::BTreeMap;

/// Bytes of an input slot.
const SLOT_BYTES: u32 = 16;

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
            lower: Pipeline::parse(shrew_rules::BACKEND_PIPELINE, target)?,
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
        let placement = layout_variables(&lowered).map_err(|e| e.to_string())?;
        let layout = Layout::new(&lowered, LayoutRule::Slots);
        let mut inputs = Vec::new();
        for (var, place) in lowered.variables.iter().zip(&placement) {
            if var.mode != Mode::ShaderIn || var.builtin.is_some() {
                continue;
            }
            let mut leaves = Vec::new();
            layout
                .leaves(&var.ty, place.offset, 0, &mut leaves)
                .map_err(|e| format!("input @{}: {e}", var.name))?;
            let mut components = Vec::new();
            for leaf in leaves {
                if leaf.bytes != 4 {
                    return Err(format!("input @{}: not 32-bit components", var.name));
                }
                let slot = leaf.offset / SLOT_BYTES;
                let flat = interp_of(&lowered, slot) == Interp::Flat;
                components.push(InputComponent {
                    slot,
                    comp: (leaf.offset % SLOT_BYTES / 4) as usize,
                    flat,
                });
            }
            inputs.push((var.name.clone(), components));
        }
        Ok(Box::new(GenKernel { kernel, inputs }))
    }
}

impl FragmentKernel for GenKernel {
    fn shade(
        &self,
        fragments: &TriangleFragments,
        resources: &Resources,
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
        let draw = FragmentDraw {
            pixels: fragments.pixels.clone(),
            planes,
            uniform_data: resources.uniform_data.clone(),
            ubos: resources.ubos.clone(),
            textures: resources.textures.clone(),
            samplers: resources.samplers.clone(),
        };
        let outputs = run_fragment(&self.kernel, &draw).map_err(|e| format!("emulator: {e}"))?;
        Ok(outputs.iter().map(|pixel| pixel.get(&0).copied()).collect())
    }
}
