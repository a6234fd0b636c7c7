//! `lower-texture-indices`: a texture instruction whose texture is an element of an array at a
//! run-time index becomes one instruction per element, reading it at constant indices, and a
//! select of the result the index names.
//!
//! What: the texture deref of each such instruction is a chain of array steps from a variable
//! (`s[i][j]`). The chain's indices, flattened into one element number (`i·n1 + j` for
//! `s[n0][n1]`), choose among copies of the instruction, one per element of the arrays indexed
//! (steps with constant indices stay as they are): `bcsel(ieq(k, 1), t1, bcsel(ieq(k, 2), t2,
//! ..., t0))`. An index out of range selects element 0.
//!
//! Why: neither backend reads a texture at a run-time index (Gen's sampler messages and R600's
//! fetch instructions name their texture unit in the instruction). The copies run in
//! straight-line code, where branches would not: implicit derivatives and helper invocations
//! stay the triangle's, however divergent the index.
//!
//! Invariants: with every index in range, the result is the original instruction's. Chains
//! through struct members and instructions with a separate sampler deref are left alone (the
//! backend reports them). Each lowered instruction is one transformation.
//!
//! Options: the target's `lower_texture_indices` (off: the pass changes nothing).

use super::lower_each;
use super::manager::{Pass, PassContext};
use crate::ir::{
    Builder, Cursor, Deref, FuncId, Function, InstKind, Shader, TexSrc, Type, Value, VarId,
};
use crate::ops::AluOp;

/// The `lower-texture-indices` pass.
pub struct LowerTextureIndices {
    /// Whether the target asks for it
    /// ([`crate::rewrite::TargetOptions::lower_texture_indices`]).
    pub enabled: bool,
}

impl Pass for LowerTextureIndices {
    fn name(&self) -> &str {
        "lower-texture-indices"
    }

    fn lowers(&self) -> bool {
        true
    }

    fn description(&self) -> &str {
        "turns textures read at run-time array indices into one read per element and a select"
    }

    fn run(&self, shader: &mut Shader, context: &mut PassContext) -> Result<bool, String> {
        if !self.enabled {
            return Ok(false);
        }
        Ok(lower_each(
            shader,
            context,
            |function, inst| match &inst.kind {
                InstKind::Tex(tex) => {
                    tex.src(TexSrc::SamplerDeref).is_none()
                        && tex
                            .src(TexSrc::TextureDeref)
                            .and_then(|d| chain(function, d))
                            .is_some_and(|(_, indices)| {
                                indices.iter().any(|&i| function.constant_u32(i).is_none())
                            })
                }
                _ => false,
            },
            lower,
        ))
    }
}

/// The variable of `deref` and its array steps' indices, outermost first, when it is array
/// steps from a variable.
fn chain(function: &Function, mut deref: Value) -> Option<(VarId, Vec<Value>)> {
    let mut indices = Vec::new();
    let var = loop {
        match &function.inst(deref).kind {
            InstKind::Deref(Deref::Var(var)) => break *var,
            InstKind::Deref(Deref::Array { parent, index }) => {
                indices.push(*index);
                deref = *parent;
            }
            _ => return None,
        }
    };
    indices.reverse();
    Some((var, indices))
}

fn lower(shader: &mut Shader, func: FuncId, v: Value) {
    let function = &shader.functions[func.0 as usize];
    let inst = function.inst(v);
    let (block, def) = (inst.block, inst.def.expect("a texture result"));
    let InstKind::Tex(tex) = inst.kind.clone() else {
        unreachable!("only texture instructions are lowered")
    };
    let deref = tex.src(TexSrc::TextureDeref).expect("a texture deref");
    let (var, indices) = chain(function, deref).expect("checked by the pass");
    // Each step's index, its value if constant (such steps stay as they are, the others are
    // enumerated) and the length of the array it indexes, from the variable's type inwards.
    let mut steps: Vec<(Value, Option<u32>, u32)> = Vec::new();
    let mut ty = &shader.variables[var.0 as usize].ty;
    for index in indices {
        let Type::Array { elem, len, .. } = ty else {
            return;
        };
        steps.push((index, function.constant_u32(index), *len));
        ty = elem;
    }
    let count = steps
        .iter()
        .filter(|&&(_, constant, _)| constant.is_none())
        .fold(1u32, |n, &(_, _, len)| n.saturating_mul(len));
    let pos = function.cfg[block].insts.iter().position(|&i| i == v);
    let first_new = function.next_value();
    let mut b = Builder::new(shader, func);
    b.cursor = Cursor { block, pos };
    // The element number of the run-time steps, row-major.
    let mut element = b.imm_u32(0);
    for &(index, constant, len) in &steps {
        if constant.is_none() {
            let scale = b.imm_u32(len);
            let scaled = b.alu(AluOp::Imul, &[element, scale]);
            element = b.alu(AluOp::Iadd, &[scaled, index]);
        }
    }
    let mut result = None;
    for e in (0..count).rev() {
        // Element `e`'s indices, the last run-time step varying fastest: each run-time step's
        // index is what is left of `e` past the steps inside it.
        let mut inner = 1;
        let mut indices = Vec::with_capacity(steps.len());
        for &(index, constant, len) in steps.iter().rev() {
            indices.push(match constant {
                Some(_) => index,
                None => {
                    let i = e / inner % len;
                    inner = inner.saturating_mul(len);
                    b.imm_u32(i)
                }
            });
        }
        let mut d = b.deref_var(var);
        for &index in indices.iter().rev() {
            d = b.deref_array(d, index);
        }
        let mut copy = tex.clone();
        for (kind, src) in &mut copy.srcs {
            if *kind == TexSrc::TextureDeref {
                *src = d;
            }
        }
        let texel = b.tex(copy, def);
        result = Some(match result {
            None => texel,
            Some(others) => {
                let at = b.imm_u32(e);
                let chosen = b.alu(AluOp::Ieq, &[element, at]);
                b.alu(AluOp::Bcsel, &[chosen, texel, others])
            }
        });
    }
    // Verified IR sizes every array of textures (only SSBOs end in runtime-sized arrays).
    let result = result.expect("arrays of textures have elements");
    shader.functions[func.0 as usize].replace_inst(v, result, first_new);
}

#[cfg(test)]
mod tests {
    use super::LowerTextureIndices;
    use crate::interp::{Launch, Resources, SamplerState, Texture, run};
    use crate::passes::manager::{Pass, PassContext};
    use crate::text;

    /// Four textures of one texel each, indexed by an input: every index gives its own texel,
    /// through the selects.
    const SHADER: &str = "shader fragment
var uniform texture(2d, float)[2][2] @s (binding=0)
var shader_in i32 @i (location=0, interp=flat)
var shader_in i32 @j (location=1, interp=flat)
var shader_out f32x4 @color (location=0)

entry fn main() {
b0:
    32 %0 = deref_var @i
    32 %1 = load_deref %0
    32 %2 = deref_var @j
    32 %3 = load_deref %2
    32 %4 = deref_var @s
    32 %5 = deref_array %4[%1]
    32 %6 = deref_array %5[%3]
    32x2 %7 = load_const (0.5, 0.5)
    32x4 %8 = tex 2d %6 (texture_deref), %7 (coord)
    32 %9 = deref_var @color
    store_deref %9, %8 (write_mask=xyzw)
    return
}
";

    fn colors(shader: &crate::ir::Shader) -> Vec<u64> {
        let mut launch = Launch::invocations(4);
        launch
            .inputs
            .insert("i".into(), vec![vec![0], vec![0], vec![1], vec![1]]);
        launch
            .inputs
            .insert("j".into(), vec![vec![0], vec![1], vec![0], vec![1]]);
        let mut resources = Resources::default();
        for unit in 0..4u32 {
            let value = (unit as f32 + 1.0) / 8.0;
            let texel = [value, 0.0, 0.0, 1.0];
            resources
                .textures
                .insert(unit, Texture::from_f32(1, 1, 1, &[texel]));
            resources.samplers.insert(unit, SamplerState::default());
        }
        let result = run(shader, &launch, &mut resources).unwrap();
        result
            .invocations()
            .map(|inv| inv.output("color").unwrap()[0])
            .collect()
    }

    #[test]
    fn every_index_reads_its_own_texture() {
        let original = text::parse(SHADER, "t").unwrap();
        let mut lowered = original.clone();
        let pass = LowerTextureIndices { enabled: true };
        assert!(pass.run(&mut lowered, &mut PassContext::default()).unwrap());
        crate::verify::verify(&lowered).unwrap();
        let printed = text::print(&lowered);
        assert_eq!(printed.matches(" = tex ").count(), 4, "{printed}");
        let want: Vec<u64> = (1..=4).map(|k| (k as f32 / 8.0).to_bits() as u64).collect();
        assert_eq!(colors(&original), want);
        assert_eq!(colors(&lowered), want);
    }

    #[test]
    fn constant_indices_and_a_disabled_pass_change_nothing() {
        let mut shader = text::parse(SHADER, "t").unwrap();
        let pass = LowerTextureIndices { enabled: false };
        assert!(!pass.run(&mut shader, &mut PassContext::default()).unwrap());
        let constant = SHADER
            .replace(
                "    32 %1 = load_deref %0\n",
                "    32 %1 = load_const (1)\n",
            )
            .replace(
                "    32 %3 = load_deref %2\n",
                "    32 %3 = load_const (0)\n",
            );
        let mut shader = text::parse(&constant, "t").unwrap();
        let pass = LowerTextureIndices { enabled: true };
        assert!(!pass.run(&mut shader, &mut PassContext::default()).unwrap());
    }
}
