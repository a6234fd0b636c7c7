//! Pattern evaluation: a rule's search or replacement compiled, for one size assignment,
//! into a flat post-order program that evaluates the tree in place with the opcode table's
//! semantics, so that the many inputs of a rule cost no tree walks.

use super::inputs::VarPlan;
use super::literal_bits;
use crate::rewrite::{Literal, Pattern, Size};
use shrew_ops::eval::{Bits, fget, fput};
use shrew_ops::{AluOp, BaseType, MAX_COMPONENTS};

#[derive(Clone, Debug)]
pub(super) enum Kind {
    /// Reads variable `var` (stored at `from` bits) through `swizzle`; converted to the node's
    /// size when it differs (floats widened in the 64-bit re-evaluation).
    Var {
        var: usize,
        swizzle: Option<&'static [u8]>,
        from: u8,
    },
    Const(u64),
    /// A float re-rounded from `from` bits to the node's size (64-bit re-evaluation only).
    Conv {
        src: usize,
        from: u8,
    },
    Op {
        op: AluOp,
        srcs: Vec<usize>,
        src_bits: Vec<u8>,
        /// Components each source is read at.
        src_comps: Vec<u8>,
    },
}

#[derive(Clone, Debug)]
pub(super) struct Node {
    pub(super) kind: Kind,
    pub(super) bits: u8,
    /// Components the node computes.
    pub(super) comps: u8,
    /// Components its consumer reads (at least `comps`; the rest repeat the computed ones).
    ctx: u8,
    /// The value is a float (NaN/inf checks, tolerance).
    pub(super) float: bool,
    /// A float operation (the opcode's destination is a float).
    pub(super) float_op: bool,
}

/// A tree in post order: sources before their consumer, the root last.
#[derive(Clone, Debug, Default)]
pub(super) struct Prog {
    pub(super) nodes: Vec<Node>,
}

pub(super) type Values = Vec<[u64; MAX_COMPONENTS]>;

impl Prog {
    pub(super) fn root(&self) -> &Node {
        self.nodes.last().expect("a tree has a root")
    }

    /// Float operations of the tree, counting the steps of formula opcodes.
    pub(super) fn float_ops(&self) -> usize {
        self.nodes
            .iter()
            .filter(|n| n.float_op)
            .map(|n| match &n.kind {
                Kind::Op { op, .. } => op.info().rounding_steps as usize,
                _ => 1,
            })
            .sum()
    }

    /// Evaluates every node into `vals` (one entry per node).
    pub(super) fn run(&self, inputs: &[[u64; MAX_COMPONENTS]], vals: &mut Values) {
        for (i, node) in self.nodes.iter().enumerate() {
            let (done, rest) = vals.split_at_mut(i);
            let out = &mut rest[0];
            let n = node.comps as usize;
            match &node.kind {
                Kind::Var { var, swizzle, from } => {
                    let input = &inputs[*var];
                    for (k, slot) in out[..n].iter_mut().enumerate() {
                        let c = swizzle.and_then(|s| s.get(k)).map_or(k, |&c| c as usize);
                        *slot = if *from == node.bits {
                            input[c]
                        } else {
                            fput(fget(input[c], *from), node.bits)
                        };
                    }
                }
                Kind::Const(v) => out[..n].fill(*v),
                Kind::Conv { src, from } => {
                    for (slot, &v) in out[..n].iter_mut().zip(&done[*src][..n]) {
                        *slot = fput(fget(v, *from), node.bits);
                    }
                }
                Kind::Op {
                    op,
                    srcs,
                    src_bits,
                    src_comps,
                } => {
                    let mut refs: [&[u64]; 16] = [&[]; 16];
                    for ((r, &s), &c) in refs.iter_mut().zip(srcs).zip(src_comps) {
                        *r = &done[s][..c as usize];
                    }
                    let bits = Bits {
                        src: src_bits,
                        dst: node.bits,
                    };
                    // Derivatives, the only opcodes eval refuses, are rejected up front.
                    let evaluated = op.eval(&refs[..srcs.len()], bits, &mut out[..n]);
                    debug_assert!(evaluated);
                }
            }
            for k in n..node.ctx as usize {
                out[k] = out[k % n];
            }
        }
    }
}

/// Builds a [`Prog`] for one size assignment.
struct Compiler<'a> {
    sizes: &'a [u8],
    vars: &'a [VarPlan],
    /// The 64-bit re-evaluation: unsized float operations at 64 bits.
    wide: bool,
    /// Compiling the search (whose float literals must be at least 16 bits to match).
    search: bool,
    nodes: Vec<Node>,
}

impl Compiler<'_> {
    fn size(&self, size: Size) -> u8 {
        match size {
            Size::Fixed(bits) => bits,
            Size::Class(c) => self.sizes[c as usize],
        }
    }

    fn push(&mut self, node: Node) -> usize {
        self.nodes.push(node);
        self.nodes.len() - 1
    }

    /// Compiles `p`, read by its consumer at `ctx` components, as a float operand or not, at
    /// `expected` bits (used when the pattern leaves a literal's size open).
    fn compile(
        &mut self,
        p: &Pattern,
        ctx: u8,
        float_ctx: bool,
        expected: u8,
    ) -> Result<usize, String> {
        match *p {
            Pattern::Var { index, swizzle } => {
                let var = &self.vars[index as usize];
                let bits = if self.wide && var.float { 64 } else { var.bits };
                Ok(self.push(Node {
                    kind: Kind::Var {
                        var: index as usize,
                        swizzle,
                        from: var.bits,
                    },
                    bits,
                    comps: ctx,
                    ctx,
                    float: var.float,
                    float_op: false,
                }))
            }
            Pattern::Const { value, size } => {
                let mut bits = match self.size(size) {
                    0 => expected,
                    bits => bits,
                };
                let is_float_literal = matches!(value, Literal::Float(_));
                if self.search && is_float_literal && bits < 16 {
                    return Err(format!(
                        "a float literal of the search would have {bits} bits"
                    ));
                }
                let float = bits >= 16 && (float_ctx || is_float_literal);
                let mut raw = literal_bits(value, bits);
                if self.wide && float && bits != 64 {
                    raw = match value {
                        Literal::Float(x) => fput(x, 64),
                        _ => fput(fget(raw, bits), 64),
                    };
                    bits = 64;
                }
                Ok(self.push(Node {
                    kind: Kind::Const(raw),
                    bits,
                    comps: ctx,
                    ctx,
                    float,
                    float_op: false,
                }))
            }
            Pattern::Op {
                op: name,
                size,
                src_size,
                srcs,
                ..
            } => {
                let dst_size = self.size(size);
                let op = name.resolve(dst_size).ok_or_else(|| {
                    format!("`{}` has no member producing {dst_size} bits", name.name())
                })?;
                let info = op.info();
                let mut dst_bits = if info.dst.bits != 0 {
                    info.dst.bits
                } else {
                    dst_size
                };
                let common = match src_size {
                    Size::Fixed(0) => dst_bits,
                    s => self.size(s),
                };
                let comps = if info.dst.comps != 0 {
                    info.dst.comps
                } else {
                    ctx
                };
                let mut children = Vec::with_capacity(srcs.len());
                let mut src_bits = Vec::with_capacity(srcs.len());
                let mut src_comps = Vec::with_capacity(srcs.len());
                for (i, (src, operand)) in srcs.iter().zip(info.srcs).enumerate() {
                    let bits = if operand.bits != 0 {
                        operand.bits
                    } else {
                        common
                    };
                    let src_ctx = if operand.comps != 0 {
                        operand.comps
                    } else {
                        comps
                    };
                    let src_float =
                        operand.base == BaseType::Float || (info.passes_through(i) && float_ctx);
                    children.push(self.compile(src, src_ctx, src_float, bits)?);
                    src_bits.push(bits);
                    src_comps.push(src_ctx);
                }
                let float = info.dst.base == BaseType::Float
                    || children.iter().enumerate().any(|(i, &c)| {
                        info.passes_through(i) && (float_ctx || self.nodes[c].float)
                    });
                if self.wide {
                    for (i, operand) in info.srcs.iter().enumerate() {
                        let float_operand =
                            operand.base == BaseType::Float || (info.passes_through(i) && float);
                        if operand.bits == 0 && float_operand {
                            src_bits[i] = 64;
                        }
                    }
                    if info.dst.bits == 0 && float {
                        dst_bits = 64;
                    }
                    // Convert float sources whose size now differs from what the op reads.
                    for (i, child) in children.iter_mut().enumerate() {
                        let node = &self.nodes[*child];
                        if node.float && node.bits != src_bits[i] && src_bits[i] >= 16 {
                            let (from, ctx) = (node.bits, node.ctx);
                            *child = self.push(Node {
                                kind: Kind::Conv { src: *child, from },
                                bits: src_bits[i],
                                comps: ctx,
                                ctx,
                                float: true,
                                float_op: false,
                            });
                        }
                    }
                }
                Ok(self.push(Node {
                    kind: Kind::Op {
                        op,
                        srcs: children,
                        src_bits,
                        src_comps,
                    },
                    bits: dst_bits,
                    comps,
                    ctx: ctx.max(comps),
                    float,
                    float_op: info.dst.base == BaseType::Float,
                }))
            }
        }
    }
}

pub(super) fn compile(
    p: &Pattern,
    sizes: &[u8],
    vars: &[VarPlan],
    root_comps: u8,
    float_root: bool,
    wide: bool,
    search: bool,
) -> Result<Prog, String> {
    let mut c = Compiler {
        sizes,
        vars,
        wide,
        search,
        nodes: Vec::new(),
    };
    c.compile(p, root_comps, float_root, 32)?;
    Ok(Prog { nodes: c.nodes })
}
