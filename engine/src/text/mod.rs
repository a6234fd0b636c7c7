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
//! fn scale(32x4, 32) -> 32x4 {
//! b0:
//!     32x4 %0 = load_param
//!     32 %1 = load_param (param_idx=1)
//!     32x4 %2 = fmul %0, %1.xxxx
//!     return %2
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
//!     32x4 %11 = call scale(%10, %3)
//!     store_deref %9, %11 (write_mask=xyzw)
//!     return
//! }
//! ```
//!
//! The precise rules:
//!
//! * **Layout**: the header line, struct declarations, variables, a blank line, then the
//!   functions in [`crate::ir::Shader::functions`] order separated by blank lines. Instructions
//!   end at the end of their line; blank lines are ignored.
//! * **Header**: `shader STAGE` with STAGE one of `vertex tess_ctrl tess_eval geometry fragment
//!   compute`, optionally followed by `(workgroup_size=X,Y,Z)`. The printer writes it for compute
//!   shaders, and for any shader whose size is not `1,1,1`.
//! * **Names** of structs, members, variables and functions are identifiers
//!   (`[A-Za-z_][A-Za-z0-9_]*`), unique in their kind (members within their struct); a struct
//!   may not be called like a built-in type (`f32x4`, `image`, …). The printer makes any IR name
//!   that breaks these rules printable by replacing invalid characters with `_` and appending
//!   `_1`, `_2`, … to repeats, so that its output always parses.
//! * **Struct types**: `struct NAME { member: TYPE [offset N], ... }`, declared before use. The
//!   printer writes one line (`struct NAME {}` when empty); the parser also accepts line breaks
//!   inside the braces.
//! * **Types**: scalars `f16 f32 f64 i8 i16 i32 i64 u8 u16 u32 u64 bool`; vectors `f32x4`;
//!   matrices `f32mat4x3` (4 columns of 3 rows); arrays postfix, outermost first, as in GLSL:
//!   `f32x4[3][32]`, `u32[]` (runtime-sized), `f32x4[4 stride 16]` (explicit stride), at most 64
//!   dimensions; struct names; `image(DIM[ array], BASE)`, `texture(DIM[ array][ shadow], BASE)`,
//!   `sampler`, `sampler(shadow)` with DIM one of `1d 2d 3d cube rect buf ms subpass` and BASE
//!   one of `float int uint`.
//! * **Variables**: `var MODE TYPE @name [(attr=value, ...)] [= (VALUE, ...)]`, declared before
//!   use; modes `shader_in shader_out uniform ubo ssbo shared push_const function_temp
//!   shader_temp constant`; a `constant` variable (and only one) has an initializer: one literal
//!   per scalar of its type in flattening order, written as `load_const` writes components;
//!   attributes (printed in this order when set, accepted in any order) `location`, `binding`,
//!   `desc_set`, `builtin` (`position point_size clip_distance cull_distance frag_depth
//!   sample_mask layer viewport_index tess_level_outer tess_level_inner`), `interp` (`flat
//!   noperspective`; `smooth` is the default and is not printed), `array_of_blocks` (`true`:
//!   an `ubo`/`ssbo` array whose element `i` is the buffer at `binding + i`; `false` is the
//!   default and is not printed), `atomic_counters` (`true`: an `ssbo` holding GL atomic
//!   counters, atomic counter buffer `binding`; `false` is the default and is not printed).
//! * **Functions**: `[entry] fn NAME(SHAPE, ...) [-> SHAPE] { BLOCKS }` where SHAPE is a value
//!   shape `BITS` or `BITSxCOMPS` (BITS one of 1, 8, 16, 32, 64; COMPS one of 1–5, 8, 16).
//!   Exactly one function is marked `entry`; calls may name functions defined further down.
//! * **Blocks**: a label `bN:` optionally followed by the structure of a header block:
//!   `selection merge=bM` or `loop merge=bM continue=bC`. Then instructions, then exactly one
//!   terminator: `jump bN`, `branch %c, bT, bF`, `return`, `return %v`, `unreachable`.
//!   Block ids are kept exactly (unused ids are holes in the CFG). The first block of a function
//!   is its entry: the printer writes the entry block first and the others in id order (the
//!   entry is normally `b0`, so this is plain id order). A block inside k structured
//!   constructs (per [`crate::cfg::construct_depths`]) is indented by k extra levels of 4
//!   spaces; indentation is not significant to the parser. A block the builder has not
//!   terminated yet prints without a terminator, which does not parse.
//! * **Instructions** defining a value: `SHAPE %N = ...`; others start with the opcode. Value
//!   ids are kept exactly; instructions without a result (which have ids in the IR too) are
//!   numbered in text order after the largest id the function's text defines. Value and block
//!   ids above 1048575 are rejected (they size the instruction arena and the CFG).
//!   - ALU: `OP SRC, SRC... [{flags}]` where SRC is `%N` or `%N.swizzle` (letters `xyzw`, or
//!     `a`–`p` for indices above 3). A swizzle has one letter per component the instruction
//!     reads from that source (the operand's fixed count, else the result's); a missing swizzle
//!     reads components 0, 1, … in order. The printer writes it whenever it is not that
//!     identity or the source has more components than read. Flags, printed in this order:
//!     `exact`, `preserve_sz`, `preserve_nan`, `preserve_inf`. The number of sources must match
//!     the opcode table.
//!   - `load_const (C, ...)`: one literal per component of the result: `true`/`false`, a
//!     decimal or `0x` hex integer (negative decimals are two's complement at the value's size;
//!     the literal must fit), or a float (`1.0`, `-0.0`, `1e-7`, `inf`, `-inf`, `nan`) encoded
//!     at the value's bit size (16, 32 or 64; `nan` is the quiet NaN with no payload). The
//!     printer writes 1-bit components as `true`/`false`; others as a float when they read as
//!     `-0.0` or as a finite float of magnitude in [1e-6, 1e9] at their size (Rust's shortest
//!     round-trip form, always with a `.` or an exponent; halves are written as the `f32` of the
//!     same value), else as a signed decimal when the sign-extended value is within ±65536,
//!     else as `0x` hex of the bits. Float literals are read as `f32` for 16- and 32-bit values
//!     (then converted to half for 16-bit ones) and as `f64` for 64-bit ones, so printed
//!     literals give back the same bits.
//!   - `undef`.
//!   - `phi bP: %V, bQ: %W`.
//!   - intrinsics: `NAME %a, %b [(index=value, ...)]`. The number of sources must match the
//!     intrinsic table. Indices print in table order and are accepted in any order; indices
//!     equal to 0 are not printed and missing ones are 0. Values are written as
//!     [`shrew_ops::IndexKind::format_value`] does (a write mask with bits above 15 as a
//!     number).
//!   - derefs: `deref_var @name`, `deref_array %parent[%index]`, `deref_struct %parent.member`
//!     (member name, or its number when the parent's type is not a known struct, as in broken
//!     IR). The parser finds a named member's struct through the deref chain, so chains may be
//!     written in any order. The printer adds a `// MODE TYPE` comment, starting 48 columns
//!     after the instruction's indentation (or one space after a longer instruction).
//!   - texture: `OP DIM[ array][ shadow] %v (role), ... [(texture=N, sampler=N, dest_type=BASE,
//!     component=N)]`; attributes equal to their defaults (0, and `float`) are not printed, and
//!     are accepted in any order. Roles: `coord projector comparator offset bias lod min_lod ddx
//!     ddy ms_index texture_deref sampler_deref texture_offset sampler_offset`.
//!   - calls: `call NAME(%a, %b)`.
//! * **Comments** run from `//` to the end of the line; the parser drops them.
//!
//! Errors carry `file:line:col` of the offending token (columns count characters) and say what
//! was expected or what is wrong; the first error ends parsing. The parser builds the IR but
//! does not verify it (that is [`crate::verify`]'s job): it rejects only text it cannot turn
//! into IR, such as unknown names, dangling value or block references, and shapes the opcode
//! tables rule out.

mod lex;
mod literal;
mod parse;
mod print;

pub use parse::{ParseError, parse};
pub use print::{indentation, print, print_function};

use crate::ir::{Type, ValType, parse_scalar};
use shrew_ops::AluOp;

/// Whether `name` can be written as a name in the text: `[A-Za-z_][A-Za-z0-9_]*`.
fn is_identifier(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_')
        && bytes.all(lex::is_ident_char)
}

/// The scalar, vector or matrix type a word names (`f32`, `u32x4`, `f32mat4x3`), if any.
fn builtin_type(word: &str) -> Option<Type> {
    if let Some(scalar) = parse_scalar(word) {
        return Some(Type::Scalar(scalar));
    }
    // Scalar names contain neither `mat` nor `x`, so the split points are unambiguous.
    if let Some((elem, dims)) = word.split_once("mat") {
        let (cols, rows) = dims.split_once('x')?;
        return Some(Type::Matrix {
            elem: parse_scalar(elem)?,
            cols: cols.parse().ok()?,
            rows: rows.parse().ok()?,
        });
    }
    let (elem, comps) = word.rsplit_once('x')?;
    Some(Type::Vector(parse_scalar(elem)?, comps.parse().ok()?))
}

/// Whether a word already names a type, so that no struct may be called that.
fn is_type_keyword(word: &str) -> bool {
    matches!(word, "image" | "texture" | "sampler") || builtin_type(word).is_some()
}

/// How many components an ALU instruction reads from source `src`: the operand's fixed count,
/// or else as many as the instruction defines (1 when it defines nothing).
fn alu_src_comps(op: AluOp, src: usize, def: Option<ValType>) -> usize {
    let fixed = op.info().srcs.get(src).map_or(0, |operand| operand.comps);
    let comps = if fixed != 0 {
        fixed
    } else {
        def.map_or(1, |d| d.comps)
    };
    (comps as usize).clamp(1, shrew_ops::MAX_COMPONENTS)
}
