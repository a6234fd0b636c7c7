//! Parser of the `.shrew` text format (being written).
use crate::ir::Shader;

#[derive(Debug, thiserror::Error)]
#[error("{file}:{line}:{col}: {message}")]
pub struct ParseError {
    pub file: String,
    pub line: usize,
    pub col: usize,
    pub message: String,
}

pub fn parse(_src: &str, file: &str) -> Result<Shader, ParseError> {
    Err(ParseError {
        file: file.to_string(),
        line: 1,
        col: 1,
        message: "parser not written yet".into(),
    })
}
