//! Where the components of a shader's inputs and outputs are: their slot and the component in
//! it, as `lower-io` placed them. The backends' draw stages feed and read the emulators with
//! these: a draw's inputs by variable name become the emulators' inputs by slot.

use shrew_engine::interp::memory::{Layout, LayoutRule, layout_variables};
use shrew_engine::ir::{Mode, Shader};
use std::collections::BTreeMap;

/// Bytes of an input or output slot.
const SLOT_BYTES: u32 = 16;

/// Where each dword of a variable is, by variable name.
pub type Places<S> = Vec<(String, Vec<Dword<S>>)>;

/// One dword of a variable: its slot (or VUE slot, if any) and the component in it, and the
/// bits of the variable's values it holds: all of a 32-bit component's, or a half of a 64-bit
/// one's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dword<S> {
    pub slot: S,
    pub comp: usize,
    /// The component of the variable's value (its leaves one after another).
    pub value: usize,
    /// Whether the dword is the high half of a 64-bit component.
    pub high: bool,
}

impl<S> Dword<S> {
    /// The dword's bits in a value of the variable (zero past its end).
    pub fn of(&self, value: &[u64]) -> u32 {
        value
            .get(self.value)
            .map_or(0, |&bits| (bits >> (32 * self.high as u32)) as u32)
    }
}

/// A variable's value from its dwords, each read by `read`.
pub fn gather<S>(dwords: &[Dword<S>], read: impl Fn(&Dword<S>) -> u32) -> Vec<u64> {
    let mut value = vec![0u64; dwords.iter().map(|d| d.value + 1).max().unwrap_or(0)];
    for d in dwords {
        value[d.value] |= (read(d) as u64) << (32 * d.high as u32);
    }
    value
}

/// Each variable of `mode`'s dwords: their slot and component in the slot, by variable name
/// (built-ins left out).
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
        for (value, leaf) in leaves.into_iter().enumerate() {
            if leaf.bytes != 4 && leaf.bytes != 8 {
                return Err(format!("@{}: not 32- or 64-bit components", var.name));
            }
            for half in 0..leaf.bytes / 4 {
                let offset = leaf.offset + 4 * half;
                components.push(Dword {
                    slot: offset / SLOT_BYTES,
                    comp: (offset % SLOT_BYTES / 4) as usize,
                    value,
                    high: half == 1,
                });
            }
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
        for d in components {
            let at = inputs.entry(d.slot).or_default();
            for (vertex, values) in values.iter().enumerate() {
                at[vertex][d.comp] = d.of(values);
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
            for d in components.iter().filter(|d| d.value < value.len()) {
                let attribute = attributes.entry(d.slot).or_default();
                if attribute.len() <= v {
                    attribute.resize(v + 1, [0; 4]);
                }
                attribute[v][d.comp] = d.of(value);
            }
        }
    }
    attributes
}
