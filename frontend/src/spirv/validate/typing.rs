//! The types of values: every instruction's operands and result type fit its opcode.
//!
//! What: constants have scalar, boolean or composite types their literals and constituents
//! fit; arithmetic, bitwise, comparison, conversion and GLSL.std.450 instructions take and give
//! scalars or vectors of the kind their opcode names (float, integer or boolean) with matching
//! component counts (and bit widths where SPIR-V requires them); matrix and vector products,
//! composite construction, extraction, insertion and shuffles have operands whose shapes
//! give the result type; loads, stores, access chains and variables agree with their pointers'
//! pointee types and storage classes; phis, selects and copies keep their operands' type;
//! branches test booleans and switches integers; returns give the function's result type;
//! image instructions take images and give texels of their sampled type; integer and float
//! types have valid widths (with the capability a width needs) and signedness, vectors 2 to 4
//! components, and scalar, vector and matrix types are declared once.
//!
//! Why: the translator maps each instruction to IR operations by its opcode and result type,
//! and takes the shape of operands from their types; an `OpFAdd` of integers, a load whose
//! result type is not its pointer's pointee or a vector shuffle that is not a vector would be
//! translated into IR of the wrong bit size or component count, or into code that reads the
//! wrong value without any error.

use super::Checker;
use crate::spirv::module::{id, literal};
use crate::spirv::{Inst, Result, SpirvError};
use rspirv::dr::Operand;
use rspirv::spirv::{Capability, Op, StorageClass, Word};
use std::collections::HashSet;

/// The kind of a scalar or of a vector's components.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Base {
    Float,
    Int,
    Bool,
}

/// A scalar or vector type: its kind, bit width (1 for booleans) and component count.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Shape {
    base: Base,
    width: u32,
    n: u32,
}

fn malformed<T>(message: String) -> Result<T> {
    Err(SpirvError::malformed(message))
}

/// The scalar, vector, matrix and other non-aggregate types declared so far, by opcode and
/// operands.
pub(super) type Declared = HashSet<(Op, Vec<Operand>)>;

impl Checker<'_> {
    /// The type declaration `inst` has valid literals (an integer or float width the module's
    /// capabilities allow, a signedness of 0 or 1, 2 to 4 vector components) and is not a
    /// second declaration of a non-aggregate type.
    pub(super) fn check_type_literals(&self, inst: &Inst, declared: &mut Declared) -> Result<()> {
        let op = inst.inst.class.opcode;
        let needs = |capability: Capability, what: &str| {
            if self.capabilities.contains(&capability) {
                Ok(())
            } else {
                malformed(format!("{what} without the {capability:?} capability"))
            }
        };
        match op {
            Op::TypeInt => {
                let (width, signedness) = (literal(inst, 0)?, literal(inst, 1)?);
                if signedness > 1 {
                    return malformed(format!("an integer type of signedness {signedness}"));
                }
                match width {
                    8 => needs(Capability::Int8, "an 8-bit integer")?,
                    16 => needs(Capability::Int16, "a 16-bit integer")?,
                    32 => {}
                    64 => needs(Capability::Int64, "a 64-bit integer")?,
                    _ => return malformed(format!("an integer type of {width} bits")),
                }
            }
            Op::TypeFloat => match literal(inst, 0)? {
                16 => needs(Capability::Float16, "a 16-bit float")?,
                32 => {}
                64 => needs(Capability::Float64, "a 64-bit float")?,
                width => return malformed(format!("a float type of {width} bits")),
            },
            Op::TypeVector => {
                let n = literal(inst, 1)?;
                if !(2..=4).contains(&n) {
                    return malformed(format!("a vector of {n} components (2 to 4)"));
                }
            }
            _ => {}
        }
        let aggregate = matches!(
            op,
            Op::TypeStruct | Op::TypeArray | Op::TypeRuntimeArray | Op::TypePointer
        );
        if !aggregate && !declared.insert((op, inst.inst.operands.clone())) {
            return malformed("a second declaration of the same type".into());
        }
        Ok(())
    }

    /// The type of the value `value`: the result type of the instruction defining it (not a
    /// function: functions are not values).
    fn value_type(&self, value: Word) -> Result<Word> {
        self.def(value)
            .filter(|def| def.inst.class.opcode != Op::Function)
            .and_then(|def| def.inst.result_type)
            .ok_or_else(|| SpirvError::malformed(format!("%{value} is not a value")))
    }

    /// The scalar or vector type `ty` as a shape.
    fn shape(&self, ty: Word) -> Option<Shape> {
        let def = self.def(ty)?;
        match def.inst.class.opcode {
            Op::TypeFloat => Some(Shape {
                base: Base::Float,
                width: literal(def, 0).ok()?,
                n: 1,
            }),
            Op::TypeInt => Some(Shape {
                base: Base::Int,
                width: literal(def, 0).ok()?,
                n: 1,
            }),
            Op::TypeBool => Some(Shape {
                base: Base::Bool,
                width: 1,
                n: 1,
            }),
            Op::TypeVector => {
                let component = self.shape(id(def, 0).ok()?)?;
                Some(Shape {
                    n: literal(def, 1).ok()?,
                    ..component
                })
            }
            _ => None,
        }
    }

    /// `ty` is a scalar or vector of `base`.
    fn expect(&self, ty: Word, base: Base, what: &str) -> Result<Shape> {
        match self.shape(ty) {
            Some(shape) if shape.base == base => Ok(shape),
            _ => malformed(format!(
                "{what} (of type %{ty}) is not a {base:?} scalar or vector"
            )),
        }
    }

    /// The value `value` is a scalar or vector of `base`.
    fn expect_value(&self, value: Word, base: Base) -> Result<Shape> {
        let ty = self.value_type(value)?;
        self.expect(ty, base, &format!("%{value}"))
    }

    fn same_type(&self, value: Word, ty: Word) -> Result<()> {
        let found = self.value_type(value)?;
        if found == ty {
            Ok(())
        } else {
            malformed(format!("%{value} is of type %{found}, not %{ty}"))
        }
    }

    /// A vector's or matrix's component or column type and count, a struct's member types, an
    /// array's element type and length (when a constant gives it).
    fn member(&self, ty: Word, index: Option<u32>) -> Result<Word> {
        let def = self
            .def(ty)
            .ok_or_else(|| SpirvError::malformed(format!("%{ty} is not a type")))?;
        let out_of_range = |index: u32, count: u32| {
            malformed(format!("index {index} into %{ty}, which has {count} parts"))
        };
        let (part, count) = match def.inst.class.opcode {
            Op::TypeVector | Op::TypeMatrix => (id(def, 0)?, Some(literal(def, 1)?)),
            Op::TypeArray => (id(def, 0)?, self.constant_u32(id(def, 1)?)),
            Op::TypeRuntimeArray => (id(def, 0)?, None),
            Op::TypeStruct => {
                let Some(index) = index else {
                    return malformed(format!("a struct %{ty} indexed by a non-constant"));
                };
                return match def.inst.operands.get(index as usize) {
                    Some(&Operand::IdRef(member)) => Ok(member),
                    _ => out_of_range(index, def.inst.operands.len() as u32),
                };
            }
            _ => return malformed(format!("%{ty} is not a composite type")),
        };
        match (index, count) {
            (Some(index), Some(count)) if index >= count => out_of_range(index, count),
            _ => Ok(part),
        }
    }

    /// The value of an integer `OpConstant` of at most 32 bits.
    fn constant_u32(&self, value: Word) -> Option<u32> {
        let def = self.def(value)?;
        if def.inst.class.opcode != Op::Constant {
            return None;
        }
        match def.inst.operands.first() {
            Some(&Operand::LiteralBit32(v)) => Some(v),
            _ => None,
        }
    }

    /// The pointer type `ty`: its storage class and pointee.
    fn pointer(&self, ty: Word, what: &str) -> Result<(StorageClass, Word)> {
        let def = self
            .def(ty)
            .filter(|def| def.inst.class.opcode == Op::TypePointer);
        match def.map(|def| (def.inst.operands.first(), id(def, 1))) {
            Some((Some(&Operand::StorageClass(storage)), Ok(pointee))) => Ok((storage, pointee)),
            _ => malformed(format!("{what} (of type %{ty}) is not a pointer")),
        }
    }

    /// The id operands of `inst` from operand `from` on.
    fn values(inst: &Inst, from: usize) -> Vec<Word> {
        (inst.inst.operands.iter().skip(from))
            .filter_map(|operand| match *operand {
                Operand::IdRef(id) => Some(id),
                _ => None,
            })
            .collect()
    }

    /// The operands and result type of `inst` fit its opcode; `result` is the result type of
    /// the function it is in.
    pub(super) fn check_typing(&self, inst: &Inst, function_result: Option<Word>) -> Result<()> {
        use Base::{Bool, Float, Int};
        let op = inst.inst.class.opcode;
        let result = inst.inst.result_type.unwrap_or(0);
        let operand = |i: usize| id(inst, i);
        let args = Self::values(inst, 0);
        let all_of_result_type = |from: usize| -> Result<()> {
            for &value in &args[from..] {
                self.same_type(value, result)?;
            }
            Ok(())
        };
        // Integer operands agree with the result in component count and width.
        let ints_like = |shape: Shape, values: &[Word]| -> Result<()> {
            for &value in values {
                let found = self.expect_value(value, Int)?;
                if (found.n, found.width) != (shape.n, shape.width) {
                    return malformed(format!("%{value} does not match the result's shape"));
                }
            }
            Ok(())
        };
        match op {
            Op::Constant | Op::SpecConstant
                if !matches!(self.op_of(result), Some(Op::TypeInt | Op::TypeFloat)) =>
            {
                return malformed(format!("%{result} is not a scalar numeric type"));
            }
            Op::ConstantTrue | Op::ConstantFalse | Op::SpecConstantTrue | Op::SpecConstantFalse => {
                self.expect(result, Bool, "the result type")?;
            }
            Op::ConstantComposite | Op::SpecConstantComposite => self.check_parts(result, &args)?,
            Op::FAdd | Op::FSub | Op::FMul | Op::FDiv | Op::FRem | Op::FMod | Op::FNegate => {
                self.expect(result, Float, "the result type")?;
                all_of_result_type(0)?;
            }
            Op::IAdd
            | Op::ISub
            | Op::IMul
            | Op::SDiv
            | Op::UDiv
            | Op::SRem
            | Op::SMod
            | Op::UMod
            | Op::SNegate
            | Op::Not
            | Op::BitwiseAnd
            | Op::BitwiseOr
            | Op::BitwiseXor
            | Op::BitReverse => {
                let shape = self.expect(result, Int, "the result type")?;
                ints_like(shape, &args)?;
            }
            Op::BitCount => {
                let shape = self.expect(result, Int, "the result type")?;
                let found = self.expect_value(operand(0)?, Int)?;
                if found.n != shape.n {
                    return malformed("a bit count of another component count".into());
                }
            }
            Op::ShiftLeftLogical | Op::ShiftRightLogical | Op::ShiftRightArithmetic => {
                let shape = self.expect(result, Int, "the result type")?;
                ints_like(shape, &args[..1])?;
                if self.expect_value(operand(1)?, Int)?.n != shape.n {
                    return malformed("a shift by another component count".into());
                }
            }
            Op::IEqual
            | Op::INotEqual
            | Op::UGreaterThan
            | Op::SGreaterThan
            | Op::UGreaterThanEqual
            | Op::SGreaterThanEqual
            | Op::ULessThan
            | Op::SLessThan
            | Op::ULessThanEqual
            | Op::SLessThanEqual => {
                let shape = self.expect(result, Bool, "the result type")?;
                let compared = self.expect_value(operand(0)?, Int)?;
                if compared.n != shape.n {
                    return malformed("a comparison of another component count".into());
                }
                ints_like(compared, &args)?;
            }
            Op::FOrdEqual
            | Op::FUnordEqual
            | Op::FOrdNotEqual
            | Op::FUnordNotEqual
            | Op::FOrdLessThan
            | Op::FUnordLessThan
            | Op::FOrdGreaterThan
            | Op::FUnordGreaterThan
            | Op::FOrdLessThanEqual
            | Op::FUnordLessThanEqual
            | Op::FOrdGreaterThanEqual
            | Op::FUnordGreaterThanEqual
            | Op::IsNan
            | Op::IsInf => {
                let shape = self.expect(result, Bool, "the result type")?;
                let compared = self.expect_value(operand(0)?, Float)?;
                if compared.n != shape.n {
                    return malformed("a comparison of another component count".into());
                }
                let ty = self.value_type(operand(0)?)?;
                for &value in &args[1..] {
                    self.same_type(value, ty)?;
                }
            }
            Op::LogicalEqual
            | Op::LogicalNotEqual
            | Op::LogicalOr
            | Op::LogicalAnd
            | Op::LogicalNot => {
                self.expect(result, Bool, "the result type")?;
                all_of_result_type(0)?;
            }
            Op::Any | Op::All => {
                if self.expect(result, Bool, "the result type")?.n != 1 {
                    return malformed("Any or All giving a vector".into());
                }
                if self.op_of(self.value_type(operand(0)?)?) != Some(Op::TypeVector) {
                    return malformed("Any or All of a scalar".into());
                }
                self.expect_value(operand(0)?, Bool)?;
            }
            Op::Select => {
                if self.op_of(result) == Some(Op::TypePointer) {
                    return malformed("a select of pointers".into());
                }
                let condition = self.expect_value(operand(0)?, Bool)?;
                let n = self.shape(result).map_or(1, |shape| shape.n);
                // SPIR-V 1.4 lets one condition select whole vectors.
                let scalar_allowed = self.version >= 0x0001_0400;
                if condition.n != n && !(condition.n == 1 && scalar_allowed) {
                    return malformed("a select condition of another component count".into());
                }
                all_of_result_type(1)?;
            }
            Op::ConvertFToU | Op::ConvertFToS => {
                let shape = self.expect(result, Int, "the result type")?;
                if self.expect_value(operand(0)?, Float)?.n != shape.n {
                    return malformed("a conversion of another component count".into());
                }
            }
            Op::ConvertSToF | Op::ConvertUToF => {
                let shape = self.expect(result, Float, "the result type")?;
                if self.expect_value(operand(0)?, Int)?.n != shape.n {
                    return malformed("a conversion of another component count".into());
                }
            }
            Op::UConvert | Op::SConvert | Op::FConvert | Op::QuantizeToF16 => {
                let base = if op == Op::UConvert || op == Op::SConvert {
                    Int
                } else {
                    Float
                };
                let shape = self.expect(result, base, "the result type")?;
                if self.expect_value(operand(0)?, base)?.n != shape.n {
                    return malformed("a conversion of another component count".into());
                }
            }
            Op::Bitcast => {
                let to = self.shape(result);
                let from = self.shape(self.value_type(operand(0)?)?);
                match (to, from) {
                    (Some(to), Some(from))
                        if to.base != Bool
                            && from.base != Bool
                            && to.n * to.width == from.n * from.width => {}
                    _ => return malformed("a bitcast between types of different sizes".into()),
                }
            }
            Op::Dot => {
                let shape = self.expect(result, Float, "the result type")?;
                let ty = self.value_type(operand(0)?)?;
                if shape.n != 1
                    || self.op_of(ty) != Some(Op::TypeVector)
                    || self.member(ty, None)? != result
                {
                    return malformed("a dot product not of vectors of the result type".into());
                }
                self.same_type(operand(1)?, ty)?;
            }
            Op::VectorTimesScalar | Op::MatrixTimesScalar => {
                let kind = if op == Op::VectorTimesScalar {
                    Op::TypeVector
                } else {
                    Op::TypeMatrix
                };
                if self.op_of(result) != Some(kind) {
                    return malformed(format!("the result type %{result} is not a {kind:?}"));
                }
                self.same_type(operand(0)?, result)?;
                let mut component = self.member(result, None)?;
                if kind == Op::TypeMatrix {
                    component = self.member(component, None)?;
                }
                self.expect(component, Float, "the component type")?;
                self.same_type(operand(1)?, component)?;
            }
            Op::MatrixTimesVector
            | Op::VectorTimesMatrix
            | Op::MatrixTimesMatrix
            | Op::OuterProduct => {
                self.check_product(op, result, operand(0)?, operand(1)?)?;
            }
            Op::Transpose => {
                let (rows, cols, component) = self.matrix(result)?;
                let (r, c, k) = self.matrix(self.value_type(operand(0)?)?)?;
                if (r, c, k) != (cols, rows, component) {
                    return malformed("a transpose of another shape".into());
                }
            }
            Op::CompositeConstruct => self.check_construct(result, &args)?,
            Op::CompositeExtract => {
                let mut ty = self.value_type(operand(0)?)?;
                for i in 1..inst.inst.operands.len() {
                    ty = self.member(ty, Some(literal(inst, i)?))?;
                }
                if ty != result {
                    return malformed(format!(
                        "the result type %{result} is not the extracted part's, %{ty}"
                    ));
                }
            }
            Op::CompositeInsert => {
                self.same_type(operand(1)?, result)?;
                let mut ty = result;
                for i in 2..inst.inst.operands.len() {
                    ty = self.member(ty, Some(literal(inst, i)?))?;
                }
                self.same_type(operand(0)?, ty)?;
            }
            Op::VectorShuffle => {
                let (n, component) = self.vector(result)?;
                let mut available = 0;
                for i in 0..2 {
                    let (count, c) = self.vector(self.value_type(operand(i)?)?)?;
                    if c != component {
                        return malformed(format!(
                            "%{} is not a vector of %{component}",
                            operand(i)?
                        ));
                    }
                    available += count;
                }
                let selectors = inst.inst.operands.len() - 2;
                if selectors as u32 != n {
                    return malformed(format!("{selectors} components for a vector of {n}"));
                }
                for i in 2..inst.inst.operands.len() {
                    let selector = literal(inst, i)?;
                    // 0xFFFFFFFF selects an undefined component.
                    if selector >= available && selector != u32::MAX {
                        return malformed(format!("the component {selector} of {available}"));
                    }
                }
            }
            Op::VectorExtractDynamic | Op::VectorInsertDynamic => {
                let vector = if op == Op::VectorExtractDynamic {
                    self.value_type(operand(0)?)?
                } else {
                    self.same_type(operand(0)?, result)?;
                    result
                };
                if self.op_of(vector) != Some(Op::TypeVector) {
                    return malformed(format!("%{vector} is not a vector type"));
                }
                let component = self.member(vector, None)?;
                let index = if op == Op::VectorExtractDynamic {
                    if component != result {
                        return malformed("the result type is not the component's".into());
                    }
                    1
                } else {
                    self.same_type(operand(1)?, component)?;
                    2
                };
                if self.expect_value(operand(index)?, Int)?.n != 1 {
                    return malformed("a vector index that is not a scalar".into());
                }
            }
            Op::CopyObject => self.same_type(operand(0)?, result)?,
            Op::Undef => {
                if matches!(self.op_of(result), Some(Op::TypeVoid) | None) {
                    return malformed("an undefined value of type void".into());
                }
            }
            Op::Load => {
                let (_, pointee) =
                    self.pointer(self.value_type(operand(0)?)?, "the loaded pointer")?;
                if pointee != result {
                    return malformed(format!(
                        "the result type %{result} is not the pointee %{pointee}"
                    ));
                }
            }
            Op::Store => {
                let (storage, pointee) =
                    self.pointer(self.value_type(operand(0)?)?, "the stored-to pointer")?;
                if matches!(storage, StorageClass::Input | StorageClass::UniformConstant) {
                    return malformed(format!("a store to {storage:?} memory"));
                }
                self.same_type(operand(1)?, pointee)?;
            }
            Op::AccessChain | Op::InBoundsAccessChain => {
                let (storage, pointee) = self.pointer(result, "the result type")?;
                let (base_storage, mut ty) =
                    self.pointer(self.value_type(operand(0)?)?, "the base")?;
                if storage != base_storage {
                    return malformed("the result's storage class is not the base's".into());
                }
                for &index in &args[1..] {
                    if self.expect_value(index, Int)?.n != 1 {
                        return malformed(format!("the index %{index} is not a scalar"));
                    }
                    let is_struct = self.op_of(ty) == Some(Op::TypeStruct);
                    let constant = self.constant_u32(index);
                    if is_struct && constant.is_none() {
                        return malformed(format!("the struct index %{index} is not a constant"));
                    }
                    ty = self.member(ty, constant.filter(|_| is_struct))?;
                }
                if ty != pointee {
                    return malformed(format!(
                        "the result points to %{pointee}, the chain gives %{ty}"
                    ));
                }
            }
            Op::Variable => {
                let (storage, pointee) = self.pointer(result, "the result type")?;
                let Some(&Operand::StorageClass(declared)) = inst.inst.operands.first() else {
                    return malformed("a variable without storage class".into());
                };
                let local = function_result.is_some();
                if declared != storage || (declared == StorageClass::Function) != local {
                    return malformed(format!(
                        "a {declared:?} variable of a {storage:?} pointer type{}",
                        if local { " in a function" } else { "" }
                    ));
                }
                if self.op_of(pointee) == Some(Op::TypePointer) {
                    return malformed("a variable holding a pointer".into());
                }
                if let Some(&initializer) = args.first() {
                    self.same_type(initializer, pointee)?;
                }
            }
            Op::Phi => {
                for &value in args.iter().step_by(2) {
                    self.same_type(value, result)?;
                }
            }
            Op::FunctionCall => self.check_arguments(inst)?,
            Op::ReturnValue => match function_result {
                Some(ty) if self.op_of(ty) != Some(Op::TypeVoid) => {
                    self.same_type(operand(0)?, ty)?
                }
                _ => return malformed("a value returned from a void function".into()),
            },
            Op::Return
                if function_result.is_some_and(|ty| self.op_of(ty) != Some(Op::TypeVoid)) =>
            {
                return malformed("no value returned from a function with a result".into());
            }
            Op::BranchConditional if self.expect_value(operand(0)?, Bool)?.n != 1 => {
                return malformed("a branch on a vector".into());
            }
            Op::Switch if self.expect_value(operand(0)?, Int)?.n != 1 => {
                return malformed("a switch on a vector".into());
            }
            Op::ExtInst => self.check_glsl(inst, result, &args)?,
            Op::SampledImage => {
                let image = self.value_type(operand(0)?)?;
                let sampled = self
                    .def(result)
                    .filter(|d| d.inst.class.opcode == Op::TypeSampledImage);
                if sampled.and_then(|d| id(d, 0).ok()) != Some(image) {
                    return malformed(format!("%{result} is not a sampled image of %{image}"));
                }
                if self.op_of(self.value_type(operand(1)?)?) != Some(Op::TypeSampler) {
                    return malformed(format!("%{} is not a sampler", operand(1)?));
                }
            }
            op if image_op(op).is_some() => self.check_image(inst, op, result)?,
            _ => {}
        }
        Ok(())
    }

    /// A matrix type's row count, column count and component type.
    fn matrix(&self, ty: Word) -> Result<(u32, u32, Word)> {
        let def = self
            .def(ty)
            .filter(|def| def.inst.class.opcode == Op::TypeMatrix);
        let Some(def) = def else {
            return malformed(format!("%{ty} is not a matrix type"));
        };
        let column = id(def, 0)?;
        let rows = self.shape(column).map_or(0, |shape| shape.n);
        Ok((rows, literal(def, 1)?, self.member(column, None)?))
    }

    /// The vector type `ty`'s component count and component type.
    fn vector(&self, ty: Word) -> Result<(u32, Word)> {
        match self.def(ty) {
            Some(def) if def.inst.class.opcode == Op::TypeVector => {
                Ok((literal(def, 1)?, id(def, 0)?))
            }
            _ => malformed(format!("%{ty} is not a vector type")),
        }
    }

    /// A product of matrices and vectors has operands whose shapes give its result.
    fn check_product(&self, op: Op, result: Word, a: Word, b: Word) -> Result<()> {
        let (ta, tb) = (self.value_type(a)?, self.value_type(b)?);
        let fits = match op {
            Op::MatrixTimesVector => {
                let (rows, cols, component) = self.matrix(ta)?;
                self.vector(tb)? == (cols, component) && self.vector(result)? == (rows, component)
            }
            Op::VectorTimesMatrix => {
                let (rows, cols, component) = self.matrix(tb)?;
                self.vector(ta)? == (rows, component) && self.vector(result)? == (cols, component)
            }
            Op::MatrixTimesMatrix => {
                let (rows, inner, component) = self.matrix(ta)?;
                let (inner_b, cols, component_b) = self.matrix(tb)?;
                inner == inner_b
                    && component == component_b
                    && self.matrix(result)? == (rows, cols, component)
            }
            // OuterProduct
            _ => {
                let (rows, component) = self.vector(ta)?;
                let (cols, component_b) = self.vector(tb)?;
                component == component_b && self.matrix(result)? == (rows, cols, component)
            }
        };
        if fits {
            Ok(())
        } else {
            malformed(format!("operands of shapes that do not give %{result}"))
        }
    }

    /// A composite construction gives each part of the result: a vector's components as
    /// scalars and vectors of its component type, or each column, element or member.
    fn check_construct(&self, result: Word, constituents: &[Word]) -> Result<()> {
        let def = self.def(result);
        match def.map(|def| def.inst.class.opcode) {
            Some(Op::TypeVector) => {
                let (n, component) = self.vector(result)?;
                let mut total = 0;
                for &value in constituents {
                    let ty = self.value_type(value)?;
                    if ty == component {
                        total += 1;
                    } else if self.vector(ty).is_ok_and(|(_, c)| c == component) {
                        total += self.vector(ty)?.0;
                    } else {
                        return malformed(format!(
                            "%{value} is not a scalar or vector of %{component}"
                        ));
                    }
                }
                if total != n {
                    return malformed(format!("{total} components for a vector of {n}"));
                }
                Ok(())
            }
            Some(Op::TypeMatrix | Op::TypeArray | Op::TypeStruct) => {
                self.check_parts(result, constituents)
            }
            _ => malformed(format!("%{result} is not a composite type")),
        }
    }

    /// `parts` are each column, element or member of the matrix, array or struct `ty`, one
    /// for each (a vector's components, for a constant vector).
    fn check_parts(&self, ty: Word, parts: &[Word]) -> Result<()> {
        let Some(def) = self.def(ty) else {
            return malformed(format!("%{ty} is not a type"));
        };
        let expected = match def.inst.class.opcode {
            Op::TypeVector | Op::TypeMatrix => Some(literal(def, 1)?),
            Op::TypeArray => self.constant_u32(id(def, 1)?),
            Op::TypeStruct => Some(def.inst.operands.len() as u32),
            _ => return malformed(format!("%{ty} is not a composite type")),
        };
        for (i, &value) in parts.iter().enumerate() {
            self.same_type(value, self.member(ty, Some(i as u32))?)?;
        }
        let count = parts.len() as u32;
        if expected.is_some_and(|expected| expected != count) {
            return malformed(format!("{count} constituents for %{ty}"));
        }
        Ok(())
    }

    /// A call's arguments have its callee's parameter types; a pointer argument may have
    /// another pointer type (glslang passes a struct of samplers with a pointer type of its
    /// own, and the translator copies arguments member by member).
    fn check_arguments(&self, inst: &Inst) -> Result<()> {
        let callee = id(inst, 0)?;
        let Some(ty) = self.def(callee).and_then(|f| id(f, 1).ok()) else {
            return Ok(());
        };
        let Some(function_type) = self.def(ty) else {
            return Ok(());
        };
        let parameters = Self::values(function_type, 1);
        for (&argument, &parameter) in Self::values(inst, 1).iter().zip(&parameters) {
            let found = self.value_type(argument)?;
            let both_pointers = self.op_of(parameter) == Some(Op::TypePointer)
                && self.op_of(found) == Some(Op::TypePointer);
            if found != parameter && !both_pointers {
                return malformed(format!(
                    "the argument %{argument} is of type %{found}, not %{parameter}"
                ));
            }
        }
        Ok(())
    }

    /// A GLSL.std.450 instruction's operands have the types its number requires.
    fn check_glsl(&self, inst: &Inst, result: Word, args: &[Word]) -> Result<()> {
        use Base::{Float, Int};
        let set = id(inst, 0)?;
        let glsl = self.def(set).is_some_and(|def| {
            matches!(def.inst.operands.first(), Some(Operand::LiteralString(s)) if s == "GLSL.std.450")
        });
        if !glsl {
            return Ok(());
        }
        let Some(&Operand::LiteralExtInstInteger(number)) = inst.inst.operands.get(1) else {
            return malformed("an extended instruction without its number".into());
        };
        let operands = &args[1..];
        let Some(&first) = operands.first() else {
            return malformed("an extended instruction without operands".into());
        };
        let all_result = || -> Result<()> {
            for &value in operands {
                self.same_type(value, result)?;
            }
            Ok(())
        };
        match number {
            // Round to Sqrt and InverseSqrt (but SAbs 5 and SSign 7), FMin, FMax, FClamp,
            // FMix, Step, SmoothStep, Fma, Normalize, FaceForward, Reflect, NMin, NMax, NClamp.
            1..=4 | 6 | 8..=32 | 37 | 40 | 43 | 46 | 48..=50 | 69..=71 | 79..=81 => {
                self.expect(result, Float, "the result type")?;
                all_result()?;
            }
            // SAbs, SSign, UMin, SMin, UMax, SMax, UClamp, SClamp.
            5 | 7 | 38 | 39 | 41 | 42 | 44 | 45 => {
                let shape = self.expect(result, Int, "the result type")?;
                for &value in operands {
                    let found = self.expect_value(value, Int)?;
                    if (found.n, found.width) != (shape.n, shape.width) {
                        return malformed(format!("%{value} does not match the result's shape"));
                    }
                }
            }
            // Determinant, MatrixInverse.
            33 | 34 => {
                let (rows, cols, component) = self.matrix(self.value_type(first)?)?;
                let expected = if number == 33 {
                    component
                } else {
                    self.value_type(first)?
                };
                if rows != cols || result != expected {
                    return malformed("not a square matrix of the result's type".into());
                }
            }
            // Length, Distance.
            66 | 67 => {
                if self.expect(result, Float, "the result type")?.n != 1 {
                    return malformed("a length that is not a scalar".into());
                }
                for &value in operands {
                    let ty = self.value_type(value)?;
                    let component = self.vector(ty).map_or(ty, |(_, c)| c);
                    if component != result {
                        return malformed(format!("%{value} is not made of %{result}"));
                    }
                }
            }
            // Cross.
            68 => {
                if self.vector(result)?.0 != 3 {
                    return malformed("a cross product that is not a 3-vector".into());
                }
                all_result()?;
            }
            // Refract: I and N of the result type, eta a float scalar.
            72 => {
                self.expect(result, Float, "the result type")?;
                for &value in &operands[..2.min(operands.len())] {
                    self.same_type(value, result)?;
                }
                if let Some(&eta) = operands.get(2)
                    && self.expect_value(eta, Float)?.n != 1
                {
                    return malformed("an eta that is not a scalar".into());
                }
            }
            // FindILsb, FindSMsb, FindUMsb.
            73..=75 => {
                let shape = self.expect(result, Int, "the result type")?;
                for &value in operands {
                    if self.expect_value(value, Int)?.n != shape.n {
                        return malformed(format!("%{value} does not match the result's shape"));
                    }
                }
            }
            // Pack*: a 32-bit integer from a float vector; Unpack*: the reverse.
            54..=58 => {
                self.expect(result, Int, "the result type")?;
                self.expect_value(first, Float)?;
            }
            60..=64 => {
                self.expect(result, Float, "the result type")?;
                self.expect_value(first, Int)?;
            }
            _ => {}
        }
        Ok(())
    }

    /// An image instruction takes an image (sampled, for sampling) and gives texels of its
    /// sampled type: four components, or one for depth comparisons.
    fn check_image(&self, inst: &Inst, op: Op, result: Word) -> Result<()> {
        let Some((sampled, texel)) = image_op(op) else {
            return Ok(());
        };
        let ty = self.value_type(id(inst, 0)?)?;
        let image = if sampled {
            match self.def(ty) {
                Some(def) if def.inst.class.opcode == Op::TypeSampledImage => id(def, 0)?,
                _ => return malformed(format!("%{ty} is not a sampled image type")),
            }
        } else {
            ty
        };
        let Some(image_def) = self
            .def(image)
            .filter(|d| d.inst.class.opcode == Op::TypeImage)
        else {
            return malformed(format!("%{image} is not an image type"));
        };
        if let Some(components) = texel {
            let sampled_type = id(image_def, 0)?;
            let fits = match (self.shape(result), self.shape(sampled_type)) {
                (Some(r), Some(s)) => r.base == s.base && r.width == s.width && r.n == components,
                _ => false,
            };
            if !fits {
                return malformed(format!(
                    "the result type %{result} is not {components} components of %{sampled_type}"
                ));
            }
        }
        Ok(())
    }
}

/// For an image instruction: whether it takes a sampled image, and the texel's component
/// count when its result is texels (`None`: queries and writes).
fn image_op(op: Op) -> Option<(bool, Option<u32>)> {
    Some(match op {
        Op::ImageSampleImplicitLod
        | Op::ImageSampleExplicitLod
        | Op::ImageSampleProjImplicitLod
        | Op::ImageSampleProjExplicitLod
        | Op::ImageGather => (true, Some(4)),
        Op::ImageSampleDrefImplicitLod
        | Op::ImageSampleDrefExplicitLod
        | Op::ImageSampleProjDrefImplicitLod
        | Op::ImageSampleProjDrefExplicitLod => (true, Some(1)),
        Op::ImageDrefGather => (true, Some(4)),
        Op::ImageFetch => (false, Some(4)),
        Op::ImageQueryLod => (true, None),
        Op::ImageRead
        | Op::ImageWrite
        | Op::ImageQuerySizeLod
        | Op::ImageQuerySize
        | Op::ImageQueryLevels
        | Op::ImageQuerySamples => (false, None),
        _ => return None,
    })
}
