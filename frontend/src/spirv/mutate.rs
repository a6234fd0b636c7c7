//! Deterministic mutations of a SPIR-V module, the input of the differential test against
//! `spirv-val` (`frontend/tests/spirv_agreement.rs`).
//!
//! What: [`mutate`] makes one small change to a module, chosen by a seed, of the kinds a
//! validator checks: an id operand pointed at another id, an id past the bound or defined
//! later, another result type, two instructions swapped, one deleted or duplicated (a second
//! definition of its result id), an opcode changed to its neighbour, a literal changed (a vector
//! size, a constant, a decoration's value), a merge, continue or branch target moved to another
//! block, a function given another function type.
//!
//! Why: the strict reader ([`super::validate`]) must reject what a validator rejects, or
//! translate it correctly; mutating real modules (glslang's output for piglit) finds the
//! checks it lacks. The same seed gives the same mutant on every machine, so a disagreement can
//! be replayed.

use super::{Inst, SpirvError, parse};
use rspirv::binary::Assemble;
use rspirv::dr::Operand;
use rspirv::spirv::{Op, Word};
use shrew_engine::rng::Rng;

/// The kinds of change [`mutate`] makes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mutation {
    /// An id operand names another id of the module.
    OtherId,
    /// An id operand names 0 or an id at or past the bound.
    OutOfBoundId,
    /// An id operand names an id defined after the instruction.
    ForwardId,
    /// The result type is another type of the module.
    ResultType,
    /// Two instructions, at most a few apart, trade places.
    Swap,
    /// An instruction is removed.
    Delete,
    /// An instruction appears twice in a row.
    Duplicate,
    /// The opcode is one more or one less.
    Opcode,
    /// A literal number operand (a size, a constant, a decoration's value, an index) changes.
    Literal,
    /// A merge or continue target is another block.
    MergeTarget,
    /// A branch or switch target is another block.
    BranchTarget,
    /// A function's function type is another function type.
    FunctionType,
}

impl Mutation {
    pub const ALL: [Mutation; 12] = [
        Mutation::OtherId,
        Mutation::OutOfBoundId,
        Mutation::ForwardId,
        Mutation::ResultType,
        Mutation::Swap,
        Mutation::Delete,
        Mutation::Duplicate,
        Mutation::Opcode,
        Mutation::Literal,
        Mutation::MergeTarget,
        Mutation::BranchTarget,
        Mutation::FunctionType,
    ];
}

/// A mutated module and the change made.
#[derive(Clone, Debug)]
pub struct Mutant {
    pub words: Vec<u32>,
    pub mutation: Mutation,
    /// The change, located: `instruction 37 (OpFAdd): operand %12 -> %40`.
    pub description: String,
}

/// One change to `words`, chosen by `seed`. Errors when the module does not parse; a module
/// with nothing a mutation applies to (no instructions) is returned unchanged.
pub fn mutate(words: &[u32], seed: u64) -> Result<Mutant, SpirvError> {
    let insts = parse(words)?;
    let mut module = Mutable::new(words[..5].to_vec(), insts);
    let mut rng = Rng::new(seed);
    let first = rng.below(Mutation::ALL.len());
    // The kind the seed picks, or the next one that applies to this module.
    for k in 0..Mutation::ALL.len() {
        let mutation = Mutation::ALL[(first + k) % Mutation::ALL.len()];
        if let Some(description) = module.apply(mutation, &mut rng) {
            return Ok(Mutant {
                words: module.assemble(),
                mutation,
                description,
            });
        }
    }
    Ok(Mutant {
        words: words.to_vec(),
        mutation: Mutation::ALL[first],
        description: "nothing to mutate".into(),
    })
}

/// Where an id operand is: instruction index and operand index.
type IdSlot = (usize, usize);

struct Mutable {
    header: Vec<u32>,
    insts: Vec<Inst>,
    /// An opcode to write over instruction `.0`'s after assembling.
    opcode: Option<(usize, u32)>,
}

impl Mutable {
    fn new(header: Vec<u32>, insts: Vec<Inst>) -> Mutable {
        Mutable {
            header,
            insts,
            opcode: None,
        }
    }

    fn bound(&self) -> Word {
        self.header[3]
    }

    fn opcode(&self, index: usize) -> Op {
        self.insts[index].inst.class.opcode
    }

    fn name(&self, index: usize) -> String {
        format!(
            "instruction {index} (Op{})",
            self.insts[index].inst.class.opname
        )
    }

    /// Every id operand, in module order.
    fn id_slots(&self) -> Vec<IdSlot> {
        let mut slots = Vec::new();
        for (i, inst) in self.insts.iter().enumerate() {
            for (o, operand) in inst.inst.operands.iter().enumerate() {
                if matches!(
                    operand,
                    Operand::IdRef(_) | Operand::IdScope(_) | Operand::IdMemorySemantics(_)
                ) {
                    slots.push((i, o));
                }
            }
        }
        slots
    }

    /// The result ids of the instructions `keep` selects, with their instruction indices.
    fn results(&self, keep: impl Fn(Op) -> bool) -> Vec<(usize, Word)> {
        (self.insts.iter().enumerate())
            .filter(|(_, inst)| keep(inst.inst.class.opcode))
            .filter_map(|(i, inst)| Some((i, inst.inst.result_id?)))
            .collect()
    }

    fn id_at(&self, (i, o): IdSlot) -> Word {
        match self.insts[i].inst.operands[o] {
            Operand::IdRef(id) | Operand::IdScope(id) | Operand::IdMemorySemantics(id) => id,
            _ => unreachable!("an id slot holds an id"),
        }
    }

    fn set_id(&mut self, (i, o): IdSlot, new: Word) -> String {
        let name = self.name(i);
        let (Operand::IdRef(id) | Operand::IdScope(id) | Operand::IdMemorySemantics(id)) =
            &mut self.insts[i].inst.operands[o]
        else {
            unreachable!("an id slot holds an id");
        };
        let description = format!("{name}: operand {o} %{id} -> %{new}");
        *id = new;
        description
    }

    /// Replaces one of the id operands `slots` with an id `choose` picks (`None`: none applies,
    /// or the pick is the id already there).
    fn retarget(
        &mut self,
        rng: &mut Rng,
        slots: &[IdSlot],
        choose: impl Fn(&mut Rng, IdSlot) -> Option<Word>,
    ) -> Option<String> {
        if slots.is_empty() {
            return None;
        }
        let slot = slots[rng.below(slots.len())];
        let new = choose(rng, slot)?;
        (new != self.id_at(slot)).then(|| self.set_id(slot, new))
    }

    fn apply(&mut self, mutation: Mutation, rng: &mut Rng) -> Option<String> {
        let n = self.insts.len();
        if n == 0 {
            return None;
        }
        match mutation {
            Mutation::OtherId => {
                let ids = self.results(|_| true);
                self.retarget(rng, &self.id_slots(), |rng, _| {
                    Some(ids.get(rng.below(ids.len()))?.1)
                })
            }
            Mutation::OutOfBoundId => {
                let bound = self.bound();
                self.retarget(rng, &self.id_slots(), |rng, _| {
                    Some(rng.pick(&[0, bound, bound + 1, bound + 100, u32::MAX]))
                })
            }
            Mutation::ForwardId => {
                let ids = self.results(|_| true);
                self.retarget(rng, &self.id_slots(), |rng, (i, _)| {
                    // The ids defined by the instruction itself or after it.
                    let later = &ids[ids.partition_point(|&(at, _)| at < i)..];
                    Some(later.get(rng.below(later.len()))?.1)
                })
            }
            Mutation::ResultType => {
                let types = self.results(is_type);
                let typed: Vec<usize> = (0..n)
                    .filter(|&i| self.insts[i].inst.result_type.is_some())
                    .collect();
                if typed.is_empty() || types.is_empty() {
                    return None;
                }
                let i = typed[rng.below(typed.len())];
                let new = types[rng.below(types.len())].1;
                let name = self.name(i);
                let slot = self.insts[i].inst.result_type.as_mut()?;
                if *slot == new {
                    return None;
                }
                let description = format!("{name}: result type %{slot} -> %{new}");
                *slot = new;
                Some(description)
            }
            Mutation::Swap => {
                let a = rng.below(n);
                let b = (a + 1 + rng.below(4)).min(n - 1);
                if a == b {
                    return None;
                }
                let description = format!("{} swapped with {}", self.name(a), self.name(b));
                self.insts.swap(a, b);
                Some(description)
            }
            Mutation::Delete => {
                let i = rng.below(n);
                let description = format!("{} deleted", self.name(i));
                self.insts.remove(i);
                Some(description)
            }
            Mutation::Duplicate => {
                let i = rng.below(n);
                let description = format!("{} duplicated", self.name(i));
                self.insts.insert(i + 1, self.insts[i].clone());
                Some(description)
            }
            Mutation::Opcode => {
                let i = rng.below(n);
                let old = self.opcode(i) as u32;
                let new = if old == 0 || rng.below(2) == 0 {
                    old + 1
                } else {
                    old - 1
                };
                self.opcode = Some((i, new));
                Some(format!("{}: opcode {old} -> {new}", self.name(i)))
            }
            Mutation::Literal => {
                let slots: Vec<(usize, usize)> = (self.insts.iter().enumerate())
                    .flat_map(|(i, inst)| {
                        (inst.inst.operands.iter().enumerate())
                            .filter(|(_, operand)| matches!(operand, Operand::LiteralBit32(_)))
                            .map(move |(o, _)| (i, o))
                    })
                    .collect();
                if slots.is_empty() {
                    return None;
                }
                let (i, o) = slots[rng.below(slots.len())];
                let name = self.name(i);
                let Operand::LiteralBit32(value) = &mut self.insts[i].inst.operands[o] else {
                    unreachable!("a literal slot holds a literal");
                };
                let old = *value;
                let small = rng.below(8) as u32;
                let picked = rng.pick(&[
                    0,
                    1,
                    old.wrapping_add(1),
                    old.wrapping_sub(1),
                    old.wrapping_mul(2),
                    u32::MAX,
                    small,
                ]);
                let new = if picked == old {
                    old.wrapping_add(1)
                } else {
                    picked
                };
                *value = new;
                Some(format!("{name}: operand {o} {old} -> {new}"))
            }
            Mutation::MergeTarget | Mutation::BranchTarget => {
                let merges = mutation == Mutation::MergeTarget;
                let slots: Vec<IdSlot> = (self.id_slots().into_iter())
                    .filter(|&(i, o)| is_block_slot(self.opcode(i), o, merges))
                    .collect();
                let labels = self.results(|op| op == Op::Label);
                self.retarget(rng, &slots, |rng, _| {
                    Some(labels.get(rng.below(labels.len()))?.1)
                })
            }
            Mutation::FunctionType => {
                let slots: Vec<IdSlot> = (0..n)
                    .filter(|&i| self.opcode(i) == Op::Function)
                    .map(|i| (i, 1))
                    .collect();
                let function_types = self.results(|op| op == Op::TypeFunction);
                self.retarget(rng, &slots, |rng, _| {
                    Some(function_types.get(rng.below(function_types.len()))?.1)
                })
            }
        }
    }

    fn assemble(&self) -> Vec<u32> {
        let mut words = self.header.clone();
        for (i, inst) in self.insts.iter().enumerate() {
            let start = words.len();
            inst.inst.assemble_into(&mut words);
            if let Some((at, opcode)) = self.opcode
                && at == i
            {
                words[start] = (words[start] & 0xffff_0000) | (opcode & 0xffff);
            }
        }
        words
    }
}

fn is_type(op: Op) -> bool {
    super::types::SpvType::is_type_op(op)
}

/// Whether the id operand `o` of an `op` names a merge or continue block (`merges`) or a branch
/// target.
fn is_block_slot(op: Op, o: usize, merges: bool) -> bool {
    match op {
        Op::SelectionMerge => merges && o == 0,
        Op::LoopMerge => merges && o < 2,
        Op::Branch => !merges,
        // The condition or selector, then the targets (a switch's literals are not ids).
        Op::BranchConditional | Op::Switch => !merges && o > 0,
        _ => false,
    }
}
