//! A shader's IR as a fixed-length vector of counts: instructions by class, control flow and
//! memory, for the tools that learn or search over shaders and need them as numbers (the
//! observation of a pass-ordering environment). The same shader always gives the same vector,
//! and [`NAMES`] names its entries in order.

use crate::ir::{InstKind, Mode, Shader, Structure};
use shrew_ops::BaseType;
use shrew_ops::alu::ConvFamily;

/// The names of [`features`]' entries, in order.
pub const NAMES: &[&str] = &[
    "functions",
    "blocks",
    "selections",
    "loops",
    "instructions",
    "components",
    "constants",
    "undefs",
    "phis",
    "float_alu",
    "integer_alu",
    "bitwise",
    "comparisons",
    "conversions",
    "transcendentals",
    "vector_builds",
    "selects",
    "derivatives",
    "derefs",
    "loads",
    "stores",
    "atomics",
    "barriers",
    "discards",
    "other_intrinsics",
    "textures",
    "calls",
    "variables",
    "temporaries",
];

/// The shader's features, one count per entry of [`NAMES`].
pub fn features(shader: &Shader) -> Vec<u64> {
    let mut counts = vec![0u64; NAMES.len()];
    let mut add = |name: &str, n: u64| {
        let at = NAMES.iter().position(|&n| n == name).expect("a feature");
        counts[at] += n;
    };
    add("functions", shader.functions.len() as u64);
    add("variables", shader.variables.len() as u64);
    add(
        "temporaries",
        shader
            .variables
            .iter()
            .filter(|v| matches!(v.mode, Mode::FunctionTemp | Mode::ShaderTemp))
            .count() as u64,
    );
    for function in &shader.functions {
        for b in function.blocks() {
            add("blocks", 1);
            match function.cfg[b].structure {
                Some(Structure::Selection { .. }) => add("selections", 1),
                Some(Structure::Loop { .. }) => add("loops", 1),
                None => {}
            }
        }
        for v in function.all_insts() {
            let inst = function.inst(v);
            add("instructions", 1);
            add("components", inst.def.map_or(0, |t| t.comps as u64));
            add(class(&inst.kind), 1);
        }
    }
    counts
}

/// The feature an instruction counts in.
fn class(kind: &InstKind) -> &'static str {
    match kind {
        InstKind::Alu(alu) => alu_class(alu.op),
        InstKind::Const(_) => "constants",
        InstKind::Undef => "undefs",
        InstKind::Phi(_) => "phis",
        InstKind::Tex(_) => "textures",
        InstKind::Deref(_) => "derefs",
        InstKind::Call { .. } => "calls",
        InstKind::Intrinsic(i) => {
            let name = i.op.name();
            if name.contains("atomic") {
                "atomics"
            } else if name.contains("barrier") {
                "barriers"
            } else if name.contains("discard") || name.contains("demote") {
                "discards"
            } else if name.starts_with("load_") {
                "loads"
            } else if name.starts_with("store_") {
                "stores"
            } else {
                "other_intrinsics"
            }
        }
    }
}

fn alu_class(op: shrew_ops::alu::AluOp) -> &'static str {
    const TRANSCENDENTALS: &[&str] = &[
        "fsin", "fcos", "ftan", "fexp2", "flog2", "fpow", "fsqrt", "frsq", "frcp", "fatan",
        "fatan2", "fasin", "facos", "fsinh", "fcosh", "ftanh", "fasinh", "facosh", "fatanh",
    ];
    const BITWISE: &[&str] = &[
        "iand", "ior", "ixor", "inot", "ishl", "ishr", "ushr", "urol", "uror",
    ];
    let name = op.name();
    let info = op.info();
    if ConvFamily::ALL.iter().any(|f| f.members().contains(&op)) {
        "conversions"
    } else if op.is_vec() || name == "mov" {
        "vector_builds"
    } else if name.ends_with("csel") {
        "selects"
    } else if name.starts_with("fdd") {
        "derivatives"
    } else if TRANSCENDENTALS.contains(&name) {
        "transcendentals"
    } else if BITWISE.contains(&name) || name.starts_with("bit") || name.contains("find_") {
        "bitwise"
    } else if info.dst.base == BaseType::Bool && info.srcs.iter().any(|s| s.base != BaseType::Bool)
    {
        "comparisons"
    } else if info.dst.base == BaseType::Float {
        "float_alu"
    } else {
        "integer_alu"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shader_is_counted_by_class() {
        let shader = crate::text::parse(
            "shader fragment
var shader_in f32 @v (location=0)
var shader_out f32 @color (location=0)

entry fn main() {
b0:
    32 %0 = deref_var @v
    32 %1 = load_deref %0
    32 %2 = fsin %1
    32 %3 = fadd %2, %1
    1 %4 = flt %3, %1
    32 %5 = bcsel %4, %3, %2
    32 %6 = deref_var @color
    store_deref %6, %5 (write_mask=x)
    return
}
",
            "features",
        )
        .unwrap();
        let counts = features(&shader);
        assert_eq!(counts.len(), NAMES.len());
        let of = |name| counts[NAMES.iter().position(|&n| n == name).unwrap()];
        assert_eq!(of("instructions"), 8);
        assert_eq!(of("derefs"), 2);
        assert_eq!(of("loads"), 1);
        assert_eq!(of("stores"), 1);
        assert_eq!(of("transcendentals"), 1);
        assert_eq!(of("float_alu"), 1);
        assert_eq!(of("comparisons"), 1);
        assert_eq!(of("selects"), 1);
        assert_eq!(of("blocks"), 1);
        assert_eq!(of("variables"), 2);
    }
}
