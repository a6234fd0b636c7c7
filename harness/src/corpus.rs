//! A corpus of shader stages in the IR: every stage of the files under some paths (piglit
//! `.shader_test` files and GLSL sources through glslang, SPIR-V, WGSL and shrew's text), for
//! the tools that study many shaders at once (`shrew search`).

use rayon::prelude::*;
use shrew_engine::ir::{Shader, Stage};
use shrew_frontend::glsl::{Glslang, stage_for_extension};
use shrew_frontend::shader_test::{parse_sources, stage_sources};
use shrew_frontend::{LoadOptions, load_file, spirv};
use std::path::{Path, PathBuf};

/// Extensions of the files a corpus reads.
const EXTENSIONS: &[&str] = &[
    "shader_test",
    "vert",
    "frag",
    "comp",
    "geom",
    "tesc",
    "tese",
    "spv",
    "wgsl",
    "shrew",
];

/// One stage of a corpus file.
#[derive(Clone, Debug)]
pub struct CorpusStage {
    /// The file, and for a file of several stages `#` and the stage and its index
    /// (`test.shader_test#fragment1`).
    pub name: String,
    /// The stage in the IR, or why it could not be read.
    pub shader: Result<Shader, String>,
    /// The piglit test the stage comes from.
    pub piglit_test: Option<PathBuf>,
}

/// The files a corpus reads under `paths` (directories recursively), sorted.
pub fn files(paths: &[PathBuf]) -> Vec<PathBuf> {
    find_files(paths, |p| {
        p.extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| EXTENSIONS.contains(&e))
    })
}

/// Every stage of the corpus files under `paths`, in file order (read in parallel; GLSL through
/// glslangValidator when it is installed).
pub fn read(paths: &[PathBuf]) -> Vec<CorpusStage> {
    let glslang = Glslang::find().ok();
    files(paths)
        .par_iter()
        .flat_map_iter(|path| stages(path, glslang.as_ref()))
        .collect()
}

/// Every file under the paths that `matches` accepts (and the paths named directly), sorted.
pub fn find_files(paths: &[PathBuf], matches: impl Fn(&Path) -> bool) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack: Vec<PathBuf> = paths.to_vec();
    while let Some(p) = stack.pop() {
        if p.is_dir() {
            if let Ok(entries) = std::fs::read_dir(&p) {
                stack.extend(entries.flatten().map(|e| e.path()));
            }
        } else if matches(&p) || paths.contains(&p) {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// Every stage of the file at `path`; GLSL needs `glslang`.
pub fn stages(path: &Path, glslang: Option<&Glslang>) -> Vec<CorpusStage> {
    let name = path.display().to_string();
    let one = |shader| {
        vec![CorpusStage {
            name: name.clone(),
            shader,
            piglit_test: None,
        }]
    };
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    let read = || {
        std::fs::read(path)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .map_err(|e| format!("cannot read: {e}"))
    };
    if ext == "shader_test" {
        let text = match read() {
            Ok(text) => text,
            Err(e) => return one(Err(e)),
        };
        let mut test = match parse_sources(&text) {
            Ok((sources, _)) => sources,
            Err(e) => return one(Err(format!("cannot parse: {e}"))),
        };
        if let Some(dir) = path.parent()
            && test.load_shader_files(dir).is_err()
        {
            return one(Err("a shader file is missing".into()));
        }
        return match stage_sources(&test) {
            Ok(sources) => sources
                .into_iter()
                .enumerate()
                .map(|(i, source)| CorpusStage {
                    name: format!("{name}#{}{i}", source.stage.name()),
                    shader: glsl(glslang, &source.source, source.stage),
                    piglit_test: Some(path.to_path_buf()),
                })
                .collect(),
            Err(e) => one(Err(e.to_string())),
        };
    }
    if let Some(stage) = stage_for_extension(ext) {
        return one(read().and_then(|source| glsl(glslang, &source, stage)));
    }
    one(load_file(path, &LoadOptions::default()).map_err(|e| e.to_string()))
}

fn glsl(glslang: Option<&Glslang>, source: &str, stage: Stage) -> Result<Shader, String> {
    let glslang =
        glslang.ok_or("glslangValidator is not installed (apt-get install glslang-tools)")?;
    let compiled = glslang
        .compile_cascade(source, stage)
        .map_err(|e| e.to_string())?;
    spirv::translate(&compiled.words, &spirv::Options::default()).map_err(|e| e.to_string())
}
