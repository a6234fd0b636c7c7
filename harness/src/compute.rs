//! Compute tests: a `.shader_test` whose program is one compute shader, dispatched by its
//! `compute X Y Z` commands.
//!
//! What: the commands are the uniforms, textures (`texture rgbw ...`, `texparameter`),
//! `image texture UNIT` (the texture on unit `UNIT` is image unit `UNIT` too, which image
//! uniforms name), `compute`, and probes: of the window framebuffer (`clear` fills it) until
//! `fb tex 2d UNIT` makes the texture on that unit (its first level) the framebuffer. Images
//! are the textures' texels, raw: a dispatch reads and writes them in place, so a probe after
//! it sees what the shader stored (quantized to 8 bits as every probe is).
//!
//! Why: piglit's compute tests, the generated built-in function tests among them (thousands of
//! `cs-*` files that store each result's colour to an image), need no draw at all; they run
//! on the interpreter or on a target's compute stage ([`DrawStages::compile_compute`]).

use crate::commands::{Command, TextureImage};
use crate::parse::ShaderTest;
use crate::run::{
    ExecFailure, StageState, buffer_command, check_probe, layout_units, quantize, target_pixels,
};
use crate::textures::{self, TextureUnits};
use shrew_engine::draw::{ComputeDispatch, ComputeKernel};
use shrew_engine::interp::SamplerState;
use std::collections::BTreeSet;

/// Whether the test's commands are ones a compute test here runs.
pub(crate) fn executable(test: &ShaderTest) -> Result<(), String> {
    for c in &test.commands {
        match &c.command {
            Command::Uniform { .. }
            | Command::ClearColor(_)
            | Command::Clear
            | Command::Tolerance(_)
            | Command::Compute(_)
            | Command::UboArrayIndex(_)
            | Command::ImageTexture { .. }
            | Command::AtomicCounters { .. }
            | Command::SetAtomicCounter { .. }
            | Command::Ssbo { .. }
            | Command::SsboSubdata { .. }
            // A test that probes nothing passes when its commands run.
            | Command::Probe(_)
            | Command::ProbeAtomicCounter { .. }
            | Command::ProbeSsbo { .. } => {}
            Command::Other(text) if text == "link success" || text == "link error" => {}
            Command::Other(text) if text.starts_with("memory barrier") => {}
            Command::Framebuffer(target) if fb_texture(target).is_some() => {}
            Command::Texture { image, .. } if !matches!(image, TextureImage::Shadow { .. }) => {
                textures::make(image)?;
            }
            Command::TexParameter { name, value, .. } => {
                textures::set_parameter(&mut SamplerState::default(), name, value)?;
            }
            other => return Err(format!("uses `{}`", other.name())),
        }
    }
    Ok(())
}

/// The texture unit of `fb tex 2d UNIT`.
pub(crate) fn fb_texture(target: &str) -> Option<u32> {
    target.strip_prefix("tex 2d ")?.trim().parse().ok()
}

/// A compute test being run.
pub(crate) struct ComputeRun {
    cs: StageState,
    kernel: Box<dyn ComputeKernel>,
    textures: TextureUnits,
    /// The texture units that are image units too.
    image_units: BTreeSet<u32>,
    /// The window framebuffer, and the texture unit probes read instead once `fb tex` says so.
    window: Vec<[u8; 4]>,
    size: (u32, u32),
    fb_unit: Option<u32>,
    clear_color: [f32; 4],
    tolerance: [f32; 4],
}

impl ComputeRun {
    pub(crate) fn new(
        test: &ShaderTest,
        mut cs: StageState,
        kernel: Box<dyn ComputeKernel>,
        size: (u32, u32),
    ) -> ComputeRun {
        for (name, unit) in layout_units(test) {
            cs.first_unit(&name, unit);
        }
        ComputeRun {
            cs,
            kernel,
            textures: TextureUnits::default(),
            image_units: BTreeSet::new(),
            window: vec![[0; 4]; (size.0 * size.1) as usize],
            size,
            fb_unit: None,
            clear_color: [0.0; 4],
            tolerance: [3.0 / 256.0; 4],
        }
    }

    pub(crate) fn execute(&mut self, test: &ShaderTest) -> Result<(), ExecFailure> {
        for c in &test.commands {
            let at = |e: String| format!("line {}: {e}", c.line);
            if self.textures.apply(&c.command).map_err(at)? {
                continue;
            }
            if let Some(probed) = buffer_command(&mut [&mut self.cs], &c.command) {
                probed.map_err(|e| ExecFailure {
                    message: at(e),
                    mismatch: true,
                })?;
                continue;
            }
            match &c.command {
                Command::Uniform {
                    glsl_type,
                    name,
                    values,
                } => {
                    self.cs.set_uniform(glsl_type, name, values).map_err(at)?;
                }
                Command::UboArrayIndex(index) => self.cs.ubo_array_index = *index,
                Command::ClearColor(c) => self.clear_color = *c,
                Command::Clear => self.clear(),
                Command::Tolerance(t) => self.tolerance = *t,
                Command::ImageTexture { unit } => {
                    self.image_units.insert(*unit);
                }
                Command::Framebuffer(target) => self.fb_unit = fb_texture(target),
                Command::Compute(workgroups) => self.dispatch(*workgroups).map_err(at)?,
                Command::Probe(p) => {
                    let (pixels, width, height) = self.framebuffer().map_err(at)?;
                    check_probe(p, &pixels, width, height, self.tolerance).map_err(|e| {
                        ExecFailure {
                            message: at(e),
                            mismatch: true,
                        }
                    })?;
                }
                Command::Other(text)
                    if text == "link success" || text.starts_with("memory barrier") => {}
                other => {
                    return Err(at(format!("unsupported command `{}`", other.name())).into());
                }
            }
        }
        Ok(())
    }

    /// `clear`: the framebuffer, the window or the `fb tex` texture (its 8-bit RGBA texels,
    /// which hold the colour quantized), filled with the clear colour.
    fn clear(&mut self) {
        let color = self.clear_color.map(quantize);
        let texture = self
            .fb_unit
            .and_then(|unit| self.textures.units.get_mut(&unit));
        match texture.and_then(|(texture, _)| texture.levels.first_mut()) {
            Some(level) => {
                let texel = color.map(|c| (f32::from(c) / 255.0).to_bits());
                level.texels.fill(texel);
            }
            None => self.window.fill(color),
        }
    }

    /// What probes read: the window, or the first level of the `fb tex` texture.
    fn framebuffer(&self) -> Result<(Vec<[u8; 4]>, u32, u32), String> {
        match self.fb_unit {
            Some(unit) => target_pixels(&self.textures, unit),
            None => Ok((self.window.clone(), self.size.0, self.size.1)),
        }
    }

    /// One `compute` command: the images bound from their units' textures, the dispatch, and
    /// the images' texels back into the textures.
    fn dispatch(&mut self, workgroups: [u32; 3]) -> Result<(), String> {
        self.cs.bind_textures(&self.textures.units);
        let bindings = self.cs.bind_images(&self.textures.units, &self.image_units);
        let mut dispatch = ComputeDispatch {
            workgroups,
            resources: std::mem::take(&mut self.cs.resources),
        };
        let result = self.kernel.dispatch(&mut dispatch);
        self.cs.resources = dispatch.resources;
        self.cs.unbind_images(&bindings, &mut self.textures.units);
        result.map_err(|e| format!("compute shader: {e}"))
    }
}
