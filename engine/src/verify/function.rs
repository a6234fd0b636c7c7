//! The per-function driver: instruction placement, SSA dominance, where deref values may be
//! used, phis, and terminators and out-edges. Structured control flow is checked in
//! `structure`, single instructions in the other sibling modules.

use super::shader::CallSite;
use super::{ErrorKind, VerifyError};
use crate::cfg::DomTree;
use crate::ir::{
    Block, BlockId, Deref, Edge, FuncId, Function, Inst, InstKind, Shader, Terminator, TexSrc,
    Type, ValType, Value, VarId, inst_sources,
};
use rustc_hash::FxHashMap;
use shrew_ops::{BIT_SIZES, SrcShape, is_valid_component_count};

/// Where a value is used from: an instruction, or the terminator of a block.
#[derive(Copy, Clone)]
pub(super) enum Site {
    Inst(Value),
    Term(BlockId),
}

/// The state of checking one function.
pub(super) struct FuncCx<'a> {
    pub shader: &'a Shader,
    pub func: &'a Function,
    pub id: FuncId,
    /// `None` when the entry block does not exist.
    pub dom: Option<DomTree>,
    /// Block and position of the first listing of every instruction.
    pos: Vec<Option<(BlockId, usize)>>,
    errors: Vec<VerifyError>,
    pub calls: Vec<CallSite>,
}

/// Checks one function (`id` must name one); also returns its call sites for the recursion
/// check.
pub(super) fn check(shader: &Shader, id: FuncId) -> (Vec<VerifyError>, Vec<CallSite>) {
    let func = &shader.functions[id.0 as usize];
    let dom = func
        .cfg
        .contains_node(func.entry)
        .then(|| DomTree::new(func));
    let mut cx = FuncCx {
        shader,
        func,
        id,
        dom,
        pos: vec![None; func.insts.len()],
        errors: Vec::new(),
        calls: Vec::new(),
    };
    cx.check_entry_block();
    cx.place_insts();
    for b in func.blocks() {
        cx.check_block(b, &func.cfg[b]);
    }
    cx.check_back_edges();
    cx.check_reducible();
    cx.check_branches();
    (cx.errors, cx.calls)
}

/// Whether source `k` of an instruction (in [`inst_sources`] order) is a place for a deref
/// value: a deref's parent, an intrinsic source whose slot is [`SrcShape::Deref`], or a
/// texture or sampler deref source of a texture instruction.
fn takes_deref(kind: &InstKind, k: usize) -> bool {
    match kind {
        InstKind::Deref(Deref::Array { .. } | Deref::Struct { .. }) => k == 0,
        InstKind::Intrinsic(intr) => intr.op.info().srcs.get(k) == Some(&SrcShape::Deref),
        InstKind::Tex(tex) => matches!(
            tex.srcs.get(k),
            Some((TexSrc::TextureDeref | TexSrc::SamplerDeref, _))
        ),
        _ => false,
    }
}

fn edge_name(e: Edge) -> &'static str {
    match e {
        Edge::Jump => "jump",
        Edge::True => "true",
        Edge::False => "false",
    }
}

impl FuncCx<'_> {
    fn error(
        &mut self,
        kind: ErrorKind,
        block: Option<BlockId>,
        inst: Option<Value>,
        message: String,
    ) {
        let opcode = inst
            .and_then(|v| self.func.get_inst(v))
            .map(|i| i.kind.name().to_string());
        self.errors.push(VerifyError {
            kind,
            func: self.func.name.clone(),
            block,
            inst,
            opcode,
            message,
        });
    }

    /// An error about an instruction.
    pub fn err_inst(&mut self, kind: ErrorKind, v: Value, message: String) {
        let block = self
            .pos
            .get(v.index())
            .copied()
            .flatten()
            .map(|(b, _)| b)
            .or_else(|| self.func.get_inst(v).map(|i| i.block));
        self.error(kind, block, Some(v), message);
    }

    /// An error about a block.
    pub fn err_block(&mut self, kind: ErrorKind, b: BlockId, message: String) {
        self.error(kind, Some(b), None, message);
    }

    fn err_site(&mut self, kind: ErrorKind, site: Site, message: String) {
        match site {
            Site::Inst(v) => self.err_inst(kind, v, message),
            Site::Term(b) => self.err_block(kind, b, message),
        }
    }

    /// The shape of a value, if it is a live instruction with a result.
    pub fn shape(&self, v: Value) -> Option<ValType> {
        self.func.value_type(v)
    }

    fn check_entry_block(&mut self) {
        let entry = self.func.entry;
        if !self.func.cfg.contains_node(entry) {
            let message = format!("entry block b{} does not exist", entry.index());
            self.error(ErrorKind::EntryBlock, None, None, message);
            return;
        }
        let preds = self.func.predecessors(entry);
        if !preds.is_empty() {
            let names: Vec<String> = preds.iter().map(|p| format!("b{}", p.index())).collect();
            let message = format!("entry block has predecessors {}", names.join(", "));
            self.err_block(ErrorKind::EntryBlock, entry, message);
        }
    }

    /// Records where every instruction is listed and reports listings that disagree with the
    /// arena.
    fn place_insts(&mut self) {
        let func = self.func;
        for b in func.blocks() {
            for (i, &v) in func.cfg[b].insts.iter().enumerate() {
                let Some(inst) = func.get_inst(v) else {
                    let message = format!("lists {v}, which is not a live instruction");
                    self.err_block(ErrorKind::UnknownInstInBlock, b, message);
                    continue;
                };
                if let Some((first, _)) = self.pos[v.index()] {
                    let message =
                        format!("listed again in b{} after b{}", b.index(), first.index());
                    self.err_inst(ErrorKind::InstListedTwice, v, message);
                    continue;
                }
                self.pos[v.index()] = Some((b, i));
                if inst.block != b {
                    let message = format!(
                        "listed in b{} but its block field says b{}",
                        b.index(),
                        inst.block.index()
                    );
                    self.err_inst(ErrorKind::InstPlacement, v, message);
                }
            }
        }
        for (i, inst) in func.insts.iter().enumerate() {
            if inst.is_some() && self.pos[i].is_none() {
                let v = Value(i as u32);
                self.err_inst(ErrorKind::InstPlacement, v, "listed in no block".into());
            }
        }
    }

    fn check_block(&mut self, b: BlockId, block: &Block) {
        let mut seen_non_phi = false;
        for (i, &v) in block.insts.iter().enumerate() {
            // Only the first listing of a live instruction is checked.
            if self.pos.get(v.index()).copied().flatten() != Some((b, i)) {
                continue;
            }
            let Some(inst) = self.func.get_inst(v) else {
                continue;
            };
            if let InstKind::Phi(_) = inst.kind {
                if seen_non_phi {
                    let message = "phi after a non-phi instruction".into();
                    self.err_inst(ErrorKind::PhiNotAtTop, v, message);
                }
            } else {
                seen_non_phi = true;
            }
            self.check_inst(v, inst, (b, i));
        }
        self.check_terminator(b, block);
        self.check_structure(b, block);
    }

    fn check_inst(&mut self, v: Value, inst: &Inst, at: (BlockId, usize)) {
        self.check_def(v, inst);
        if let InstKind::Phi(srcs) = &inst.kind {
            self.check_phi(v, inst, at.0, srcs);
            return;
        }
        for (k, src) in inst_sources(&inst.kind).into_iter().enumerate() {
            let what = format!("source {k}");
            self.check_use(Site::Inst(v), at, src, &what);
            if !takes_deref(&inst.kind, k) {
                self.check_not_deref(Site::Inst(v), src, &what);
            }
        }
        match &inst.kind {
            InstKind::Alu(alu) => self.check_alu(v, inst, alu),
            InstKind::Const(values) => self.check_const(v, inst, values),
            InstKind::Undef | InstKind::Phi(_) => {}
            InstKind::Intrinsic(intr) => self.check_intrinsic(v, inst, intr),
            InstKind::Tex(tex) => self.check_tex(v, inst, tex),
            InstKind::Deref(d) => self.check_deref(v, inst, d),
            InstKind::Call { func, args } => self.check_call(v, inst, *func, args, at.0),
        }
    }

    /// Whether the instruction has a result exactly when it should, and the result's shape is
    /// one a value can have.
    fn check_def(&mut self, v: Value, inst: &Inst) {
        let expected = match &inst.kind {
            InstKind::Intrinsic(intr) => Some(intr.op.info().has_dest()),
            InstKind::Call { func, .. } => self
                .shader
                .functions
                .get(func.0 as usize)
                .map(|f| f.ret.is_some()),
            _ => Some(true),
        };
        match (expected, inst.def) {
            (Some(true), None) => {
                self.err_inst(ErrorKind::DefPresence, v, "has no result".into());
            }
            (Some(false), Some(_)) => {
                let message = "has a result but the operation produces none".into();
                self.err_inst(ErrorKind::DefPresence, v, message);
            }
            _ => {}
        }
        if let Some(def) = inst.def
            && (!BIT_SIZES.contains(&def.bits) || !is_valid_component_count(def.comps as usize))
        {
            let message = format!(
                "result has {} components of {} bits; values have 1-5, 8 or 16 components of \
                 1, 8, 16, 32 or 64 bits",
                def.comps, def.bits
            );
            self.err_inst(ErrorKind::InvalidShape, v, message);
        }
    }

    /// Checks that a source names a live instruction with a result; returns where it is
    /// listed.
    fn def_site(&mut self, site: Site, src: Value, what: &str) -> Option<(BlockId, usize)> {
        match self.func.get_inst(src) {
            None => {
                let message = format!("{what} {src} is not a live instruction");
                self.err_site(ErrorKind::InvalidSource, site, message);
                None
            }
            Some(def) if def.def.is_none() => {
                let message = format!("{what} {src} defines no value");
                self.err_site(ErrorKind::InvalidSource, site, message);
                None
            }
            // An unlisted definition is reported by `place_insts`.
            Some(_) => self.pos[src.index()],
        }
    }

    /// A use at position `at` (a block and an index in it; the terminator is at the end).
    fn check_use(&mut self, site: Site, at: (BlockId, usize), src: Value, what: &str) {
        let Some((db, di)) = self.def_site(site, src, what) else {
            return;
        };
        let (ub, ui) = at;
        if db == ub {
            if di >= ui {
                let message = format!("{what} {src} is used before its definition");
                self.err_site(ErrorKind::NotDominated, site, message);
            }
            return;
        }
        self.check_dominance(
            site,
            &format!("{what} {src}"),
            db,
            ub,
            &format!("b{}", ub.index()),
        );
    }

    /// Reports a definition in block `db` that does not dominate the use in block `ub`, written
    /// `place` in messages. Dominance means nothing among unreachable blocks.
    fn check_dominance(&mut self, site: Site, what: &str, db: BlockId, ub: BlockId, place: &str) {
        let Some(dom) = &self.dom else {
            return;
        };
        if !dom.is_reachable(ub) {
            return;
        }
        if !dom.is_reachable(db) {
            let message = format!("{what} is defined in unreachable block b{}", db.index());
            self.err_site(ErrorKind::DefInUnreachable, site, message);
        } else if !dom.dominates(db, ub) {
            let message = format!(
                "{what} is defined in b{}, which does not dominate {place}",
                db.index()
            );
            self.err_site(ErrorKind::NotDominated, site, message);
        }
    }

    /// Reports a use of a deref value in a place that does not take one (see [`takes_deref`]).
    fn check_not_deref(&mut self, site: Site, src: Value, what: &str) {
        let is_deref = self
            .func
            .get_inst(src)
            .is_some_and(|i| matches!(i.kind, InstKind::Deref(_)));
        if is_deref {
            let message = format!(
                "{what} {src} is a deref; derefs may only be deref parents, deref sources of \
                 intrinsics, or texture and sampler deref sources"
            );
            self.err_site(ErrorKind::DerefUse, site, message);
        }
    }

    /// A phi source: its definition must dominate the end of the predecessor it comes from.
    fn check_phi_use(&mut self, phi: Value, pred: BlockId, src: Value) {
        let what = format!("source for b{}", pred.index());
        let Some((db, _)) = self.def_site(Site::Inst(phi), src, &what) else {
            return;
        };
        let place = format!("the end of b{}", pred.index());
        self.check_dominance(Site::Inst(phi), &format!("{what} {src}"), db, pred, &place);
    }

    /// A phi has one entry per distinct predecessor block (however many edges that block has
    /// to the phi's), each dominating the end of its block and shaped like the phi.
    fn check_phi(&mut self, v: Value, inst: &Inst, b: BlockId, srcs: &[(BlockId, Value)]) {
        let mut preds = self.func.predecessors(b);
        preds.dedup();
        let mut entries: FxHashMap<BlockId, usize> = FxHashMap::default();
        for (p, _) in srcs {
            *entries.entry(*p).or_default() += 1;
        }
        let mut blocks: Vec<BlockId> = preds.iter().chain(entries.keys()).copied().collect();
        blocks.sort();
        blocks.dedup();
        for p in blocks {
            let is_pred = preds.binary_search(&p).is_ok();
            let message = match (is_pred, entries.get(&p).copied().unwrap_or(0)) {
                (true, 1) => continue,
                (false, _) => format!(
                    "has an entry for b{}, which is not a predecessor",
                    p.index()
                ),
                (true, 0) => format!("has no entry for predecessor b{}", p.index()),
                (true, n) => format!(
                    "has {n} entries for predecessor b{}, expected one per predecessor block",
                    p.index()
                ),
            };
            self.err_inst(ErrorKind::PhiPredecessors, v, message);
        }
        for &(p, src) in srcs {
            self.check_phi_use(v, p, src);
            self.check_not_deref(Site::Inst(v), src, &format!("source for b{}", p.index()));
            if let (Some(def), Some(shape)) = (inst.def, self.shape(src))
                && shape != def
            {
                let message = format!(
                    "source for b{} ({src}) has shape {shape}, expected {def}",
                    p.index()
                );
                self.err_inst(ErrorKind::PhiShape, v, message);
            }
        }
    }

    fn check_terminator(&mut self, b: BlockId, block: &Block) {
        let mut edges: Vec<Edge> = self.func.cfg.edges(b).map(|e| *e.weight()).collect();
        edges.sort_by_key(|e| *e as u8);
        let Some(term) = &block.terminator else {
            self.err_block(ErrorKind::MissingTerminator, b, "no terminator".into());
            return;
        };
        let end = (b, block.insts.len());
        let (name, expected): (&str, &[Edge]) = match term {
            Terminator::Jump => ("jump", &[Edge::Jump]),
            Terminator::Branch { .. } => ("branch", &[Edge::True, Edge::False]),
            Terminator::Return { .. } => ("return", &[]),
            Terminator::Unreachable => ("unreachable", &[]),
        };
        if edges != expected {
            let found: Vec<&str> = edges.iter().map(|e| edge_name(*e)).collect();
            let message = format!(
                "{name} needs out-edges [{}], found [{}]",
                expected
                    .iter()
                    .map(|e| edge_name(*e))
                    .collect::<Vec<_>>()
                    .join(", "),
                found.join(", ")
            );
            self.err_block(ErrorKind::TerminatorEdges, b, message);
        }
        match term {
            Terminator::Branch { cond } => {
                self.check_use(Site::Term(b), end, *cond, "branch condition");
                self.check_not_deref(Site::Term(b), *cond, "branch condition");
                if let Some(shape) = self.shape(*cond)
                    && shape != ValType::BOOL
                {
                    let message = format!("branch condition {cond} has shape {shape}, expected 1");
                    self.err_block(ErrorKind::BranchCondition, b, message);
                }
            }
            Terminator::Return { value } => {
                if let Some(v) = value {
                    self.check_use(Site::Term(b), end, *v, "return value");
                    self.check_not_deref(Site::Term(b), *v, "return value");
                }
                let message = match (value, self.func.ret) {
                    (Some(v), None) => {
                        Some(format!("returns {v} from a function without a return type"))
                    }
                    (None, Some(ret)) => {
                        Some(format!("returns nothing from a function returning {ret}"))
                    }
                    (Some(v), Some(ret)) => self
                        .shape(*v)
                        .filter(|shape| *shape != ret)
                        .map(|shape| format!("returns {v} of shape {shape}, expected {ret}")),
                    (None, None) => None,
                };
                if let Some(message) = message {
                    self.err_block(ErrorKind::ReturnValue, b, message);
                }
            }
            Terminator::Jump | Terminator::Unreachable => {}
        }
    }

    /// The variable a deref chain starts at and the type it points to; `None` when the chain
    /// is malformed (each link reports its own defect).
    pub fn deref_target(&self, v: Value) -> Option<(VarId, Type)> {
        self.shader.deref_target(self.func, v)
    }

    /// Whether a value is the result of a deref instruction (unknown values count as derefs:
    /// they are reported as invalid sources).
    pub fn is_deref_or_unknown(&self, v: Value) -> bool {
        self.func
            .get_inst(v)
            .is_none_or(|i| matches!(i.kind, InstKind::Deref(_)))
    }
}
