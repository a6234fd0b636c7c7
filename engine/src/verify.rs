//! The IR verifier (being written).
use crate::ir::Shader;

#[derive(Debug)]
pub struct VerifyError {
    pub message: String,
}

pub fn verify(_shader: &Shader) -> Result<(), Vec<VerifyError>> {
    Ok(())
}
