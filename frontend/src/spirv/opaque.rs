//! Textures, samplers and images inside structs of uniforms, moved into variables of their own.
//!
//! GLSL lets a uniform struct hold opaque members (`struct S { sampler2D tex; float a; };
//! uniform S s[2];`), which glslang leaves inside the struct (of a uniform variable, or of the
//! default uniform block). The IR gives each opaque variable a binding per element, which a
//! member of a struct cannot have; so every opaque member reached through a struct becomes a
//! variable, an array over every array on its path: `s[i].tex` reads `@s_tex[i]`, and
//! `s[i][j].tex[k]` reads `@s_tex[i][j][k]`. The new variables take bindings after all the
//! others. A default uniform block's member names the variable (`s`), not the block, as GL's
//! uniform names do, so that the piglit runner finds `s_tex` for the uniform `s[1].tex`.

use shrew_engine::ir::{
    Deref, Function, InstKind, Mode, Shader, Type, ValType, Value, VarId, Variable, inst_sources,
};
use std::collections::HashMap;

/// The name GL gives a default uniform block, which glslang keeps.
const DEFAULT_BLOCK: &str = "gl_DefaultUniformBlock";

/// Moves every opaque member of a struct of a uniform variable into a variable of its own and
/// points its users there.
pub(crate) fn opaque_members_as_variables(shader: &mut Shader) {
    let mut next_binding = shader
        .variables
        .iter()
        .filter(|v| v.ty.is_opaque_deep())
        .map(|v| v.binding.unwrap_or(0) + v.ty.innermost_element().1)
        .max()
        .unwrap_or(0);
    let mut split: HashMap<(VarId, Vec<u32>), VarId> = HashMap::new();
    for f in 0..shader.functions.len() {
        let users: Vec<Value> = shader.functions[f].all_insts().collect();
        for user in users {
            for src in inst_sources(&shader.functions[f].inst(user).kind) {
                let Some(member) = opaque_member(shader, &shader.functions[f], src) else {
                    continue;
                };
                let key = (member.var, member.members.clone());
                let var = match split.get(&key) {
                    Some(&var) => var,
                    None => {
                        let var = member.declare(shader, next_binding);
                        next_binding += member.ty.innermost_element().1;
                        split.insert(key, var);
                        var
                    }
                };
                let func = &mut shader.functions[f];
                let mut d = func.insert_before(
                    user,
                    InstKind::Deref(Deref::Var(var)),
                    Some(ValType::DEREF),
                );
                for &index in &member.indices {
                    let step = InstKind::Deref(Deref::Array { parent: d, index });
                    d = func.insert_before(user, step, Some(ValType::DEREF));
                }
                func.inst_mut(user).kind.for_each_src_mut(|s| {
                    if *s == src {
                        *s = d;
                    }
                });
            }
        }
    }
}

/// An opaque value reached through struct members of a uniform variable.
struct OpaqueMember {
    var: VarId,
    /// The struct members on the path, outermost first, and their names.
    members: Vec<u32>,
    name: String,
    /// The array indices on the path, outermost first.
    indices: Vec<Value>,
    /// The type of its variable: the arrays on the path around the opaque type.
    ty: Type,
}

impl OpaqueMember {
    /// Adds its variable, its elements' bindings from `binding` on.
    fn declare(&self, shader: &mut Shader, binding: u32) -> VarId {
        let mut name = self.name.clone();
        let mut suffix = 1;
        while shader.find_variable(&name).is_some() {
            name = format!("{}_{suffix}", self.name);
            suffix += 1;
        }
        let mut var = Variable::new(name, Mode::Uniform, self.ty.clone());
        var.binding = Some(binding);
        shader.add_variable(var)
    }
}

/// What `deref` reaches when it is an opaque value inside a struct of a uniform variable.
fn opaque_member(shader: &Shader, func: &Function, deref: Value) -> Option<OpaqueMember> {
    enum Step {
        Member(u32),
        Index(Value),
    }
    let mut steps = Vec::new();
    let mut at = deref;
    let var = loop {
        match &func.inst(at).kind {
            InstKind::Deref(Deref::Var(var)) => break *var,
            InstKind::Deref(Deref::Array { parent, index }) => {
                steps.push(Step::Index(*index));
                at = *parent;
            }
            InstKind::Deref(Deref::Struct { parent, member }) => {
                steps.push(Step::Member(*member));
                at = *parent;
            }
            _ => return None,
        }
    };
    let variable = &shader.variables[var.0 as usize];
    if variable.mode != Mode::Uniform {
        return None;
    }
    let mut names = Vec::new();
    if !variable.name.starts_with(DEFAULT_BLOCK) {
        names.push(variable.name.clone());
    }
    let (mut members, mut indices, mut lengths) = (Vec::new(), Vec::new(), Vec::new());
    let mut ty = &variable.ty;
    for step in steps.into_iter().rev() {
        match step {
            Step::Member(m) => {
                let Type::Struct(id) = ty else {
                    return None;
                };
                let member = shader.struct_type(*id).members.get(m as usize)?;
                members.push(m);
                names.push(member.name.clone());
                ty = &member.ty;
            }
            Step::Index(index) => {
                let Type::Array { elem, len, .. } = ty else {
                    return None;
                };
                indices.push(index);
                lengths.push(*len);
                ty = elem;
            }
        }
    }
    if members.is_empty() || !ty.is_opaque() {
        return None;
    }
    let ty = lengths
        .iter()
        .rev()
        .fold(ty.clone(), |elem, &len| Type::Array {
            elem: Box::new(elem),
            len,
            stride: 0,
        });
    Some(OpaqueMember {
        var,
        members,
        name: names.join("_"),
        indices,
        ty,
    })
}
