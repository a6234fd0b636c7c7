//! The structured control flow of a function as a tree, for backends whose hardware has
//! structured control flow (Gen's if/else/endif and while/break/cont, R600's CF stack).
//!
//! What: [`structurize`] reads the CFG with its merge and continue annotations and gives the
//! function as nested [`Node`]s: blocks in execution order, `If` for a selection (or for a
//! conditional break or continue), `Loop` for a loop whose body starts with its header, and the
//! exits `Break`, `Continue` and `Return`. A backend emits each `Block` as the block's
//! instructions followed by its out-of-SSA end copies, and never needs the CFG's edges.
//!
//! How: a walk from the entry that follows edges, remembering the enclosing loops and the merge
//! block the current selection arm stops at. An edge to the innermost loop's merge is a `Break`;
//! to its header, a `Continue`; to its continue target, the continue construct itself, emitted in
//! place. The loop body's normal end reaches the continue target this way, and so does every
//! `continue` statement: each gets its own copy of the continue construct, which runs only for the
//! channels that took it, so hardware whose `cont` jumps straight to the loop's end (Gen) needs
//! no flag. A `Continue` in the tail of a loop body is dropped, since falling off the body ends the
//! iteration anyway.
//!
//! Invariants: every path of the CFG from the entry is one path of the tree, with the same blocks
//! in the same order; a branch with no selection merge must leave the construct on at least one
//! side. A CFG that breaks these (an unstructured branch, a branch to an outer loop) is an error,
//! never a silently different program.
//!
//! Options: none.

use crate::deep::{Children, nested};
use crate::ir::{BlockId, Edge, Function, Structure, Terminator, Value};

/// A node of the structured tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Node {
    /// The block's instructions (phis excepted) and its end copies; its terminator is what
    /// follows in the tree.
    Block(BlockId),
    /// Runs `then` on the channels where `cond` holds and `otherwise` on the others.
    If {
        cond: Value,
        then: Children<Vec<Node>>,
        otherwise: Children<Vec<Node>>,
    },
    /// Repeats its body until every channel has left it by a `Break` (or a `Return`).
    Loop(Children<Vec<Node>>),
    /// Leaves the innermost loop.
    Break,
    /// Ends the innermost loop's iteration.
    Continue,
    /// Leaves the function.
    Return(Option<Value>),
    /// Control never gets here.
    Unreachable,
}

/// Why a function has no structured tree.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("fn {function}: b{block}: {reason}")]
pub struct StructureError {
    pub function: String,
    pub block: u32,
    pub reason: String,
}

/// Most blocks the tree may hold per block of the function (and at least [`MIN_TREE_BLOCKS`]),
/// counting each copy of a continue construct: bounds the walk on CFGs whose annotations do not
/// describe them, and the copies, without limiting how large a function may be.
const TREE_BLOCKS_PER_BLOCK: usize = 16;
const MIN_TREE_BLOCKS: usize = 1 << 16;

/// The structured tree of `func`. It must verify (see [`crate::verify`]).
pub fn structurize(func: &Function) -> Result<Vec<Node>, StructureError> {
    let mut walker = Walker {
        func,
        loops: Vec::new(),
        emitted: 0,
        max_emitted: MIN_TREE_BLOCKS.max(TREE_BLOCKS_PER_BLOCK * func.cfg.node_count()),
    };
    let mut out = Vec::new();
    walker.run(func.entry, None, &mut out)?;
    Ok(out)
}

/// A loop the walk is inside.
#[derive(Copy, Clone)]
struct LoopScope {
    header: BlockId,
    merge: BlockId,
    cont: BlockId,
    /// Whether the walk is inside the continue construct, where the continue target is an
    /// ordinary block.
    in_continue: bool,
}

struct Walker<'f> {
    func: &'f Function,
    loops: Vec<LoopScope>,
    emitted: usize,
    max_emitted: usize,
}

impl Walker<'_> {
    fn error(&self, b: BlockId, reason: impl Into<String>) -> StructureError {
        StructureError {
            function: self.func.name.clone(),
            block: b.index() as u32,
            reason: reason.into(),
        }
    }

    /// Emits blocks from `b` (a block that is no exit) until the walk leaves the region that ends
    /// at `stop`. Every recursion of the walk (into arms, loop bodies and continue constructs)
    /// comes through here, one nesting level each.
    fn run(
        &mut self,
        b: BlockId,
        stop: Option<BlockId>,
        out: &mut Vec<Node>,
    ) -> Result<(), StructureError> {
        nested(|| self.run_level(b, stop, out))
    }

    fn run_level(
        &mut self,
        mut b: BlockId,
        stop: Option<BlockId>,
        out: &mut Vec<Node>,
    ) -> Result<(), StructureError> {
        loop {
            self.emitted += 1;
            if self.emitted > self.max_emitted {
                return Err(self.error(
                    b,
                    format!(
                        "the structured tree would hold more than {} blocks: the control flow \
                         does not follow its structure, or continue constructs are copied once \
                         per continue statement too many times",
                        self.max_emitted
                    ),
                ));
            }
            let next = match self.func.block(b).structure {
                Some(Structure::Loop { merge, cont }) => {
                    self.loops.push(LoopScope {
                        header: b,
                        merge,
                        cont,
                        in_continue: false,
                    });
                    let mut body = Vec::new();
                    let inner = self.block(b, None, &mut body);
                    let inner = match inner {
                        Ok(Some(n)) => self.run(n, None, &mut body),
                        Ok(None) => Ok(()),
                        Err(e) => Err(e),
                    };
                    self.loops.pop();
                    inner?;
                    drop_tail_continue(&mut body);
                    out.push(Node::Loop(body.into()));
                    self.edge(merge, stop, out)?
                }
                _ => self.block(b, stop, out)?,
            };
            match next {
                Some(n) => b = n,
                None => return Ok(()),
            }
        }
    }

    /// Emits `b` and its terminator; gives the next block when the walk goes on.
    fn block(
        &mut self,
        b: BlockId,
        stop: Option<BlockId>,
        out: &mut Vec<Node>,
    ) -> Result<Option<BlockId>, StructureError> {
        out.push(Node::Block(b));
        let block = self.func.block(b);
        let target = |edge| {
            self.func
                .successor(b, edge)
                .ok_or_else(|| self.error(b, "a branch target is missing"))
        };
        match block.terminator.clone() {
            Some(Terminator::Jump) => self.edge(target(Edge::Jump)?, stop, out),
            Some(Terminator::Branch { cond }) => {
                let (on_true, on_false) = (target(Edge::True)?, target(Edge::False)?);
                if let Some(Structure::Selection { merge }) = block.structure {
                    let then = self.arm(on_true, merge)?;
                    let otherwise = self.arm(on_false, merge)?;
                    out.push(Node::If {
                        cond,
                        then: then.into(),
                        otherwise: otherwise.into(),
                    });
                    return self.edge(merge, stop, out);
                }
                // A conditional break or continue: the sides that leave become the `If`.
                let mut then = Vec::new();
                let true_goes_on = self.edge(on_true, stop, &mut then)?;
                let mut otherwise = Vec::new();
                let false_goes_on = self.edge(on_false, stop, &mut otherwise)?;
                if true_goes_on.is_some() && false_goes_on.is_some() {
                    return Err(self.error(
                        b,
                        "a branch without a merge block stays in its construct on both sides",
                    ));
                }
                out.push(Node::If {
                    cond,
                    then: then.into(),
                    otherwise: otherwise.into(),
                });
                Ok(true_goes_on.or(false_goes_on))
            }
            Some(Terminator::Return { value }) => {
                out.push(Node::Return(value));
                Ok(None)
            }
            Some(Terminator::Unreachable) => {
                out.push(Node::Unreachable);
                Ok(None)
            }
            None => Err(self.error(b, "the block has no terminator")),
        }
    }

    /// The arm of a selection from `start` to its merge block.
    fn arm(&mut self, start: BlockId, merge: BlockId) -> Result<Vec<Node>, StructureError> {
        let mut out = Vec::new();
        if let Some(b) = self.edge(start, Some(merge), &mut out)? {
            self.run(b, Some(merge), &mut out)?;
        }
        Ok(out)
    }

    /// Follows an edge to `target`: pushes the exit it makes, or gives `target` back when the
    /// walk goes on there.
    fn edge(
        &mut self,
        target: BlockId,
        stop: Option<BlockId>,
        out: &mut Vec<Node>,
    ) -> Result<Option<BlockId>, StructureError> {
        if Some(target) == stop {
            return Ok(None);
        }
        let Some(&scope) = self.loops.last() else {
            return Ok(Some(target));
        };
        if target == scope.header {
            out.push(Node::Continue);
            return Ok(None);
        }
        if target == scope.merge {
            out.push(Node::Break);
            return Ok(None);
        }
        if target == scope.cont && !scope.in_continue {
            let depth = self.loops.len() - 1;
            self.loops[depth].in_continue = true;
            let construct = self.run(target, None, out);
            self.loops[depth].in_continue = false;
            construct?;
            return Ok(None);
        }
        if self
            .loops
            .iter()
            .rev()
            .skip(1)
            .any(|outer| [outer.header, outer.merge, outer.cont].contains(&target))
        {
            return Err(self.error(target, "a branch leaves more than the innermost loop"));
        }
        Ok(Some(target))
    }
}

/// Whether a `return` comes before the end of the tree (`Return` anywhere but last at the top).
pub fn returns_early(tree: &[Node]) -> bool {
    let rest = match tree.split_last() {
        Some((Node::Return(_), rest)) => rest,
        _ => tree,
    };
    contains_return(rest)
}

/// Whether a `return` is among `nodes` or inside them.
fn contains_return(nodes: &[Node]) -> bool {
    nodes.iter().any(|node| match node {
        Node::Return(_) => true,
        Node::If {
            then, otherwise, ..
        } => nested(|| contains_return(then) || contains_return(otherwise)),
        Node::Loop(body) => nested(|| contains_return(body)),
        _ => false,
    })
}

/// Drops a `Continue` that ends a loop body, also inside `If`s at its end.
fn drop_tail_continue(body: &mut Vec<Node>) {
    match body.last_mut() {
        Some(Node::Continue) => {
            body.pop();
        }
        Some(Node::If {
            then, otherwise, ..
        }) => {
            nested(|| {
                drop_tail_continue(then);
                drop_tail_continue(otherwise);
            });
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::parse;

    /// The tree with blocks as `bN`, for comparing shapes.
    fn shape(nodes: &[Node]) -> String {
        nodes
            .iter()
            .map(|n| match n {
                Node::Block(b) => format!("b{}", b.index()),
                Node::If {
                    then, otherwise, ..
                } => format!("if({}; {})", shape(then), shape(otherwise)),
                Node::Loop(body) => format!("loop({})", shape(body)),
                Node::Break => "break".into(),
                Node::Continue => "continue".into(),
                Node::Return(_) => "return".into(),
                Node::Unreachable => "unreachable".into(),
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    fn tree(text: &str) -> Result<String, StructureError> {
        let shader = parse(text, "test.shrew").expect("valid IR");
        let func = &shader.functions[shader.entry.0 as usize];
        structurize(func).map(|t| shape(&t))
    }

    #[test]
    fn selection_and_while_loop() {
        let text = "shader fragment
entry fn main() {
b0: selection merge=b3
    1 %0 = load_const (true)
    branch %0, b1, b2
    b1:
        jump b3
    b2:
        jump b3
b3:
    32 %1 = load_const (0)
    jump b4
b4: loop merge=b7 continue=b6
    1 %2 = load_const (false)
    branch %2, b5, b7
    b5:
        jump b6
    b6:
        jump b4
b7:
    return
}";
        assert_eq!(
            tree(text).unwrap(),
            "b0 if(b1; b2) b3 loop(b4 if(; break) b5 b6) b7 return"
        );
    }

    /// A `continue` inside an `if` gets its own copy of the continue construct; the one at the
    /// body's end is the normal path.
    #[test]
    fn continue_statements_copy_the_continue_construct() {
        let text = "shader fragment
entry fn main() {
b0:
    1 %0 = load_const (true)
    jump b1
b1: loop merge=b6 continue=b5
    jump b2
    b2: selection merge=b4
        branch %0, b3, b4
        b3:
            jump b5
    b4:
        jump b5
    b5:
        branch %0, b1, b6
b6:
    return
}";
        assert_eq!(
            tree(text).unwrap(),
            "b0 loop(b1 b2 if(b3 b5 if(continue; break); ) b4 b5 if(; break)) b6 return"
        );
    }

    #[test]
    fn branch_staying_inside_on_both_sides_is_an_error() {
        let text = "shader fragment
entry fn main() {
b0:
    1 %0 = load_const (true)
    branch %0, b1, b2
b1:
    jump b3
b2:
    jump b3
b3:
    return
}";
        let err = tree(text).unwrap_err();
        assert_eq!(err.block, 0);
        assert!(err.reason.contains("both sides"), "{err}");
    }
}
