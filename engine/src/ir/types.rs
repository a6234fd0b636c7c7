//! Variable types, storage modes and the other small vocabularies of the IR.

use shrew_ops::BaseType;

/// The shape of an SSA value: bit size and component count. Values carry no base type; the
/// opcodes that read them say how to interpret the bits.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct ValType {
    pub bits: u8,
    pub comps: u8,
}

impl ValType {
    pub const fn new(bits: u8, comps: u8) -> ValType {
        ValType { bits, comps }
    }
    pub const fn scalar(bits: u8) -> ValType {
        ValType { bits, comps: 1 }
    }
    /// The shape of deref values (pointers into variables).
    pub const DEREF: ValType = ValType::scalar(32);
    pub const BOOL: ValType = ValType::scalar(1);
}

impl std::fmt::Display for ValType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.comps == 1 {
            write!(f, "{}", self.bits)
        } else {
            write!(f, "{}x{}", self.bits, self.comps)
        }
    }
}

/// A scalar type of a variable: base type and bit size.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Scalar {
    pub base: BaseType,
    pub bits: u8,
}

impl Scalar {
    pub const fn new(base: BaseType, bits: u8) -> Scalar {
        Scalar { base, bits }
    }
    pub const F32: Scalar = Scalar::new(BaseType::Float, 32);
    pub const I32: Scalar = Scalar::new(BaseType::Int, 32);
    pub const U32: Scalar = Scalar::new(BaseType::Uint, 32);
    pub const BOOL: Scalar = Scalar::new(BaseType::Bool, 1);

    /// Size in bytes in memory layouts (booleans take 4 bytes, as in GLSL's layouts).
    pub fn byte_size(self) -> u32 {
        if self.base == BaseType::Bool {
            4
        } else {
            self.bits as u32 / 8
        }
    }
}

/// Dimensionality of an image or texture.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Dim {
    D1,
    D2,
    D3,
    Cube,
    Rect,
    Buf,
    Ms,
    Subpass,
}

impl Dim {
    pub const ALL: [Dim; 8] = [
        Dim::D1,
        Dim::D2,
        Dim::D3,
        Dim::Cube,
        Dim::Rect,
        Dim::Buf,
        Dim::Ms,
        Dim::Subpass,
    ];

    /// The name used in IR text and in the `image_dim` index.
    pub fn name(self) -> &'static str {
        match self {
            Dim::D1 => "1d",
            Dim::D2 => "2d",
            Dim::D3 => "3d",
            Dim::Cube => "cube",
            Dim::Rect => "rect",
            Dim::Buf => "buf",
            Dim::Ms => "ms",
            Dim::Subpass => "subpass",
        }
    }

    pub fn from_name(name: &str) -> Option<Dim> {
        Dim::ALL.into_iter().find(|d| d.name() == name)
    }

    /// The value of this dimension in the `image_dim` index.
    pub fn index_value(self) -> u32 {
        Dim::ALL.iter().position(|d| *d == self).unwrap() as u32
    }

    /// Number of coordinate components, without the array layer.
    pub fn coord_components(self) -> u8 {
        match self {
            Dim::D1 | Dim::Buf => 1,
            Dim::D2 | Dim::Rect | Dim::Ms | Dim::Subpass => 2,
            Dim::D3 | Dim::Cube => 3,
        }
    }
}

/// The type of a variable.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Type {
    Scalar(Scalar),
    Vector(Scalar, u8),
    /// A column-major matrix of `cols` vectors of `rows` components.
    Matrix {
        elem: Scalar,
        cols: u8,
        rows: u8,
    },
    /// `len == 0` is a runtime-sized array (last member of an SSBO block). `stride == 0` means
    /// the natural stride of the element.
    Array {
        elem: Box<Type>,
        len: u32,
        stride: u32,
    },
    /// A struct declared in [`crate::ir::Shader::structs`].
    Struct(StructId),
    /// A storage image.
    Image {
        dim: Dim,
        arrayed: bool,
        base: BaseType,
    },
    /// A sampled texture (combined image and sampler, or a separate texture).
    Texture {
        dim: Dim,
        arrayed: bool,
        shadow: bool,
        base: BaseType,
    },
    /// A separate sampler.
    Sampler {
        shadow: bool,
    },
}

/// Index of a struct type in the shader's struct table.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StructId(pub u32);

/// A struct type: named members with optional explicit byte offsets (for UBO/SSBO layouts).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct StructType {
    pub name: String,
    pub members: Vec<Member>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Member {
    pub name: String,
    pub ty: Type,
    pub offset: Option<u32>,
}

impl Member {
    /// A member without an explicit offset.
    pub fn new(name: &str, ty: Type) -> Member {
        Member {
            name: name.to_string(),
            ty,
            offset: None,
        }
    }
}

impl Type {
    /// The shape of a value loaded from a variable of this type, if it is a scalar or vector.
    pub fn val_type(&self) -> Option<ValType> {
        match self {
            Type::Scalar(s) => Some(ValType::new(s.bits, 1)),
            Type::Vector(s, n) => Some(ValType::new(s.bits, *n)),
            _ => None,
        }
    }

    /// Whether a value of this type can be loaded or stored as a single SSA value.
    pub fn is_vector_or_scalar(&self) -> bool {
        self.val_type().is_some()
    }

    /// The element type reached by indexing (arrays, matrix columns, vector components).
    pub fn element(&self) -> Option<Type> {
        match self {
            Type::Array { elem, .. } => Some((**elem).clone()),
            Type::Matrix { elem, rows, .. } => Some(Type::Vector(*elem, *rows)),
            Type::Vector(s, _) => Some(Type::Scalar(*s)),
            _ => None,
        }
    }

    /// Number of elements an array index may select.
    pub fn element_count(&self) -> Option<u32> {
        match self {
            Type::Array { len, .. } => Some(*len),
            Type::Matrix { cols, .. } => Some(*cols as u32),
            Type::Vector(_, n) => Some(*n as u32),
            _ => None,
        }
    }

    pub fn is_opaque(&self) -> bool {
        matches!(
            self,
            Type::Image { .. } | Type::Texture { .. } | Type::Sampler { .. }
        )
    }

    /// Whether the type is opaque or an array (of arrays) of an opaque type.
    pub fn is_opaque_deep(&self) -> bool {
        self.innermost_element().0.is_opaque()
    }

    /// The element type of an array of arrays and how many of them it holds; a type that is not
    /// an array is its own single element. (An array of opaque types takes one binding per
    /// element.)
    pub fn innermost_element(&self) -> (&Type, u32) {
        match self {
            Type::Array { elem, len, .. } => {
                let (inner, count) = elem.innermost_element();
                (inner, len * count)
            }
            ty => (ty, 1),
        }
    }
}

/// Where a variable lives.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    ShaderIn,
    ShaderOut,
    Uniform,
    Ubo,
    Ssbo,
    Shared,
    PushConst,
    FunctionTemp,
    ShaderTemp,
    /// Read-only memory whose contents the shader gives: the variable's initializer
    /// ([`crate::ir::Variable::init`]), as Mesa's `nir_var_mem_constant`.
    Constant,
}

impl Mode {
    pub const ALL: [Mode; 10] = [
        Mode::ShaderIn,
        Mode::ShaderOut,
        Mode::Uniform,
        Mode::Ubo,
        Mode::Ssbo,
        Mode::Shared,
        Mode::PushConst,
        Mode::FunctionTemp,
        Mode::ShaderTemp,
        Mode::Constant,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Mode::ShaderIn => "shader_in",
            Mode::ShaderOut => "shader_out",
            Mode::Uniform => "uniform",
            Mode::Ubo => "ubo",
            Mode::Ssbo => "ssbo",
            Mode::Shared => "shared",
            Mode::PushConst => "push_const",
            Mode::FunctionTemp => "function_temp",
            Mode::ShaderTemp => "shader_temp",
            Mode::Constant => "constant",
        }
    }

    pub fn from_name(name: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|m| m.name() == name)
    }

    /// Whether the shader may write variables of this mode.
    pub fn is_writable(self) -> bool {
        !matches!(
            self,
            Mode::ShaderIn | Mode::Uniform | Mode::Ubo | Mode::PushConst | Mode::Constant
        )
    }

    /// The memory class of the intrinsic table that accesses to this mode belong to.
    pub fn mem_class(self) -> shrew_ops::MemClass {
        use shrew_ops::MemClass;
        match self {
            Mode::Ssbo => MemClass::SSBO,
            Mode::Shared => MemClass::SHARED,
            Mode::ShaderOut => MemClass::OUTPUT,
            _ => MemClass::NONE,
        }
    }
}

/// Interpolation of a fragment shader input.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum Interp {
    #[default]
    Smooth,
    Flat,
    NoPerspective,
}

impl Interp {
    pub fn name(self) -> &'static str {
        match self {
            Interp::Smooth => "smooth",
            Interp::Flat => "flat",
            Interp::NoPerspective => "noperspective",
        }
    }

    pub fn from_name(name: &str) -> Option<Interp> {
        [Interp::Smooth, Interp::Flat, Interp::NoPerspective]
            .into_iter()
            .find(|i| i.name() == name)
    }
}

/// Built-in variables that stay variables (outputs, mostly); built-in inputs are system-value
/// intrinsics instead.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Builtin {
    Position,
    PointSize,
    ClipDistance,
    CullDistance,
    FragDepth,
    SampleMask,
    Layer,
    ViewportIndex,
    TessLevelOuter,
    TessLevelInner,
}

impl Builtin {
    pub const ALL: [Builtin; 10] = [
        Builtin::Position,
        Builtin::PointSize,
        Builtin::ClipDistance,
        Builtin::CullDistance,
        Builtin::FragDepth,
        Builtin::SampleMask,
        Builtin::Layer,
        Builtin::ViewportIndex,
        Builtin::TessLevelOuter,
        Builtin::TessLevelInner,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Builtin::Position => "position",
            Builtin::PointSize => "point_size",
            Builtin::ClipDistance => "clip_distance",
            Builtin::CullDistance => "cull_distance",
            Builtin::FragDepth => "frag_depth",
            Builtin::SampleMask => "sample_mask",
            Builtin::Layer => "layer",
            Builtin::ViewportIndex => "viewport_index",
            Builtin::TessLevelOuter => "tess_level_outer",
            Builtin::TessLevelInner => "tess_level_inner",
        }
    }

    pub fn from_name(name: &str) -> Option<Builtin> {
        Builtin::ALL.into_iter().find(|b| b.name() == name)
    }
}

/// Pipeline stage of a shader.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Stage {
    Vertex,
    TessCtrl,
    TessEval,
    Geometry,
    Fragment,
    Compute,
}

impl Stage {
    pub const ALL: [Stage; 6] = [
        Stage::Vertex,
        Stage::TessCtrl,
        Stage::TessEval,
        Stage::Geometry,
        Stage::Fragment,
        Stage::Compute,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Stage::Vertex => "vertex",
            Stage::TessCtrl => "tess_ctrl",
            Stage::TessEval => "tess_eval",
            Stage::Geometry => "geometry",
            Stage::Fragment => "fragment",
            Stage::Compute => "compute",
        }
    }

    pub fn from_name(name: &str) -> Option<Stage> {
        Stage::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// Which texture operation a texture instruction performs.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum TexOp {
    /// Sample with implicit LOD (from derivatives).
    Tex,
    /// Sample with implicit LOD plus a bias.
    Txb,
    /// Sample at an explicit LOD.
    Txl,
    /// Sample with explicit derivatives.
    Txd,
    /// Fetch a texel by integer coordinates.
    Txf,
    /// Fetch a sample of a multisampled texture.
    TxfMs,
    /// Query the size of a mip level.
    Txs,
    /// Query the LOD that would be used.
    Lod,
    /// Gather one component of the four texels of a bilinear footprint.
    Tg4,
    /// Query the number of mip levels.
    QueryLevels,
}

impl TexOp {
    pub const ALL: [TexOp; 10] = [
        TexOp::Tex,
        TexOp::Txb,
        TexOp::Txl,
        TexOp::Txd,
        TexOp::Txf,
        TexOp::TxfMs,
        TexOp::Txs,
        TexOp::Lod,
        TexOp::Tg4,
        TexOp::QueryLevels,
    ];

    pub fn name(self) -> &'static str {
        match self {
            TexOp::Tex => "tex",
            TexOp::Txb => "txb",
            TexOp::Txl => "txl",
            TexOp::Txd => "txd",
            TexOp::Txf => "txf",
            TexOp::TxfMs => "txf_ms",
            TexOp::Txs => "txs",
            TexOp::Lod => "lod",
            TexOp::Tg4 => "tg4",
            TexOp::QueryLevels => "query_levels",
        }
    }

    pub fn from_name(name: &str) -> Option<TexOp> {
        TexOp::ALL.into_iter().find(|t| t.name() == name)
    }

    /// Whether the operation computes an implicit LOD from screen-space derivatives.
    pub fn uses_implicit_derivatives(self) -> bool {
        matches!(self, TexOp::Tex | TexOp::Txb | TexOp::Lod)
    }
}

/// The role of a texture instruction's source.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum TexSrc {
    Coord,
    Projector,
    Comparator,
    Offset,
    Bias,
    Lod,
    MinLod,
    Ddx,
    Ddy,
    MsIndex,
    TextureDeref,
    SamplerDeref,
    TextureOffset,
    SamplerOffset,
}

impl TexSrc {
    pub const ALL: [TexSrc; 14] = [
        TexSrc::Coord,
        TexSrc::Projector,
        TexSrc::Comparator,
        TexSrc::Offset,
        TexSrc::Bias,
        TexSrc::Lod,
        TexSrc::MinLod,
        TexSrc::Ddx,
        TexSrc::Ddy,
        TexSrc::MsIndex,
        TexSrc::TextureDeref,
        TexSrc::SamplerDeref,
        TexSrc::TextureOffset,
        TexSrc::SamplerOffset,
    ];

    pub fn name(self) -> &'static str {
        match self {
            TexSrc::Coord => "coord",
            TexSrc::Projector => "projector",
            TexSrc::Comparator => "comparator",
            TexSrc::Offset => "offset",
            TexSrc::Bias => "bias",
            TexSrc::Lod => "lod",
            TexSrc::MinLod => "min_lod",
            TexSrc::Ddx => "ddx",
            TexSrc::Ddy => "ddy",
            TexSrc::MsIndex => "ms_index",
            TexSrc::TextureDeref => "texture_deref",
            TexSrc::SamplerDeref => "sampler_deref",
            TexSrc::TextureOffset => "texture_offset",
            TexSrc::SamplerOffset => "sampler_offset",
        }
    }

    pub fn from_name(name: &str) -> Option<TexSrc> {
        TexSrc::ALL.into_iter().find(|t| t.name() == name)
    }
}

/// Names of base types as they appear in type names (`f32`, `i8`, `u64`, `bool`).
pub fn scalar_name(s: Scalar) -> String {
    match s.base {
        BaseType::Float => format!("f{}", s.bits),
        BaseType::Int => format!("i{}", s.bits),
        BaseType::Uint => format!("u{}", s.bits),
        BaseType::Bool => "bool".to_string(),
    }
}

/// Parses a scalar type name.
pub fn parse_scalar(name: &str) -> Option<Scalar> {
    if name == "bool" {
        return Some(Scalar::BOOL);
    }
    let (base, bits) = match name.as_bytes().first()? {
        b'f' => (BaseType::Float, &name[1..]),
        b'i' => (BaseType::Int, &name[1..]),
        b'u' => (BaseType::Uint, &name[1..]),
        _ => return None,
    };
    let bits: u8 = bits.parse().ok()?;
    (base.allowed_bit_sizes().contains(&bits) && bits != 1).then_some(Scalar::new(base, bits))
}
