//! Intel Gen7–Gen9 backend: the target description the mid-end optimizes for (options and the
//! cost model of extraction), the hardware model ([`isa`]), the native instruction encoding with
//! its decoder ([`encoding`]), assembly in the style of Mesa's disassembler ([`disasm`]), the
//! static performance model behind shader-db's cycles ([`perf`]), and the compiler of fragment,
//! vertex and compute shaders ([`compile`]): lowering to the Gen IR ([`lir`], [`lower`]), its passes
//! ([`copy_prop`], [`cse`], [`coalesce`], [`redundant_flags`]), SIMD-width lowering
//! ([`simd_width`]), scheduling ([`schedule`]), register allocation ([`regalloc`], spilling to
//! scratch through [`spill`]), the removal of the copies allocation made no-ops
//! ([`self_moves`]) and emission ([`emit`]). The emulator ([`emu`]) runs native
//! programs (textures through the sampler model of [`sampler`]); [`dispatch`] feeds it fragment
//! and vertex threads and compute workgroups. Images are being built (the Gen backend issue).

mod analysis;
pub mod coalesce;
pub mod compile;
pub mod copy_prop;
mod cost;
pub mod cse;
pub mod disasm;
pub mod dispatch;
pub mod emit;
pub mod emu;
pub mod encoding;
mod fields;
pub mod isa;
pub mod lir;
pub mod lower;
pub mod perf;
pub mod redundant_flags;
pub mod regalloc;
pub mod rules;
pub mod sampler;
pub mod schedule;
pub mod self_moves;
pub mod simd_width;
pub mod spill;

pub use cost::GenCost;

use shrew_engine::rewrite::{CostOptions, Model, Scalarize, TargetOptions};
use std::sync::Arc;

/// The mid-end options for Gen: a fused multiply-add (`mad`), no dot-product instructions in
/// the scalar backend, no `fmod` (it is `a - b·floor(a/b)`, as Mesa lowers it for Intel), no
/// `ftan` and no inverse trigonometry (the math unit has `sin` and `cos`), no unordered float
/// comparisons (`cmp` has none; a `not` of an ordered one folds into its reader as a source
/// modifier), uniforms loaded at run-time offsets (pull constants), and vector operations
/// split where a constant operand's components differ (the EU is scalar per channel).
/// Hyperbolic functions, `imod`, 32-bit `ldexp`/`frexp` and the normalized packs are built
/// from what the EU has (the math unit's `exp`, `log`, `sqrt` and remainder); Gen7 has no
/// 64-bit multiply for the high half of a 32-bit one, so it multiplies 16-bit halves.
pub fn target_options(generation: isa::Gen) -> TargetOptions {
    TargetOptions {
        lower_hyperbolic: true,
        lower_texture_indices: true,
        lower_imod: true,
        lower_ldexp_frexp32: true,
        lower_pack: true,
        lower_mul_high_in_halves: !generation.is_gen8_plus(),
        fuse_ffma16: true,
        fuse_ffma32: true,
        fuse_ffma64: true,
        // `lrp` takes floats only.
        lower_flrp64: true,
        lower_fdot: true,
        lower_fmod: true,
        lower_ftan: true,
        lower_inverse_trig: true,
        // 64-bit floats have adds, multiplies, `mad`, compares and selects only.
        lower_doubles: shrew_engine::passes::lower_doubles::ROUNDING_AND_MATH.to_vec(),
        // On Gen8+ 64-bit integers have adds, shifts, logic, compares and selects, and `mul`
        // of two dwords into a qword; Gen7 has no 64-bit integer type: pairs of dwords.
        lower_int64: if generation.is_gen8_plus() {
            shrew_engine::passes::lower_int64::WITH_64_BIT_ALU.to_vec()
        } else {
            shrew_engine::passes::lower_int64::lowerable()
        },
        lower_b2f_mul: true,
        lower_unordered_cmp: true,
        // Gen7's jumps are 16-bit counts of 8 bytes: a program reaches 16,384 instructions,
        // about 2,000 IR instructions of copies at the ratios large shaders show. Calls keep
        // the rest within reach.
        inline_budget: (!generation.is_gen8_plus()).then_some(2_000),
        // Not selected to native instructions yet (BFE, BFI, ADDC, SUBB, the saturating
        // modifier on integer adds): lowered to shifts, masks and compares, so that no rule
        // produces them and shaders using them compile.
        lower_isign: true,
        lower_bitfield_extract: true,
        lower_bitfield_insert: true,
        lower_uadd_carry: true,
        lower_usub_borrow: true,
        lower_add_sat: true,
        lower_rotate: true,
        indirect_uniform_loads: true,
        scalarize: Scalarize::MixedConstants,
        costs: CostOptions {
            model: Model(Arc::new(GenCost)),
            ..CostOptions::default()
        },
        ..TargetOptions::default()
    }
}
