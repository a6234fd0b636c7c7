//! Provenance: which pass, and which rule of it, made each instruction of an optimized shader.
//!
//! Recording is off unless a run asks for it ([`crate::passes::manager::RunOptions::provenance`]),
//! so an ordinary compile pays nothing. When it is on, the pass manager takes a [`Snapshot`] of
//! every function before each pass and, after it, tags each instruction the pass made or whose
//! operation it changed with the pass's name; redirecting an instruction's sources, or moving
//! it to another block, keeps its tag. A rule set's pass tags what a rule's replacement built
//! with the rule itself (its text and `file:line`) as it fires, and the manager keeps tags a
//! pass set. Instructions that no pass made (the front end's) have no tag. Backends carry the
//! tag of each IR instruction to the machine instructions they lower it to.

use crate::ir::{Function, InstKind, Shader, ValType, Value};
use std::fmt;
use std::sync::Arc;

/// What made an instruction.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Origin {
    pub pass: String,
    /// The rule whose firing built it: its text and `file:line`.
    pub rule: Option<String>,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match &self.rule {
            Some(rule) => write!(f, "{}: {rule}", self.pass),
            None => write!(f, "{}", self.pass),
        }
    }
}

/// The tags of one function's instructions, by value.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Provenance {
    origins: Vec<Option<Arc<Origin>>>,
}

impl Provenance {
    pub fn origin(&self, v: Value) -> Option<&Arc<Origin>> {
        self.origins.get(v.index())?.as_ref()
    }

    pub fn tag(&mut self, v: Value, origin: Arc<Origin>) {
        if self.origins.len() <= v.index() {
            self.origins.resize(v.index() + 1, None);
        }
        self.origins[v.index()] = Some(origin);
    }
}

/// Starts recording in every function of the shader (keeping what is recorded already).
pub fn record(shader: &mut Shader) {
    for func in &mut shader.functions {
        func.provenance.get_or_insert_with(Provenance::default);
    }
}

/// What an instruction computes, without the values it reads (nor their swizzles): a change of
/// sources alone is not a new instruction.
fn operation(kind: &InstKind, def: Option<ValType>) -> (InstKind, Option<ValType>) {
    let mut kind = kind.clone();
    kind.for_each_src_mut(|v| *v = Value(u32::MAX));
    if let InstKind::Alu(alu) = &mut kind {
        alu.srcs.iter_mut().for_each(|src| src.swizzle = [0; 16]);
    }
    (kind, def)
}

/// Every function's instructions (their operations) and tags before a pass.
pub struct Snapshot {
    functions: Vec<FunctionSnapshot>,
}

struct FunctionSnapshot {
    name: String,
    operations: Vec<Option<(InstKind, Option<ValType>)>>,
    provenance: Provenance,
}

impl Snapshot {
    pub fn take(shader: &Shader) -> Snapshot {
        let functions = shader
            .functions
            .iter()
            .map(|func| FunctionSnapshot {
                name: func.name.clone(),
                operations: func
                    .insts
                    .iter()
                    .map(|inst| inst.as_ref().map(|i| operation(&i.kind, i.def)))
                    .collect(),
                provenance: func.provenance.clone().unwrap_or_default(),
            })
            .collect();
        Snapshot { functions }
    }

    /// Tags with `pass` what it made or changed since the snapshot, except what it tagged
    /// itself.
    pub fn tag_changes(&self, shader: &mut Shader, pass: &str) {
        let origin = Arc::new(Origin {
            pass: pass.to_string(),
            rule: None,
        });
        for func in &mut shader.functions {
            let before = self.functions.iter().find(|f| f.name == func.name);
            tag_function(func, before, &origin);
        }
    }
}

fn tag_function(func: &mut Function, before: Option<&FunctionSnapshot>, origin: &Arc<Origin>) {
    let mut provenance = func.provenance.take().unwrap_or_default();
    for v in func.all_insts() {
        let inst = func.inst(v);
        let old = before.and_then(|b| Some((b.operations.get(v.index())?.as_ref()?, b)));
        let changed = match old {
            Some((operation_before, _)) => *operation_before != operation(&inst.kind, inst.def),
            None => true,
        };
        let tagged_by_the_pass = match old {
            Some((_, b)) => provenance.origin(v) != b.provenance.origin(v),
            None => provenance.origin(v).is_some(),
        };
        if changed && !tagged_by_the_pass {
            provenance.tag(v, origin.clone());
        }
    }
    func.provenance = Some(provenance);
}

/// The tag of `v` in `func`, if recorded.
pub fn origin(func: &Function, v: Value) -> Option<&Arc<Origin>> {
    func.provenance.as_ref()?.origin(v)
}

#[cfg(test)]
mod tests {
    use crate::passes::manager::{Pipeline, Registry, RunOptions, run};
    use crate::rewrite::TargetOptions;

    const SHADER: &str = "shader fragment
var shader_in f32x2 @uv (location=0)
var shader_out f32x4 @color (location=0)

entry fn main() {
b0:
    32 %0 = deref_var @uv
    32x2 %1 = load_deref %0
    32 %2 = load_const (2.0)
    32 %3 = load_const (3.0)
    32 %4 = fadd %2, %3
    32 %5 = mov %1.x
    32 %6 = fmul %5, %4
    32x4 %7 = vec4 %6, %6, %6, %6
    32 %8 = deref_var @color
    store_deref %8, %7 (write_mask=xyzw)
    return
}
";

    fn optimized(provenance: bool) -> String {
        let registry = Registry::new(crate::passes::standard(&TargetOptions::default()), "none");
        let pipeline = Pipeline::parse("constant-fold,copy-prop,dce", &registry).unwrap();
        let mut shader = crate::text::parse(SHADER, "provenance").unwrap();
        let options = RunOptions {
            provenance,
            ..RunOptions::default()
        };
        run(&pipeline, &registry, &mut shader, &options).unwrap();
        crate::text::print(&shader)
    }

    /// The folded constant is constant-fold's; the multiplication, whose sources copy-prop and
    /// constant-fold redirected, and the front end's instructions have no tag; a run that does
    /// not record provenance prints none.
    #[test]
    fn each_instruction_is_tagged_with_the_pass_that_made_it() {
        let text = optimized(true);
        let line = |needle: &str| {
            text.lines()
                .find(|l| l.contains(needle))
                .unwrap_or_else(|| panic!("no `{needle}` in\n{text}"))
        };
        assert!(
            line("load_const (5.0)").ends_with("// from constant-fold"),
            "{text}"
        );
        assert!(!line("= fmul").contains("from"), "{text}");
        assert!(!line("= load_deref").contains("from"), "{text}");
        assert!(!optimized(false).contains("from"));
    }
}
