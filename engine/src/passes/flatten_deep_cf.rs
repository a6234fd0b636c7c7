//! `flatten-deep-cf`: turns control flow that nests deeper than the target's control-flow
//! stack into a dispatch loop that nests two deep.
//!
//! What: the nesting of each function is measured over its structured tree (a loop and an
//! `if` cost what the target's [`NestingBudget`] says). Walking down from the top, a
//! construct (a loop, or a selection with its merge block) whose subtree would overflow the
//! budget is kept while its children could still be flattened below it; the construct at
//! which going deeper would leave no room for a flattened form is flattened. Its blocks, in
//! reverse post-order, become the arms of one loop:
//!
//! ```text
//! state = 0
//! loop { if (state == 0) { B0; state = next } ... if (state == n-1) { ... }
//!        if (state >= n) break }
//! then `state == n + j` goes on to the construct's j-th exit (its merge last)
//! ```
//!
//! A jump sets `state` to its target's number, a branch to `bcsel(c, then, else)`; a
//! `return` stays in its arm. The exits (the merge block, and the enclosing loop's header,
//! merge or continue block) are taken after the loop by a chain of conditional branches.
//! The phis of the construct's blocks, and those of its exits reading values from inside,
//! become `function_temp` variables stored at the end of each predecessor (which
//! `vars-to-ssa`, next in the backend pipeline, promotes again). So do the values a block
//! defines and others read, which their definition no longer dominates: stored where they
//! are defined, loaded where they are read; a deref, which no variable holds, is made again
//! in each block reading it. Every variable is written before the loop (`undef` where nothing
//! is), so none is live into it and `vars-to-ssa` gives each two phis in the loop and none in
//! the loops around it.
//!
//! Why: R600's CF stack holds 255 entries of four elements, about 250 nested loops or 1,000
//! nested `if`s; a valid shader nesting deeper must still compile. `state` is per invocation,
//! so divergent invocations each run exactly their own path: the arms run in order, and an
//! invocation whose next block comes later in the order runs it in the same iteration.
//!
//! Invariants: a function that fits the budget is not touched. Constructs holding anything
//! that needs the quad, the subgroup or the workgroup converged (a derivative, a texture
//! lookup with an implicit level of detail, a subgroup operation, a barrier, a call, which
//! may hold those) are never flattened;
//! their flattenable parts may be. A construct whose blocks are not all dominated by its
//! header, or that is entered elsewhere than at its header, is left alone. Each region is
//! found by one walk from its header, and the flattened regions do not overlap, so the pass
//! is linear in the function's size.
//!
//! Options: [`FlattenDeepCf::budget`], the target's `cf_nesting` (`None`: the pass does
//! nothing).

use super::manager::{Pass, PassContext};
use super::vars::unique_name;
use crate::cfg::DomTree;
use crate::deep::nested;
use crate::ir::{
    BlockId, Builder, Cursor, Edge, FuncId, InstKind, IntrinsicInst, Mode, Scalar, Shader,
    Structure, Terminator, Type, ValType, Value, Variable,
};
use crate::ops::AluOp;
use crate::rewrite::NestingBudget;
use crate::structure::{Node, structurize};
use crate::uses::{User, Uses};
use petgraph::Direction;
use petgraph::visit::EdgeRef;
use rustc_hash::{FxHashMap, FxHashSet};
use shrew_ops::{Eval, Intrinsic};

/// The `flatten-deep-cf` pass.
pub struct FlattenDeepCf {
    /// The stack the target's control flow has (`None`: unlimited, the pass does nothing).
    pub budget: Option<NestingBudget>,
}

impl Pass for FlattenDeepCf {
    fn name(&self) -> &str {
        "flatten-deep-cf"
    }

    fn description(&self) -> &str {
        "flattens control flow nesting deeper than the target's stack into dispatch loops"
    }

    /// Without it, the shader does not compile for the target.
    fn lowers(&self) -> bool {
        true
    }

    fn run(&self, shader: &mut Shader, context: &mut PassContext) -> Result<bool, String> {
        let Some(budget) = self.budget else {
            return Ok(false);
        };
        Ok(context
            .budget
            .each_function(shader, |shader, f, transformations| {
                let func = &shader.functions[f];
                // A function without a structured tree is the backend's error to report.
                let Ok(tree) = structurize(func) else { return };
                let chosen = choose_constructs(func, &tree, budget);
                if chosen.is_empty() {
                    return;
                }
                let dom = DomTree::new(func);
                // The regions do not overlap, so the readers of one region's values are those
                // of the function as it was.
                let uses = Uses::build(func);
                for (header, enclosing) in chosen {
                    transformations.attempt(|| {
                        let done = flatten(shader, f, header, enclosing, &dom, &uses);
                        done.then_some(move || format!("b{} into a dispatch loop", header.index()))
                    });
                }
            }))
    }
}

/// What the stack holds of a construct's subtree, measured bottom-up.
#[derive(Copy, Clone, Default)]
struct Measure {
    /// Stack elements the subtree needs at its deepest, the construct's own included.
    need: u32,
    /// Whether the subtree holds an operation that needs its invocations converged.
    convergent: bool,
    /// Loops and `if`s in the subtree, the construct included (to skip its measures).
    constructs: usize,
}

/// The headers of the constructs to flatten, outermost first, each with the header of the
/// loop enclosing it (whose header, merge and continue blocks it may branch to).
fn choose_constructs(
    func: &crate::ir::Function,
    tree: &[Node],
    budget: NestingBudget,
) -> Vec<(BlockId, Option<BlockId>)> {
    let convergent = convergent_blocks(func);
    let mut measures = Vec::new();
    let top = measure(tree, &convergent, budget, &mut measures);
    let mut chooser = Chooser {
        func,
        budget,
        measures,
        next: 0,
        chosen: Vec::new(),
        seen: FxHashSet::default(),
    };
    if top.need > budget.limit {
        chooser.walk(tree, 0, None);
    }
    chooser.chosen
}

/// The blocks holding an operation that needs the quad, the subgroup or the workgroup
/// converged.
fn convergent_blocks(func: &crate::ir::Function) -> FxHashSet<BlockId> {
    let needs_convergence = |kind: &InstKind| match kind {
        InstKind::Alu(alu) => matches!(alu.op.info().eval, Eval::Derivative { .. }),
        InstKind::Tex(tex) => tex.op.uses_implicit_derivatives(),
        InstKind::Intrinsic(i) => i.op.info().is_barrier() || i.op.info().is_cross_invocation(),
        InstKind::Call { .. } => true,
        _ => false,
    };
    func.cfg
        .node_indices()
        .filter(|&b| (func.cfg[b].insts.iter()).any(|&v| needs_convergence(&func.inst(v).kind)))
        .collect()
}

/// Measures `nodes`, pushing each loop's and `if`'s [`Measure`] in pre-order; gives the
/// whole list's.
fn measure(
    nodes: &[Node],
    convergent: &FxHashSet<BlockId>,
    budget: NestingBudget,
    out: &mut Vec<Measure>,
) -> Measure {
    let mut list = Measure::default();
    for node in nodes {
        let (cost, children): (u32, Vec<&[Node]>) = match node {
            Node::Block(b) => {
                list.convergent |= convergent.contains(b);
                continue;
            }
            Node::Loop(body) => (budget.per_loop, vec![body]),
            Node::If {
                then, otherwise, ..
            } => (budget.per_if, vec![then, otherwise]),
            _ => continue,
        };
        let at = out.len();
        out.push(Measure::default());
        let mut own = Measure {
            constructs: 1,
            ..Measure::default()
        };
        for child in children {
            let inner = nested(|| measure(child, convergent, budget, out));
            own.need = own.need.max(inner.need);
            own.convergent |= inner.convergent;
            own.constructs += inner.constructs;
        }
        own.need += cost;
        out[at] = own;
        list.need = list.need.max(own.need);
        list.convergent |= own.convergent;
        list.constructs += own.constructs;
    }
    list
}

/// The walk down the tree that picks the constructs to flatten.
struct Chooser<'f> {
    func: &'f crate::ir::Function,
    budget: NestingBudget,
    /// The measures of the loops and `if`s, in pre-order.
    measures: Vec<Measure>,
    /// The measure of the next loop or `if` the walk meets.
    next: usize,
    chosen: Vec<(BlockId, Option<BlockId>)>,
    /// Headers already chosen (a continue construct appears once per `continue`).
    seen: FxHashSet<BlockId>,
}

impl Chooser<'_> {
    /// Walks `nodes` with `depth` elements of the stack in use, inside the loop `enclosing`.
    fn walk(&mut self, nodes: &[Node], depth: u32, enclosing: Option<BlockId>) {
        let flattened_form = self.budget.per_loop + self.budget.per_if;
        for (k, node) in nodes.iter().enumerate() {
            let (cost, header, children, inner_loop): (u32, _, Vec<&[Node]>, _) = match node {
                Node::Loop(body) => {
                    let header = match body.first() {
                        Some(&Node::Block(h)) => Some(h),
                        _ => None,
                    };
                    (self.budget.per_loop, header, vec![body], header)
                }
                Node::If {
                    then, otherwise, ..
                } => {
                    // A selection's header is the block before it; a conditional break or
                    // continue has none.
                    let header = match k.checked_sub(1).map(|p| &nodes[p]) {
                        Some(&Node::Block(h))
                            if matches!(
                                self.func.block(h).structure,
                                Some(Structure::Selection { .. })
                            ) =>
                        {
                            Some(h)
                        }
                        _ => None,
                    };
                    (self.budget.per_if, header, vec![then, otherwise], enclosing)
                }
                _ => continue,
            };
            let measure = self.measures[self.next];
            self.next += 1;
            let skip = measure.constructs - 1;
            if depth + measure.need <= self.budget.limit {
                self.next += skip;
                continue;
            }
            let no_room_below = depth + cost + flattened_form > self.budget.limit;
            if let Some(h) = header
                && !measure.convergent
                && no_room_below
                && depth + flattened_form <= self.budget.limit
            {
                if self.seen.insert(h) {
                    self.chosen.push((h, enclosing));
                }
                self.next += skip;
                continue;
            }
            for child in children {
                nested(|| self.walk(child, depth + cost, inner_loop));
            }
        }
    }
}

/// Flattens the construct headed by `header` into a dispatch loop (see the module comment);
/// `enclosing` is the header of the loop around it. Gives whether it did: a construct whose
/// shape the walk does not expect is left as it is.
fn flatten(
    shader: &mut Shader,
    f: usize,
    header: BlockId,
    enclosing: Option<BlockId>,
    dom: &DomTree,
    uses: &Uses,
) -> bool {
    let func = &shader.functions[f];
    // Flattening an enclosing construct took the header's role away.
    let Some(structure) = func.block(header).structure else {
        return false;
    };
    let mut stops = vec![structure.merge()];
    if let Some(outer) = enclosing {
        match func.block(outer).structure {
            Some(Structure::Loop { merge, cont }) => stops.extend([outer, merge, cont]),
            _ => return false,
        }
    }
    let Some(region) = Region::find(func, header, &stops, dom) else {
        return false;
    };
    Flattener::new(shader, f, region).run(uses);
    true
}

/// A construct's blocks and where it leaves to.
struct Region {
    header: BlockId,
    /// The blocks in reverse post-order from the header.
    blocks: Vec<BlockId>,
    /// Each block's position in `blocks`.
    position: FxHashMap<BlockId, u32>,
    /// The blocks outside that the construct branches to, its merge block last.
    exits: Vec<BlockId>,
}

impl Region {
    /// The blocks reached from `header` without passing a block of `stops` (the first of
    /// which is the construct's merge); `None` when some is not dominated by the header or is
    /// entered from outside elsewhere than at the header.
    fn find(
        func: &crate::ir::Function,
        header: BlockId,
        stops: &[BlockId],
        dom: &DomTree,
    ) -> Option<Region> {
        let mut post_order = Vec::new();
        let mut exits = Vec::new();
        let mut visited = FxHashSet::default();
        visited.insert(header);
        let mut stack = vec![(header, func.successors(header), 0)];
        while let Some((b, successors, next)) = stack.last_mut() {
            let Some(&s) = successors.get(*next) else {
                post_order.push(*b);
                stack.pop();
                continue;
            };
            *next += 1;
            if stops.contains(&s) && s != header {
                if !exits.contains(&s) {
                    exits.push(s);
                }
            } else if visited.insert(s) {
                if !dom.dominates(header, s) {
                    return None;
                }
                stack.push((s, func.successors(s), 0));
            }
        }
        post_order.reverse();
        let position: FxHashMap<BlockId, u32> = (post_order.iter().enumerate())
            .map(|(k, &b)| (b, k as u32))
            .collect();
        let entered_elsewhere = post_order.iter().any(|&b| {
            b != header && (func.predecessors(b).iter()).any(|p| !position.contains_key(p))
        });
        if entered_elsewhere {
            return None;
        }
        // The merge goes on after the construct: the other exits leave the enclosing loop,
        // so the chain of branches to them ends with the merge.
        if let Some(at) = exits.iter().position(|&e| e == stops[0]) {
            let merge = exits.remove(at);
            exits.push(merge);
        }
        Some(Region {
            header,
            blocks: post_order,
            position,
            exits,
        })
    }
}

/// Builds the dispatch loop of one region.
struct Flattener<'s> {
    b: Builder<'s>,
    region: Region,
    /// A prefix for the names of the variables it adds.
    prefix: String,
    /// The derefs of the variables, at the top of the entry block.
    derefs_at: usize,
    /// The variables made so far, each deref with its type.
    variables: Vec<(Value, ValType)>,
    /// Those already written wherever the construct is entered.
    written_before_loop: FxHashSet<Value>,
}

impl<'s> Flattener<'s> {
    fn new(shader: &'s mut Shader, f: usize, region: Region) -> Flattener<'s> {
        let prefix = unique_name(shader, format!("flat_b{}", region.header.index()));
        Flattener {
            b: Builder::new(shader, FuncId(f as u32)),
            region,
            prefix,
            derefs_at: 0,
            variables: Vec::new(),
            written_before_loop: FxHashSet::default(),
        }
    }

    /// A new `function_temp` variable of shape `ty` and its deref, made at the top of the
    /// entry block so that it dominates every access.
    fn variable(&mut self, name: String, ty: ValType) -> Value {
        let scalar = if ty.bits == 1 {
            Scalar::BOOL
        } else {
            Scalar::new(shrew_ops::BaseType::Uint, ty.bits)
        };
        let var_ty = if ty.comps == 1 {
            Type::Scalar(scalar)
        } else {
            Type::Vector(scalar, ty.comps)
        };
        let var = (self.b.shader).add_variable(Variable::new(name, Mode::FunctionTemp, var_ty));
        let entry = self.b.function().entry;
        self.b.cursor = Cursor {
            block: entry,
            pos: Some(self.derefs_at),
        };
        self.derefs_at += 1;
        let deref = self.b.deref_var(var);
        self.variables.push((deref, ty));
        deref
    }

    /// Places the builder after the last instruction of `block`, before its terminator.
    fn before_terminator(&mut self, block: BlockId) {
        let len = self.b.function().block(block).insts.len();
        self.b.cursor = Cursor {
            block,
            pos: Some(len),
        };
    }

    fn store_at_end(&mut self, block: BlockId, deref: Value, value: Value) {
        self.before_terminator(block);
        self.b.store_deref_all(deref, value);
    }

    fn run(mut self, uses: &Uses) {
        let pre = self.region.header;
        self.move_header_into_arm();
        self.crossing_values_to_variables(uses);
        let state = self.variable(format!("{}_state", self.prefix), ValType::scalar(32));
        self.phis_to_variables();
        let exit_phis = self.exit_phis_to_variables();
        let n = self.region.blocks.len() as u32;
        let func = self.b.function_mut();
        let dispatch = func.add_block();
        let tests: Vec<BlockId> = (0..=n).map(|_| func.add_block()).collect();
        let cont = func.add_block();
        let exit_tests: Vec<BlockId> = (0..self.region.exits.len().max(1))
            .map(|_| func.add_block())
            .collect();
        // Every variable is written before the loop (`undef` where nothing was written): a
        // variable live into the loop would be live up through every loop around it, and so
        // would its phis.
        self.b.cursor = Cursor::at_end(pre);
        for (deref, ty) in std::mem::take(&mut self.variables) {
            if deref != state && !self.written_before_loop.contains(&deref) {
                let undef = self.b.undef(ty);
                self.b.store_deref_all(deref, undef);
            }
        }
        let first = self.b.imm_u32(0);
        self.b.store_deref_all(state, first);
        self.b.jump(dispatch);
        let func = self.b.function_mut();
        func.block_mut(dispatch).structure = Some(Structure::Loop {
            merge: exit_tests[0],
            cont,
        });
        func.set_jump(dispatch, tests[0]);
        func.set_jump(cont, dispatch);
        for (k, &block) in self.region.blocks.clone().iter().enumerate() {
            let test = tests[k];
            self.b.function_mut().block_mut(test).structure = Some(Structure::Selection {
                merge: tests[k + 1],
            });
            self.b.cursor = Cursor::at_end(test);
            let now = self.b.load_deref(state);
            let number = self.b.imm_u32(k as u32);
            let here = self.b.alu(AluOp::Ieq, &[now, number]);
            self.b
                .function_mut()
                .set_branch(test, here, block, tests[k + 1]);
            self.set_next_state(block, state, tests[k + 1]);
        }
        self.b.cursor = Cursor::at_end(tests[n as usize]);
        let now = self.b.load_deref(state);
        let number = self.b.imm_u32(n);
        let done = self.b.alu(AluOp::Uge, &[now, number]);
        (self.b.function_mut()).set_branch(tests[n as usize], done, exit_tests[0], cont);
        self.exit_chain(state, &exit_tests, exit_phis);
    }

    /// The values the region's blocks define and other blocks read become variables: stored at
    /// the end of the defining block, loaded at the top of each block reading them (at the end
    /// of the predecessor, for a phi), and set to `undef` before the loop. Left as values,
    /// they would no longer dominate their readers, and the phis rebuilding them would climb
    /// through every loop around the region (the value is live on the paths that skip its
    /// arm, up to the top of the function): values times enclosing loops. As variables
    /// written before the loop, `vars-to-ssa` gives each two phis, at the end of its arm and
    /// at the top of the loop. A deref, which no variable holds (nor a phi), is made again in
    /// each block reading it, from its parent made there too and its index loaded there.
    ///
    /// Runs after [`Self::move_header_into_arm`]: `uses` knows the header's terminator
    /// under the header.
    fn crossing_values_to_variables(&mut self, uses: &Uses) {
        let (header, arm) = (self.region.header, self.region.blocks[0]);
        let func = self.b.function();
        let defined_in = |v: Value| {
            let block = func.inst(v).block;
            self.region.position.contains_key(&block).then_some(block)
        };
        // The blocks other than its own reading each value of the region (phis aside), and
        // the phi sources read at the end of a predecessor.
        let mut blocks_reading: FxHashMap<Value, FxHashSet<BlockId>> = FxHashMap::default();
        let mut read_at_end: Vec<(BlockId, Value, Value)> = Vec::new();
        let mut defined: Vec<Value> = Vec::new();
        for &block in &self.region.blocks {
            for &v in &func.block(block).insts {
                if func.inst(v).def.is_none() {
                    continue;
                }
                defined.push(v);
                for &user in uses.users(v) {
                    let at = match user {
                        User::Terminator(at) if at == header => arm,
                        User::Terminator(at) => at,
                        User::Inst(reader) => match &func.inst(reader).kind {
                            InstKind::Phi(srcs) => {
                                read_at_end.extend(
                                    (srcs.iter())
                                        .filter(|&&(pred, src)| src == v && pred != block)
                                        .map(|&(pred, _)| (pred, reader, v)),
                                );
                                continue;
                            }
                            _ => func.inst(reader).block,
                        },
                    };
                    if at != block {
                        blocks_reading.entry(v).or_default().insert(at);
                    }
                }
            }
        }
        // A deref made again in a block reads its sources there: the region's values among
        // them are read there too. Sources come before their readers, so walking backwards
        // sees every deref's readers before its sources.
        for &v in defined.iter().rev() {
            if !matches!(func.inst(v).kind, InstKind::Deref(_)) {
                continue;
            }
            let Some(readers) = blocks_reading.get(&v).cloned() else {
                continue;
            };
            for src in func.inst_sources(v) {
                if let Some(block) = defined_in(src) {
                    let reading = blocks_reading.entry(src).or_default();
                    reading.extend(readers.iter().filter(|&&r| r != block));
                }
            }
        }
        read_at_end.sort_unstable();
        read_at_end.dedup();

        let mut read_in: FxHashMap<BlockId, Vec<(Value, Value)>> = FxHashMap::default();
        let mut variables: FxHashMap<Value, Value> = FxHashMap::default();
        for v in defined {
            let func = self.b.function();
            let (block, ty) = (func.inst(v).block, func.inst(v).def.expect("a value"));
            let is_deref = matches!(func.inst(v).kind, InstKind::Deref(_));
            let reading = blocks_reading.remove(&v).unwrap_or_default();
            let at_ends = read_at_end.iter().any(|&(_, _, read)| read == v);
            if is_deref || (reading.is_empty() && !at_ends) {
                for at in reading {
                    read_in.entry(at).or_default().push((v, v));
                }
                continue;
            }
            // Named apart from the variable a phi `v` becomes.
            let deref = self.variable(format!("{}_{}_read", self.prefix, v.index()), ty);
            self.store_at_end(block, deref, v);
            variables.insert(v, deref);
            for at in reading {
                read_in.entry(at).or_default().push((v, deref));
            }
        }
        let mut blocks: Vec<BlockId> = read_in.keys().copied().collect();
        blocks.sort_unstable();
        for block in blocks {
            self.read_at_top(block, &read_in[&block]);
        }
        for (pred, phi, v) in read_at_end {
            self.before_terminator(pred);
            let loaded = self.b.load_deref(variables[&v]);
            if let InstKind::Phi(srcs) = &mut self.b.function_mut().inst_mut(phi).kind {
                for (_, src) in srcs.iter_mut().filter(|(p, src)| *p == pred && *src == v) {
                    *src = loaded;
                }
            }
        }
    }

    /// Makes the region's values of `reads` available at the top of `block` (after its phis):
    /// each `(value, variable)` loaded from its variable, each `(deref, deref)` made again
    /// (after the loads, its sources read there); the block's instructions other than phis,
    /// and its terminator, then read those.
    fn read_at_top(&mut self, block: BlockId, reads: &[(Value, Value)]) {
        let before = self.b.function().block(block).insts.len();
        let mut here: FxHashMap<Value, Value> = FxHashMap::default();
        for &(v, variable) in reads.iter().filter(|&&(v, variable)| v != variable) {
            self.before_terminator(block);
            here.insert(v, self.b.load_deref(variable));
        }
        // `reads` is in the order of the region's blocks and instructions, so a parent deref
        // made here comes before its children.
        for d in (reads.iter())
            .filter(|&&(v, variable)| v == variable)
            .map(|&(v, _)| v)
        {
            let func = self.b.function();
            let (mut kind, def) = (func.inst(d).kind.clone(), func.inst(d).def);
            kind.for_each_src_mut(|src| *src = here.get(src).copied().unwrap_or(*src));
            self.before_terminator(block);
            here.insert(d, self.b.insert(kind, def));
        }
        let func = self.b.function_mut();
        let insts = &func.block(block).insts;
        let (body, made) = (insts[..before].to_vec(), insts.len() - before);
        let phis = body
            .iter()
            .take_while(|&&i| matches!(func.inst(i).kind, InstKind::Phi(_)))
            .count();
        for &i in &body[phis..] {
            func.inst_mut(i)
                .kind
                .for_each_src_mut(|src| *src = here.get(src).copied().unwrap_or(*src));
        }
        if let Some(src) = (func.block_mut(block).terminator.as_mut()).and_then(|t| t.src_mut()) {
            *src = here.get(src).copied().unwrap_or(*src);
        }
        // What was made here was appended: it moves in front of the body, after the phis.
        func.block_mut(block).insts[phis..].rotate_right(made);
    }

    /// Moves the header's instructions, terminator and the edges back to it from inside into
    /// a new block, the first of the region; the header stays where the construct is entered
    /// (other constructs may name it) and becomes the block before the loop.
    fn move_header_into_arm(&mut self) {
        let header = self.region.header;
        let func = self.b.function_mut();
        let arm = func.add_block();
        let insts = std::mem::take(&mut func.block_mut(header).insts);
        for &v in &insts {
            func.inst_mut(v).block = arm;
        }
        func.block_mut(arm).insts = insts;
        func.copy_terminator(header, arm, |b| b, |v| v);
        // The header is filled again as the block before the loop.
        let out: Vec<_> = func.cfg.edges(header).map(|e| e.id()).collect();
        for edge in out {
            func.cfg.remove_edge(edge);
        }
        let block = func.block_mut(header);
        block.terminator = None;
        block.structure = None;
        self.region.position.remove(&header);
        self.region.position.insert(arm, 0);
        self.region.blocks[0] = arm;
        let back: Vec<_> = (func.cfg.edges_directed(header, Direction::Incoming))
            .filter(|e| self.region.position.contains_key(&e.source()))
            .map(|e| (e.id(), e.source(), *e.weight()))
            .collect();
        for (edge, source, weight) in back {
            func.cfg.remove_edge(edge);
            func.cfg.add_edge(source, arm, weight);
        }
        // The phis after it now take from the arm what they took from the header.
        for successor in func.successors(arm) {
            for v in func.block(successor).insts.clone() {
                let InstKind::Phi(srcs) = &mut func.inst_mut(v).kind else {
                    break;
                };
                for (pred, _) in srcs.iter_mut().filter(|(p, _)| *p == header) {
                    *pred = arm;
                }
            }
        }
    }

    /// The phis of the region's blocks become variables each predecessor stores to.
    fn phis_to_variables(&mut self) {
        for block in self.region.blocks.clone() {
            let insts = self.b.function().block(block).insts.clone();
            for v in insts {
                let InstKind::Phi(srcs) = self.b.function().inst(v).kind.clone() else {
                    break;
                };
                let ty = self.b.function().inst(v).def.expect("a phi's value");
                let deref = self.variable(format!("{}_{}", self.prefix, v.index()), ty);
                for (pred, src) in srcs {
                    if !self.region.position.contains_key(&pred) {
                        // The header's phi, written on every way into the construct.
                        self.written_before_loop.insert(deref);
                    }
                    self.store_at_end(pred, deref, src);
                }
                (self.b.function_mut().inst_mut(v)).kind =
                    InstKind::Intrinsic(IntrinsicInst::new(Intrinsic::LoadDeref, vec![deref]));
            }
        }
    }

    /// The sources the exits' phis take from the region become variables the region's blocks
    /// store to; gives, per exit, each such phi and its variable.
    fn exit_phis_to_variables(&mut self) -> Vec<Vec<(Value, Value)>> {
        let mut per_exit = Vec::new();
        for exit in self.region.exits.clone() {
            let mut phis = Vec::new();
            for v in self.b.function().block(exit).insts.clone() {
                let InstKind::Phi(srcs) = self.b.function().inst(v).kind.clone() else {
                    break;
                };
                let (inside, outside): (Vec<_>, Vec<_>) = (srcs.into_iter())
                    .partition(|(pred, _)| self.region.position.contains_key(pred));
                if inside.is_empty() {
                    continue;
                }
                let ty = self.b.function().inst(v).def.expect("a phi's value");
                let deref = self.variable(format!("{}_{}", self.prefix, v.index()), ty);
                for (pred, src) in inside {
                    self.store_at_end(pred, deref, src);
                }
                self.b.function_mut().inst_mut(v).kind = InstKind::Phi(outside);
                phis.push((v, deref));
            }
            per_exit.push(phis);
        }
        per_exit
    }

    /// The number `state` takes to run `target` next: its position in the region, or past
    /// the blocks, its exit's.
    fn number(&self, target: BlockId) -> u32 {
        match self.region.position.get(&target) {
            Some(&k) => k,
            None => {
                let exit = (self.region.exits.iter()).position(|&e| e == target);
                self.region.blocks.len() as u32 + exit.expect("a branch out goes to an exit") as u32
            }
        }
    }

    /// Ends `block` by setting `state` to the block its terminator goes to and going on to
    /// `next`; a `return` or `unreachable` stays.
    fn set_next_state(&mut self, block: BlockId, state: Value, next: BlockId) {
        let func = self.b.function();
        let successor = |edge| {
            func.successor(block, edge)
                .expect("an edge of the terminator")
        };
        let (number, cond) = match func.block(block).terminator.clone() {
            Some(Terminator::Jump) => ((self.number(successor(Edge::Jump)), None), None),
            Some(Terminator::Branch { cond }) => (
                (
                    self.number(successor(Edge::True)),
                    Some(self.number(successor(Edge::False))),
                ),
                Some(cond),
            ),
            _ => return,
        };
        self.before_terminator(block);
        let then = self.b.imm_u32(number.0);
        let value = match (cond, number.1) {
            (Some(cond), Some(otherwise)) => {
                let otherwise = self.b.imm_u32(otherwise);
                self.b.alu(AluOp::Bcsel, &[cond, then, otherwise])
            }
            _ => then,
        };
        self.b.store_deref_all(state, value);
        let func = self.b.function_mut();
        func.block_mut(block).structure = None;
        func.set_jump(block, next);
    }

    /// After the loop: a branch to each exit on its number, the merge last, each exit's
    /// phis reading their variables there.
    fn exit_chain(&mut self, state: Value, tests: &[BlockId], exit_phis: Vec<Vec<(Value, Value)>>) {
        let n = self.region.blocks.len() as u32;
        let exits = self.region.exits.clone();
        if exits.is_empty() {
            // Every path returns: the loop's merge is never reached.
            (self.b.function_mut()).set_exit(tests[0], Terminator::Unreachable);
            return;
        }
        for (j, (&exit, phis)) in exits.iter().zip(exit_phis).enumerate() {
            let test = tests[j];
            self.b.cursor = Cursor::at_end(test);
            for (phi, deref) in phis {
                let value = self.b.load_deref(deref);
                if let InstKind::Phi(srcs) = &mut self.b.function_mut().inst_mut(phi).kind {
                    srcs.push((test, value));
                }
            }
            if j + 1 == exits.len() {
                self.b.function_mut().set_jump(test, exit);
            } else {
                let now = self.b.load_deref(state);
                let number = self.b.imm_u32(n + j as u32);
                let taken = self.b.alu(AluOp::Ieq, &[now, number]);
                (self.b.function_mut()).set_branch(test, taken, exit, tests[j + 1]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interp::{InvocationResult, Launch, Resources, run};
    use crate::ir::{IfBuilder, Stage};
    use crate::passes::vars_to_ssa::VarsToSsa;
    use crate::random_program::random_program;
    use crate::rng::Rng;
    use crate::text::print;
    use crate::verify::verify;

    /// A stack so small that any loop holding an `if`, or three nested `if`s, overflow it.
    const TINY: NestingBudget = NestingBudget {
        limit: 6,
        per_loop: 4,
        per_if: 1,
    };

    fn checked(shader: &Shader, after: &str) {
        verify(shader).unwrap_or_else(|e| panic!("after {after}: {e:?}\n{}", print(shader)));
    }

    /// Flattens under `budget` and promotes the variables the pass made, as the backend
    /// pipeline does; gives whether the pass changed the shader.
    fn flatten_and_promote(shader: &mut Shader, budget: NestingBudget) -> bool {
        let mut context = PassContext::default();
        let pass = FlattenDeepCf {
            budget: Some(budget),
        };
        let made = pass.run(shader, &mut context).unwrap();
        checked(shader, "flatten-deep-cf");
        VarsToSsa.run(shader, &mut context).unwrap();
        checked(shader, "vars-to-ssa");
        made
    }

    /// The stack elements the entry function needs.
    fn need(shader: &Shader, budget: NestingBudget) -> u32 {
        let tree = structurize(shader.entry_function())
            .unwrap_or_else(|e| panic!("{e}\n{}", print(shader)));
        measure(&tree, &FxHashSet::default(), budget, &mut Vec::new()).need
    }

    fn results(shader: &Shader, launch: &Launch) -> Vec<(bool, Vec<u64>)> {
        let run = run(shader, launch, &mut Resources::default())
            .unwrap_or_else(|e| panic!("{e}\n{}", print(shader)));
        let result =
            |r: InvocationResult| (r.discarded, r.output("o").unwrap_or_default().to_vec());
        run.invocations().map(result).collect()
    }

    /// Random structured programs (loops, ifs, breaks and continues), flattened under a tiny
    /// stack, fit it and compute what they computed, on inputs that send the invocations
    /// down different paths.
    #[test]
    fn random_programs_compute_the_same_flattened() {
        let mut flattened = 0;
        for seed in 0..200 {
            let original = random_program(seed, 30);
            let mut shader = original.clone();
            if !flatten_and_promote(&mut shader, TINY) {
                assert_eq!(print(&shader), print(&original), "seed {seed}");
                continue;
            }
            flattened += 1;
            assert!(
                need(&shader, TINY) <= TINY.limit,
                "seed {seed}\n{}",
                print(&shader)
            );
            let mut rng = Rng::new(seed);
            let inputs = (0..16)
                .map(|_| (0..4).map(|_| u64::from(rng.below(40) as u32)).collect())
                .collect();
            let launch = Launch::invocations(16).with_input("v", inputs);
            assert_eq!(
                results(&original, &launch),
                results(&shader, &launch),
                "seed {seed}\n{}",
                print(&shader)
            );
        }
        assert!(flattened > 100, "only {flattened} programs were flattened");
    }

    /// `if (cond) { then }` with the builder.
    fn when(b: &mut Builder, cond: Value, then: impl FnOnce(&mut Builder)) {
        let nif: IfBuilder = b.push_if(cond);
        then(b);
        b.pop_if(nif);
    }

    /// Two nested loops whose trip counts come from the input, with a `continue`, a
    /// `discard` and an early `return` inside the inner one: a fragment shader writing `o`.
    fn nested_loops_with_exits() -> Shader {
        let mut shader = Shader::new(Stage::Fragment);
        let u32x4 = Type::Vector(Scalar::U32, 4);
        let u32 = Type::Scalar(Scalar::U32);
        let input = shader.add_variable(Variable::new("v", Mode::ShaderIn, u32x4));
        let output = shader.add_variable(Variable::new("o", Mode::ShaderOut, u32.clone()));
        let [x, i, j] = ["x", "i", "j"]
            .map(|name| shader.add_variable(Variable::new(name, Mode::FunctionTemp, u32.clone())));
        let entry = shader.entry;
        let mut b = Builder::new(&mut shader, entry);
        let deref = b.deref_var(input);
        let v = b.load_deref(deref);
        let [x, i, j, o] = [x, i, j, output].map(|var| b.deref_var(var));
        let vx = b.channel(v, 0);
        b.store_deref_all(x, vx);
        let (zero, one, three) = (b.imm_u32(0), b.imm_u32(1), b.imm_u32(3));
        let (limit, six) = (b.imm_u32(1000), b.imm_u32(6));
        b.store_deref_all(i, zero);
        let outer = b.push_loop();
        let (now, bound) = (b.load_deref(i), b.channel(v, 1));
        let done = b.alu(AluOp::Uge, &[now, bound]);
        when(&mut b, done, |b| b.break_loop(&outer));
        b.store_deref_all(j, zero);
        let inner = b.push_loop();
        let (now, bound) = (b.load_deref(j), b.channel(v, 2));
        let done = b.alu(AluOp::Uge, &[now, bound]);
        when(&mut b, done, |b| b.break_loop(&inner));
        let old = b.load_deref(x);
        let times = b.alu(AluOp::Imul, &[old, three]);
        let new = b.alu(AluOp::Iadd, &[times, now]);
        b.store_deref_all(x, new);
        let next = b.alu(AluOp::Iadd, &[now, one]);
        b.store_deref_all(j, next);
        let odd = b.alu(AluOp::Iand, &[new, one]);
        let odd = b.alu(AluOp::Ieq, &[odd, one]);
        when(&mut b, odd, |b| b.continue_loop(&inner));
        let large = b.alu(AluOp::Uge, &[new, limit]);
        when(&mut b, large, |b| {
            b.store_deref_all(o, new);
            b.ret(None);
        });
        let low = b.alu(AluOp::Iand, &[new, six]);
        let unlucky = b.alu(AluOp::Ieq, &[low, six]);
        when(&mut b, unlucky, |b| {
            b.intrinsic(Intrinsic::Discard, &[], None, &[]);
        });
        b.pop_loop(inner);
        let now = b.load_deref(i);
        let next = b.alu(AluOp::Iadd, &[now, one]);
        b.store_deref_all(i, next);
        b.pop_loop(outer);
        let result = b.load_deref(x);
        b.store_deref_all(o, result);
        b.ret(None);
        shader
    }

    #[test]
    fn loops_with_continue_return_and_discard_compute_the_same_flattened() {
        let mut original = nested_loops_with_exits();
        VarsToSsa
            .run(&mut original, &mut PassContext::default())
            .unwrap();
        checked(&original, "vars-to-ssa");
        assert!(need(&original, TINY) > TINY.limit);
        let mut shader = original.clone();
        assert!(flatten_and_promote(&mut shader, TINY));
        assert!(need(&shader, TINY) <= TINY.limit, "{}", print(&shader));
        let inputs: Vec<Vec<u64>> = (0..64u64)
            .map(|k| vec![k * 7 + 1, k % 5, k % 7, 0])
            .collect();
        let launch = Launch::invocations(inputs.len()).with_input("v", inputs);
        let expected = results(&original, &launch);
        // The inputs reach every way out: the end, the early return and the discard.
        assert!(expected.iter().any(|(discarded, _)| *discarded));
        assert!(
            expected
                .iter()
                .any(|(_, o)| o.first().is_some_and(|&x| x >= 1000))
        );
        assert!(
            expected
                .iter()
                .any(|(d, o)| !d && o.first().is_some_and(|&x| x < 1000))
        );
        assert_eq!(expected, results(&shader, &launch), "{}", print(&shader));
    }

    /// A derivative inside the deep construct keeps it as it is.
    #[test]
    fn constructs_taking_derivatives_stay() {
        let mut shader = nested_loops_with_exits();
        let entry = shader.entry;
        let mut b = Builder::new(&mut shader, entry);
        // The inner loop's header is made after the outer one's.
        let inner = (b.function().blocks().into_iter().rev())
            .find(|&blk| {
                matches!(
                    b.function().block(blk).structure,
                    Some(Structure::Loop { .. })
                )
            })
            .expect("the inner loop");
        b.cursor = Cursor {
            block: inner,
            pos: Some(0),
        };
        let one = b.imm_f32(1.0);
        b.alu(AluOp::Fddx, &[one]);
        VarsToSsa
            .run(&mut shader, &mut PassContext::default())
            .unwrap();
        let before = print(&shader);
        let mut context = PassContext::default();
        let pass = FlattenDeepCf { budget: Some(TINY) };
        assert!(!pass.run(&mut shader, &mut context).unwrap());
        assert_eq!(print(&shader), before);
    }

    /// Without a budget the pass does nothing.
    #[test]
    fn no_budget_no_change() {
        let mut shader = random_program(3, 30);
        let before = print(&shader);
        let pass = FlattenDeepCf { budget: None };
        assert!(!pass.run(&mut shader, &mut PassContext::default()).unwrap());
        assert_eq!(print(&shader), before);
    }

    /// `depth` counted loops nested in one another, each adding its counter to `x`, the
    /// bounds read from the input.
    fn counted_loops(depth: usize) -> Shader {
        let mut shader = Shader::new(Stage::Fragment);
        let u32 = Type::Scalar(Scalar::U32);
        let input = shader.add_variable(Variable::new(
            "v",
            Mode::ShaderIn,
            Type::Vector(Scalar::U32, 4),
        ));
        let output = shader.add_variable(Variable::new("o", Mode::ShaderOut, u32.clone()));
        let x = shader.add_variable(Variable::new("x", Mode::FunctionTemp, u32.clone()));
        let counters: Vec<_> = (0..depth)
            .map(|k| {
                shader.add_variable(Variable::new(
                    format!("i{k}"),
                    Mode::FunctionTemp,
                    u32.clone(),
                ))
            })
            .collect();
        let entry = shader.entry;
        let mut b = Builder::new(&mut shader, entry);
        let deref = b.deref_var(input);
        let v = b.load_deref(deref);
        let (x, o) = (b.deref_var(x), b.deref_var(output));
        let (zero, one, bound) = (b.imm_u32(0), b.imm_u32(1), b.channel(v, 1));
        b.store_deref_all(x, zero);
        let mut loops = Vec::new();
        for &counter in &counters {
            let i = b.deref_var(counter);
            b.store_deref_all(i, zero);
            let lp = b.push_loop();
            let now = b.load_deref(i);
            let done = b.alu(AluOp::Uge, &[now, bound]);
            when(&mut b, done, |b| b.break_loop(&lp));
            let old = b.load_deref(x);
            let sum = b.alu(AluOp::Iadd, &[old, now]);
            b.store_deref_all(x, sum);
            loops.push((lp, i));
        }
        for (lp, i) in loops.into_iter().rev() {
            let now = b.load_deref(i);
            let next = b.alu(AluOp::Iadd, &[now, one]);
            b.store_deref_all(i, next);
            b.pop_loop(lp);
        }
        let result = b.load_deref(x);
        b.store_deref_all(o, result);
        b.ret(None);
        shader
    }

    /// A region flattened inside loops that stay: its values get phis in the dispatch loop
    /// only, not in every loop around it (values times enclosing loops), so with half the
    /// loops kept and half flattened, twice the depth gives twice the phis, not four times.
    #[test]
    fn flattening_inside_deep_loops_adds_phis_in_proportion_to_the_region() {
        let phis_at = |depth: usize| {
            // As in the backend pipeline, the variables are promoted before the pass.
            let mut shader = counted_loops(depth);
            VarsToSsa
                .run(&mut shader, &mut PassContext::default())
                .unwrap();
            // Half the loops stay (four elements each); the other half are flattened.
            let budget = NestingBudget {
                limit: 4 * depth as u32 / 2 + 5,
                per_loop: 4,
                per_if: 1,
            };
            assert!(flatten_and_promote(&mut shader, budget));
            assert!(need(&shader, budget) <= budget.limit);
            let func = shader.entry_function();
            (func.all_insts())
                .filter(|&v| matches!(func.inst(v).kind, InstKind::Phi(_)))
                .count()
        };
        let (shallow, deep) = (phis_at(40), phis_at(80));
        assert!(
            deep * 2 <= shallow * 5,
            "{shallow} phis at depth 40, {deep} at depth 80"
        );
    }
}
