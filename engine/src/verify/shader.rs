//! Shader-level checks: the entry point, names, types, variables and the call graph.

use super::{ErrorKind, VerifyError};
use crate::ir::{BlockId, FuncId, Mode, Scalar, Shader, Stage, StructId, Type, Value};
use petgraph::algo::kosaraju_scc;
use petgraph::graph::DiGraph;
use rustc_hash::FxHashSet;
use shrew_ops::{BaseType, is_valid_component_count};

/// A call instruction, recorded while checking functions for the recursion check.
pub(super) struct CallSite {
    pub caller: FuncId,
    pub block: BlockId,
    pub inst: Value,
    pub callee: FuncId,
}

fn error(kind: ErrorKind, message: String) -> VerifyError {
    VerifyError {
        kind,
        func: String::new(),
        block: None,
        inst: None,
        opcode: None,
        message,
    }
}

/// Everything declared outside functions.
pub(super) fn check_declarations(shader: &Shader) -> Vec<VerifyError> {
    let mut errors = Vec::new();
    check_entry(shader, &mut errors);
    check_unique(
        "variable @",
        shader.variables.iter().map(|v| v.name.as_str()),
        &mut errors,
    );
    check_unique(
        "struct ",
        shader.structs.iter().map(|s| s.name.as_str()),
        &mut errors,
    );
    check_unique(
        "function ",
        shader.functions.iter().map(|f| f.name.as_str()),
        &mut errors,
    );
    check_workgroup_size(shader, &mut errors);
    check_structs(shader, &mut errors);
    check_variables(shader, &mut errors);
    errors
}

/// Every component is at least 1, and only compute shaders have a size other than 1,1,1.
fn check_workgroup_size(shader: &Shader, errors: &mut Vec<VerifyError>) {
    let [x, y, z] = shader.workgroup_size;
    if shader.workgroup_size.contains(&0) {
        errors.push(error(
            ErrorKind::WorkgroupSize,
            format!("workgroup size {x},{y},{z} has a zero component"),
        ));
    }
    if shader.stage != Stage::Compute && shader.workgroup_size != [1, 1, 1] {
        errors.push(error(
            ErrorKind::WorkgroupSize,
            format!(
                "a {} shader has workgroup size {x},{y},{z}; only compute shaders have one \
                 other than 1,1,1",
                shader.stage.name()
            ),
        ));
    }
}

fn check_entry(shader: &Shader, errors: &mut Vec<VerifyError>) {
    let Some(entry) = shader.functions.get(shader.entry.0 as usize) else {
        errors.push(error(
            ErrorKind::UnknownFunction,
            format!(
                "entry function #{} does not exist (the shader has {})",
                shader.entry.0,
                shader.functions.len()
            ),
        ));
        return;
    };
    if !entry.params.is_empty() || entry.ret.is_some() {
        errors.push(error(
            ErrorKind::EntrySignature,
            format!(
                "entry function {} must take no parameters and return nothing",
                entry.name
            ),
        ));
    }
}

fn check_unique<'a>(
    what: &str,
    names: impl Iterator<Item = &'a str>,
    errors: &mut Vec<VerifyError>,
) {
    let mut seen = FxHashSet::default();
    for name in names {
        if !seen.insert(name) {
            errors.push(error(
                ErrorKind::DuplicateName,
                format!("{what}{name} is declared twice"),
            ));
        }
    }
}

fn check_structs(shader: &Shader, errors: &mut Vec<VerifyError>) {
    for s in &shader.structs {
        let mut seen = FxHashSet::default();
        for (i, m) in s.members.iter().enumerate() {
            if !seen.insert(m.name.as_str()) {
                errors.push(error(
                    ErrorKind::DuplicateMember,
                    format!("struct {} has two members named {}", s.name, m.name),
                ));
            }
            let what = format!("member {} of struct {}", m.name, s.name);
            check_type(shader, &m.ty, &what, errors);
            // A runtime-sized array may end the struct; the struct is then unsized itself,
            // which the places that use it check.
            match &m.ty {
                Type::Array { elem, len: 0, .. } if i + 1 == s.members.len() => {
                    check_sized(shader, elem, &what, errors);
                }
                ty => check_sized(shader, ty, &what, errors),
            }
        }
    }
    // A struct that contains itself (through members and arrays) has no finite size: it lies on
    // a cycle of the containment graph. Kosaraju's algorithm is linear and iterative, so long
    // chains of structs cost neither quadratic time nor deep recursion.
    let n = shader.structs.len();
    let mut graph = DiGraph::<(), ()>::with_capacity(n, n);
    let nodes: Vec<_> = (0..n).map(|_| graph.add_node(())).collect();
    for (i, &node) in nodes.iter().enumerate() {
        for id in struct_members_of(shader, StructId(i as u32)) {
            graph.add_edge(node, nodes[id.0 as usize], ());
        }
    }
    let mut cyclic: Vec<usize> = kosaraju_scc(&graph)
        .into_iter()
        .filter(|scc| scc.len() > 1 || graph.contains_edge(scc[0], scc[0]))
        .flatten()
        .map(|node| node.index())
        .collect();
    cyclic.sort_unstable();
    for i in cyclic {
        errors.push(error(
            ErrorKind::InvalidStruct,
            format!("struct {} contains itself", shader.structs[i].name),
        ));
    }
}

/// The struct types a struct's members are or hold arrays of (existing ones only).
fn struct_members_of(shader: &Shader, id: StructId) -> Vec<StructId> {
    let Some(s) = shader.structs.get(id.0 as usize) else {
        return Vec::new();
    };
    s.members
        .iter()
        .filter_map(|m| {
            let mut ty = &m.ty;
            while let Type::Array { elem, .. } = ty {
                ty = elem;
            }
            match ty {
                Type::Struct(id) if (id.0 as usize) < shader.structs.len() => Some(*id),
                _ => None,
            }
        })
        .collect()
}

/// Whether a struct ends in a runtime-sized array (and so may only be the type of `ssbo`
/// variables).
fn is_unsized_struct(shader: &Shader, id: StructId) -> bool {
    shader
        .structs
        .get(id.0 as usize)
        .and_then(|s| s.members.last())
        .is_some_and(|m| matches!(m.ty, Type::Array { len: 0, .. }))
}

/// Reports runtime-sized arrays and unsized structs in a type (the type itself or the elements
/// of its arrays) that must have a size; `what` names the declaration it belongs to. Struct
/// members are checked with their struct.
fn check_sized(shader: &Shader, ty: &Type, what: &str, errors: &mut Vec<VerifyError>) {
    let mut ty = ty;
    loop {
        match ty {
            Type::Array { elem, len, .. } => {
                if *len == 0 {
                    errors.push(error(
                        ErrorKind::RuntimeArray,
                        format!(
                            "{what}: the runtime-sized array {} may only be the type of an ssbo \
                             variable or the last member of its struct",
                            shader.type_name(ty)
                        ),
                    ));
                    return;
                }
                ty = elem;
            }
            Type::Struct(id) if is_unsized_struct(shader, *id) => {
                errors.push(error(
                    ErrorKind::RuntimeArray,
                    format!(
                        "{what}: struct {} ends in a runtime-sized array, so it may only be the \
                         type of an ssbo variable",
                        shader.type_name(ty)
                    ),
                ));
                return;
            }
            _ => return,
        }
    }
}

fn scalar_ok(s: Scalar) -> bool {
    s.base.allowed_bit_sizes().contains(&s.bits)
}

/// Reports what is malformed in a type; `what` names the declaration it belongs to.
fn check_type(shader: &Shader, ty: &Type, what: &str, errors: &mut Vec<VerifyError>) {
    let mut bad = |message: String| errors.push(error(ErrorKind::InvalidType, message));
    match ty {
        Type::Scalar(s) => {
            if !scalar_ok(*s) {
                bad(format!(
                    "{what}: a {} scalar cannot have {} bits",
                    s.base.name(),
                    s.bits
                ));
            }
        }
        Type::Vector(s, n) => {
            if !scalar_ok(*s) || *n < 2 || !is_valid_component_count(*n as usize) {
                bad(format!(
                    "{what}: no vector of {n} {}-bit {} components",
                    s.bits,
                    s.base.name()
                ));
            }
        }
        Type::Matrix { elem, cols, rows } => {
            if elem.base != BaseType::Float
                || !scalar_ok(*elem)
                || !(2..=4).contains(cols)
                || !(2..=4).contains(rows)
            {
                bad(format!(
                    "{what}: no {cols}x{rows} matrix of {}-bit {}",
                    elem.bits,
                    elem.base.name()
                ));
            }
        }
        Type::Array { elem, .. } => check_type(shader, elem, what, errors),
        Type::Struct(id) => {
            if shader.structs.get(id.0 as usize).is_none() {
                errors.push(error(
                    ErrorKind::InvalidStruct,
                    format!("{what}: struct #{} does not exist", id.0),
                ));
            }
        }
        Type::Image { base, .. } | Type::Texture { base, .. } => {
            if *base == BaseType::Bool {
                bad(format!("{what}: images and textures cannot hold booleans"));
            }
        }
        Type::Sampler { .. } => {}
    }
}

/// What is wrong with a `constant` variable's initializer: a count of values other than the
/// type's scalars, or a value wider than its scalar.
fn initializer_problem(shader: &Shader, ty: &Type, init: &[u64]) -> Option<String> {
    let scalars = crate::interp::memory::try_flatten_type(shader, ty).ok()?;
    if scalars.len() != init.len() {
        return Some(format!(
            "{} scalars, but the initializer gives {} values",
            scalars.len(),
            init.len()
        ));
    }
    let (i, s) =
        (scalars.iter().enumerate()).find(|&(i, s)| s.bits < 64 && init[i] >> s.bits != 0)?;
    Some(format!(
        "initializer value {i} does not fit its {}-bit scalar",
        s.bits
    ))
}

fn check_variables(shader: &Shader, errors: &mut Vec<VerifyError>) {
    for var in &shader.variables {
        let what = format!("variable @{}", var.name);
        check_type(shader, &var.ty, &what, errors);
        // Each block of an array of blocks is checked as a buffer variable of its own.
        let sized_array = matches!(var.ty, Type::Array { len, .. } if len > 0);
        if var.array_of_blocks && !(sized_array && matches!(var.mode, Mode::Ubo | Mode::Ssbo)) {
            errors.push(error(
                ErrorKind::ArrayOfBlocks,
                format!(
                    "{what}: an array of blocks must be an ubo or ssbo variable of a sized array \
                     type"
                ),
            ));
        }
        if var.atomic_counters && var.mode != Mode::Ssbo {
            errors.push(error(
                ErrorKind::AtomicCounters,
                format!("{what}: atomic counters live in an ssbo variable"),
            ));
        }
        match (&var.init, var.mode) {
            (None, Mode::Constant) => errors.push(error(
                ErrorKind::Initializer,
                format!("{what}: a constant variable needs an initializer"),
            )),
            (Some(_), mode) if mode != Mode::Constant => errors.push(error(
                ErrorKind::Initializer,
                format!(
                    "{what}: only constant variables have an initializer, not {}",
                    mode.name()
                ),
            )),
            (Some(init), _) => {
                if let Some(problem) = initializer_problem(shader, &var.ty, init) {
                    errors.push(error(ErrorKind::Initializer, format!("{what}: {problem}")));
                }
            }
            (None, _) => {}
        }
        // An ssbo variable may be a runtime-sized array or a struct ending in one.
        match var.buffer_type() {
            Type::Array { elem, len: 0, .. } if var.mode == Mode::Ssbo => {
                check_sized(shader, elem, &what, errors);
            }
            Type::Struct(_) if var.mode == Mode::Ssbo => {}
            ty => check_sized(shader, ty, &what, errors),
        }
        let bindable = matches!(var.mode, Mode::Uniform | Mode::Ubo | Mode::Ssbo);
        if (var.binding.is_some() || var.desc_set.is_some()) && !bindable {
            errors.push(error(
                ErrorKind::MisplacedBinding,
                format!(
                    "{what}: a {} variable has no binding or descriptor set",
                    var.mode.name()
                ),
            ));
        }
        if var.location.is_some() && !matches!(var.mode, Mode::ShaderIn | Mode::ShaderOut) {
            errors.push(error(
                ErrorKind::MisplacedLocation,
                format!("{what}: a {} variable has no location", var.mode.name()),
            ));
        }
        if var.mode == Mode::Shared && shader.stage != Stage::Compute {
            errors.push(error(
                ErrorKind::StageMismatch,
                format!(
                    "{what}: shared variables exist only in compute shaders, not {}",
                    shader.stage.name()
                ),
            ));
        }
    }
}

/// Reports every call that lies on a cycle of the call graph.
pub(super) fn check_recursion(shader: &Shader, calls: &[CallSite]) -> Vec<VerifyError> {
    let n = shader.functions.len();
    let mut graph = DiGraph::<(), ()>::with_capacity(n, calls.len());
    let nodes: Vec<_> = (0..n).map(|_| graph.add_node(())).collect();
    for call in calls {
        if let (Some(&a), Some(&b)) = (
            nodes.get(call.caller.0 as usize),
            nodes.get(call.callee.0 as usize),
        ) {
            graph.add_edge(a, b, ());
        }
    }
    let mut component = vec![usize::MAX; n];
    let mut cyclic = vec![false; n];
    for (i, scc) in kosaraju_scc(&graph).into_iter().enumerate() {
        for node in &scc {
            component[node.index()] = i;
        }
        if scc.len() > 1 {
            cyclic[i] = true;
        }
    }
    let name = |f: FuncId| shader.functions.get(f.0 as usize).map(|f| f.name.as_str());
    calls
        .iter()
        .filter_map(|call| {
            let (caller, callee) = (call.caller.0 as usize, call.callee.0 as usize);
            let callee_name = name(call.callee)?;
            let same = component.get(caller)? == component.get(callee)?;
            (same && (caller == callee || cyclic[component[caller]])).then(|| VerifyError {
                kind: ErrorKind::Recursion,
                func: name(call.caller).unwrap_or_default().to_string(),
                block: Some(call.block),
                inst: Some(call.inst),
                opcode: Some("call".into()),
                message: format!("call to {callee_name} is recursive"),
            })
        })
        .collect()
}
