//! The `.shrew` text format: a printer and a parser that round-trip exactly
//! (`print(parse(text)) == text` for printed text).
//!
//! # Grammar by example
//!
//! ```text
//! shader fragment
//! struct Light { pos: f32x4, power: f32 offset 16 }
//! var shader_in f32x4 @color (location=0, interp=flat)
//! var shader_out f32x4 @frag (location=0)
//! var uniform Light @light (binding=0, desc_set=0)
//! var ubo f32x4[4 stride 16] @block (binding=1)
//! var uniform texture(2d, float) @tex (binding=2)
//! var function_temp f32[3][32] @tmp
//!
//! fn helper(32x4, 32) -> 32x4 {
//! b0:
//!     32x4 %0 = load_param (param_idx=0)
//!     return %0
//! }
//!
//! entry fn main() {
//! b0: selection merge=b3
//!     32 %0 = deref_var @color                        // shader_in f32x4
//!     32x4 %1 = load_deref %0
//!     32x2 %2 = fmul %1.xy, %1.ww
//!     32 %3 = load_const (1.0)
//!     1 %4 = flt %2.x, %3
//!     branch %4, b1, b2
//!     b1:
//!         32 %5 = fadd %1.x, %3 {exact, preserve_nan}
//!         jump b3
//!     b2:
//!         discard
//!         jump b3
//! b3: loop merge=b6 continue=b5
//!     32 %7 = phi b1: %5, b2: %3, b5: %7
//!     jump b4
//!     b4:
//!         1 %8 = load_const (true)
//!         branch %8, b6, b5
//!     b5:
//!         jump b3
//! b6:
//!     32 %9 = deref_var @frag                         // shader_out f32x4
//!     32x4 %10 = vec4 %7, %7, %7, %3
//!     store_deref %9, %10 (write_mask=xyzw)
//!     return
//! }
//! ```
//!
//! The precise rules:
//!
//! * **Header**: `shader STAGE` with STAGE one of `vertex tess_ctrl tess_eval geometry fragment
//!   compute`, optionally followed by `(workgroup_size=X,Y,Z)` for compute shaders.
//! * **Struct types**: `struct NAME { member: TYPE [offset N], ... }`, declared before use.
//! * **Types**: scalars `f16 f32 f64 i8 i16 i32 i64 u8 u16 u32 u64 bool`; vectors `f32x4`;
//!   matrices `f32mat4x3` (4 columns of 3 rows); arrays postfix, outermost first, as in GLSL:
//!   `f32x4[3][32]`, `u32[]` (runtime-sized), `f32x4[4 stride 16]` (explicit stride); struct names;
//!   `image(DIM[ array], BASE)`, `texture(DIM[ array][ shadow], BASE)`, `sampler`,
//!   `sampler(shadow)` with DIM one of `1d 2d 3d cube rect buf ms subpass` and BASE one of
//!   `float int uint`.
//! * **Variables**: `var MODE TYPE @name [(attr=value, ...)]`; modes `shader_in shader_out
//!   uniform ubo ssbo shared push_const function_temp shader_temp`; attributes (printed in this
//!   order when set) `location`, `binding`, `desc_set`, `builtin` (`position point_size
//!   clip_distance cull_distance frag_depth sample_mask layer viewport_index tess_level_outer
//!   tess_level_inner`), `interp` (`flat noperspective`; `smooth` is the default and is not
//!   printed).
//! * **Functions**: `[entry] fn NAME(SHAPE, ...) [-> SHAPE] { BLOCKS }` where SHAPE is a value
//!   shape `BITS` or `BITSxCOMPS`.
//! * **Blocks**: a label `bN:` optionally followed by the structure of a header block:
//!   `selection merge=bM` or `loop merge=bM continue=bC`. Then instructions, then exactly one
//!   terminator: `jump bN`, `branch %c, bT, bF`, `return`, `return %v`, `unreachable`.
//!   Blocks print in id order; a block inside k structured constructs is indented by k extra
//!   levels (indentation is not significant to the parser).
//! * **Instructions** defining a value: `SHAPE %N = ...`; others start with the opcode.
//!   - ALU: `OP SRC, SRC... [{flags}]` where SRC is `%N` or `%N.swizzle` (letters `xyzw`, or
//!     `a`–`p` for indices above 3). A missing swizzle reads components 0, 1, … in order; the
//!     printer writes it whenever it is not that identity or the source has more components
//!     than read. Flags: `exact`, `preserve_sz`, `preserve_nan`, `preserve_inf`.
//!   - `load_const (C, ...)`: one literal per component: `true`/`false`, a decimal or `0x` hex
//!     integer (negative decimals are two's complement at the value's size), or a float (`1.0`,
//!     `-0.0`, `1e-7`, `inf`, `-inf`, `nan`) encoded at the value's bit size.
//!   - `undef`.
//!   - `phi bP: %V, bQ: %W`.
//!   - intrinsics: `NAME %a, %b [(index=value, ...)]`; indices equal to 0 are not printed.
//!   - derefs: `deref_var @name`, `deref_array %parent[%index]`, `deref_struct %parent.member`
//!     (member name, or its number when the struct has no such name). The printer adds a
//!     `// MODE TYPE` comment.
//!   - texture: `OP DIM[ array][ shadow] %v (role), ... [(texture=N, sampler=N, dest_type=BASE,
//!     component=N)]`; attributes equal to their defaults (0, and `float`) are not printed.
//!     Roles: `coord projector comparator offset bias lod min_lod ddx ddy ms_index
//!     texture_deref sampler_deref texture_offset sampler_offset`.
//!   - calls: `call NAME(%a, %b)`.
//! * **Comments** run from `//` to the end of the line.
//!
//! Errors carry `file:line:col` and say what was expected.

mod parse;
mod print;

pub use parse::{ParseError, parse};
pub use print::{print, print_function};
