//! Reporting: a [`Counterexample`] built from the failing input and printed with each value
//! in hex and as the number it encodes, so that a failing rule's test says why at a glance.

use super::{Counterexample, InputValue, Plan};
use shrew_ops::MAX_COMPONENTS;
use shrew_ops::eval::{fget, mask};
use std::fmt;

/// `0x…` with as many digits as the size needs, and the float it encodes.
fn format_value(raw: u64, bits: u8, float: bool) -> String {
    let digits = (bits as usize).div_ceil(4).max(1);
    let hex = format!("0x{:0digits$x}", mask(raw, bits));
    if float && bits >= 16 {
        format!("{hex} ({})", float_text(raw, bits))
    } else if bits > 1 {
        format!("{hex} ({})", shrew_ops::eval::sext(raw, bits))
    } else {
        hex
    }
}

fn float_text(raw: u64, bits: u8) -> String {
    match bits {
        // Every half is exact as an f32, whose shortest representation is short enough.
        16 | 32 => format!("{:?}", fget(raw, bits) as f32),
        _ => format!("{:?}", fget(raw, bits)),
    }
}

fn format_vector(values: &[u64], bits: u8, float: bool) -> String {
    let parts: Vec<String> = values
        .iter()
        .map(|&v| format_value(v, bits, float))
        .collect();
    if parts.len() == 1 {
        parts.into_iter().next().unwrap_or_default()
    } else {
        format!("({})", parts.join(", "))
    }
}

impl fmt::Display for Counterexample {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "rule `{}` ({}) does not hold", self.text, self.location)?;
        if self.sizes.is_empty() {
            writeln!(f, "  bit sizes: all fixed")?;
        } else {
            let classes: Vec<String> = self
                .sizes
                .iter()
                .enumerate()
                .map(|(c, bits)| format!("class {c} = {bits}"))
                .collect();
            writeln!(f, "  bit sizes: {}", classes.join(", "))?;
        }
        for input in &self.inputs {
            let ty = if input.float { "float" } else { "int" };
            writeln!(
                f,
                "  {} ({}-bit {ty}) = {}",
                input.name,
                input.bits,
                format_vector(&input.value, input.bits, input.float)
            )?;
        }
        writeln!(
            f,
            "  search      = {}",
            format_vector(&self.search, self.result_bits, self.result_float)
        )?;
        writeln!(
            f,
            "  replacement = {}",
            format_vector(&self.replace, self.result_bits, self.result_float)
        )?;
        write!(f, "  {}", self.reason)
    }
}

impl Plan<'_> {
    pub(super) fn counterexample(
        &self,
        inputs: &[[u64; MAX_COMPONENTS]],
        reason: String,
    ) -> Counterexample {
        let n = self.root_comps as usize;
        let bits = self.search.root().bits;
        Counterexample {
            text: self.rule.text,
            location: self.rule.location(),
            sizes: self.sizes.clone(),
            inputs: self
                .vars
                .iter()
                .zip(inputs)
                .map(|(v, x)| InputValue {
                    name: v.name,
                    bits: v.bits,
                    float: v.float,
                    value: x[..v.comps as usize].to_vec(),
                })
                .collect(),
            result_bits: bits,
            result_float: self.float_root,
            search: self.sv[self.sv.len() - 1][..n]
                .iter()
                .map(|&v| mask(v, bits))
                .collect(),
            replace: self.rv[self.rv.len() - 1][..n]
                .iter()
                .map(|&v| mask(v, bits))
                .collect(),
            reason,
        }
    }
}
