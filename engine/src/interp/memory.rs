//! Memory layouts of variables and the byte-level reads and writes the interpreter does on them.
//!
//! Two layout rules exist. [`LayoutRule::Std430`] is used for every mode except shader inputs
//! and outputs: explicit struct member offsets and array strides win when the type gives them,
//! everything else follows std430 (a scalar is aligned to its size, a 2-vector to twice that, a
//! 3- or 4-vector (or wider) to four times that; arrays and structs as in std430; booleans take
//! 4 bytes). [`LayoutRule::Slots`] is used for `shader_in`/`shader_out`: values live in 16-byte
//! vec4 slots as locations do, every component of up to 32 bits takes 4 bytes and a 64-bit one 8,
//! and every vector, matrix column, array element and struct member starts a new slot.
//!
//! Layouts are computed once per struct type (structs may only contain structs declared before
//! them) and iteratively along chains of nested arrays, so laying out a type takes time linear in
//! its description. A type has no layout, and using it is an error, when:
//! - arrays, matrices, vectors and structs nest deeper than [`MAX_TYPE_DEPTH`] levels;
//! - it, an array stride or a struct member's end is larger than [`MAX_LAYOUT_BYTES`];
//! - an explicit member offset is below the end of the previous member (members overlap or go
//!   backwards), or an explicit array stride is smaller than the element. Explicit offsets and
//!   strides need not be aligned: every access is bytewise, as with scalar block layout;
//! - a struct refers to a struct not declared before it.
//!
//! Listing the components of a value ([`Layout::leaves`]) stops with an error past
//! [`MAX_COMPONENTS`] components or [`MAX_LIST_STEPS`] steps.

use super::InterpError;
use crate::ir::{Mode, Scalar, Shader, StructId, StructType, Type};
use serde::{Deserialize, Serialize};
use shrew_ops::BaseType;
use shrew_ops::eval::mask;

/// Deepest nesting of arrays, matrices, vectors and structs in a laid-out type (a scalar has
/// depth 0, `f32[4][4]` depth 2, a struct one more than its deepest member).
pub const MAX_TYPE_DEPTH: u32 = 256;

/// Largest size in bytes of a laid-out type, of an array stride, and of the end of a variable in
/// its storage (so byte offsets always fit the 32 bits of a deref value).
pub const MAX_LAYOUT_BYTES: u32 = 1 << 30;

/// Most blocks in an array of blocks, and most variables of a shader: what a deref value holds.
pub const MAX_BLOCKS: u32 = 1 << 15;
pub const MAX_VARIABLES: usize = 1 << 16;

/// Most scalar components [`Layout::leaves`] lists for one value.
pub const MAX_COMPONENTS: usize = 1 << 24;

/// Most steps (components listed, array elements and struct members visited) [`Layout::leaves`]
/// takes for one value.
pub const MAX_LIST_STEPS: usize = 1 << 26;

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

/// Size, alignment, nesting depth and component count of a type under one rule.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TypeInfo {
    /// Bytes, at most [`MAX_LAYOUT_BYTES`]; a runtime-sized array has size 0. Opaque types
    /// (textures, samplers, images) count as one byte so that offsets into arrays of them are
    /// element indices.
    pub size: u32,
    /// Alignment in bytes (at least 1).
    pub align: u32,
    /// Nesting depth, at most [`MAX_TYPE_DEPTH`].
    pub depth: u32,
    /// Scalar components, runtime-sized arrays counting as empty (saturating).
    pub comps: u64,
    /// Whether a runtime-sized array is part of it.
    pub runtime: bool,
}

impl TypeInfo {
    /// Whether listing the components finds any when runtime-sized arrays have `runtime_len`
    /// elements.
    fn has_leaves(&self, runtime_len: u32) -> bool {
        self.comps > 0 || (self.runtime && runtime_len > 0)
    }
}

/// The layout of one struct type.
#[derive(Clone, Debug)]
struct StructLayout {
    info: TypeInfo,
    /// Per member: its byte offset and its type's info.
    members: Vec<(u32, TypeInfo)>,
}

fn round_up(x: u64, align: u32) -> u64 {
    x.next_multiple_of(align.max(1) as u64)
}

fn too_large(what: &str, bytes: u64) -> String {
    format!("{what} of {bytes} bytes is larger than the limit of {MAX_LAYOUT_BYTES} bytes")
}

fn too_deep() -> String {
    format!("types are nested deeper than {MAX_TYPE_DEPTH} levels")
}

/// Computes sizes, alignments and offsets of a shader's types under one rule. Creating one lays
/// out every struct type once.
pub struct Layout<'s> {
    structs: &'s [StructType],
    rule: LayoutRule,
    /// Per struct type in declaration order: its layout, or why it has none.
    table: Vec<Result<StructLayout, String>>,
}

impl<'s> Layout<'s> {
    /// The layout of a shader's types under `rule`.
    pub fn new(shader: &'s Shader, rule: LayoutRule) -> Layout<'s> {
        let mut layout = Layout {
            structs: &shader.structs,
            rule,
            table: Vec::with_capacity(shader.structs.len()),
        };
        for st in &shader.structs {
            // Members can only see the structs laid out so far.
            let entry = layout.struct_layout(st);
            layout.table.push(entry);
        }
        layout
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

    /// Size, alignment, depth and components of a type, or why it has no layout.
    pub fn info(&self, ty: &Type) -> Result<TypeInfo, String> {
        let chain = array_chain(ty)?;
        let mut info = self.base_info(chain.inner)?;
        for &(len, stride) in chain.levels.iter().rev() {
            info = self.array_info(&info, len, stride)?;
        }
        Ok(info)
    }

    /// Distance between consecutive elements of an array, matrix (columns) or vector
    /// (components).
    pub fn array_stride(&self, ty: &Type) -> Result<u32, String> {
        match ty {
            Type::Vector(s, _) => Ok(self.comp_bytes(*s)),
            Type::Array { elem, stride, .. } => self.stride(&self.info(elem)?, *stride),
            Type::Matrix { elem, rows, .. } => {
                self.stride(&self.base_info(&Type::Vector(*elem, *rows))?, 0)
            }
            _ => Err("a type without elements has no stride".into()),
        }
    }

    /// Byte offsets of a struct's members.
    pub fn member_offsets(&self, id: StructId) -> Result<Vec<u32>, String> {
        Ok(self
            .struct_entry(id)?
            .members
            .iter()
            .map(|&(off, _)| off)
            .collect())
    }

    /// Appends every scalar component of a value of type `ty` placed at `base`, in flattening
    /// order (array elements, matrix columns, vector components, struct members in order).
    /// Opaque types contribute nothing, runtime-sized arrays `runtime_len` elements. Fails when
    /// the type has no layout, a component would lie past 4 GiB, or listing exceeds
    /// [`MAX_COMPONENTS`] components or [`MAX_LIST_STEPS`] steps.
    pub fn leaves(
        &self,
        ty: &Type,
        base: u32,
        runtime_len: u32,
        out: &mut Vec<Leaf>,
    ) -> Result<(), String> {
        let info = self.info(ty)?;
        if info.comps > (MAX_COMPONENTS - out.len().min(MAX_COMPONENTS)) as u64 {
            return Err(too_many_components());
        }
        if !info.has_leaves(runtime_len) {
            return Ok(());
        }
        Lister {
            layout: self,
            runtime_len,
            out,
            steps: 0,
        }
        .visit(ty, base as u64)
    }

    fn struct_entry(&self, id: StructId) -> Result<&StructLayout, String> {
        let i = id.0 as usize;
        match self.table.get(i) {
            Some(entry) => entry.as_ref().map_err(Clone::clone),
            None => Err(match self.structs.get(i) {
                Some(st) => format!("struct {} is used before it is declared", st.name),
                None => format!("struct {} is not declared", id.0),
            }),
        }
    }

    /// The info of a type, computed directly unless it is an array.
    fn base_info(&self, ty: &Type) -> Result<TypeInfo, String> {
        let info = |size: u32, align: u32, depth: u32, comps: u64| TypeInfo {
            size,
            align: align.max(1),
            depth,
            comps,
            runtime: false,
        };
        Ok(match (self.rule, ty) {
            (_, Type::Image { .. } | Type::Texture { .. } | Type::Sampler { .. }) => {
                info(1, 1, 0, 0)
            }
            (LayoutRule::Std430, Type::Scalar(s)) => info(s.byte_size(), s.byte_size(), 0, 1),
            (LayoutRule::Std430, Type::Vector(s, n)) => {
                let (b, n) = (s.byte_size(), *n as u32);
                info(b * n, b * n.clamp(1, 4).next_power_of_two(), 1, n as u64)
            }
            (LayoutRule::Slots, Type::Scalar(_)) => info(SLOT_BYTES, SLOT_BYTES, 0, 1),
            (LayoutRule::Slots, Type::Vector(s, n)) => {
                let bytes = round_up(*n as u64 * self.comp_bytes(*s) as u64, SLOT_BYTES);
                info(bytes as u32, SLOT_BYTES, 1, *n as u64)
            }
            (_, Type::Matrix { elem, cols, rows }) => {
                let column = self.base_info(&Type::Vector(*elem, *rows))?;
                let stride = self.stride(&column, 0)?;
                let size = stride as u64 * *cols as u64;
                if size > MAX_LAYOUT_BYTES as u64 {
                    return Err(too_large("a matrix", size));
                }
                info(size as u32, column.align, 2, *cols as u64 * *rows as u64)
            }
            (_, Type::Struct(id)) => self.struct_entry(*id)?.info,
            (_, Type::Array { .. }) => self.info(ty)?,
        })
    }

    /// The stride of an array of `elem` with an explicit stride (0: natural).
    fn stride(&self, elem: &TypeInfo, explicit: u32) -> Result<u32, String> {
        let stride = if explicit == 0 || self.rule != LayoutRule::Std430 {
            round_up(elem.size as u64, elem.align)
        } else if explicit < elem.size {
            return Err(format!(
                "an explicit array stride of {explicit} bytes is smaller than the {}-byte element",
                elem.size
            ));
        } else {
            explicit as u64
        };
        if stride > MAX_LAYOUT_BYTES as u64 {
            return Err(too_large("an array stride", stride));
        }
        Ok(stride as u32)
    }

    /// The info of an array of `len` elements (0: runtime-sized) of `elem`.
    fn array_info(&self, elem: &TypeInfo, len: u32, stride: u32) -> Result<TypeInfo, String> {
        let stride = self.stride(elem, stride)?;
        let size = stride as u64 * len as u64;
        if size > MAX_LAYOUT_BYTES as u64 {
            return Err(format!(
                "an array of {len} elements {stride} bytes apart is {size} bytes, larger than \
                 the limit of {MAX_LAYOUT_BYTES} bytes"
            ));
        }
        if elem.depth >= MAX_TYPE_DEPTH {
            return Err(too_deep());
        }
        Ok(TypeInfo {
            size: size as u32,
            align: elem.align,
            depth: elem.depth + 1,
            comps: elem.comps.saturating_mul(len as u64),
            runtime: elem.runtime || len == 0,
        })
    }

    /// Lays out a struct whose member types only refer to structs already in the table.
    fn struct_layout(&self, st: &StructType) -> Result<StructLayout, String> {
        let mut members = Vec::with_capacity(st.members.len());
        let (mut end, mut align, mut depth) = (0u64, 1u32, 0u32);
        let (mut comps, mut runtime) = (0u64, false);
        for m in &st.members {
            let info = self.info(&m.ty)?;
            let offset = match (self.rule, m.offset) {
                (LayoutRule::Std430, Some(off)) if (off as u64) < end => {
                    return Err(format!(
                        "member {} of struct {} at offset {off} overlaps the previous member, \
                         which ends at {end}",
                        m.name, st.name
                    ));
                }
                (LayoutRule::Std430, Some(off)) => off as u64,
                _ => round_up(end, info.align),
            };
            end = offset + info.size as u64;
            if end > MAX_LAYOUT_BYTES as u64 {
                return Err(format!(
                    "member {} of struct {} ends at byte {end}, past the limit of \
                     {MAX_LAYOUT_BYTES} bytes",
                    m.name, st.name
                ));
            }
            members.push((offset as u32, info));
            align = align.max(info.align);
            depth = depth.max(info.depth);
            comps = comps.saturating_add(info.comps);
            runtime |= info.runtime;
        }
        let size = round_up(end, align);
        if size > MAX_LAYOUT_BYTES as u64 {
            return Err(too_large(&format!("struct {}", st.name), size));
        }
        if depth >= MAX_TYPE_DEPTH {
            return Err(format!("struct {}: {}", st.name, too_deep()));
        }
        Ok(StructLayout {
            info: TypeInfo {
                size: size as u32,
                align,
                depth: depth + 1,
                comps,
                runtime,
            },
            members,
        })
    }
}

/// A chain of nested arrays: `(len, explicit stride)` of each level, outermost first, and the
/// type inside them.
struct ArrayChain<'t> {
    levels: Vec<(u32, u32)>,
    inner: &'t Type,
}

/// Peels the arrays off a type; fails past [`MAX_TYPE_DEPTH`] levels without walking further.
fn array_chain(ty: &Type) -> Result<ArrayChain<'_>, String> {
    let mut levels = Vec::new();
    let mut inner = ty;
    while let Type::Array { elem, len, stride } = inner {
        if levels.len() >= MAX_TYPE_DEPTH as usize {
            return Err(too_deep());
        }
        levels.push((*len, *stride));
        inner = elem;
    }
    Ok(ArrayChain { levels, inner })
}

fn too_many_components() -> String {
    format!("the value has more than {MAX_COMPONENTS} components")
}

/// Lists the leaves of a value whose type has a layout (so recursion is at most
/// [`MAX_TYPE_DEPTH`] deep).
struct Lister<'a, 's> {
    layout: &'a Layout<'s>,
    runtime_len: u32,
    out: &'a mut Vec<Leaf>,
    steps: usize,
}

impl Lister<'_, '_> {
    fn step(&mut self, n: usize) -> Result<(), String> {
        self.steps += n;
        if self.steps > MAX_LIST_STEPS {
            return Err(format!(
                "listing the components of the value takes more than {MAX_LIST_STEPS} steps"
            ));
        }
        Ok(())
    }

    /// Pushes `n` consecutive components of `s` from `base` on.
    fn push(&mut self, base: u64, s: Scalar, n: u32) -> Result<(), String> {
        let bytes = self.layout.comp_bytes(s);
        if self.out.len() + n as usize > MAX_COMPONENTS {
            return Err(too_many_components());
        }
        self.step(n as usize)?;
        for c in 0..n as u64 {
            let offset = u32::try_from(base + c * bytes as u64)
                .map_err(|_| "a component lies past 4 GiB".to_string())?;
            self.out.push(Leaf {
                offset,
                scalar: s,
                bytes,
            });
        }
        Ok(())
    }

    fn visit(&mut self, ty: &Type, base: u64) -> Result<(), String> {
        match ty {
            Type::Scalar(s) => self.push(base, *s, 1),
            Type::Vector(s, n) => self.push(base, *s, *n as u32),
            Type::Matrix { elem, cols, rows } => {
                let stride = self.layout.array_stride(ty)? as u64;
                for c in 0..*cols as u64 {
                    self.push(base + c * stride, *elem, *rows as u32)?;
                }
                Ok(())
            }
            Type::Array { .. } => {
                let chain = array_chain(ty)?;
                let mut info = self.layout.base_info(chain.inner)?;
                if !info.has_leaves(self.runtime_len) {
                    return Ok(());
                }
                // (element count, stride) per level, computed innermost first.
                let mut dims = Vec::with_capacity(chain.levels.len());
                for &(len, stride) in chain.levels.iter().rev() {
                    let count = if len == 0 { self.runtime_len } else { len };
                    dims.push((count, self.layout.stride(&info, stride)? as u64));
                    info = self.layout.array_info(&info, len, stride)?;
                }
                dims.reverse();
                self.visit_dims(&dims, chain.inner, base)
            }
            Type::Struct(id) => {
                let st = self.layout.struct_entry(*id)?;
                let structs = self.layout.structs;
                for (m, &(off, info)) in structs[id.0 as usize].members.iter().zip(&st.members) {
                    self.step(1)?;
                    if info.has_leaves(self.runtime_len) {
                        self.visit(&m.ty, base + off as u64)?;
                    }
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Visits the elements of nested arrays with `(count, stride)` per level, outermost first.
    fn visit_dims(&mut self, dims: &[(u32, u64)], inner: &Type, base: u64) -> Result<(), String> {
        let Some((&(count, stride), rest)) = dims.split_first() else {
            return self.visit(inner, base);
        };
        for i in 0..count as u64 {
            self.step(1)?;
            self.visit_dims(rest, inner, base + i * stride)?;
        }
        Ok(())
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

/// The scalar types of a value of type `ty` in flattening order (see [`Layout::leaves`]), or
/// why they cannot be listed.
pub fn try_flatten_type(shader: &Shader, ty: &Type) -> Result<Vec<Scalar>, InterpError> {
    let mut leaves = Vec::new();
    Layout::new(shader, LayoutRule::Std430)
        .leaves(ty, 0, 0, &mut leaves)
        .map_err(|e| InterpError::Setup(format!("{}: {e}", shader.type_name(ty))))?;
    Ok(leaves.into_iter().map(|l| l.scalar).collect())
}

/// The scalar types of a value of type `ty` in flattening order; empty when
/// [`try_flatten_type`] fails.
pub fn flatten_type(shader: &Shader, ty: &Type) -> Vec<Scalar> {
    try_flatten_type(shader, ty).unwrap_or_default()
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
    /// The shader's constant data: the `constant` variables ([`constant_data`]).
    Constant,
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
/// - `constant`: the shader's constant data, in declaration order;
/// - `shared`: the workgroup's shared memory from offset 0, in declaration order;
/// - `uniform` (non-opaque): the default uniform block, in declaration order;
/// - `ubo` / `ssbo`: offset 0 of the buffer at their binding (0 when unset), or for an array of
///   blocks, element `i` at offset 0 of the buffer at `binding + i`; `push_const`: offset 0 of
///   the push constants;
/// - opaque uniforms: their binding (0 when unset).
///
/// Areas that are filled in declaration order align each variable to its alignment. Fails when a
/// variable's type has no layout or the variable would end past [`MAX_LAYOUT_BYTES`] of its
/// storage.
pub fn layout_variables(shader: &Shader) -> Result<Vec<VarLayout>, InterpError> {
    place_variables(
        shader,
        &Layout::new(shader, LayoutRule::Std430),
        &Layout::new(shader, LayoutRule::Slots),
    )
}

/// [`layout_variables`] with the shader's layouts under both rules already computed.
pub(crate) fn place_variables(
    shader: &Shader,
    std430: &Layout,
    slots: &Layout,
) -> Result<Vec<VarLayout>, InterpError> {
    let fail = |name: &str, e: String| InterpError::Setup(format!("@{name}: {e}"));
    if shader.variables.len() > MAX_VARIABLES {
        return Err(InterpError::Setup(format!(
            "{} variables; at most {MAX_VARIABLES} are supported",
            shader.variables.len()
        )));
    }
    let infos = shader
        .variables
        .iter()
        .map(|v| {
            let layout = match LayoutRule::for_mode(v.mode) {
                LayoutRule::Std430 => std430,
                LayoutRule::Slots => slots,
            };
            layout.info(v.buffer_type()).map_err(|e| fail(&v.name, e))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let slot_end = |mode: Mode| {
        shader
            .variables
            .iter()
            .zip(&infos)
            .filter_map(|(v, info)| match v.location {
                Some(loc) if v.mode == mode => {
                    Some(loc as u64 * SLOT_BYTES as u64 + info.size as u64)
                }
                _ => None,
            })
            .max()
            .unwrap_or(0)
    };
    // Next free byte of the areas filled in declaration order.
    let (mut next_in, mut next_out) = (slot_end(Mode::ShaderIn), slot_end(Mode::ShaderOut));
    let (mut next_private, mut next_shared, mut next_uniform, mut next_constant) = (0, 0, 0, 0);
    let mut layouts = Vec::with_capacity(shader.variables.len());
    for (v, info) in shader.variables.iter().zip(&infos) {
        let binding = v.buffer_binding();
        let place = |next: &mut u64| {
            let offset = round_up(*next, info.align);
            *next = offset + info.size as u64;
            offset
        };
        let located = |loc: u32| loc as u64 * SLOT_BYTES as u64;
        let (storage, offset) = match v.mode {
            _ if v.ty.is_opaque_deep() => (Storage::Opaque { binding }, 0),
            Mode::ShaderIn => match v.location {
                Some(loc) => (Storage::Input, located(loc)),
                None => (Storage::Input, place(&mut next_in)),
            },
            Mode::ShaderOut => match v.location {
                Some(loc) => (Storage::Output, located(loc)),
                None => (Storage::Output, place(&mut next_out)),
            },
            Mode::FunctionTemp | Mode::ShaderTemp => (Storage::Private, place(&mut next_private)),
            Mode::Shared => (Storage::Shared, place(&mut next_shared)),
            Mode::Uniform => (Storage::Uniform, place(&mut next_uniform)),
            Mode::Ubo => (Storage::Ubo { binding }, 0),
            Mode::Ssbo => (Storage::Ssbo { binding }, 0),
            Mode::PushConst => (Storage::PushConst, 0),
            Mode::Constant => (Storage::Constant, place(&mut next_constant)),
        };
        if let Type::Array { len, .. } = v.ty
            && v.array_of_blocks
            && len > MAX_BLOCKS
        {
            return Err(fail(
                &v.name,
                format!("an array of {len} blocks; at most {MAX_BLOCKS} are supported"),
            ));
        }
        let end = offset + info.size as u64;
        if end > MAX_LAYOUT_BYTES as u64 {
            return Err(fail(
                &v.name,
                format!(
                    "placed at byte {offset} of its storage, it ends past the limit of \
                     {MAX_LAYOUT_BYTES} bytes"
                ),
            ));
        }
        layouts.push(VarLayout {
            storage,
            offset: offset as u32,
            size: info.size,
            rule: LayoutRule::for_mode(v.mode),
        });
    }
    Ok(layouts)
}

/// Whether a type is opaque or an array of opaque elements.
/// The shader's constant data: every `constant` variable's initializer written at the place
/// `layouts` (from [`layout_variables`]) gives it. `load_constant` reads these bytes; a backend
/// uploads them with the shader.
pub fn constant_data(shader: &Shader, layouts: &[VarLayout]) -> Result<Vec<u8>, InterpError> {
    let layout = Layout::new(shader, LayoutRule::Std430);
    let mut data = vec![0; storage_extent(layouts, Storage::Constant) as usize];
    for (v, placed) in shader.variables.iter().zip(layouts) {
        if placed.storage != Storage::Constant {
            continue;
        }
        let fail = |e: String| InterpError::Setup(format!("@{}: {e}", v.name));
        let leaves = var_leaves(&layout, &v.ty, 0).map_err(fail)?;
        let init = v.init.as_deref().unwrap_or_default();
        if init.len() != leaves.len() {
            return Err(fail(format!(
                "{} initializer values for {} components",
                init.len(),
                leaves.len()
            )));
        }
        for (leaf, &value) in leaves.iter().zip(init) {
            let at = placed.offset as u64 + leaf.offset as u64;
            write_bytes(&mut data, at, leaf.bytes, to_memory(value, leaf.scalar))
                .ok_or_else(|| fail("the initializer lies outside the variable".into()))?;
        }
    }
    Ok(data)
}

/// Bytes an area must have to hold all variables placed in it.
pub fn storage_extent(layouts: &[VarLayout], storage: Storage) -> u32 {
    layouts
        .iter()
        .filter(|l| l.storage == storage)
        .map(|l| l.offset + l.size)
        .max()
        .unwrap_or(0)
}

/// Zeroes an invocation's memory area. The small areas most invocations have are cleared a
/// word at a time: `fill`'s call to `memset` costs more than the clearing itself there.
pub fn zero(buf: &mut [u8]) {
    if buf.len() > 512 {
        buf.fill(0);
        return;
    }
    let mut words = buf.chunks_exact_mut(8);
    for word in &mut words {
        word.copy_from_slice(&[0; 8]);
    }
    for byte in words.into_remainder() {
        *byte = 0;
    }
}

/// Reads `bytes` little-endian bytes at `off`; `None` when out of range.
pub fn read_bytes(buf: &[u8], off: u64, bytes: u32) -> Option<u64> {
    let start = usize::try_from(off).ok()?;
    let slice = buf.get(start..start.checked_add(bytes as usize)?)?;
    Some(match *slice {
        [a, b, c, d] => u32::from_le_bytes([a, b, c, d]) as u64,
        [a, b, c, d, e, f, g, h] => u64::from_le_bytes([a, b, c, d, e, f, g, h]),
        _ => slice
            .iter()
            .rev()
            .fold(0u64, |acc, &b| (acc << 8) | b as u64),
    })
}

/// Writes the low `bytes` bytes of `v` little-endian at `off`; `None` when out of range.
pub fn write_bytes(buf: &mut [u8], off: u64, bytes: u32, v: u64) -> Option<()> {
    let start = usize::try_from(off).ok()?;
    let slice = buf.get_mut(start..start.checked_add(bytes as usize)?)?;
    if let Ok(word) = <&mut [u8; 4]>::try_from(&mut *slice) {
        *word = (v as u32).to_le_bytes();
    } else if let Ok(word) = <&mut [u8; 8]>::try_from(&mut *slice) {
        *word = v.to_le_bytes();
    } else {
        for (i, b) in slice.iter_mut().enumerate() {
            *b = (v >> (8 * i)) as u8;
        }
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

/// The leaves of a value of type `ty` with `runtime_len` elements in runtime-sized arrays.
fn var_leaves(layout: &Layout, ty: &Type, runtime_len: u32) -> Result<Vec<Leaf>, String> {
    let mut out = Vec::new();
    layout.leaves(ty, 0, runtime_len, &mut out)?;
    Ok(out)
}

/// End of the last byte of some leaves.
fn leaves_end(leaves: &[Leaf]) -> u64 {
    leaves
        .iter()
        .map(|l| l.offset as u64 + l.bytes as u64)
        .max()
        .unwrap_or(0)
}

/// The leaves of a value of type `ty` holding `count` components: its fixed part plus as many
/// elements of a runtime-sized array as the rest makes.
pub(crate) fn leaves_for_count(
    layout: &Layout,
    ty: &Type,
    count: usize,
) -> Result<Vec<Leaf>, String> {
    let fixed = var_leaves(layout, ty, 0)?;
    if fixed.len() == count {
        return Ok(fixed);
    }
    let per = var_leaves(layout, ty, 1)?.len() - fixed.len();
    match count.checked_sub(fixed.len()) {
        Some(extra) if per != 0 && extra % per == 0 => {
            let elements = u32::try_from(extra / per).map_err(|_| too_many_components())?;
            var_leaves(layout, ty, elements)
        }
        _ => Err(format!(
            "the type has {} components, got {count}",
            fixed.len()
        )),
    }
}

/// The leaves of a value of type `ty` that fit in `len` bytes: the fixed part, plus as many
/// elements of a runtime-sized array as fit.
pub(crate) fn leaves_fitting(layout: &Layout, ty: &Type, len: u64) -> Result<Vec<Leaf>, String> {
    let fixed = var_leaves(layout, ty, 0)?;
    let one = var_leaves(layout, ty, 1)?;
    let one_end = leaves_end(&one);
    if one.len() == fixed.len() || one_end > len {
        return Ok(fixed);
    }
    let stride = leaves_end(&var_leaves(layout, ty, 2)?).saturating_sub(one_end);
    let extra = (len - one_end).checked_div(stride).unwrap_or(0);
    let elements = u32::try_from(1 + extra).map_err(|_| too_many_components())?;
    var_leaves(layout, ty, elements)
}
