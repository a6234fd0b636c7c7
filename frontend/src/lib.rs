//! Front ends into the shrew IR: SPIR-V (rspirv), GLSL through glslangValidator, WGSL through naga. They arrive with the front-end issue; `.shrew` text is parsed by the engine.
