//! Where the components of a shader's inputs and outputs are: their slot and the component in
//! it, as `lower-io` placed them. The backends' draw stages feed and read the emulators with
//! these: a draw's inputs by variable name become the emulators' inputs by slot.

use shrew_engine::interp::memory::{Layout, LayoutRule, layout_variables};
use shrew_engine::ir::{Mode, Shader};
use std::collections::BTreeMap;

/// Bytes of an input or output slot.
const SLOT_BYTES: u32 = 16;

/// Where each 32-bit component of a variable is, by variable name: a slot (or VUE slot, if
/// any) and the component in it.
pub type Places<S> = Vec<(String, Vec<(S, usize)>)>;

/// Each variable of `mode`'s 32-bit components: their slot and component in the slot, by
/// variable name (built-ins left out).
pub fn components(shader: &Shader, mode: Mode) -> Result<Places<u32>, String> {
    let placement = layout_variables(shader).map_err(|e| e.to_string())?;
    let layout = Layout::new(shader, LayoutRule::Slots);
    let mut out = Vec::new();
    for (var, place) in shader.variables.iter().zip(&placement) {
        if var.mode != mode || var.builtin.is_some() {
            continue;
        }
        let mut leaves = Vec::new();
        layout
            .leaves(&var.ty, place.offset, 0, &mut leaves)
            .map_err(|e| format!("@{}: {e}", var.name))?;
        let mut components = Vec::new();
        for leaf in leaves {
            if leaf.bytes != 4 {
                return Err(format!("@{}: not 32-bit components", var.name));
            }
            components.push((
                leaf.offset / SLOT_BYTES,
                (leaf.offset % SLOT_BYTES / 4) as usize,
            ));
        }
        out.push((var.name.clone(), components));
    }
    Ok(out)
}

/// A triangle's varyings (each component at the three vertices, by variable name) in the slots
/// `places` gives: each slot's four components at the three vertices, zero where no input is.
pub fn fragment_inputs(
    places: &Places<u32>,
    varyings: &BTreeMap<String, [Vec<u64>; 3]>,
) -> BTreeMap<u32, [[u32; 4]; 3]> {
    let mut inputs: BTreeMap<u32, [[u32; 4]; 3]> = BTreeMap::new();
    for (name, components) in places {
        let Some(values) = varyings.get(name) else {
            continue;
        };
        for (k, &(slot, comp)) in components.iter().enumerate() {
            let at = inputs.entry(slot).or_default();
            for (vertex, values) in values.iter().enumerate() {
                at[vertex][comp] = values.get(k).map_or(0, |&bits| bits as u32);
            }
        }
    }
    inputs
}

/// Vertex inputs by variable name (one value for all vertices, or one each) in the slots
/// `places` gives: each slot's four components, for all vertices or for each.
pub fn vertex_attributes(
    places: &Places<u32>,
    inputs: &BTreeMap<String, Vec<Vec<u64>>>,
) -> BTreeMap<u32, Vec<[u32; 4]>> {
    let mut attributes: BTreeMap<u32, Vec<[u32; 4]>> = BTreeMap::new();
    for (name, components) in places {
        let Some(values) = inputs.get(name) else {
            continue;
        };
        for (v, value) in values.iter().enumerate() {
            for (&(slot, comp), &bits) in components.iter().zip(value) {
                let attribute = attributes.entry(slot).or_default();
                if attribute.len() <= v {
                    attribute.resize(v + 1, [0; 4]);
                }
                attribute[v][comp] = bits as u32;
            }
        }
    }
    attributes
}
