//! Printer of the `.shrew` text format (being written).
use crate::ir::{FuncId, Shader};

pub fn print(_shader: &Shader) -> String {
    String::new()
}

pub fn print_function(_shader: &Shader, _func: FuncId) -> String {
    String::new()
}
