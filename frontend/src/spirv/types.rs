//! SPIR-V types and their IR counterparts.

use super::module::{Module, id, literal};
use super::{Inst, Result, SpirvError, UniqueNames};
use rspirv::dr::Operand;
use rspirv::spirv::{Decoration, Op, StorageClass, Word};
use shrew_engine::ir::{Dim, Member, Scalar, Shader, StructId, StructType, Type, ValType};
use shrew_engine::ops::BaseType;
use std::collections::HashMap;

/// A SPIR-V type, with ids referring to other types.
#[derive(Clone, Debug, PartialEq)]
pub enum SpvType {
    Void,
    Bool,
    Int {
        bits: u8,
        signed: bool,
    },
    Float {
        bits: u8,
    },
    Vector {
        elem: Word,
        n: u8,
    },
    Matrix {
        col: Word,
        cols: u8,
    },
    /// `len` is the id of the length constant.
    Array {
        elem: Word,
        len: Word,
    },
    RuntimeArray {
        elem: Word,
    },
    Struct {
        members: Vec<Word>,
    },
    Pointer {
        storage: StorageClass,
        pointee: Word,
    },
    Image(ImageType),
    SampledImage {
        image: Word,
    },
    Sampler,
    Function,
}

#[derive(Copy, Clone, Debug, PartialEq)]
pub struct ImageType {
    pub sampled_type: Word,
    pub dim: Dim,
    pub depth: bool,
    pub arrayed: bool,
    /// `Sampled` operand 2: a storage image.
    pub storage: bool,
}

impl SpvType {
    pub fn is_type_op(op: Op) -> bool {
        matches!(
            op,
            Op::TypeVoid
                | Op::TypeBool
                | Op::TypeInt
                | Op::TypeFloat
                | Op::TypeVector
                | Op::TypeMatrix
                | Op::TypeArray
                | Op::TypeRuntimeArray
                | Op::TypeStruct
                | Op::TypePointer
                | Op::TypeImage
                | Op::TypeSampledImage
                | Op::TypeSampler
                | Op::TypeFunction
                | Op::TypeForwardPointer
                | Op::TypeOpaque
                | Op::TypeEvent
                | Op::TypeDeviceEvent
                | Op::TypeReserveId
                | Op::TypeQueue
                | Op::TypePipe
        )
    }

    pub fn read(inst: &Inst, m: &Module) -> Result<SpvType> {
        let small = |v: u32, what: &str| {
            u8::try_from(v).map_err(|_| SpirvError::malformed(format!("{what} {v} is too large")))
        };
        Ok(match inst.inst.class.opcode {
            Op::TypeVoid => SpvType::Void,
            Op::TypeBool => SpvType::Bool,
            Op::TypeInt => {
                let bits = small(literal(inst, 0)?, "an integer width")?;
                if ![8, 16, 32, 64].contains(&bits) {
                    return Err(SpirvError::unsupported(format!("{bits}-bit integers")));
                }
                SpvType::Int {
                    bits,
                    signed: literal(inst, 1)? != 0,
                }
            }
            Op::TypeFloat => {
                let bits = small(literal(inst, 0)?, "a float width")?;
                if ![16, 32, 64].contains(&bits) {
                    return Err(SpirvError::unsupported(format!("{bits}-bit floats")));
                }
                SpvType::Float { bits }
            }
            Op::TypeVector => {
                let n = small(literal(inst, 1)?, "a vector size")?;
                if !matches!(n, 2 | 3 | 4 | 8 | 16) {
                    return Err(SpirvError::malformed(format!("a vector of {n} components")));
                }
                SpvType::Vector {
                    elem: id(inst, 0)?,
                    n,
                }
            }
            Op::TypeMatrix => SpvType::Matrix {
                col: id(inst, 0)?,
                cols: small(literal(inst, 1)?, "a matrix column count")?,
            },
            Op::TypeArray => SpvType::Array {
                elem: id(inst, 0)?,
                len: id(inst, 1)?,
            },
            Op::TypeRuntimeArray => SpvType::RuntimeArray { elem: id(inst, 0)? },
            Op::TypeStruct => SpvType::Struct {
                members: (0..inst.inst.operands.len())
                    .map(|i| id(inst, i))
                    .collect::<Result<_>>()?,
            },
            Op::TypePointer => {
                let Some(Operand::StorageClass(storage)) = inst.inst.operands.first() else {
                    return Err(SpirvError::malformed(
                        "a pointer type without storage class",
                    ));
                };
                SpvType::Pointer {
                    storage: *storage,
                    pointee: id(inst, 1)?,
                }
            }
            Op::TypeImage => {
                let ops = &inst.inst.operands;
                let Some(Operand::Dim(dim)) = ops.get(1) else {
                    return Err(SpirvError::malformed("an image type without dimension"));
                };
                use rspirv::spirv::Dim as D;
                let ms = literal(inst, 4)? == 1;
                let dim = match dim {
                    D::Dim1D => Dim::D1,
                    D::Dim2D if ms => Dim::Ms,
                    D::Dim2D => Dim::D2,
                    D::Dim3D => Dim::D3,
                    D::DimCube => Dim::Cube,
                    D::DimRect => Dim::Rect,
                    D::DimBuffer => Dim::Buf,
                    D::DimSubpassData => Dim::Subpass,
                    other => {
                        return Err(SpirvError::unsupported(format!(
                            "images of dimension {other:?}"
                        )));
                    }
                };
                SpvType::Image(ImageType {
                    sampled_type: id(inst, 0)?,
                    dim,
                    depth: literal(inst, 2)? == 1,
                    arrayed: literal(inst, 3)? == 1,
                    storage: literal(inst, 5)? == 2,
                })
            }
            Op::TypeSampledImage => SpvType::SampledImage {
                image: id(inst, 0)?,
            },
            Op::TypeSampler => SpvType::Sampler,
            Op::TypeFunction => SpvType::Function,
            op => {
                let _ = m;
                return Err(SpirvError::unsupported(format!("the type Op{op:?}")));
            }
        })
    }

    /// The bit size of a scalar, or of a vector's components.
    pub fn scalar_bits(&self, m: &Module) -> Option<u8> {
        match self {
            SpvType::Bool => Some(1),
            SpvType::Int { bits, .. } | SpvType::Float { bits } => Some(*bits),
            SpvType::Vector { elem, .. } => m.types.get(elem)?.scalar_bits(m),
            _ => None,
        }
    }

    /// The IR scalar of a scalar type, or of a vector's components.
    pub fn scalar(&self, m: &Module) -> Option<Scalar> {
        match self {
            SpvType::Bool => Some(Scalar::BOOL),
            SpvType::Int { bits, signed } => Some(Scalar::new(
                if *signed {
                    BaseType::Int
                } else {
                    BaseType::Uint
                },
                *bits,
            )),
            SpvType::Float { bits } => Some(Scalar::new(BaseType::Float, *bits)),
            SpvType::Vector { elem, .. } => m.types.get(elem)?.scalar(m),
            _ => None,
        }
    }

    /// The IR value shape of a scalar or vector type.
    pub fn val_type(&self, m: &Module) -> Option<ValType> {
        match self {
            SpvType::Vector { n, .. } => Some(ValType::new(self.scalar_bits(m)?, *n)),
            _ => Some(ValType::scalar(self.scalar_bits(m)?)),
        }
    }

    pub fn is_opaque(&self) -> bool {
        matches!(
            self,
            SpvType::Image(_) | SpvType::SampledImage { .. } | SpvType::Sampler
        )
    }
}

/// Converts SPIR-V types into IR types, creating each struct type once.
#[derive(Default)]
pub struct TypeMap {
    structs: HashMap<Word, StructId>,
    struct_names: UniqueNames,
}

impl TypeMap {
    /// Declares a struct of the front end's own making, under a name no other struct takes.
    pub fn declare_struct(
        &mut self,
        shader: &mut Shader,
        base: &str,
        members: Vec<Member>,
    ) -> StructId {
        let name = self.struct_names.claim(base);
        shader.add_struct(StructType { name, members })
    }
}

/// How a type's matrices are laid out, from the decorations of the member that holds it.
#[derive(Copy, Clone, Debug, Default)]
struct MatrixLayout {
    stride: u32,
    row_major: bool,
}

impl TypeMap {
    /// The IR type of a SPIR-V type, with the explicit layout its decorations give (member
    /// offsets, array and matrix strides).
    pub fn ir_type(&mut self, m: &Module, shader: &mut Shader, ty: Word) -> Result<Type> {
        self.convert(m, shader, ty, MatrixLayout::default(), 0)
    }

    fn convert(
        &mut self,
        m: &Module,
        shader: &mut Shader,
        ty: Word,
        matrix: MatrixLayout,
        depth: u32,
    ) -> Result<Type> {
        if depth > 64 {
            return Err(SpirvError::unsupported(
                "types nested more than 64 levels deep",
            ));
        }
        let t = m.ty(ty)?;
        Ok(match t {
            SpvType::Bool | SpvType::Int { .. } | SpvType::Float { .. } => Type::Scalar(
                t.scalar(m)
                    .ok_or_else(|| SpirvError::malformed("bad scalar"))?,
            ),
            SpvType::Vector { n, .. } => Type::Vector(
                t.scalar(m)
                    .ok_or_else(|| SpirvError::malformed("a vector of non-scalars"))?,
                *n,
            ),
            SpvType::Matrix { col, cols } => {
                let column = self.convert(m, shader, *col, matrix, depth + 1)?;
                if matrix.row_major {
                    // Stored as its rows: one vector per row, `stride` apart.
                    let Type::Vector(scalar, rows) = column else {
                        return Err(SpirvError::malformed("a matrix of non-vector columns"));
                    };
                    Type::Array {
                        elem: Box::new(Type::Vector(scalar, *cols)),
                        len: rows as u32,
                        stride: matrix.stride,
                    }
                } else {
                    Type::Array {
                        elem: Box::new(column),
                        len: *cols as u32,
                        stride: matrix.stride,
                    }
                }
            }
            SpvType::Array { elem, len } => {
                let len = m.array_len(*len)?;
                if len == 0 {
                    return Err(SpirvError::malformed("an array of length 0"));
                }
                Type::Array {
                    elem: Box::new(self.convert(m, shader, *elem, matrix, depth + 1)?),
                    len,
                    stride: m.decoration_u32(ty, Decoration::ArrayStride).unwrap_or(0),
                }
            }
            SpvType::RuntimeArray { elem } => Type::Array {
                elem: Box::new(self.convert(m, shader, *elem, matrix, depth + 1)?),
                len: 0,
                stride: m.decoration_u32(ty, Decoration::ArrayStride).unwrap_or(0),
            },
            SpvType::Struct { members } => {
                if let Some(id) = self.structs.get(&ty) {
                    return Ok(Type::Struct(*id));
                }
                let mut out = Vec::with_capacity(members.len());
                for (i, &member) in members.iter().enumerate() {
                    let i = i as u32;
                    let layout = MatrixLayout {
                        stride: m
                            .member_decoration_u32(ty, i, Decoration::MatrixStride)
                            .unwrap_or(0),
                        row_major: m.member_decoration(ty, i, Decoration::RowMajor).is_some(),
                    };
                    let name = m
                        .member_names
                        .get(&(ty, i))
                        .filter(|n| !n.is_empty())
                        .cloned()
                        .unwrap_or_else(|| format!("m{i}"));
                    let mut mem =
                        Member::new(&name, self.convert(m, shader, member, layout, depth + 1)?);
                    mem.offset = m.member_decoration_u32(ty, i, Decoration::Offset);
                    out.push(mem);
                }
                let base = m
                    .name(ty)
                    .map(str::to_string)
                    .unwrap_or_else(|| format!("struct{ty}"));
                // One GLSL struct can become several SPIR-V types (with and without layout).
                let name = self.struct_names.claim(&base);
                let id = shader.add_struct(StructType { name, members: out });
                self.structs.insert(ty, id);
                Type::Struct(id)
            }
            SpvType::Image(img) => {
                let base = image_base(m, img)?;
                if img.storage {
                    Type::Image {
                        dim: img.dim,
                        arrayed: img.arrayed,
                        base,
                    }
                } else {
                    Type::Texture {
                        dim: img.dim,
                        arrayed: img.arrayed,
                        shadow: img.depth,
                        base,
                    }
                }
            }
            SpvType::SampledImage { image } => match m.ty(*image)? {
                SpvType::Image(img) => Type::Texture {
                    dim: img.dim,
                    arrayed: img.arrayed,
                    shadow: img.depth,
                    base: image_base(m, img)?,
                },
                _ => return Err(SpirvError::malformed("a sampled image of a non-image")),
            },
            SpvType::Sampler => Type::Sampler { shadow: false },
            other => {
                return Err(SpirvError::unsupported(format!(
                    "values of type {other:?} in memory"
                )));
            }
        })
    }
}

/// The base type of an image's texels.
pub fn image_base(m: &Module, img: &ImageType) -> Result<BaseType> {
    Ok(match m.ty(img.sampled_type)? {
        SpvType::Float { .. } => BaseType::Float,
        SpvType::Int { signed: true, .. } => BaseType::Int,
        SpvType::Int { signed: false, .. } => BaseType::Uint,
        _ => return Err(SpirvError::unsupported("images of this sampled type")),
    })
}
