//! Memory layouts of variables and the byte-level reads and writes the interpreter does on them.
//!
//! Two layout rules exist. [`LayoutRule::Std430`] is used for every mode except shader inputs
//! and outputs: explicit struct member offsets and array strides win when the type gives them,
//! everything else follows std430 (a scalar is aligned to its size, a 2-vector to twice that, a
//! 3- or 4-vector (or wider) to four times that; arrays and structs as in std430; booleans take
//! 4 bytes). [`LayoutRule::Slots`] is used for `shader_in`/`shader_out`: values live in 16-byte
//! vec4 slots as locations do, every component of up to 32 bits takes 4 bytes and a 64-bit one 8,
//! and every vector, matrix column, array element and struct member starts a new slot.

use crate::ir::{Mode, Scalar, Shader, StructType, Type};
use serde::{Deserialize, Serialize};
use shrew_ops::BaseType;
use shrew_ops::eval::mask;

/// How a type is laid out in bytes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum LayoutRule {
    /// std430 with explicit offsets and strides honoured.
    Std430,
    /// vec4 slots, as locations of shader inputs and outputs.
    Slots,
}

impl LayoutRule {
    /// The rule variables of a mode are laid out with.
    pub fn for_mode(mode: Mode) -> LayoutRule {
        match mode {
            Mode::ShaderIn | Mode::ShaderOut => LayoutRule::Slots,
            _ => LayoutRule::Std430,
        }
    }
}

/// Bytes of one vec4 slot.
pub const SLOT_BYTES: u32 = 16;

/// Computes sizes, alignments and offsets of types under one rule.
#[derive(Copy, Clone)]
pub struct Layout<'s> {
    /// The struct types `Type::Struct` refers to.
    pub structs: &'s [StructType],
    pub rule: LayoutRule,
    /// Elements [`Layout::leaves`] lists for runtime-sized arrays.
    pub runtime_len: u32,
}

fn round_up(x: u32, align: u32) -> u32 {
    x.div_ceil(align.max(1)).saturating_mul(align.max(1))
}

impl<'s> Layout<'s> {
    /// The layout of a shader's types under `rule`.
    pub fn new(shader: &'s Shader, rule: LayoutRule) -> Layout<'s> {
        Layout {
            structs: &shader.structs,
            rule,
            runtime_len: 0,
        }
    }

    /// Bytes one component of a scalar or vector of this scalar type occupies.
    pub fn comp_bytes(&self, s: Scalar) -> u32 {
        match self.rule {
            LayoutRule::Std430 => s.byte_size(),
            LayoutRule::Slots => {
                if s.bits == 64 {
                    8
                } else {
                    4
                }
            }
        }
    }

    /// Size and alignment in bytes. Opaque types (textures, samplers, images) count as one unit so
    /// that offsets into arrays of them are element indices. A runtime-sized array has size 0.
    pub fn size_align(&self, ty: &Type) -> (u32, u32) {
        match (self.rule, ty) {
            (_, t) if t.is_opaque() => (1, 1),
            (LayoutRule::Std430, Type::Scalar(s)) => (s.byte_size(), s.byte_size()),
            (LayoutRule::Std430, Type::Vector(s, n)) => {
                let b = s.byte_size();
                (
                    b * *n as u32,
                    b * (*n as u32).clamp(1, 4).next_power_of_two(),
                )
            }
            (LayoutRule::Slots, Type::Scalar(_) | Type::Vector(..)) => {
                let (s, n) = match ty {
                    Type::Vector(s, n) => (*s, *n as u32),
                    Type::Scalar(s) => (*s, 1),
                    _ => unreachable!(),
                };
                (round_up(n * self.comp_bytes(s), SLOT_BYTES), SLOT_BYTES)
            }
            (_, Type::Matrix { cols, .. }) => {
                let stride = self.array_stride(ty);
                let (_, align) = self.size_align(&ty.element().unwrap());
                (stride.saturating_mul(*cols as u32), align)
            }
            (_, Type::Array { len, .. }) => {
                let (_, align) = self.size_align(&ty.element().unwrap());
                (self.array_stride(ty).saturating_mul(*len), align)
            }
            (_, Type::Struct(id)) => {
                let Some(st) = self.structs.get(id.0 as usize) else {
                    return (0, 1);
                };
                let offsets = self.member_offsets(st);
                let mut end = 0;
                let mut align = 1;
                for (m, off) in st.members.iter().zip(&offsets) {
                    let (size, a) = self.size_align(&m.ty);
                    end = end.max(off.saturating_add(size));
                    align = align.max(a);
                }
                (round_up(end, align), align)
            }
            _ => unreachable!("opaque types are handled first"),
        }
    }

    /// Distance between consecutive elements of an array, matrix (columns) or vector
    /// (components).
    pub fn array_stride(&self, ty: &Type) -> u32 {
        match ty {
            Type::Vector(s, _) => self.comp_bytes(*s),
            Type::Array { stride, .. } if *stride != 0 && self.rule == LayoutRule::Std430 => {
                *stride
            }
            _ => {
                let elem = ty
                    .element()
                    .expect("array_stride of a type without elements");
                let (size, align) = self.size_align(&elem);
                round_up(size, align)
            }
        }
    }

    /// Byte offsets of a struct's members.
    pub fn member_offsets(&self, st: &StructType) -> Vec<u32> {
        let mut offsets = Vec::with_capacity(st.members.len());
        let mut cur = 0;
        for m in &st.members {
            let (size, align) = self.size_align(&m.ty);
            let off = match (self.rule, m.offset) {
                (LayoutRule::Std430, Some(off)) => off,
                _ => round_up(cur, align),
            };
            offsets.push(off);
            cur = off.saturating_add(size);
        }
        offsets
    }

    /// Every scalar component of a value of type `ty` placed at `base`, in flattening order
    /// (array elements, matrix columns, vector components, struct members in order). Opaque
    /// types contribute nothing, runtime-sized arrays `runtime_len` elements.
    pub fn leaves(&self, ty: &Type, base: u32, out: &mut Vec<Leaf>) {
        match ty {
            Type::Scalar(s) => out.push(Leaf {
                offset: base,
                scalar: *s,
                bytes: self.comp_bytes(*s),
            }),
            Type::Vector(s, n) => {
                let bytes = self.comp_bytes(*s);
                for c in 0..*n as u32 {
                    out.push(Leaf {
                        offset: base + c * bytes,
                        scalar: *s,
                        bytes,
                    });
                }
            }
            Type::Matrix { .. } | Type::Array { .. } => {
                let stride = self.array_stride(ty);
                let elem = ty.element().unwrap();
                let count = match ty.element_count().unwrap() {
                    0 => self.runtime_len,
                    n => n,
                };
                for i in 0..count {
                    self.leaves(&elem, base.saturating_add(i.saturating_mul(stride)), out);
                }
            }
            Type::Struct(id) => {
                let Some(st) = self.structs.get(id.0 as usize) else {
                    return;
                };
                for (m, off) in st.members.iter().zip(self.member_offsets(st)) {
                    self.leaves(&m.ty, base + off, out);
                }
            }
            _ => {}
        }
    }
}

/// One scalar component of a laid-out value.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Leaf {
    pub offset: u32,
    pub scalar: Scalar,
    /// Bytes it occupies in memory.
    pub bytes: u32,
}

/// The scalar types of a value of type `ty` in flattening order (see [`Layout::leaves`]).
pub fn flatten_type(shader: &Shader, ty: &Type) -> Vec<Scalar> {
    let mut leaves = Vec::new();
    Layout::new(shader, LayoutRule::Std430).leaves(ty, 0, &mut leaves);
    leaves.into_iter().map(|l| l.scalar).collect()
}

/// Where a variable's bytes live during a run.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Storage {
    /// The invocation's input slots (`shader_in`).
    Input,
    /// The invocation's output slots (`shader_out`).
    Output,
    /// The invocation's private memory (`function_temp`, `shader_temp`).
    Private,
    /// The workgroup's shared memory.
    Shared,
    /// The default uniform block ([`super::Resources::uniform_data`]).
    Uniform,
    /// The UBO at a binding (the whole buffer is the variable).
    Ubo { binding: u32 },
    /// The SSBO at a binding.
    Ssbo { binding: u32 },
    /// The push-constant bytes.
    PushConst,
    /// A texture, sampler or image (array): resources from `binding` on, one per element.
    Opaque { binding: u32 },
}

/// Where one variable is placed.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VarLayout {
    pub storage: Storage,
    /// Byte offset of the variable in its storage.
    pub offset: u32,
    /// Size in bytes (a runtime-sized array counts as empty).
    pub size: u32,
    pub rule: LayoutRule,
}

/// Places every variable of a shader:
/// - `shader_in` / `shader_out`: at `location × 16` bytes of the input or output slots; variables
///   without a location follow the highest located slot, in declaration order;
/// - `function_temp` and `shader_temp`: one private area per invocation, in declaration order;
/// - `shared`: the workgroup's shared memory from offset 0, in declaration order;
/// - `uniform` (non-opaque): the default uniform block, in declaration order;
/// - `ubo` / `ssbo`: offset 0 of the buffer at their binding (0 when unset); `push_const`:
///   offset 0 of the push constants;
/// - opaque uniforms: their binding (0 when unset).
///
/// Areas that are filled in declaration order align each variable to its alignment.
pub fn layout_variables(shader: &Shader) -> Vec<VarLayout> {
    let slot_end = |mode: Mode| {
        let slots = Layout::new(shader, LayoutRule::Slots);
        shader
            .variables
            .iter()
            .filter_map(|v| match v.location {
                Some(loc) if v.mode == mode => Some(
                    loc.saturating_mul(SLOT_BYTES)
                        .saturating_add(slots.size_align(&v.ty).0),
                ),
                _ => None,
            })
            .max()
            .unwrap_or(0)
    };
    // Next free byte of the areas filled in declaration order.
    let (mut next_in, mut next_out) = (slot_end(Mode::ShaderIn), slot_end(Mode::ShaderOut));
    let (mut next_private, mut next_shared, mut next_uniform) = (0, 0, 0);
    let mut layouts = Vec::with_capacity(shader.variables.len());
    for v in &shader.variables {
        let rule = LayoutRule::for_mode(v.mode);
        let (size, align) = Layout::new(shader, rule).size_align(&v.ty);
        let binding = v.binding.unwrap_or(0);
        let place = |next: &mut u32| {
            let offset = round_up(*next, align);
            *next = offset.saturating_add(size);
            offset
        };
        let (storage, offset) = match v.mode {
            _ if is_opaque_deep(&v.ty) => (Storage::Opaque { binding }, 0),
            Mode::ShaderIn => match v.location {
                Some(loc) => (Storage::Input, loc.saturating_mul(SLOT_BYTES)),
                None => (Storage::Input, place(&mut next_in)),
            },
            Mode::ShaderOut => match v.location {
                Some(loc) => (Storage::Output, loc.saturating_mul(SLOT_BYTES)),
                None => (Storage::Output, place(&mut next_out)),
            },
            Mode::FunctionTemp | Mode::ShaderTemp => (Storage::Private, place(&mut next_private)),
            Mode::Shared => (Storage::Shared, place(&mut next_shared)),
            Mode::Uniform => (Storage::Uniform, place(&mut next_uniform)),
            Mode::Ubo => (Storage::Ubo { binding }, 0),
            Mode::Ssbo => (Storage::Ssbo { binding }, 0),
            Mode::PushConst => (Storage::PushConst, 0),
        };
        layouts.push(VarLayout {
            storage,
            offset,
            size,
            rule,
        });
    }
    layouts
}

/// Whether a type is opaque or an array of opaque elements.
fn is_opaque_deep(ty: &Type) -> bool {
    match ty {
        Type::Array { elem, .. } => is_opaque_deep(elem),
        t => t.is_opaque(),
    }
}

/// Bytes an area must have to hold all variables placed in it.
pub fn storage_extent(layouts: &[VarLayout], storage: Storage) -> u32 {
    layouts
        .iter()
        .filter(|l| l.storage == storage)
        .map(|l| l.offset.saturating_add(l.size))
        .max()
        .unwrap_or(0)
}

/// Reads `bytes` little-endian bytes at `off`; `None` when out of range.
pub fn read_bytes(buf: &[u8], off: u64, bytes: u32) -> Option<u64> {
    let start = usize::try_from(off).ok()?;
    let slice = buf.get(start..start.checked_add(bytes as usize)?)?;
    Some(
        slice
            .iter()
            .rev()
            .fold(0u64, |acc, &b| (acc << 8) | b as u64),
    )
}

/// Writes the low `bytes` bytes of `v` little-endian at `off`; `None` when out of range.
pub fn write_bytes(buf: &mut [u8], off: u64, bytes: u32, v: u64) -> Option<()> {
    let start = usize::try_from(off).ok()?;
    let slice = buf.get_mut(start..start.checked_add(bytes as usize)?)?;
    for (i, b) in slice.iter_mut().enumerate() {
        *b = (v >> (8 * i)) as u8;
    }
    Some(())
}

/// Converts the raw bytes of a component read from memory into a register value.
pub fn from_memory(raw: u64, s: Scalar) -> u64 {
    if s.base == BaseType::Bool {
        (raw != 0) as u64
    } else {
        mask(raw, s.bits)
    }
}

/// Converts a register value into the bytes stored for a component (booleans become 0 or 1).
pub fn to_memory(v: u64, s: Scalar) -> u64 {
    if s.base == BaseType::Bool {
        v & 1
    } else {
        mask(v, s.bits)
    }
}

fn var_leaves(shader: &Shader, ty: &Type, layout: VarLayout, runtime_len: u32) -> Vec<Leaf> {
    let mut out = Vec::new();
    Layout {
        runtime_len,
        ..Layout::new(shader, layout.rule)
    }
    .leaves(ty, 0, &mut out);
    out
}

/// The leaves of a variable holding `count` components: its fixed part plus as many elements
/// of a runtime-sized array as the rest makes; `None` when no element count fits.
pub(crate) fn leaves_for_count(
    shader: &Shader,
    ty: &Type,
    layout: VarLayout,
    count: usize,
) -> Option<Vec<Leaf>> {
    let fixed = var_leaves(shader, ty, layout, 0);
    if fixed.len() == count {
        return Some(fixed);
    }
    let per = var_leaves(shader, ty, layout, 1).len() - fixed.len();
    let extra = count.checked_sub(fixed.len())?;
    if per == 0 || extra % per != 0 {
        return None;
    }
    Some(var_leaves(shader, ty, layout, (extra / per) as u32))
}

/// The leaves of a variable that fit in a buffer of `len` bytes: the fixed part, plus as many
/// elements of a runtime-sized array as fit.
pub(crate) fn leaves_fitting(shader: &Shader, ty: &Type, layout: VarLayout, len: u32) -> Vec<Leaf> {
    let end = |leaves: &[Leaf]| {
        leaves
            .iter()
            .map(|l| layout.offset + l.offset + l.bytes)
            .max()
            .unwrap_or(0)
    };
    let one = var_leaves(shader, ty, layout, 1);
    let fixed = var_leaves(shader, ty, layout, 0);
    if one.len() == fixed.len() || end(&one) > len {
        return fixed;
    }
    let stride = end(&var_leaves(shader, ty, layout, 2)) - end(&one);
    let extra = (len - end(&one)).checked_div(stride).unwrap_or(0);
    var_leaves(shader, ty, layout, 1 + extra)
}
