//! AMD R600, R700, Evergreen and Cayman backend: the target description the mid-end optimizes
//! for (options and the cost model of extraction), the hardware model ([`isa`]), the machine
//! program ([`program`]) with its encoding and decoder ([`encoding`]) and assembly listing
//! ([`disasm`]), the compiler of fragment shaders ([`compile`]): lowering to the R600 IR
//! ([`lir`], [`lower`]), copy propagation ([`copy_prop`]), register units ([`units`]), packing
//! into groups and clauses ([`pack`], with the read-port model of [`bank`]), register
//! allocation ([`regalloc`], spilling to scratch memory what does not fit: [`spill`]) and
//! emission ([`emit`]); and the emulator ([`emu`], textures
//! through [`texture`]) with its fragment dispatch ([`dispatch`]).

pub mod bank;
pub mod compile;
pub mod copy_prop;
mod cost;
pub mod disasm;
pub mod dispatch;
pub mod emit;
pub mod emu;
pub mod encoding;
mod fields;
pub mod isa;
pub mod lir;
pub mod lower;
pub mod pack;
pub mod program;
pub mod regalloc;
pub mod spill;
pub mod texture;
pub mod units;

pub use cost::R600Cost;

use shrew_engine::rewrite::{CostOptions, Model, Scalarize, TargetOptions};
use std::sync::Arc;

/// The mid-end options for `chip`: Evergreen's and Cayman's FMA fuses multiply-adds (R600
/// and R700 have no fused one, so `ffma` is split); there is no `pow`, divide (float or
/// integer), `fmod`, `tan`,
/// inverse trigonometry, sign, bitfield, carry, saturating-add or rotate instruction, nor
/// unordered compares: the mid-end expands them. Selections of up to 32 ALU operations become
/// selects (measured on piglit's fragment shaders against 8 and 16: fewer groups, dwords and
/// CF instructions). Control flow nesting deeper than the CF stack holds is flattened
/// (`flatten-deep-cf`, within [`emit::Nesting::budget`]).
pub fn target_options(chip: isa::Chip) -> TargetOptions {
    let fused = chip.is_evergreen_class();
    TargetOptions {
        lower_hyperbolic: true,
        lower_texture_indices: true,
        lower_ldexp_frexp32: true,
        lower_pack: true,
        // Evergreen added the bit count and reversal instructions.
        lower_bit_count: !fused,
        lower_bitfield_reverse: !fused,
        lower_find_msb: !fused,
        lower_find_lsb: !fused,
        fuse_ffma32: fused,
        lower_ffma32: !fused,
        // Evergreen's (Cypress's) and Cayman's doubles: adds, multiplies, fused multiply-adds,
        // minimums, maximums, compares and conversions between float sizes. No chip has
        // 64-bit integer arithmetic: 64-bit integers are pairs of dwords.
        fuse_ffma64: fused,
        lower_flrp64: true,
        lower_doubles: shrew_engine::passes::lower_doubles::lowerable(),
        lower_int64: shrew_engine::passes::lower_int64::lowerable(),
        lower_flrp32: true,
        lower_fpow: true,
        lower_fdiv: true,
        lower_fmod: true,
        lower_ftan: true,
        lower_inverse_trig: true,
        lower_fsign: true,
        lower_isign: true,
        lower_bitfield_extract: true,
        lower_bitfield_insert: true,
        lower_uadd_carry: true,
        lower_usub_borrow: true,
        lower_add_sat: true,
        lower_rotate: true,
        lower_idiv: true,
        indirect_uniform_loads: true,
        indexed_temporaries: true,
        lower_unordered_cmp: true,
        scalarize: Scalarize::MixedConstants,
        costs: CostOptions {
            model: Model(Arc::new(R600Cost)),
            // A branch is an ALU_PUSH_BEFORE, JUMP, ELSE and POP: CF instructions of about 40
            // groups' time each, against five ALU operations a group.
            if_convert_max_alu: 32,
        },
        cf_nesting: Some(emit::Nesting::budget(chip)),
        ..TargetOptions::default()
    }
}
