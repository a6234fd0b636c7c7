//! `copy-prop`: copy propagation.
//!
//! What: a copy is a `mov`, or a `vecN` whose components all come from one value. Its ALU
//! users read the copied value directly, with the copy's swizzle composed into theirs
//! (`fadd (mov %a.zyx), %b` reads `%a.zyx`). Other users — intrinsics, texture instructions,
//! phis, calls, terminators — cannot take a swizzle, so they are redirected only when the copy
//! is the identity (all components, in order). An ALU source that reads a `vecN` of several
//! values through a swizzle picking components of one value only reads that value
//! (`fadd (vec2 %a.x, %b.y).y, 1.0` reads `%b.y`). Instructions are visited in reverse
//! post-order, so a chain of copies collapses in one run.
//!
//! Why: front ends build vectors component by component and move values around; every copy is
//! an instruction a backend would otherwise emit, and it hides patterns from the algebraic
//! rules.
//!
//! Invariants: a redirected source reads the same bits as before (a copy keeps the bit size);
//! the copies themselves stay for `dce`. Forwarding one copy to its users is one
//! transformation.
//!
//! Options: none.

use super::insts_in_reverse_post_order;
use super::manager::{Pass, PassContext};
use crate::ir::{Function, InstKind, Shader, Value};
use crate::uses::{User, Uses};

/// The `copy-prop` pass.
pub struct CopyProp;

impl Pass for CopyProp {
    fn name(&self) -> &str {
        "copy-prop"
    }

    fn description(&self) -> &str {
        "makes the users of a copy (mov, or vecN of one value) read the copied value"
    }

    fn run(&self, shader: &mut Shader, context: &mut PassContext) -> Result<bool, String> {
        Ok(context
            .budget
            .each_function(shader, |shader, f, transformations| {
                let func = &mut shader.functions[f];
                let uses = Uses::build(func);
                transformations.each(insts_in_reverse_post_order(func), |copy| {
                    let changed = match as_copy(func, copy) {
                        Some((source, map)) => forward(func, &uses, copy, source, &map),
                        None => read_vec_parts(func, copy),
                    };
                    changed.then_some(move || format!("{copy}"))
                });
            }))
    }
}

/// The value a copy reads and, for each of its components, the component of that value.
fn as_copy(func: &Function, v: Value) -> Option<(Value, Vec<u8>)> {
    let inst = func.get_inst(v)?;
    let (InstKind::Alu(alu), Some(def)) = (&inst.kind, inst.def) else {
        return None;
    };
    let src = alu.as_copy()?;
    Some((src.value, src.swizzle[..def.comps as usize].to_vec()))
}

/// Makes each source of the ALU instruction `v` that reads components of a `vecN` all taken
/// from one value read that value instead; returns whether any source changed.
fn read_vec_parts(func: &mut Function, v: Value) -> bool {
    let Some(inst) = func.get_inst(v) else {
        return false;
    };
    let (InstKind::Alu(alu), Some(def)) = (&inst.kind, inst.def) else {
        return false;
    };
    let mut redirected = Vec::new();
    for (i, src) in alu.srcs.iter().enumerate() {
        let Some(InstKind::Alu(vec)) = func.get_inst(src.value).map(|s| &s.kind) else {
            continue;
        };
        if !vec.op.is_vec() {
            continue;
        }
        let read = &src.swizzle[..alu.src_components(i, def) as usize];
        let part = |c: &u8| vec.srcs[*c as usize];
        let value = part(&read[0]).value;
        if read.iter().all(|c| part(c).value == value) {
            let mut swizzle = [0; 16];
            for (k, c) in read.iter().enumerate() {
                swizzle[k] = part(c).swizzle[0];
            }
            // Components past those read are never read: repeat the last one.
            let last = swizzle[read.len() - 1];
            swizzle[read.len()..].fill(last);
            redirected.push((i, value, swizzle));
        }
    }
    let InstKind::Alu(alu) = &mut func.inst_mut(v).kind else {
        unreachable!("an ALU instruction")
    };
    for &(i, value, swizzle) in &redirected {
        alu.srcs[i].value = value;
        alu.srcs[i].swizzle = swizzle;
    }
    !redirected.is_empty()
}

/// Redirects the users of `copy` to `source`; returns whether any changed.
fn forward(func: &mut Function, uses: &Uses, copy: Value, source: Value, map: &[u8]) -> bool {
    let source_comps = func.value_type(source).map_or(0, |t| t.comps as usize);
    let identity =
        map.len() == source_comps && map.iter().enumerate().all(|(i, &c)| c as usize == i);
    let mut changed = false;
    for &user in uses.users(copy) {
        match user {
            User::Inst(u) => match &mut func.inst_mut(u).kind {
                InstKind::Alu(alu) => {
                    for src in alu.srcs.iter_mut().filter(|s| s.value == copy) {
                        src.value = source;
                        for c in src.swizzle.iter_mut() {
                            // Components past the copy's are never read: any in-range value.
                            *c = map.get(*c as usize).copied().unwrap_or(map[0]);
                        }
                        changed = true;
                    }
                }
                kind if identity => kind.for_each_src_mut(|s| {
                    if *s == copy {
                        *s = source;
                        changed = true;
                    }
                }),
                _ => {}
            },
            User::Terminator(b) if identity => {
                if let Some(term) = func.cfg[b].terminator.as_mut()
                    && let Some(s) = term.src_mut()
                    && *s == copy
                {
                    *s = source;
                    changed = true;
                }
            }
            User::Terminator(_) => {}
        }
    }
    changed
}
