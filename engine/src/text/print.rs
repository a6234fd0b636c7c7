//! Printer of the `.shrew` text format.

use super::{alu_src_comps, is_identifier, is_type_keyword, literal};
use crate::cfg::{DomTree, construct_depths};
use crate::ir::*;
use shrew_ops::{IndexKind, swizzle_letters};
use std::collections::HashSet;
use std::fmt::Write;

/// Deepest nesting the indentation shows: deeper lines are indented as this deep, so that a
/// deeply nested shader prints in size linear in its own.
const MAX_INDENT_DEPTH: usize = 32;

/// The indentation of a line `depth` levels deep (four spaces a level), for printers of nested
/// code.
pub fn indentation(depth: usize) -> String {
    "    ".repeat(depth.min(MAX_INDENT_DEPTH))
}

/// Column, counted from an instruction's indentation, at which deref comments start.
const COMMENT_COLUMN: usize = 48;

/// Prints a whole shader: the header, struct types, variables, then every function.
pub fn print(shader: &Shader) -> String {
    let printer = Printer::new(shader);
    let mut out = String::new();
    printer.header(&mut out);
    for index in 0..shader.functions.len() {
        out.push('\n');
        printer.function(FuncId(index as u32), &mut out);
    }
    out
}

/// Prints one function of `shader`, as [`print()`] does.
///
/// # Panics
///
/// If `func` is not a function of `shader`.
pub fn print_function(shader: &Shader, func: FuncId) -> String {
    let mut out = String::new();
    Printer::new(shader).function(func, &mut out);
    out
}

/// The names things are printed with: the IR's names, made into unique identifiers (and, for
/// structs, into words that do not already name a type) so that the text always parses back.
/// Renaming is idempotent: names that are already fine are kept.
struct Names {
    structs: Vec<String>,
    members: Vec<Vec<String>>,
    vars: Vec<String>,
    funcs: Vec<String>,
}

impl Names {
    fn new(shader: &Shader) -> Names {
        Names {
            structs: unique(shader.structs.iter().map(|s| &s.name[..]), is_type_keyword),
            members: shader
                .structs
                .iter()
                .map(|s| unique(s.members.iter().map(|m| &m.name[..]), |_| false))
                .collect(),
            vars: unique(shader.variables.iter().map(|v| &v.name[..]), |_| false),
            funcs: unique(shader.functions.iter().map(|f| &f.name[..]), |_| false),
        }
    }
}

/// Makes each name an identifier that is neither reserved nor used by an earlier one, by
/// replacing invalid characters and then appending `_1`, `_2`, ….
fn unique<'a>(
    names: impl Iterator<Item = &'a str>,
    reserved: impl Fn(&str) -> bool,
) -> Vec<String> {
    let mut used = HashSet::new();
    names
        .map(|name| {
            let mut base: String = name
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '_' {
                        c
                    } else {
                        '_'
                    }
                })
                .collect();
            if !is_identifier(&base) {
                base.insert(0, '_');
            }
            let mut candidate = base.clone();
            let mut suffix = 1;
            while reserved(&candidate) || used.contains(&candidate) {
                candidate = format!("{base}_{suffix}");
                suffix += 1;
            }
            used.insert(candidate.clone());
            candidate
        })
        .collect()
}

struct Printer<'a> {
    shader: &'a Shader,
    names: Names,
}

impl<'a> Printer<'a> {
    fn new(shader: &'a Shader) -> Printer<'a> {
        Printer {
            shader,
            names: Names::new(shader),
        }
    }

    fn header(&self, out: &mut String) {
        let shader = self.shader;
        out.push_str("shader ");
        out.push_str(shader.stage.name());
        if shader.stage == Stage::Compute || shader.workgroup_size != [1, 1, 1] {
            let [x, y, z] = shader.workgroup_size;
            let _ = write!(out, " (workgroup_size={x},{y},{z})");
        }
        out.push('\n');
        for (index, st) in shader.structs.iter().enumerate() {
            let members: Vec<String> = st
                .members
                .iter()
                .zip(&self.names.members[index])
                .map(|(member, name)| {
                    let ty = self.type_text(&member.ty);
                    match member.offset {
                        Some(offset) => format!("{name}: {ty} offset {offset}"),
                        None => format!("{name}: {ty}"),
                    }
                })
                .collect();
            let name = &self.names.structs[index];
            if members.is_empty() {
                let _ = writeln!(out, "struct {name} {{}}");
            } else {
                let _ = writeln!(out, "struct {name} {{ {} }}", members.join(", "));
            }
        }
        for (var, name) in shader.variables.iter().zip(&self.names.vars) {
            let _ = write!(
                out,
                "var {} {} @{name}",
                var.mode.name(),
                self.type_text(&var.ty)
            );
            let attrs: Vec<String> = [
                var.location.map(|l| format!("location={l}")),
                var.binding.map(|b| format!("binding={b}")),
                var.desc_set.map(|d| format!("desc_set={d}")),
                var.builtin.map(|b| format!("builtin={}", b.name())),
                (var.interp != Interp::Smooth).then(|| format!("interp={}", var.interp.name())),
                var.array_of_blocks
                    .then(|| "array_of_blocks=true".to_string()),
                var.atomic_counters
                    .then(|| "atomic_counters=true".to_string()),
            ]
            .into_iter()
            .flatten()
            .collect();
            if !attrs.is_empty() {
                let _ = write!(out, " ({})", attrs.join(", "));
            }
            if let Some(init) = &var.init {
                let scalars = crate::interp::memory::flatten_type(shader, &var.ty);
                let values: Vec<String> = init
                    .iter()
                    .enumerate()
                    .map(|(i, &v)| {
                        let bits = scalars.get(i).map_or(32, |s| s.bits);
                        literal::format_const(v, bits)
                    })
                    .collect();
                let _ = write!(out, " = ({})", values.join(", "));
            }
            out.push('\n');
        }
    }

    /// A type as written in the text; like [`Shader::type_name`] but with printed struct names.
    fn type_text(&self, ty: &Type) -> String {
        match ty {
            Type::Struct(id) => self
                .names
                .structs
                .get(id.0 as usize)
                .cloned()
                .unwrap_or_else(|| format!("<struct {}>", id.0)),
            Type::Array { .. } => {
                let mut dims = String::new();
                let mut elem = ty;
                while let Type::Array {
                    elem: inner,
                    len,
                    stride,
                } = elem
                {
                    dims.push('[');
                    if *len != 0 {
                        let _ = write!(dims, "{len}");
                    }
                    if *stride != 0 {
                        let sep = if *len != 0 { " " } else { "" };
                        let _ = write!(dims, "{sep}stride {stride}");
                    }
                    dims.push(']');
                    elem = inner;
                }
                self.type_text(elem) + &dims
            }
            _ => self.shader.type_name(ty),
        }
    }

    fn function(&self, id: FuncId, out: &mut String) {
        let func = &self.shader.functions[id.0 as usize];
        let params: Vec<String> = func.params.iter().map(|p| p.to_string()).collect();
        let _ = write!(
            out,
            "{}fn {}({})",
            if id == self.shader.entry {
                "entry "
            } else {
                ""
            },
            self.names.funcs[id.0 as usize],
            params.join(", ")
        );
        if let Some(ret) = func.ret {
            let _ = write!(out, " -> {ret}");
        }
        out.push_str(" {\n");
        let depths = if func.cfg.contains_node(func.entry) {
            construct_depths(func, &DomTree::new(func))
        } else {
            Default::default()
        };
        // The entry block comes first (the parser takes the first block as the entry); it is
        // normally b0, so this is plain id order.
        let mut blocks = func.blocks();
        if let Some(pos) = blocks.iter().position(|&b| b == func.entry) {
            let entry = blocks.remove(pos);
            blocks.insert(0, entry);
        }
        for b in blocks {
            let indent = indentation(depths.get(&b).copied().unwrap_or(0)).len();
            self.block(func, b, indent, out);
        }
        out.push_str("}\n");
    }

    fn block(&self, func: &Function, b: BlockId, indent: usize, out: &mut String) {
        let block = func.block(b);
        let _ = write!(out, "{:indent$}b{}:", "", b.index());
        match block.structure {
            Some(Structure::Selection { merge }) => {
                let _ = write!(out, " selection merge=b{}", merge.index());
            }
            Some(Structure::Loop { merge, cont }) => {
                let _ = write!(
                    out,
                    " loop merge=b{} continue=b{}",
                    merge.index(),
                    cont.index()
                );
            }
            None => {}
        }
        out.push('\n');
        let indent = indent + 4;
        for &v in &block.insts {
            let line = self.inst(func, v);
            let origin = crate::provenance::origin(func, v).map(|o| format!("from {o}"));
            let comment = match (self.deref_comment(func, v), origin) {
                (Some(deref), Some(origin)) => Some(format!("{deref}; {origin}")),
                (deref, origin) => deref.or(origin),
            };
            let _ = write!(out, "{:indent$}{line}", "");
            if let Some(comment) = comment {
                let pad = COMMENT_COLUMN.saturating_sub(line.len()).max(1);
                let _ = write!(out, "{:pad$}// {comment}", "");
            }
            out.push('\n');
        }
        let target = |kind| {
            func.successor(b, kind)
                .map_or_else(|| "b?".to_string(), |t| format!("b{}", t.index()))
        };
        let term = match &block.terminator {
            Some(Terminator::Jump) => format!("jump {}", target(Edge::Jump)),
            Some(Terminator::Branch { cond }) => {
                format!(
                    "branch {cond}, {}, {}",
                    target(Edge::True),
                    target(Edge::False)
                )
            }
            Some(Terminator::Return { value: Some(v) }) => format!("return {v}"),
            Some(Terminator::Return { value: None }) => "return".to_string(),
            Some(Terminator::Unreachable) => "unreachable".to_string(),
            // A block still being built has no terminator yet.
            None => return,
        };
        let _ = writeln!(out, "{:indent$}{term}", "");
    }

    /// One instruction, without indentation or comment.
    fn inst(&self, func: &Function, v: Value) -> String {
        let Some(inst) = func.get_inst(v) else {
            // Not valid text on purpose: the IR is broken and the output should say so.
            return format!("<deleted {v}>");
        };
        let mut s = String::new();
        if let Some(def) = inst.def {
            let _ = write!(s, "{def} {v} = ");
        }
        match &inst.kind {
            InstKind::Alu(alu) => self.alu(func, alu, inst.def, &mut s),
            InstKind::Const(comps) => {
                let bits = inst.def.map_or(32, |d| d.bits);
                let comps: Vec<String> = comps
                    .iter()
                    .map(|&c| literal::format_const(c, bits))
                    .collect();
                let _ = write!(s, "load_const ({})", comps.join(", "));
            }
            InstKind::Undef => s.push_str("undef"),
            InstKind::Phi(srcs) => {
                s.push_str("phi");
                let srcs: Vec<String> = srcs
                    .iter()
                    .map(|(b, v)| format!("b{}: {v}", b.index()))
                    .collect();
                if !srcs.is_empty() {
                    let _ = write!(s, " {}", srcs.join(", "));
                }
            }
            InstKind::Intrinsic(intr) => self.intrinsic(intr, &mut s),
            InstKind::Tex(tex) => self.tex(tex, &mut s),
            InstKind::Deref(Deref::Var(var)) => {
                let name = self.names.vars.get(var.0 as usize).map_or("?", |n| &n[..]);
                let _ = write!(s, "deref_var @{name}");
            }
            InstKind::Deref(Deref::Array { parent, index }) => {
                let _ = write!(s, "deref_array {parent}[{index}]");
            }
            InstKind::Deref(Deref::Struct { parent, member }) => {
                let _ = write!(
                    s,
                    "deref_struct {parent}.{}",
                    self.member_name(func, *parent, *member)
                );
            }
            InstKind::Call { func: callee, args } => {
                let name = self
                    .names
                    .funcs
                    .get(callee.0 as usize)
                    .map_or("?", |n| &n[..]);
                let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
                let _ = write!(s, "call {name}({})", args.join(", "));
            }
        }
        s
    }

    fn alu(&self, func: &Function, alu: &Alu, def: Option<ValType>, s: &mut String) {
        s.push_str(alu.op.name());
        for (i, src) in alu.srcs.iter().enumerate() {
            s.push_str(if i == 0 { " " } else { ", " });
            let _ = write!(s, "{}", src.value);
            let read = alu_src_comps(alu.op, i, def);
            let swizzle = &src.swizzle[..read];
            let identity = swizzle.iter().enumerate().all(|(i, &c)| c as usize == i);
            let wider = func
                .value_type(src.value)
                .is_some_and(|t| t.comps as usize > read);
            if !identity || wider {
                if swizzle
                    .iter()
                    .all(|&c| (c as usize) < shrew_ops::MAX_COMPONENTS)
                {
                    let _ = write!(s, ".{}", swizzle_letters(swizzle));
                } else {
                    s.push_str(".?");
                }
            }
        }
        let mut flags = Vec::new();
        if alu.exact {
            flags.push("exact");
        }
        for (bit, name) in FpFlags::NAMES.iter().enumerate() {
            if alu.fp.contains(FpFlags(1 << bit)) {
                flags.push(name);
            }
        }
        if !flags.is_empty() {
            let _ = write!(s, " {{{}}}", flags.join(", "));
        }
    }

    fn intrinsic(&self, intr: &IntrinsicInst, s: &mut String) {
        s.push_str(intr.op.name());
        let srcs: Vec<String> = intr.srcs.iter().map(|v| v.to_string()).collect();
        if !srcs.is_empty() {
            let _ = write!(s, " {}", srcs.join(", "));
        }
        let indices: Vec<String> = intr
            .op
            .info()
            .indices
            .iter()
            .zip(&intr.indices)
            .filter(|(_, value)| **value != 0)
            .map(|(&kind, &value)| {
                // A write mask only has letters for the low 16 bits.
                let text = if kind == IndexKind::WriteMask && value >> 16 != 0 {
                    value.to_string()
                } else {
                    kind.format_value(value)
                };
                format!("{}={text}", kind.name())
            })
            .collect();
        if !indices.is_empty() {
            let _ = write!(s, " ({})", indices.join(", "));
        }
    }

    fn tex(&self, tex: &Tex, s: &mut String) {
        let _ = write!(s, "{} {}", tex.op.name(), tex.dim.name());
        if tex.is_array {
            s.push_str(" array");
        }
        if tex.is_shadow {
            s.push_str(" shadow");
        }
        let srcs: Vec<String> = tex
            .srcs
            .iter()
            .map(|(role, v)| format!("{v} ({})", role.name()))
            .collect();
        if !srcs.is_empty() {
            let _ = write!(s, " {}", srcs.join(", "));
        }
        let attrs: Vec<String> = [
            (tex.texture != 0).then(|| format!("texture={}", tex.texture)),
            (tex.sampler != 0).then(|| format!("sampler={}", tex.sampler)),
            (tex.dest_type != shrew_ops::BaseType::Float)
                .then(|| format!("dest_type={}", tex.dest_type.name())),
            (tex.component != 0).then(|| format!("component={}", tex.component)),
        ]
        .into_iter()
        .flatten()
        .collect();
        if !attrs.is_empty() {
            let _ = write!(s, " ({})", attrs.join(", "));
        }
    }

    /// A struct member by name, or by number when the parent's struct type is unknown.
    fn member_name(&self, func: &Function, parent: Value, member: u32) -> String {
        if let Some((_, Type::Struct(id))) = self.shader.deref_target(func, parent) {
            let name = self
                .names
                .members
                .get(id.0 as usize)
                .and_then(|m| m.get(member as usize));
            if let Some(name) = name {
                return name.clone();
            }
        }
        member.to_string()
    }

    /// `MODE TYPE` of what a deref points to.
    fn deref_comment(&self, func: &Function, v: Value) -> Option<String> {
        let inst = func.get_inst(v)?;
        if !matches!(inst.kind, InstKind::Deref(_)) {
            return None;
        }
        let (var, ty) = self.shader.deref_target(func, v)?;
        let mode = self.shader.variables.get(var.0 as usize)?.mode;
        Some(format!("{} {}", mode.name(), self.type_text(&ty)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shrew_ops::{AluOp, Intrinsic};

    #[test]
    fn prints_a_small_shader() {
        let mut s = Shader::new(Stage::Fragment);
        let light = s.add_struct(StructType {
            name: "Light".into(),
            members: vec![
                Member::new("pos", Type::Vector(Scalar::F32, 4)),
                Member {
                    name: "power".into(),
                    ty: Type::Scalar(Scalar::F32),
                    offset: Some(16),
                },
            ],
        });
        let mut var = Variable::new("light", Mode::Uniform, Type::Struct(light));
        var.binding = Some(0);
        let light = s.add_variable(var);
        let mut out = Variable::new("frag", Mode::ShaderOut, Type::Scalar(Scalar::F32));
        out.location = Some(0);
        let out = s.add_variable(out);
        let mut b = Builder::new(&mut s, FuncId(0));
        let d = b.deref_var(light);
        let m = b.deref_struct(d, 1);
        let x = b.load_deref(m);
        let two = b.imm_f32(2.0);
        let y = b.alu(AluOp::Fmul, &[x, two]);
        let cond = b.alu(AluOp::Flt, &[y, two]);
        let nif = b.push_if(cond);
        b.intrinsic(Intrinsic::Discard, &[], None, &[]);
        b.pop_if(nif);
        let o = b.deref_var(out);
        b.store_deref_all(o, y);
        b.ret(None);
        let expected = "\
shader fragment
struct Light { pos: f32x4, power: f32 offset 16 }
var uniform Light @light (binding=0)
var shader_out f32 @frag (location=0)

entry fn main() {
b0: selection merge=b2
    32 %0 = deref_var @light                        // uniform Light
    32 %1 = deref_struct %0.power                   // uniform f32
    32 %2 = load_deref %1
    32 %3 = load_const (2.0)
    32 %4 = fmul %2, %3
    1 %5 = flt %4, %3
    branch %5, b1, b2
    b1:
        discard
        jump b2
b2:
    32 %7 = deref_var @frag                         // shader_out f32
    store_deref %7, %4 (write_mask=x)
    return
}
";
        assert_eq!(print(&s), expected);
    }

    #[test]
    fn renames_clashing_and_invalid_names() {
        let mut s = Shader::new(Stage::Compute);
        s.add_struct(StructType {
            name: "f32x4".into(),
            members: vec![],
        });
        for name in ["a", "a", "a_1", "my var", ""] {
            s.add_variable(Variable::new(name, Mode::Shared, Type::Scalar(Scalar::U32)));
        }
        let entry = s.functions[0].entry;
        s.functions[0].set_exit(entry, Terminator::Unreachable);
        let text = print(&s);
        assert!(text.starts_with(
            "shader compute (workgroup_size=1,1,1)
struct f32x4_1 {}
var shared u32 @a
var shared u32 @a_1
var shared u32 @a_1_1
var shared u32 @my_var
var shared u32 @_
"
        ));
    }

    #[test]
    fn prints_broken_ir_without_panicking() {
        let mut s = Shader::new(Stage::Vertex);
        let f = &mut s.functions[0];
        let entry = f.entry;
        // A cyclic deref chain, a swizzle past the last component and an unset jump target.
        let a = f.alloc_inst(Inst {
            kind: InstKind::Deref(Deref::Array {
                parent: Value(1),
                index: Value(1),
            }),
            def: Some(ValType::DEREF),
            block: entry,
        });
        let b = f.alloc_inst(Inst {
            kind: InstKind::Deref(Deref::Struct {
                parent: a,
                member: 3,
            }),
            def: Some(ValType::DEREF),
            block: entry,
        });
        let c = f.alloc_inst(Inst {
            kind: InstKind::Alu(Alu {
                op: AluOp::Mov,
                srcs: vec![AluSrc::swizzled(b, &[40])],
                exact: false,
                fp: FpFlags::default(),
            }),
            def: Some(ValType::scalar(32)),
            block: entry,
        });
        f.block_mut(entry).insts = vec![a, b, c, Value(9)];
        f.block_mut(entry).terminator = Some(Terminator::Jump);
        assert_eq!(
            print_function(&s, FuncId(0)),
            "\
entry fn main() {
b0:
    32 %0 = deref_array %1[%1]
    32 %1 = deref_struct %0.3
    32 %2 = mov %1.?
    <deleted %9>
    jump b?
}
"
        );
    }
}
