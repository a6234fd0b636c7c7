//! The module's logical layout: its sections in order, one memory model, and every function a
//! sequence of blocks.
//!
//! What: instructions come in the order SPIR-V prescribes (capabilities, extensions, imports,
//! the memory model, entry points, execution modes, debug instructions, annotations, then
//! types, constants and global variables, then functions); inside a function, after its
//! parameters, every instruction is in a block (a label, then non-terminators, then one
//! terminator); a function's variables come first in its first block, phis first in theirs,
//! and a merge instruction right before its block's branch.
//!
//! Why: the module reader splits functions into blocks by their labels and terminators and
//! reads the module-level sections into tables before any function; an instruction outside a
//! block would be attached to the wrong one, and a declaration among functions would be read
//! after its uses.

use crate::spirv::{Inst, Result, SpirvError};
use rspirv::spirv::Op;

/// The module-level sections, in their required order; `Function` is everything from the first
/// `OpFunction` on.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Section {
    Capability,
    Extension,
    ExtInstImport,
    MemoryModel,
    EntryPoint,
    ExecutionMode,
    Source,
    Name,
    ModuleProcessed,
    Annotation,
    Declaration,
    Function,
}

/// The section an instruction belongs in; `None` for an instruction that may appear in more
/// than one (lines, `OpUndef`, `OpNop`).
fn section(op: Op) -> Option<Section> {
    Some(match op {
        Op::Capability => Section::Capability,
        Op::Extension => Section::Extension,
        Op::ExtInstImport => Section::ExtInstImport,
        Op::MemoryModel => Section::MemoryModel,
        Op::EntryPoint => Section::EntryPoint,
        Op::ExecutionMode | Op::ExecutionModeId => Section::ExecutionMode,
        Op::String | Op::SourceExtension | Op::Source | Op::SourceContinued => Section::Source,
        Op::Name | Op::MemberName => Section::Name,
        Op::ModuleProcessed => Section::ModuleProcessed,
        Op::Decorate
        | Op::MemberDecorate
        | Op::DecorationGroup
        | Op::GroupDecorate
        | Op::GroupMemberDecorate
        | Op::DecorateId
        | Op::DecorateString
        | Op::MemberDecorateString => Section::Annotation,
        Op::Line | Op::NoLine | Op::Undef | Op::Nop => return None,
        // A variable is global outside functions and local inside them.
        Op::Variable => Section::Declaration,
        op if crate::spirv::types::SpvType::is_type_op(op) || is_constant(op) => {
            Section::Declaration
        }
        _ => Section::Function,
    })
}

pub(super) fn is_constant(op: Op) -> bool {
    matches!(
        op,
        Op::ConstantTrue
            | Op::ConstantFalse
            | Op::Constant
            | Op::ConstantComposite
            | Op::ConstantSampler
            | Op::ConstantNull
            | Op::SpecConstantTrue
            | Op::SpecConstantFalse
            | Op::SpecConstant
            | Op::SpecConstantComposite
            | Op::SpecConstantOp
    )
}

/// Whether `op` ends a block.
fn is_terminator(op: Op) -> bool {
    matches!(
        op,
        Op::Branch
            | Op::BranchConditional
            | Op::Switch
            | Op::Return
            | Op::ReturnValue
            | Op::Kill
            | Op::Unreachable
            | Op::TerminateInvocation
    )
}

/// Where the walk is inside a function.
#[derive(Copy, Clone, PartialEq, Eq)]
enum Place {
    /// Outside functions.
    Module,
    /// After `OpFunction` or a parameter.
    Parameters,
    /// After a terminator (or the parameters, once a block has been seen): a label or the end
    /// must follow.
    BetweenBlocks,
    /// In a block; `first` for the function's first block, `leading` while only labels, lines,
    /// variables (first block) and phis have been seen.
    InBlock { first: bool, leading: bool },
}

/// Checks the order of sections and the block structure of every function.
pub(super) fn check(insts: &[Inst]) -> Result<()> {
    let misplaced = |inst: &Inst, why: &str| Err(SpirvError::malformed(why.to_string()).at(inst));
    let mut highest = Section::Capability;
    let mut memory_models = 0;
    let mut place = Place::Module;
    for (index, inst) in insts.iter().enumerate() {
        let op = inst.inst.class.opcode;
        let section = section(op);
        // Inside functions the order is the blocks' (below).
        if let Some(section) = section.filter(|_| place == Place::Module) {
            if section < highest {
                return misplaced(inst, "an instruction out of its module section's order");
            }
            highest = section;
        }
        if op == Op::MemoryModel {
            memory_models += 1;
            if memory_models > 1 {
                return misplaced(inst, "a second memory model");
            }
        }
        if section > Some(Section::MemoryModel) && memory_models == 0 {
            return misplaced(inst, "an instruction before the memory model");
        }
        place = match (place, op) {
            (Place::Module, Op::Function) => Place::Parameters,
            (Place::Module, _) if section == Some(Section::Function) => {
                return misplaced(inst, "a function's instruction outside a function");
            }
            (Place::Module, _) => Place::Module,
            (Place::Parameters, Op::FunctionParameter) => Place::Parameters,
            (Place::Parameters, Op::Label) => Place::InBlock {
                first: true,
                leading: true,
            },
            (Place::Parameters | Place::BetweenBlocks, Op::FunctionEnd) => Place::Module,
            (Place::BetweenBlocks, Op::Label) => Place::InBlock {
                first: false,
                leading: true,
            },
            (Place::Parameters | Place::BetweenBlocks, Op::Line | Op::NoLine) => place,
            (Place::Parameters | Place::BetweenBlocks, _) => {
                return misplaced(inst, "an instruction outside a block");
            }
            (Place::InBlock { .. }, _) if section.is_some_and(|s| s < Section::Function) => {
                if op != Op::Variable {
                    return misplaced(inst, "a module-level instruction inside a function");
                }
                let Place::InBlock { first, leading } = place else {
                    unreachable!()
                };
                if !(first && leading) {
                    return misplaced(
                        inst,
                        "a variable that is not at the start of the function's first block",
                    );
                }
                place
            }
            (Place::InBlock { first, leading }, _) => {
                if op == Op::Phi && !leading {
                    return misplaced(inst, "a phi after other instructions of its block");
                }
                if matches!(op, Op::SelectionMerge | Op::LoopMerge)
                    && !insts
                        .get(index + 1)
                        .is_some_and(|next| is_terminator(next.inst.class.opcode))
                {
                    return misplaced(inst, "a merge instruction not right before a branch");
                }
                if is_terminator(op) {
                    Place::BetweenBlocks
                } else if matches!(
                    op,
                    Op::Label | Op::Function | Op::FunctionParameter | Op::FunctionEnd
                ) {
                    return misplaced(inst, "a block without a terminator");
                } else {
                    let still_leading =
                        leading && matches!(op, Op::Phi | Op::Line | Op::NoLine | Op::Undef);
                    Place::InBlock {
                        first,
                        leading: still_leading,
                    }
                }
            }
        };
    }
    if memory_models == 0 {
        return Err(SpirvError::malformed("the module has no memory model"));
    }
    if place != Place::Module {
        return Err(SpirvError::malformed("a function without OpFunctionEnd"));
    }
    Ok(())
}
