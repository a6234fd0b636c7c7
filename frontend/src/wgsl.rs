//! WGSL → SPIR-V through naga: naga's WGSL front end and validator, then its SPIR-V writer.
//! The SPIR-V then takes the same path as any other module ([`crate::spirv`]).

/// Why a WGSL source could not be turned into SPIR-V.
#[derive(Debug, thiserror::Error)]
pub enum WgslError {
    /// The source does not parse; the message is naga's, with the source lines it points at.
    #[error("{0}")]
    Parse(String),
    #[error("WGSL validation failed: {0}")]
    Validation(String),
    #[error("the module has no entry point{}", .0.as_ref().map(|n| format!(" named {n}")).unwrap_or_default())]
    NoEntryPoint(Option<String>),
    #[error("naga's SPIR-V writer failed: {0}")]
    Write(String),
}

/// SPIR-V for one entry point of a WGSL module (the first when `entry` is `None`), and that
/// entry point's name.
pub fn to_spirv(
    source: &str,
    path: &str,
    entry: Option<&str>,
) -> Result<(Vec<u32>, String), WgslError> {
    let module = naga::front::wgsl::parse_str(source)
        .map_err(|e| WgslError::Parse(e.emit_to_string_with_path(source, path)))?;
    let info = naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::all(),
    )
    .validate(&module)
    .map_err(|e| WgslError::Validation(e.emit_to_string(source)))?;
    let ep = module
        .entry_points
        .iter()
        .find(|ep| entry.is_none_or(|name| ep.name == name))
        .ok_or_else(|| WgslError::NoEntryPoint(entry.map(str::to_string)))?;
    let pipeline = naga::back::spv::PipelineOptions {
        shader_stage: ep.stage,
        entry_point: ep.name.clone(),
    };
    let words = naga::back::spv::write_vec(
        &module,
        &info,
        &naga::back::spv::Options::default(),
        Some(&pipeline),
    )
    .map_err(|e| WgslError::Write(e.to_string()))?;
    Ok((words, ep.name.clone()))
}
