//! The R600 backend after the mid-end: the backend pipeline, then the compile. Temporaries
//! stored at run-time indices can stay arrays the backend indexes in its GPRs (AR-relative
//! operands, `indexed_temporaries`), or become selects among SSA values like the other
//! run-time indices. Which is better depends on the shader: selects among values the mid-end
//! folds take few registers, while selects that rewrite every element of a large array on
//! each store take many. So such a shader is compiled both ways, and the kernel with fewer
//! GPRs (then ALU groups, then dwords) is kept: a choice by measured cost, per shader.

use crate::CliError;
use crate::pipeline::{Pipeline, Target};
use shrew_engine::ir::{InstKind, Shader};
use shrew_engine::ops::Intrinsic;
use shrew_r600::compile::{Kernel, compile};
use shrew_r600::isa::Chip;

pub struct R600Lowering {
    chip: Chip,
    /// The backend pipeline keeping the arrays the target indexes.
    indexed: Pipeline,
    /// The backend pipeline selecting among the elements of every small array.
    selected: Pipeline,
}

impl R600Lowering {
    pub fn new(chip: Chip, target: Target) -> Result<R600Lowering, CliError> {
        let spec = target.backend_pipeline();
        let selected = shrew_engine::rewrite::TargetOptions {
            indexed_temporaries: false,
            ..target.options()
        };
        Ok(R600Lowering {
            chip,
            indexed: Pipeline::parse(&spec, target)?,
            selected: Pipeline::parse_with_options(&spec, target, selected)?,
        })
    }

    /// Lowers and compiles `shader`: the lowered shader and its kernel, the better of the two
    /// lowerings when they differ.
    pub fn compile(&self, shader: &Shader) -> Result<(Shader, Kernel), String> {
        let mut indexed = shader.clone();
        self.indexed.run(&mut indexed)?;
        let first = compile(&indexed, self.chip).map_err(|e| e.to_string());
        if !accesses_scratch(&indexed) {
            return first.map(|kernel| (indexed, kernel));
        }
        let mut selected = shader.clone();
        self.selected.run(&mut selected)?;
        let second = compile(&selected, self.chip).map_err(|e| e.to_string());
        let cost = |k: &Kernel| (k.stats.gprs, k.stats.alu_groups, k.stats.dwords);
        match (first, second) {
            (Ok(a), Ok(b)) if cost(&b) < cost(&a) => Ok((selected, b)),
            (Ok(a), _) => Ok((indexed, a)),
            (Err(_), Ok(b)) => Ok((selected, b)),
            (Err(e), Err(_)) => Err(e),
        }
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
