//! Where the components of a shader's inputs and outputs are: their slot and the component in
//! it, as `lower-io` placed them. The backends' piglit stages feed and read the emulators with
//! these.

use shrew_engine::interp::memory::{Layout, LayoutRule, layout_variables};
use shrew_engine::ir::{Mode, Shader};

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
