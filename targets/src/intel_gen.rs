//! The Intel Gen7–9 targets. A fragment or compute shader compiles at SIMD8, 16 or 32 (the
//! driver's choice of widths in [`Compiler::variants`]), a vertex shader at SIMD8 (on Gen7/7.5
//! SIMD4x2: eight channels, two vertices). In a draw, each triangle runs on the emulator with
//! its varyings in the kernel's input slots (the dispatcher makes their attribute planes), and
//! the vertices run on it too, their outputs read back from their URB entries.

use crate::varyings::{Dword, Places, components, fragment_inputs, gather, vertex_attributes};
use crate::{Backend, Compiler, Kernel, Pipeline, PipelineError, Target, VariantError};
use shrew_engine::draw::{
    ComputeDispatch, ComputeKernel, DrawStages, FragmentDraw, FragmentKernel, TriangleFragments,
    VertexDraw, VertexKernel,
};
use shrew_engine::interp::Resources;
use shrew_engine::ir::{Builtin, Mode, Shader, Stage};
use shrew_engine::passes::machine::MachinePasses;
use shrew_engine::passes::manager::{RunOptions, RunReport};
use shrew_engine::rewrite::{RuleSet, TargetOptions};
use shrew_gen::compile;
use shrew_gen::dispatch::{run_compute, run_fragment, run_vertex};
use shrew_gen::isa::Gen;
use shrew_gen::lower::VueSlot;
use std::collections::BTreeMap;

pub const GEN7: Target = target("gen7", "Intel Gen7 (Ivy Bridge)", &GenBackend(Gen::Gen7));
pub const GEN75: Target = target("gen75", "Intel Gen7.5 (Haswell)", &GenBackend(Gen::Gen75));
pub const GEN8: Target = target("gen8", "Intel Gen8 (Broadwell)", &GenBackend(Gen::Gen8));
pub const GEN9: Target = target("gen9", "Intel Gen9 (Skylake)", &GenBackend(Gen::Gen9));

const fn target(
    name: &'static str,
    description: &'static str,
    backend: &'static GenBackend,
) -> Target {
    Target {
        name,
        description,
        backend: Some(backend),
    }
}

/// A Gen generation's backend.
struct GenBackend(Gen);

impl Backend for GenBackend {
    fn options(&self) -> TargetOptions {
        shrew_gen::target_options(self.0)
    }

    fn rule_sets(&self) -> &'static [&'static RuleSet] {
        shrew_gen::rules::RULE_SETS
    }

    fn first_passes(&self) -> Option<&'static str> {
        Some(shrew_gen::rules::FIRST_PASSES)
    }

    fn passes(&self) -> Option<&'static str> {
        Some(shrew_gen::rules::BACKEND_PASSES)
    }

    fn compiles(&self, stage: Stage) -> bool {
        !widths(stage).is_empty()
    }

    fn emulates(&self, stage: Stage) -> bool {
        self.compiles(stage)
    }

    fn widths(&self, stage: Stage) -> &'static [u8] {
        widths(stage)
    }

    fn compiler(&self, target: &'static Target) -> Result<Box<dyn Compiler>, PipelineError> {
        Ok(Box::new(GenCompiler {
            hw: self.0,
            target,
            lower: Pipeline::parse(&target.backend_pipeline(), target)?,
        }))
    }

    fn decode(&self, bytes: &[u8]) -> Result<String, String> {
        let insts =
            shrew_gen::encoding::disassemble_binary(bytes, self.0).map_err(|e| e.to_string())?;
        Ok(shrew_gen::disasm::listing(&insts, &[], self.0))
    }
}

/// The widths a stage compiles at.
fn widths(stage: Stage) -> &'static [u8] {
    match stage {
        Stage::Fragment | Stage::Compute => &[8, 16, 32],
        Stage::Vertex => &[8],
        _ => &[],
    }
}

struct GenCompiler {
    hw: Gen,
    target: &'static Target,
    /// The backend pipeline.
    lower: Pipeline,
}

impl GenCompiler {
    /// Whether the backend compiles `stage`: fragment, vertex and compute shaders.
    fn compiles(&self, stage: Stage) -> Result<(), String> {
        if widths(stage).is_empty() {
            return Err(format!(
                "{} does not compile {} shaders",
                self.target.name,
                stage.name()
            ));
        }
        Ok(())
    }

    fn lowered(&self, shader: &Shader) -> Result<Shader, String> {
        let mut lowered = shader.clone();
        self.lower.run(&mut lowered)?;
        Ok(lowered)
    }
}

impl Compiler for GenCompiler {
    fn compile_observed(
        &self,
        shader: &Shader,
        width: Option<u8>,
        options: &RunOptions,
        report: &mut RunReport,
    ) -> Result<Box<dyn Kernel>, String> {
        self.compiles(shader.stage)?;
        let width = width.unwrap_or(8);
        let valid = widths(shader.stage);
        if !valid.contains(&width) {
            let valid: Vec<String> = valid.iter().map(u8::to_string).collect();
            return Err(format!(
                "{} compiles {} shaders at SIMD{}, not SIMD{width}",
                self.target.name,
                shader.stage.name(),
                valid.join(", SIMD")
            ));
        }
        let mut lowered = shader.clone();
        let lowering = self
            .lower
            .run_after(&mut lowered, options, report.transformations)?;
        report.append(lowering);
        let machine_options = options.after(report.transformations, |_| true);
        let mut passes = MachinePasses::new(&machine_options);
        let kernel = compile::compile_stage(&lowered, self.hw, width, &mut passes);
        report.append(passes.report);
        Ok(Box::new(GenKernel(kernel.map_err(|e| e.to_string())?)))
    }

    fn variants(&self, shader: &Shader) -> Vec<Result<Box<dyn Kernel>, VariantError>> {
        if self.compiles(shader.stage).is_err() {
            return Vec::new();
        }
        let lowered = match self.lowered(shader) {
            Ok(lowered) => lowered,
            Err(e) => {
                return vec![Err(VariantError {
                    width: Some(8),
                    message: format!("pipeline: {e}"),
                })];
            }
        };
        let kernels = match lowered.stage {
            Stage::Vertex => vec![(8, compile::compile_vertex(&lowered, self.hw))],
            Stage::Compute => compile::compile_compute_variants(&lowered, self.hw),
            _ => compile::compile_fragment_variants(&lowered, self.hw),
        };
        kernels
            .into_iter()
            .map(|(width, kernel)| match kernel {
                Ok(kernel) => Ok(Box::new(GenKernel(kernel)) as Box<dyn Kernel>),
                Err(e) => Err(VariantError {
                    width: Some(width),
                    message: e.to_string(),
                }),
            })
            .collect()
    }

    fn draw_stages(&self, width: Option<u8>) -> Result<Box<dyn DrawStages + '_>, String> {
        let simd = width.unwrap_or(8);
        if !widths(Stage::Fragment).contains(&simd) {
            return Err(format!(
                "{} shades fragments at SIMD8, SIMD16 or SIMD32, not SIMD{simd}",
                self.target.name
            ));
        }
        Ok(Box::new(GenDraw {
            compiler: self,
            simd,
        }))
    }
}

/// A compiled Gen kernel.
struct GenKernel(compile::Kernel);

impl Kernel for GenKernel {
    fn width(&self) -> Option<u8> {
        Some(self.0.dispatch_width)
    }

    fn statistics(&self) -> Vec<(&'static str, u64)> {
        let s = &self.0.stats;
        vec![
            ("instructions", s.instructions.into()),
            ("loops", s.loops.into()),
            ("cycles", s.cycles),
            ("spills", s.spills.into()),
            ("fills", s.fills.into()),
            ("sends", s.sends.into()),
            ("scratch_bytes", self.0.scratch_bytes.into()),
        ]
    }

    fn statistics_line(&self) -> String {
        let s = &self.0.stats;
        let simd = match self.0.payload.simd4x2 {
            true => "4x2".to_string(),
            false => self.0.dispatch_width.to_string(),
        };
        format!(
            "SIMD{simd} shader: {} instructions. {} loops. {} cycles. {}:{} spills:fills, {} sends",
            s.instructions, s.loops, s.cycles, s.spills, s.fills, s.sends
        )
    }

    fn listing(&self) -> Result<String, String> {
        Ok(shrew_gen::disasm::listing(
            &self.0.insts,
            &self.0.origins,
            self.0.hw,
        ))
    }

    fn binary(&self) -> Result<Vec<u8>, String> {
        shrew_gen::encoding::assemble(&self.0.insts, self.0.hw).map_err(|e| e.to_string())
    }
}

/// The Gen stages of a draw at one dispatch width.
struct GenDraw<'a> {
    compiler: &'a GenCompiler,
    simd: u8,
}

/// A compiled fragment kernel and where each input's components are in the attribute slots.
struct GenFragmentKernel {
    kernel: compile::Kernel,
    /// By input variable name: each component's slot and component.
    inputs: Places<u32>,
}

impl DrawStages for GenDraw<'_> {
    fn compile_compute(&self, shader: &Shader) -> Result<Box<dyn ComputeKernel>, String> {
        let lowered = self.compiler.lowered(shader)?;
        // A workgroup too large for the width asked for runs wider, as a driver would run it.
        let width = compile::compute_width(&lowered, self.simd);
        let kernel = compile::compile_compute(&lowered, self.compiler.hw, width)
            .map_err(|e| e.to_string())?;
        Ok(Box::new(GenComputeKernel(kernel)))
    }

    fn compile_fragment(&self, shader: &Shader) -> Result<Box<dyn FragmentKernel>, String> {
        let lowered = self.compiler.lowered(shader)?;
        let kernel = compile::compile_fragment(&lowered, self.compiler.hw, self.simd)
            .map_err(|e| e.to_string())?;
        let inputs = components(&lowered, Mode::ShaderIn)?;
        Ok(Box::new(GenFragmentKernel { kernel, inputs }))
    }

    fn compile_vertex(&self, shader: &Shader) -> Result<Option<Box<dyn VertexKernel>>, String> {
        if !self.compiler.target.emulates(Stage::Vertex) {
            return Ok(None);
        }
        let lowered = self.compiler.lowered(shader)?;
        let kernel =
            compile::compile_vertex(&lowered, self.compiler.hw).map_err(|e| e.to_string())?;
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
                Some(Builtin::Position) => (0..4)
                    .map(|c| Dword {
                        slot: vue_index(&VueSlot::Position),
                        comp: c,
                        value: c,
                        high: false,
                    })
                    .collect(),
                Some(Builtin::PointSize) => vec![Dword {
                    slot: vue_index(&VueSlot::Header),
                    comp: 3,
                    value: 0,
                    high: false,
                }],
                Some(_) => continue,
                None => slots
                    .iter()
                    .find(|(name, _)| *name == var.name)
                    .map(|(_, slots)| {
                        slots
                            .iter()
                            .map(|d| Dword {
                                slot: vue_index(&VueSlot::Output(d.slot)),
                                comp: d.comp,
                                value: d.value,
                                high: d.high,
                            })
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
    kernel: compile::Kernel,
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
            count,
            attributes: vertex_attributes(&self.inputs, inputs),
            resources: std::mem::take(resources),
        };
        let entries = run_vertex(&self.kernel, &mut draw);
        *resources = draw.resources;
        let entries = entries.map_err(|e| format!("emulator: {e}"))?;
        Ok(entries
            .iter()
            .map(|entry| {
                self.outputs
                    .iter()
                    .map(|(name, places)| {
                        let values = gather(places, |d| d.slot.map_or(0, |s| entry[s][d.comp]));
                        (name.clone(), values)
                    })
                    .collect()
            })
            .collect())
    }
}

/// A compiled compute shader.
struct GenComputeKernel(compile::Kernel);

impl ComputeKernel for GenComputeKernel {
    fn dispatch(&self, dispatch: &mut ComputeDispatch) -> Result<(), String> {
        run_compute(&self.0, dispatch).map_err(|e| format!("emulator: {e}"))
    }
}

impl FragmentKernel for GenFragmentKernel {
    fn shade(
        &self,
        fragments: &TriangleFragments,
        resources: &mut Resources,
    ) -> Result<Vec<Option<[u32; 4]>>, String> {
        let mut draw = FragmentDraw {
            pixels: fragments.pixels.clone(),
            inputs: fragment_inputs(&self.inputs, &fragments.varyings),
            primitive: fragments.primitive,
            resources: std::mem::take(resources),
        };
        let outputs = run_fragment(&self.kernel, &mut draw);
        *resources = draw.resources;
        let mut outputs = outputs.map_err(|e| format!("emulator: {e}"))?;
        let pixels = (fragments.pixels.width * fragments.pixels.height) as usize;
        Ok(outputs.remove(&0).unwrap_or_else(|| vec![None; pixels]))
    }
}
