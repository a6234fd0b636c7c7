//! The AMD R600–Cayman targets: fragment and vertex shaders, and on Evergreen and Cayman
//! compute shaders; one wavefront width.
//!
//! Temporaries stored at run-time indices can stay arrays the backend indexes in its GPRs
//! (AR-relative operands, `indexed_temporaries`), or become selects among SSA values like the
//! other run-time indices. Which is better depends on the shader: selects among values the
//! mid-end folds take few registers, while selects that rewrite every element of a large array
//! on each store take many. So such a shader is compiled both ways, and the kernel with fewer
//! GPRs (then ALU groups, then dwords) is kept: a choice by measured cost, per shader.
//!
//! In a draw, the vertices run on the emulator with their attributes where the fetch shader
//! would load them, their outputs read from the exports; each triangle runs on it with its
//! varyings in the kernel's input slots (the dispatcher makes their interpolation parameters).

use crate::varyings::{Dword, Places, components, fragment_inputs, gather, vertex_attributes};
use crate::{Backend, Compiler, Kernel, Pipeline, PipelineError, Target, VariantError};
use shrew_engine::draw::{
    ComputeDispatch, ComputeKernel, DrawStages, FragmentDraw, FragmentKernel, TriangleFragments,
    VertexDraw, VertexKernel,
};
use shrew_engine::interp::Resources;
use shrew_engine::ir::{Builtin, InstKind, Mode, Shader, Stage};
use shrew_engine::ops::Intrinsic;
use shrew_engine::passes::machine::MachinePasses;
use shrew_engine::passes::manager::{RunOptions, RunReport};
use shrew_engine::rewrite::TargetOptions;
use shrew_r600::compile;
use shrew_r600::dispatch::{run_compute, run_fragment, run_vertex};
use shrew_r600::isa::Chip;
use std::collections::BTreeMap;

pub const R600: Target = target(
    "r600",
    "AMD R600 (HD 2000/3000), VLIW5",
    &R600Backend(Chip::R600),
);
pub const R700: Target = target(
    "r700",
    "AMD R700 (HD 4000), VLIW5",
    &R600Backend(Chip::R700),
);
pub const EVERGREEN: Target = target(
    "evergreen",
    "AMD Evergreen (HD 5000), VLIW5",
    &R600Backend(Chip::Evergreen),
);
pub const CAYMAN: Target = target(
    "cayman",
    "AMD Cayman (HD 6900), VLIW4",
    &R600Backend(Chip::Cayman),
);

const fn target(
    name: &'static str,
    description: &'static str,
    backend: &'static R600Backend,
) -> Target {
    Target {
        name,
        description,
        backend: Some(backend),
    }
}

/// An R600-family chip's backend.
struct R600Backend(Chip);

impl Backend for R600Backend {
    fn options(&self) -> TargetOptions {
        shrew_r600::target_options(self.0)
    }

    fn compiles(&self, stage: Stage) -> bool {
        match stage {
            Stage::Fragment | Stage::Vertex => true,
            Stage::Compute => self.0.is_evergreen_class(),
            _ => false,
        }
    }

    fn compiler(&self, target: &'static Target) -> Result<Box<dyn Compiler>, PipelineError> {
        let spec = target.backend_pipeline();
        let selected = TargetOptions {
            indexed_temporaries: false,
            ..target.options()
        };
        Ok(Box::new(R600Compiler {
            chip: self.0,
            target,
            indexed: Pipeline::parse(&spec, target)?,
            selected: Pipeline::parse_with_options(&spec, target, selected)?,
        }))
    }

    fn decode(&self, bytes: &[u8]) -> Result<String, String> {
        let binary =
            shrew_r600::encoding::Binary::from_file(bytes, self.0).map_err(|e| e.to_string())?;
        shrew_r600::disasm::listing(&binary, &[]).map_err(|e| e.to_string())
    }
}

struct R600Compiler {
    chip: Chip,
    target: &'static Target,
    /// The backend pipeline keeping the arrays the target indexes.
    indexed: Pipeline,
    /// The backend pipeline selecting among the elements of every small array.
    selected: Pipeline,
}

impl R600Compiler {
    /// Lowers and compiles `shader`: the lowered shader and its kernel, the better of the two
    /// lowerings when they differ.
    fn lower_and_compile(&self, shader: &Shader) -> Result<(Shader, compile::Kernel), String> {
        self.lower_and_compile_observed(
            shader,
            &Pipeline::quiet_options(),
            &mut RunReport::default(),
        )
    }

    /// [`R600Compiler::lower_and_compile`] with the backend pipelines run under `options` after
    /// the passes `report` tells of; adds what they did to `report`.
    fn lower_and_compile_observed(
        &self,
        shader: &Shader,
        options: &RunOptions,
        report: &mut RunReport,
    ) -> Result<(Shader, compile::Kernel), String> {
        if !R600Backend(self.chip).compiles(shader.stage) {
            let stages = if self.chip.is_evergreen_class() {
                "fragment, vertex and compute shaders"
            } else {
                "fragment and vertex shaders (compute shaders need Evergreen or Cayman's RATs)"
            };
            return Err(format!(
                "{} compiles {stages}, not {} shaders",
                self.target.name,
                shader.stage.name()
            ));
        }
        let mut indexed = shader.clone();
        let lowering = self
            .indexed
            .run_after(&mut indexed, options, report.transformations)?;
        report.append(lowering);
        let first = self.compile_lowered(&indexed, options, report);
        if !accesses_scratch(&indexed) {
            return first.map(|kernel| (indexed, kernel));
        }
        let mut selected = shader.clone();
        let lowering = self
            .selected
            .run_after(&mut selected, options, report.transformations)?;
        report.append(lowering);
        let second = self.compile_lowered(&selected, options, report);
        // A kernel that spills is slower than one that does not, whatever its GPRs.
        let cost = |k: &compile::Kernel| {
            let spilling = k.stats.spills + k.stats.fills;
            (spilling, k.stats.gprs, k.stats.alu_groups, k.stats.dwords)
        };
        match (first, second) {
            (Ok(a), Ok(b)) if cost(&b) < cost(&a) => Ok((selected, b)),
            (Ok(a), _) => Ok((indexed, a)),
            (Err(_), Ok(b)) => Ok((selected, b)),
            (Err(e), Err(_)) => Err(e),
        }
    }
}

impl R600Compiler {
    /// An error for a dispatch width asked of a chip that has no choice.
    fn no_width(&self, width: Option<u8>) -> Result<(), String> {
        match width {
            Some(width) => Err(format!(
                "{} has no choice of dispatch width (wavefronts of 64), so no SIMD{width}",
                self.target.name
            )),
            None => Ok(()),
        }
    }

    /// Compiles a lowered shader, its machine passes under what is left of `options` after
    /// the passes `report` tells of; adds what they did to `report`.
    fn compile_lowered(
        &self,
        lowered: &Shader,
        options: &RunOptions,
        report: &mut RunReport,
    ) -> Result<compile::Kernel, String> {
        let machine_options = options.after(report.transformations, |_| true);
        let mut passes = MachinePasses::new(&machine_options);
        let kernel = compile::compile_observed(lowered, self.chip, &mut passes);
        report.append(passes.report);
        kernel.map_err(|e| e.to_string())
    }
}

/// Whether the lowered shader reads or writes its temporaries at offsets (what the two
/// lowerings can differ in).
fn accesses_scratch(shader: &Shader) -> bool {
    shader.functions.iter().any(|f| {
        f.all_insts().any(|v| {
            matches!(&f.inst(v).kind, InstKind::Intrinsic(ii)
                if matches!(ii.op, Intrinsic::LoadScratch | Intrinsic::StoreScratch))
        })
    })
}

impl Compiler for R600Compiler {
    fn compile_observed(
        &self,
        shader: &Shader,
        width: Option<u8>,
        options: &RunOptions,
        report: &mut RunReport,
    ) -> Result<Box<dyn Kernel>, String> {
        self.no_width(width)?;
        let (_, kernel) = self.lower_and_compile_observed(shader, options, report)?;
        Ok(Box::new(R600Kernel(kernel)))
    }

    fn variants(&self, shader: &Shader) -> Vec<Result<Box<dyn Kernel>, VariantError>> {
        if !matches!(shader.stage, Stage::Fragment | Stage::Vertex) {
            return Vec::new();
        }
        vec![match self.lower_and_compile(shader) {
            Ok((_, kernel)) => Ok(Box::new(R600Kernel(kernel)) as Box<dyn Kernel>),
            Err(message) => Err(VariantError {
                width: None,
                message,
            }),
        }]
    }

    fn draw_stages(&self, width: Option<u8>) -> Result<Box<dyn DrawStages + '_>, String> {
        self.no_width(width)?;
        Ok(Box::new(R600Draw(self)))
    }
}

/// A compiled R600 shader.
struct R600Kernel(compile::Kernel);

impl Kernel for R600Kernel {
    fn width(&self) -> Option<u8> {
        None
    }

    fn statistics(&self) -> Vec<(&'static str, u64)> {
        let s = &self.0.stats;
        vec![
            ("dwords", s.dwords.into()),
            ("gprs", s.gprs.into()),
            ("stack", s.stack.into()),
            ("alu_groups", s.alu_groups.into()),
            ("alu_slots", s.alu_slots.into()),
            ("literals", s.literals.into()),
            ("cf", s.cf.into()),
            ("alu_clauses", s.alu_clauses.into()),
            ("fetch_clauses", s.fetch_clauses.into()),
            ("fetches", s.fetches.into()),
            ("loops", s.loops.into()),
            ("cycles", s.cycles),
            ("spills", s.spills.into()),
            ("fills", s.fills.into()),
            ("scratch_bytes", s.scratch_bytes.into()),
        ]
    }

    fn statistics_line(&self) -> String {
        let s = &self.0.stats;
        format!(
            "shader: {} dw, {} gprs, {} stack, {} alu groups, {} alu slots, {} literals, {} cf, \
             {} alu clauses, {} fetch clauses, {} fetches, {} loops, {} cycles, {}:{} \
             spills:fills, {} scratch bytes",
            s.dwords,
            s.gprs,
            s.stack,
            s.alu_groups,
            s.alu_slots,
            s.literals,
            s.cf,
            s.alu_clauses,
            s.fetch_clauses,
            s.fetches,
            s.loops,
            s.cycles,
            s.spills,
            s.fills,
            s.scratch_bytes
        )
    }

    fn listing(&self) -> Result<String, String> {
        shrew_r600::disasm::listing(&self.0.binary, &self.0.program.alu_origins())
            .map_err(|e| format!("internal error: the binary does not decode: {e}"))
    }

    fn binary(&self) -> Result<Vec<u8>, String> {
        Ok(self.0.binary.to_file())
    }
}

/// The R600 stages of a draw.
struct R600Draw<'a>(&'a R600Compiler);

/// A compiled shader and where each input variable's components are: slot and component.
struct R600FragmentKernel {
    kernel: compile::Kernel,
    inputs: Places<u32>,
}

impl DrawStages for R600Draw<'_> {
    fn lacks_extension(&self, name: &str) -> Option<&'static str> {
        self.0.chip.lacks_extension(name)
    }

    fn compile_fragment(&self, shader: &Shader) -> Result<Box<dyn FragmentKernel>, String> {
        let (lowered, kernel) = self.0.lower_and_compile(shader)?;
        let inputs = components(&lowered, Mode::ShaderIn)?;
        Ok(Box::new(R600FragmentKernel { kernel, inputs }))
    }

    fn compile_compute(&self, shader: &Shader) -> Result<Box<dyn ComputeKernel>, String> {
        let (_, kernel) = self.0.lower_and_compile(shader)?;
        Ok(Box::new(R600ComputeKernel(kernel)))
    }

    fn compile_vertex(&self, shader: &Shader) -> Result<Option<Box<dyn VertexKernel>>, String> {
        let (lowered, kernel) = self.0.lower_and_compile(shader)?;
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

/// A compiled compute shader.
struct R600ComputeKernel(compile::Kernel);

impl ComputeKernel for R600ComputeKernel {
    fn dispatch(&self, dispatch: &mut ComputeDispatch) -> Result<(), String> {
        run_compute(&self.0, dispatch).map_err(|e| format!("emulator: {e}"))
    }
}

/// A compiled vertex shader, where its attributes go and where its outputs come from.
struct R600VertexKernel {
    kernel: compile::Kernel,
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
    Slots(Vec<Dword<u32>>),
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
            attributes: vertex_attributes(&self.inputs, inputs),
            resources: std::mem::take(resources),
        };
        let exports = run_vertex(&self.kernel, &mut draw);
        *resources = draw.resources;
        let exports = exports.map_err(|e| format!("emulator: {e}"))?;
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
                            VertexPlace::Slots(places) => gather(places, |d| {
                                vertex.slots.get(&d.slot).map_or(0, |s| s[d.comp])
                            }),
                        };
                        (name.clone(), values)
                    })
                    .collect()
            })
            .collect())
    }
}

impl FragmentKernel for R600FragmentKernel {
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
