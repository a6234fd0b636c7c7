//! The IR verifier: checks the invariants the rest of the engine relies on and reports every
//! violation it finds, not just the first.
//!
//! The checks fall into groups, each in its own module:
//!
//! * `shader` — declarations: the entry point, unique names, well-formed types and structs,
//!   where runtime-sized arrays may go, variable attributes, the workgroup size, and the
//!   absence of recursion in the call graph;
//! * `function` — the per-function driver: where instructions sit, SSA dominance, where deref
//!   values may be used, phis, and the CFG's terminators and out-edges;
//! * `structure` — structured control flow: headers with their merge and continue blocks,
//!   back edges, reducibility, and which conditional branches may leave a construct;
//! * `inst` — ALU instructions, constants, derefs and calls;
//! * `intrinsic` — intrinsics against the intrinsic table, memory access through derefs,
//!   atomic operations, and stage restrictions;
//! * `tex` — texture instructions.
//!
//! Nothing here indexes the IR blindly: an out-of-range value, block, variable, struct or
//! function id is reported as an error, never a panic.

mod function;
mod inst;
mod intrinsic;
mod shader;
mod structure;
#[cfg(test)]
mod tests;
mod tex;

use crate::ir::{BlockId, FuncId, Shader, Value};
use std::fmt;

/// What a [`VerifyError`] is about: one variant per check.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    // Declarations.
    /// A function id (the shader's entry point, a call's callee, or the function given to
    /// [`verify_function`]) names no function.
    UnknownFunction,
    /// The entry function takes parameters or returns a value.
    EntrySignature,
    /// Two variables, two struct types or two functions share a name.
    DuplicateName,
    /// Two members of one struct share a name.
    DuplicateMember,
    /// A type names a struct id that does not exist, or a struct contains itself.
    InvalidStruct,
    /// A scalar, vector, matrix or opaque type that cannot exist (bad bit size, component count,
    /// matrix size or base type).
    InvalidType,
    /// `binding` or `desc_set` on a variable that is not `uniform`, `ubo` or `ssbo`.
    MisplacedBinding,
    /// `location` on a variable that is not `shader_in` or `shader_out`.
    MisplacedLocation,
    /// An intrinsic or variable mode that the shader's stage does not have.
    StageMismatch,
    /// A call that is part of a cycle of the call graph.
    Recursion,
    /// A workgroup size with a zero component, or one other than 1,1,1 in a shader that is not
    /// a compute shader.
    WorkgroupSize,
    /// A runtime-sized array (`len` 0) anywhere but as the whole type of an `ssbo` variable or
    /// as the last member of a struct that is only ever the whole type of `ssbo` variables.
    RuntimeArray,
    /// `array_of_blocks` on a variable that is not an `ubo` or `ssbo` of a sized array type.
    ArrayOfBlocks,
    /// `atomic_counters` on a variable that is not an `ssbo`.
    AtomicCounters,
    /// A `constant` variable without an initializer, an initializer on any other variable, or
    /// one whose number of values is not the number of scalars of the type.
    Initializer,

    // Control flow.
    /// The entry block does not exist or has predecessors.
    EntryBlock,
    /// A block without a terminator.
    MissingTerminator,
    /// A terminator whose block's out-edges do not match it.
    TerminatorEdges,
    /// A branch condition that is not a 1-bit scalar.
    BranchCondition,
    /// `return` with a value the function's return type does not allow, or without one it
    /// requires.
    ReturnValue,
    /// A merge or continue block named by a header that does not exist.
    MissingStructureBlock,
    /// A construct whose merge block is its own header.
    MergeIsHeader,
    /// A selection header that does not end in a branch.
    SelectionHeader,
    /// A loop whose continue block does not branch back to the header, or is not dominated by
    /// it.
    LoopContinue,
    /// A back edge to a block that is not a loop header, or from outside the loop.
    BackEdge,
    /// An irreducible cycle: an edge that a depth-first walk from the entry finds retreating
    /// (to a block on the walk's current path) goes to a block that does not dominate its
    /// source.
    Irreducible,
    /// A conditional branch, in a block that is not a selection or loop header, none of whose
    /// targets is the merge or continue block of a construct enclosing the block (a structured
    /// branch is a loop break or continue, or a jump to an enclosing selection's merge).
    UnstructuredBranch,
    /// A loop whose merge block is its continue block, or a reachable construct whose reachable
    /// merge block dominates its header.
    MergePlacement,

    // Instruction placement and SSA.
    /// A block lists an instruction id that is out of range or deleted.
    UnknownInstInBlock,
    /// An instruction's `block` field disagrees with the block listing it, or no block lists
    /// it.
    InstPlacement,
    /// An instruction listed more than once (in one block or in several).
    InstListedTwice,
    /// A source that is not a live instruction defining a value.
    InvalidSource,
    /// A use not dominated by its definition.
    NotDominated,
    /// A value used in a reachable block but defined in an unreachable one.
    DefInUnreachable,

    // Result shapes.
    /// An instruction that has a result it should not have, or lacks one it should have.
    DefPresence,
    /// A result shape with an invalid bit size or component count.
    InvalidShape,

    // ALU instructions and constants.
    /// An ALU instruction with the wrong number of sources.
    AluSourceCount,
    /// An ALU operand whose bit size breaks the opcode's operand types.
    AluBitSize,
    /// An ALU result whose component count breaks the opcode's destination type.
    AluComponents,
    /// A swizzle that reads a component the source value does not have.
    Swizzle,
    /// A constant with a different number of values than its result has components.
    ConstComponents,
    /// A constant value that does not fit in the result's bit size.
    ConstRange,

    // Phis.
    /// A phi after a non-phi instruction of its block.
    PhiNotAtTop,
    /// Phi entries that do not match the block's predecessor blocks one to one: a phi has
    /// exactly one entry per distinct predecessor block, however many edges that block has to
    /// the phi's (a `branch %c, b1, b1` makes its block one predecessor of `b1`), as in SPIR-V
    /// and NIR.
    PhiPredecessors,
    /// A phi source whose shape differs from the phi's.
    PhiShape,

    // Intrinsics.
    /// An intrinsic with the wrong number of sources.
    IntrinsicSourceCount,
    /// An intrinsic source of the wrong shape for its slot in the table.
    IntrinsicSourceShape,
    /// An intrinsic result of the wrong shape.
    IntrinsicDefShape,
    /// An intrinsic whose index vector does not match the table's.
    IndexCount,
    /// An empty write mask, or one that writes components the stored value does not have.
    WriteMask,
    /// An enumerated or flag index with a value outside its range.
    IndexOutOfRange,
    /// A memory access through a deref that does not fit the type it points to.
    DerefAccess,
    /// A store, copy or atomic into a read-only variable.
    ReadOnlyStore,
    /// An atomic whose `atomic_op` does not fit it: `cmpxchg` outside the `_swap` forms or
    /// another operation in them, a float operation (`fadd`, `fmin`, `fmax`) on a target that
    /// is not float, or an integer operation on one that is not an integer, where the target's
    /// type is known (the scalar a deref atomic points to, the base of an image).
    AtomicOperation,
    /// A `load_param` whose index or shape does not match the function's parameters.
    LoadParam,

    // Derefs.
    /// `deref_var` of a variable that does not exist.
    DerefVar,
    /// An array or struct deref whose parent is not a deref of an indexable or struct type.
    DerefParent,
    /// An array index that is not a 32-bit scalar.
    DerefIndex,
    /// A struct deref of a member the struct does not have.
    DerefMember,
    /// A deref whose result is not a deref-shaped value.
    DerefShape,
    /// A deref value used anywhere but as the parent of a deref, an intrinsic source whose slot
    /// takes a deref, or a texture or sampler deref source of a texture instruction (for
    /// example as an ALU or phi source, stored data, an array index, a call argument, a branch
    /// condition or a return value).
    DerefUse,

    // Texture instructions.
    /// A texture instruction without a source its operation needs.
    TexMissingSource,
    /// A texture source role its operation does not take.
    TexUnexpectedSource,
    /// Two texture sources with the same role.
    TexDuplicateSource,
    /// A texture source of the wrong shape for its role.
    TexSourceShape,
    /// A texture or sampler deref source that does not point to a matching texture or sampler.
    TexDerefType,
    /// A texture result of the wrong shape for the operation.
    TexDefShape,
    /// A `tg4` gathering a component other than 0-3.
    TexComponent,

    // Calls.
    /// Call arguments that do not match the callee's parameters.
    CallArguments,
    /// A call result whose shape differs from the callee's return type.
    CallResult,
}

/// One violated invariant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyError {
    /// Which check failed.
    pub kind: ErrorKind,
    /// The function it is in; empty for shader-level declarations.
    pub func: String,
    /// The block it is in, if it is about a block or an instruction.
    pub block: Option<BlockId>,
    /// The instruction it is about, if any.
    pub inst: Option<Value>,
    /// The name of that instruction's operation (`fadd`, `store_deref`, `load_const`, ...).
    pub opcode: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for VerifyError {
    /// `fn main, b3, %12 = fadd: source 1 has bit size 16, expected 32`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.func.is_empty() {
            f.write_str("shader")?;
        } else {
            write!(f, "fn {}", self.func)?;
        }
        if let Some(b) = self.block {
            write!(f, ", b{}", b.index())?;
        }
        if let Some(v) = self.inst {
            write!(f, ", {v}")?;
            if let Some(op) = &self.opcode {
                write!(f, " = {op}")?;
            }
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for VerifyError {}

/// Checks a whole shader: its declarations, every function, and the call graph.
pub fn verify(shader: &Shader) -> Result<(), Vec<VerifyError>> {
    let mut errors = shader::check_declarations(shader);
    let mut calls = Vec::new();
    for id in 0..shader.functions.len() {
        let (errs, sites) = function::check(shader, FuncId(id as u32));
        errors.extend(errs);
        calls.extend(sites);
    }
    errors.extend(shader::check_recursion(shader, &calls));
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// Checks one function of a shader (everything [`verify`] checks inside a function; not the
/// shader's declarations nor recursion through other functions).
pub fn verify_function(shader: &Shader, func: FuncId) -> Result<(), Vec<VerifyError>> {
    if shader.functions.get(func.0 as usize).is_none() {
        return Err(vec![VerifyError {
            kind: ErrorKind::UnknownFunction,
            func: String::new(),
            block: None,
            inst: None,
            opcode: None,
            message: format!(
                "function #{} does not exist (the shader has {})",
                func.0,
                shader.functions.len()
            ),
        }]);
    }
    let (errors, _) = function::check(shader, func);
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}
