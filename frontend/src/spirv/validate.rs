//! The module's structure checked before anything is translated.
//!
//! What: [`check`] holds the module to what the translator relies on, each violation a located
//! error: result ids non-zero, below the header's bound and defined once; every id an
//! instruction names defined somewhere, and a module-level declaration's (types, constants,
//! global variables, function types) defined before it; result types that are types; types
//! well formed (a vector of scalars, a matrix of 2 to 4 vectors of 2 to 4 floats, an array of a
//! data type with a positive constant length, struct members and function parameters that are
//! data types, pointers to types); each function's result and parameters matching its function
//! type, each call passing as many arguments as its callee has parameters; every branch, merge
//! and phi target a block of the same function. Its submodules check the rest of what a
//! validator (`spirv-val`) checks and the translator relies on: the logical layout and block
//! structure ([`layout`]), names, decorations, block layouts and entry points
//! ([`annotations`]), the types of every instruction's operands and result ([`typing`]), and
//! structured control flow ([`cfg`]). `frontend/tests/spirv_agreement.rs` measures how far
//! this agrees with `spirv-val` on mutated modules.
//!
//! Why: the translator looks ids up in tables and follows types recursively. An id defined
//! twice would be translated as whichever came last, a type naming itself would recurse without
//! end, a matrix of zero columns would index past its columns, a call with fewer arguments than
//! parameters would read parameters that do not exist. Checking here, once, keeps those
//! assumptions out of every translation step.
//!
//! Invariants: after `check` succeeds, every id operand resolves, type declarations form a DAG
//! (a declaration only names earlier ones), calls, function types and parameters agree, every
//! instruction's operands have the types its opcode takes, and each function's blocks form
//! properly nested constructs. Every check is linear in the module (the control flow check in
//! its edges times the nesting depth).

mod annotations;
mod cfg;
mod layout;
mod typing;

use super::module::{id, literal, result_id};
use super::types::SpvType;
use super::{Inst, Result, SpirvError};
use rspirv::dr::Operand;
use rspirv::spirv::{Capability, Op, Word};
use std::collections::{HashMap, HashSet};

/// Checks `insts`, the instructions of a module of SPIR-V `version` (the header's word) whose
/// id bound is `bound`.
pub(crate) fn check(version: Word, bound: Word, insts: &[Inst]) -> Result<()> {
    let defs = definitions(bound, insts)?;
    layout::check(insts)?;
    let capabilities = (insts.iter())
        .filter(|inst| inst.inst.class.opcode == Op::Capability)
        .filter_map(|inst| match inst.inst.operands.first() {
            Some(&Operand::Capability(capability)) => Some(capability),
            _ => None,
        })
        .collect();
    let checker = Checker {
        insts,
        defs: &defs,
        capabilities,
        version,
    };
    let mut declared = typing::Declared::new();
    let mut function: Option<Function> = None;
    for (index, inst) in insts.iter().enumerate() {
        let op = inst.inst.class.opcode;
        let at = |e: SpirvError| e.at(inst);
        checker.check_references(index, inst, function.is_none())?;
        if SpvType::is_type_op(op) {
            checker.check_type(inst).map_err(at)?;
            checker
                .check_type_literals(inst, &mut declared)
                .map_err(at)?;
        }
        let function_result = function.as_ref().map(|f| f.result);
        checker.check_typing(inst, function_result).map_err(at)?;
        match op {
            Op::Function => function = Some(checker.open_function(inst)?),
            Op::FunctionParameter => {
                let open = function.as_mut().ok_or_else(|| outside(inst))?;
                open.parameters.push(inst.inst.result_type.unwrap_or(0));
            }
            Op::FunctionEnd => {
                let open = function.take().ok_or_else(|| outside(inst))?;
                checker.close_function(&open)?;
            }
            _ => {
                if let Some(open) = function.as_mut() {
                    open.body.push(index);
                }
            }
        }
        if op == Op::FunctionCall {
            checker.check_call(inst).map_err(|e| e.at(inst))?;
        }
    }
    checker.check_annotations()
}

fn outside(inst: &Inst) -> SpirvError {
    SpirvError::malformed("outside a function").at(inst)
}

/// Each result id's instruction (by index), every id checked against the bound and for
/// uniqueness.
fn definitions(bound: Word, insts: &[Inst]) -> Result<HashMap<Word, usize>> {
    let mut defs = HashMap::with_capacity(insts.len());
    for (index, inst) in insts.iter().enumerate() {
        let Some(id) = inst.inst.result_id else {
            continue;
        };
        if id == 0 || id >= bound {
            return Err(SpirvError::malformed(format!(
                "the result id %{id} is not between 1 and the module's bound {bound}"
            ))
            .at(inst));
        }
        if let Some(first) = defs.insert(id, index) {
            return Err(SpirvError::malformed(format!(
                "%{id} is defined twice (first at word {})",
                insts[first].offset
            ))
            .at(inst));
        }
    }
    Ok(defs)
}

/// The ids an instruction's operands name.
fn referenced(inst: &Inst) -> impl Iterator<Item = Word> + '_ {
    inst.inst
        .operands
        .iter()
        .filter_map(|operand| match *operand {
            Operand::IdRef(id) | Operand::IdMemorySemantics(id) | Operand::IdScope(id) => Some(id),
            _ => None,
        })
}

/// A function being read: where it starts, its function type's parameters, the parameters
/// read so far and the indices of its other instructions.
struct Function {
    at: usize,
    result: Word,
    expected: Vec<Word>,
    parameters: Vec<Word>,
    body: Vec<usize>,
}

struct Checker<'m> {
    insts: &'m [Inst],
    defs: &'m HashMap<Word, usize>,
    capabilities: HashSet<Capability>,
    /// The module's SPIR-V version, `0x00MMmm00`.
    version: Word,
}

impl Checker<'_> {
    /// The instruction defining `id`.
    fn def(&self, id: Word) -> Option<&Inst> {
        self.defs.get(&id).map(|&i| &self.insts[i])
    }

    fn op_of(&self, id: Word) -> Option<Op> {
        self.def(id).map(|inst| inst.inst.class.opcode)
    }

    /// Every id `inst` names is defined, its result type is a type, and at module level a
    /// declaration names only what is declared before it (a pointer may name a type its
    /// `OpTypeForwardPointer` announced).
    fn check_references(&self, index: usize, inst: &Inst, module_level: bool) -> Result<()> {
        let op = inst.inst.class.opcode;
        for id in referenced(inst) {
            let Some(&def) = self.defs.get(&id) else {
                return Err(SpirvError::malformed(format!("%{id} is not defined")).at(inst));
            };
            let declaration = module_level && inst.inst.result_id.is_some();
            // Only a use before its declaration looks for an announcing forward pointer.
            if declaration
                && def >= index
                && !(op == Op::TypePointer && self.forward_declared(id, index))
            {
                return Err(
                    SpirvError::malformed(format!("%{id} is used before its declaration")).at(inst),
                );
            }
        }
        if let Some(ty) = inst.inst.result_type {
            match self.def(ty) {
                None => {
                    return Err(SpirvError::malformed(format!(
                        "the result type %{ty} is not defined"
                    ))
                    .at(inst));
                }
                Some(def) if !SpvType::is_type_op(def.inst.class.opcode) => {
                    return Err(SpirvError::malformed(format!(
                        "the result type %{ty} is not a type"
                    ))
                    .at(inst));
                }
                Some(_) if module_level && self.defs[&ty] >= index => {
                    return Err(SpirvError::malformed(format!(
                        "the result type %{ty} is used before its declaration"
                    ))
                    .at(inst));
                }
                Some(_) => {}
            }
        }
        Ok(())
    }

    /// Whether an `OpTypeForwardPointer` before instruction `index` announces `id`.
    fn forward_declared(&self, id: Word, index: usize) -> bool {
        self.insts[..index].iter().any(|inst| {
            inst.inst.class.opcode == Op::TypeForwardPointer
                && matches!(inst.inst.operands.first(), Some(&Operand::IdRef(p)) if p == id)
        })
    }

    /// Whether `id` is a type values can have: not void, not a function type.
    fn is_data_type(&self, id: Word) -> bool {
        self.op_of(id).is_some_and(|op| {
            SpvType::is_type_op(op) && !matches!(op, Op::TypeVoid | Op::TypeFunction)
        })
    }

    fn is_type(&self, id: Word) -> bool {
        self.op_of(id).is_some_and(SpvType::is_type_op)
    }

    /// The type declaration `inst` is well formed.
    fn check_type(&self, inst: &Inst) -> Result<()> {
        let kind = |id: Word, what: &str, ok: bool| {
            if ok {
                Ok(())
            } else {
                Err(SpirvError::malformed(format!("%{id} is not {what}")))
            }
        };
        match inst.inst.class.opcode {
            Op::TypeVector => {
                let elem = id(inst, 0)?;
                let scalar = matches!(
                    self.op_of(elem),
                    Some(Op::TypeInt | Op::TypeFloat | Op::TypeBool)
                );
                kind(elem, "a scalar type, as a vector's component", scalar)
            }
            Op::TypeMatrix => {
                let column = id(inst, 0)?;
                let cols = literal(inst, 1)?;
                if !(2..=4).contains(&cols) {
                    return Err(SpirvError::malformed(format!(
                        "a matrix of {cols} columns (2 to 4)"
                    )));
                }
                let float_vector = self.def(column).is_some_and(|def| {
                    def.inst.class.opcode == Op::TypeVector
                        && id(def, 0).is_ok_and(|c| self.op_of(c) == Some(Op::TypeFloat))
                        && literal(def, 1).is_ok_and(|n| (2..=4).contains(&n))
                });
                kind(
                    column,
                    "a vector of 2 to 4 floats, as a matrix column",
                    float_vector,
                )
            }
            Op::TypeArray => {
                let elem = id(inst, 0)?;
                kind(
                    elem,
                    "a data type, as an array's element",
                    self.is_data_type(elem),
                )?;
                let len = id(inst, 1)?;
                let constant = self.def(len).filter(|def| {
                    matches!(
                        def.inst.class.opcode,
                        Op::Constant | Op::SpecConstant | Op::SpecConstantOp
                    ) && def
                        .inst
                        .result_type
                        .is_some_and(|t| self.op_of(t) == Some(Op::TypeInt))
                });
                let Some(constant) = constant else {
                    return Err(SpirvError::malformed(format!(
                        "%{len} is not an integer constant, as an array's length"
                    )));
                };
                let opcode = constant.inst.class.opcode;
                match constant.inst.operands.first() {
                    Some(Operand::LiteralBit32(0)) if opcode == Op::Constant => {
                        Err(SpirvError::malformed("an array of length 0"))
                    }
                    _ => Ok(()),
                }
            }
            Op::TypeRuntimeArray => {
                let elem = id(inst, 0)?;
                kind(
                    elem,
                    "a data type, as an array's element",
                    self.is_data_type(elem),
                )
            }
            Op::TypeStruct => {
                for member in referenced(inst) {
                    kind(
                        member,
                        "a data type, as a struct member",
                        self.is_data_type(member),
                    )?;
                }
                Ok(())
            }
            Op::TypePointer => {
                let pointee = id(inst, 1)?;
                kind(
                    pointee,
                    "a type, as a pointer's pointee",
                    self.is_type(pointee),
                )
            }
            Op::TypeFunction => {
                let result = id(inst, 0)?;
                kind(
                    result,
                    "a type, as a function's result",
                    self.is_type(result),
                )?;
                for parameter in referenced(inst).skip(1) {
                    let ok = self.is_data_type(parameter);
                    kind(parameter, "a data type, as a function parameter", ok)?;
                }
                Ok(())
            }
            Op::TypeSampledImage => {
                let image = id(inst, 0)?;
                kind(
                    image,
                    "an image type",
                    self.op_of(image) == Some(Op::TypeImage),
                )
            }
            Op::TypeImage => {
                let sampled = id(inst, 0)?;
                let ok = matches!(
                    self.op_of(sampled),
                    Some(Op::TypeVoid | Op::TypeInt | Op::TypeFloat)
                );
                kind(
                    sampled,
                    "a scalar type or void, as an image's sampled type",
                    ok,
                )
            }
            _ => Ok(()),
        }
    }

    /// A function's result type and its function type's, and the parameters it declares.
    fn open_function(&self, inst: &Inst) -> Result<Function> {
        let index = self.defs[&result_id(inst)?];
        let result = inst.inst.result_type.unwrap_or(0);
        let ty = id(inst, 1).map_err(|e| e.at(inst))?;
        let function_type = self
            .def(ty)
            .filter(|def| def.inst.class.opcode == Op::TypeFunction)
            .ok_or_else(|| {
                SpirvError::malformed(format!("%{ty} is not a function type")).at(inst)
            })?;
        let declared: Vec<Word> = referenced(function_type).collect();
        if declared.first() != Some(&result) {
            return Err(SpirvError::malformed(format!(
                "the result type %{result} is not its function type's, %{}",
                declared.first().copied().unwrap_or(0)
            ))
            .at(inst));
        }
        Ok(Function {
            at: index,
            result,
            expected: declared[1..].to_vec(),
            parameters: Vec::new(),
            body: Vec::new(),
        })
    }

    /// The function's parameters match its type, every branch, merge and phi target is one of
    /// its blocks, and its control flow is structured.
    fn close_function(&self, function: &Function) -> Result<()> {
        let start = &self.insts[function.at];
        if function.parameters != function.expected {
            return Err(SpirvError::malformed(format!(
                "its parameters ({}) are not its function type's ({})",
                ids(&function.parameters),
                ids(&function.expected)
            ))
            .at(start));
        }
        let labels: HashSet<Word> = (function.body.iter())
            .map(|&i| &self.insts[i])
            .filter(|inst| inst.inst.class.opcode == Op::Label)
            .filter_map(|inst| inst.inst.result_id)
            .collect();
        for &i in &function.body {
            let inst = &self.insts[i];
            let targets = block_operands(inst);
            if let Some(target) = targets.iter().find(|t| !labels.contains(t)) {
                return Err(SpirvError::malformed(format!(
                    "%{target} is not a block of this function"
                ))
                .at(inst));
            }
        }
        cfg::check_function(self.insts, &function.body)
    }

    /// A call names a function and passes as many arguments as it has parameters; its result
    /// type is the callee's. (An argument's type may differ from its parameter's by the ids of
    /// identical types: glslang passes a struct of samplers with a pointer type of its own, and
    /// the translator copies arguments member by member.)
    fn check_call(&self, inst: &Inst) -> Result<()> {
        let callee = id(inst, 0)?;
        let function = self
            .def(callee)
            .filter(|def| def.inst.class.opcode == Op::Function)
            .ok_or_else(|| SpirvError::malformed(format!("%{callee} is not a function")))?;
        let ty = id(function, 1)?;
        let declared: Vec<Word> = self
            .def(ty)
            .map(|t| referenced(t).collect())
            .unwrap_or_default();
        let Some((&result, parameters)) = declared.split_first() else {
            return Err(SpirvError::malformed(format!(
                "%{callee} has no function type"
            )));
        };
        if inst.inst.result_type != Some(result) {
            return Err(SpirvError::malformed(format!(
                "the call's result type is not %{callee}'s result type %{result}"
            )));
        }
        let arguments: Vec<Word> = referenced(inst).skip(1).collect();
        if arguments.len() != parameters.len() {
            return Err(SpirvError::malformed(format!(
                "{} arguments to %{callee}, which takes {}",
                arguments.len(),
                parameters.len()
            )));
        }
        Ok(())
    }
}

/// The operands of a branch, merge or phi that name blocks.
fn block_operands(inst: &Inst) -> Vec<Word> {
    let ids = referenced(inst);
    match inst.inst.class.opcode {
        Op::Branch | Op::SelectionMerge => ids.take(1).collect(),
        Op::LoopMerge => ids.take(2).collect(),
        Op::BranchConditional => ids.skip(1).take(2).collect(),
        // The selector, then the default and each case's target.
        Op::Switch => ids.skip(1).collect(),
        // A phi's operands alternate value and parent block.
        Op::Phi => ids.skip(1).step_by(2).collect(),
        _ => Vec::new(),
    }
}

/// `%a, %b, ...`.
fn ids(ids: &[Word]) -> String {
    let ids: Vec<String> = ids.iter().map(|id| format!("%{id}")).collect();
    ids.join(", ")
}
