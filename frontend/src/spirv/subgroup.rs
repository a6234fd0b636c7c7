//! Subgroup instructions: SPV_KHR_shader_ballot and SPV_KHR_subgroup_vote (GLSL's
//! ARB_shader_ballot and ARB_shader_group_vote), and the basic, vote, ballot, shuffle and
//! arithmetic (reductions, inclusive and exclusive scans) operations of the `GroupNonUniform`
//! family at subgroup scope.

use super::function::{Translator, Val};
use super::module::id;
use super::{Inst, Result, SpirvError};
use rspirv::dr::Operand;
use rspirv::spirv::{GroupOperation, Op, Scope};
use shrew_engine::ir::Value;
use shrew_engine::ops::intrinsics::reduction_index;
use shrew_engine::ops::{AluOp, IndexKind, Intrinsic};

/// The ALU opcode an arithmetic `GroupNonUniform` instruction combines values with (the
/// logical ones on booleans: bitwise on one bit).
fn reduction_alu(op: Op) -> Option<AluOp> {
    use Op::*;
    Some(match op {
        GroupNonUniformIAdd => AluOp::Iadd,
        GroupNonUniformFAdd => AluOp::Fadd,
        GroupNonUniformIMul => AluOp::Imul,
        GroupNonUniformFMul => AluOp::Fmul,
        GroupNonUniformSMin => AluOp::Imin,
        GroupNonUniformUMin => AluOp::Umin,
        GroupNonUniformFMin => AluOp::Fmin,
        GroupNonUniformSMax => AluOp::Imax,
        GroupNonUniformUMax => AluOp::Umax,
        GroupNonUniformFMax => AluOp::Fmax,
        GroupNonUniformBitwiseAnd | GroupNonUniformLogicalAnd => AluOp::Iand,
        GroupNonUniformBitwiseOr | GroupNonUniformLogicalOr => AluOp::Ior,
        GroupNonUniformBitwiseXor | GroupNonUniformLogicalXor => AluOp::Ixor,
        _ => return None,
    })
}

impl Translator<'_> {
    /// Translates a subgroup instruction; `false` if `inst` is none.
    pub fn subgroup_inst(&mut self, inst: &Inst) -> Result<bool> {
        use Op::*;
        let op = inst.inst.class.opcode;
        // The `GroupNonUniform` instructions name their scope first.
        let first = match op {
            SubgroupBallotKHR
            | SubgroupFirstInvocationKHR
            | SubgroupReadInvocationKHR
            | SubgroupAllKHR
            | SubgroupAnyKHR
            | SubgroupAllEqualKHR => 0,
            GroupNonUniformElect
            | GroupNonUniformAll
            | GroupNonUniformAny
            | GroupNonUniformAllEqual
            | GroupNonUniformBallot
            | GroupNonUniformBroadcast
            | GroupNonUniformBroadcastFirst
            | GroupNonUniformShuffle
            | GroupNonUniformIAdd
            | GroupNonUniformFAdd
            | GroupNonUniformIMul
            | GroupNonUniformFMul
            | GroupNonUniformSMin
            | GroupNonUniformUMin
            | GroupNonUniformFMin
            | GroupNonUniformSMax
            | GroupNonUniformUMax
            | GroupNonUniformFMax
            | GroupNonUniformBitwiseAnd
            | GroupNonUniformBitwiseOr
            | GroupNonUniformBitwiseXor
            | GroupNonUniformLogicalAnd
            | GroupNonUniformLogicalOr
            | GroupNonUniformLogicalXor => {
                let scope = self.const_u32(id(inst, 0)?)?;
                if scope != Scope::Subgroup as u32 {
                    return Err(SpirvError::unsupported(format!(
                        "Op{} at a scope other than the subgroup",
                        inst.inst.class.opname
                    )));
                }
                1
            }
            _ => return Ok(false),
        };
        let operand = |t: &mut Self, k: usize| -> Result<Value> { t.ssa(id(inst, first + k)?) };
        let value = match op {
            SubgroupBallotKHR | GroupNonUniformBallot => {
                let cond = operand(self, 0)?;
                self.intrinsic(Intrinsic::Ballot, &[cond])
            }
            SubgroupAllKHR | GroupNonUniformAll => {
                let cond = operand(self, 0)?;
                self.intrinsic(Intrinsic::VoteAll, &[cond])
            }
            SubgroupAnyKHR | GroupNonUniformAny => {
                let cond = operand(self, 0)?;
                self.intrinsic(Intrinsic::VoteAny, &[cond])
            }
            SubgroupAllEqualKHR | GroupNonUniformAllEqual => {
                let v = operand(self, 0)?;
                if self.builder().value_type(v).bits != 1 {
                    return Err(SpirvError::unsupported(
                        "subgroup equality votes of other than booleans",
                    ));
                }
                self.intrinsic(Intrinsic::VoteAllEqual, &[v])
            }
            SubgroupFirstInvocationKHR | GroupNonUniformBroadcastFirst => {
                let v = operand(self, 0)?;
                self.read(Intrinsic::ReadFirstInvocation, &[v])
            }
            SubgroupReadInvocationKHR | GroupNonUniformBroadcast | GroupNonUniformShuffle => {
                let v = operand(self, 0)?;
                let index = self.index32(id(inst, first + 1)?)?;
                self.read(Intrinsic::ReadInvocation, &[v, index])
            }
            _ if reduction_alu(op).is_some() => return self.reduction(inst, op).map(|()| true),
            GroupNonUniformElect => {
                // The active invocation with the lowest index is elected.
                let own = self.intrinsic(Intrinsic::LoadSubgroupInvocation, &[]);
                let first = self.read(Intrinsic::ReadFirstInvocation, &[own]);
                self.builder().alu(AluOp::Ieq, &[own, first])
            }
            _ => unreachable!("matched above"),
        };
        self.set(inst, Val::Ssa(value))?;
        Ok(true)
    }

    /// An arithmetic `GroupNonUniform` instruction: its group operation (a reduction or a scan;
    /// clustered reductions are not supported) of its value with the instruction's ALU opcode.
    fn reduction(&mut self, inst: &Inst, op: Op) -> Result<()> {
        let alu = reduction_alu(op).expect("an arithmetic instruction");
        let intrinsic = match inst.inst.operands.get(1) {
            Some(Operand::GroupOperation(GroupOperation::Reduce)) => Intrinsic::Reduce,
            Some(Operand::GroupOperation(GroupOperation::InclusiveScan)) => {
                Intrinsic::InclusiveScan
            }
            Some(Operand::GroupOperation(GroupOperation::ExclusiveScan)) => {
                Intrinsic::ExclusiveScan
            }
            other => {
                return Err(SpirvError::unsupported(format!(
                    "Op{} with the group operation {other:?}",
                    inst.inst.class.opname
                )));
            }
        };
        let v = self.ssa(id(inst, 2)?)?;
        let shape = self.builder().value_type(v);
        let index = reduction_index(alu).expect("a reduction opcode");
        let value = self.builder().intrinsic(
            intrinsic,
            &[v],
            Some(shape),
            &[(IndexKind::ReductionOp, index)],
        );
        self.set(inst, Val::Ssa(value))
    }

    /// An intrinsic of a fixed shape.
    fn intrinsic(&mut self, op: Intrinsic, srcs: &[Value]) -> Value {
        self.builder().intrinsic(op, srcs, None, &[])
    }

    /// A read of another invocation's value, of the value's own shape.
    fn read(&mut self, op: Intrinsic, srcs: &[Value]) -> Value {
        let shape = self.builder().value_type(srcs[0]);
        self.builder().intrinsic(op, srcs, Some(shape), &[])
    }
}
