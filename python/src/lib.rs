//! `shrew._shrew`: the compiler in a Python process. Shaders load from every input the CLI
//! reads, run through pipelines with the pass manager's statistics, compile through the target
//! interface to kernels (statistics under shader-db's names, listing, binary), run on the
//! interpreter and against the emulators, and give their feature vectors; searches run in
//! process. Errors are `shrew.ShrewError` with the located message the CLI prints. The GIL is
//! released while compiling, running and searching. The Python package (`python/shrew`) wraps
//! this module; its docstrings and stubs are the API's reference.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use shrew_engine::ir::Stage;
use shrew_engine::passes::manager::RunReport;
use shrew_frontend::LoadOptions;
use shrew_frontend::glsl::stage_for_extension;
use shrew_harness::differential::{self, Run};
use shrew_harness::execute;
use shrew_harness::search as searching;
use shrew_targets::{Pipeline, Target};
use std::path::PathBuf;
use std::sync::Mutex;

create_exception!(
    _shrew,
    ShrewError,
    PyException,
    "What shrew refused: a bad input, pipeline or target, a backend limit, or a kernel that \
     disagrees with the interpreter; the message is the CLI's, with its location."
);

fn error(e: impl ToString) -> PyErr {
    ShrewError::new_err(e.to_string())
}

fn target(name: &str) -> PyResult<&'static Target> {
    shrew_targets::lookup(name).map_err(error)
}

fn stage(name: Option<&str>) -> PyResult<Option<Stage>> {
    name.map(|n| {
        stage_for_extension(n).ok_or_else(|| {
            let names: Vec<&str> = Stage::ALL
                .map(shrew_frontend::glsl::glslang_stage_name)
                .to_vec();
            error(format!("stage {n}: expected one of {}", names.join(", ")))
        })
    })
    .transpose()
}

/// A JSON value as Python objects (dicts, lists, numbers, strings).
fn json_to_py(py: Python<'_>, value: &serde_json::Value) -> PyResult<Py<PyAny>> {
    let json = py.import("json")?;
    Ok(json.call_method1("loads", (value.to_string(),))?.unbind())
}

/// A shader in shrew's IR.
#[pyclass(frozen, module = "shrew")]
#[derive(Clone)]
struct Shader {
    inner: shrew_engine::ir::Shader,
}

#[pymethods]
impl Shader {
    /// The stage: vert, frag, comp, geom, tesc or tese.
    #[getter]
    fn stage(&self) -> &'static str {
        shrew_frontend::glsl::glslang_stage_name(self.inner.stage)
    }

    /// The IR as text (`shrew fmt`'s output).
    fn text(&self) -> String {
        shrew_engine::text::print(&self.inner)
    }

    fn __str__(&self) -> String {
        self.text()
    }

    fn __repr__(&self) -> String {
        format!(
            "<shrew.Shader {}: {} instructions>",
            self.stage(),
            self.instruction_count()
        )
    }

    /// Instructions in every function.
    fn instruction_count(&self) -> usize {
        self.inner
            .functions
            .iter()
            .map(|f| f.all_insts().count())
            .sum()
    }

    /// The feature vector: one count per name of `feature_names()`.
    fn features(&self) -> Vec<u64> {
        shrew_engine::features::features(&self.inner)
    }

    /// The shader after `pipeline` (for `target`'s rule options and rule sets), and the pass
    /// manager's statistics: per pass its runs, runs with progress, milliseconds and instruction
    /// delta; each rule that fired with its count; the transformations made.
    #[pyo3(signature = (pipeline = "default", target = "generic"))]
    fn optimize(
        &self,
        py: Python<'_>,
        pipeline: &str,
        target: &str,
    ) -> PyResult<(Shader, Py<PyAny>)> {
        let target = self::target(target)?;
        let parsed = Pipeline::parse(pipeline, target).map_err(error)?;
        let mut shader = self.inner.clone();
        let report = py.detach(|| parsed.run(&mut shader)).map_err(error)?;
        let stats = json_to_py(py, &run_report_json(&report))?;
        Ok((Shader { inner: shader }, stats))
    }

    /// The kernel a target's backend makes of the shader after `pipeline` (the mid-end; the
    /// target's backend pipeline always runs), at dispatch `width` where the backend has a
    /// choice: what `shrew compile` prints.
    #[pyo3(signature = (target, pipeline = "default", width = None))]
    fn compile(
        &self,
        py: Python<'_>,
        target: &str,
        pipeline: &str,
        width: Option<u8>,
    ) -> PyResult<Kernel> {
        let target = self::target(target)?;
        let kernel = py
            .detach(|| differential::compiled(&self.inner, pipeline, target, width))
            .map_err(error)?;
        Ok(Kernel {
            target: target.name,
            kernel: Mutex::new(kernel),
        })
    }

    /// Runs the shader on the reference interpreter: `inputs` and `uniforms` as `shrew run`
    /// takes them (`"NAME=VALUES"`), `resources` a JSON object of buffers, textures, samplers
    /// and images. Gives every invocation's outputs and the SSBOs' final contents.
    #[pyo3(signature = (inputs = Vec::new(), uniforms = Vec::new(), invocations = 1, workgroups = (1, 1, 1), resources = None))]
    fn run(
        &self,
        py: Python<'_>,
        inputs: Vec<String>,
        uniforms: Vec<String>,
        invocations: usize,
        workgroups: (u32, u32, u32),
        resources: Option<&str>,
    ) -> PyResult<Py<PyAny>> {
        let resources = match resources {
            Some(text) => {
                serde_json::from_str(text).map_err(|e| error(format!("resources: {e}")))?
            }
            None => Default::default(),
        };
        let request = execute::Request {
            invocations,
            workgroups: [workgroups.0, workgroups.1, workgroups.2],
            inputs,
            uniforms,
            resources,
        };
        let report = py
            .detach(|| execute::run(&self.inner, &request))
            .map_err(error)?;
        json_to_py(py, &serde_json::to_value(&report).map_err(error)?)
    }

    /// Compiles the shader after `pipeline` for `target` and runs the kernel on the target's
    /// emulator and the original on the interpreter with the same random inputs (`shrew compile
    /// --check`): gives what was compared, raises `ShrewError` where they differ.
    #[pyo3(signature = (target, pipeline = "default", width = None, tolerance = 1e-4, workgroups = (1, 1, 1)))]
    fn check(
        &self,
        py: Python<'_>,
        target: &str,
        pipeline: &str,
        width: Option<u8>,
        tolerance: f32,
        workgroups: (u32, u32, u32),
    ) -> PyResult<String> {
        let run = Run {
            target: self::target(target)?,
            width,
            mid_end: pipeline.to_string(),
            tolerance,
            workgroups: [workgroups.0, workgroups.1, workgroups.2],
        };
        let agreement = py
            .detach(|| differential::run_on_target(&self.inner, &run))
            .map_err(error)?;
        Ok(agreement.to_string())
    }
}

/// Per pass and per rule, what a run of a pipeline did.
fn run_report_json(report: &RunReport) -> serde_json::Value {
    let passes: serde_json::Map<String, serde_json::Value> = report
        .passes
        .iter()
        .map(|(name, s)| {
            let stats = serde_json::json!({
                "runs": s.runs,
                "progress": s.progress,
                "ms": s.time.as_secs_f64() * 1e3,
                "instruction_delta": s.instruction_delta,
            });
            (name.clone(), stats)
        })
        .collect();
    let rules: Vec<serde_json::Value> = shrew_targets::pipeline::rule_firings(report)
        .into_iter()
        .map(|r| {
            serde_json::json!({
                "set": r.set, "rule": r.text, "location": r.location, "count": r.count,
            })
        })
        .collect();
    serde_json::json!({
        "passes": passes,
        "rules": rules,
        "transformations": report.transformations,
    })
}

/// A target's kernel of a shader.
#[pyclass(frozen, module = "shrew")]
struct Kernel {
    target: &'static str,
    kernel: Mutex<Box<dyn shrew_targets::Kernel>>,
}

impl Kernel {
    fn with<T>(&self, f: impl FnOnce(&dyn shrew_targets::Kernel) -> T) -> T {
        f(self.kernel.lock().expect("kernel").as_ref())
    }
}

#[pymethods]
impl Kernel {
    /// The target's name.
    #[getter]
    fn target(&self) -> &'static str {
        self.target
    }

    /// The dispatch width (SIMD8/16/32 on Gen), or None where the backend has no choice.
    #[getter]
    fn width(&self) -> Option<u8> {
        self.with(|k| k.width())
    }

    /// shader-db's figures under its names, in its order.
    #[getter]
    fn statistics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let dict = PyDict::new(py);
        for (name, value) in self.with(|k| k.statistics()) {
            dict.set_item(name, value)?;
        }
        Ok(dict)
    }

    /// shader-db's statistics line, as the driver prints it.
    fn statistics_line(&self) -> String {
        self.with(|k| k.statistics_line())
    }

    /// The value of a search objective (`cycles`, `instructions+4*spills`) on the kernel's
    /// statistics.
    fn cost(&self, objective: &str) -> PyResult<f64> {
        let objective = searching::Objective::parse(objective).map_err(error)?;
        objective
            .cost(&self.with(|k| k.statistics()))
            .map_err(error)
    }

    /// The assembly, in the style of Mesa's disassembler for the target.
    fn listing(&self) -> PyResult<String> {
        self.with(|k| k.listing()).map_err(error)
    }

    /// The native binary (`shrew compile --binary`'s).
    fn binary<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = self.with(|k| k.binary()).map_err(error)?;
        Ok(PyBytes::new(py, &bytes))
    }

    fn __repr__(&self) -> String {
        format!("<shrew.Kernel {}: {}>", self.target, self.statistics_line())
    }
}

/// Reads a shader of any kind the CLI reads (IR text, SPIR-V, WGSL, GLSL, a piglit
/// `.shader_test`'s stage: its fragment shader or `stage`'s).
#[pyfunction]
#[pyo3(signature = (path, stage = None, entry_point = None))]
fn load(
    py: Python<'_>,
    path: PathBuf,
    stage: Option<&str>,
    entry_point: Option<String>,
) -> PyResult<Shader> {
    let options = LoadOptions {
        stage: self::stage(stage)?,
        entry_point,
    };
    let shader = py
        .detach(|| shrew_frontend::load_file(&path, &options))
        .map_err(error)?;
    Ok(Shader { inner: shader })
}

/// A shader from IR text (`name` locates its errors).
#[pyfunction]
#[pyo3(signature = (text, name = "<text>"))]
fn parse(text: &str, name: &str) -> PyResult<Shader> {
    let shader = shrew_frontend::load_text(text, name).map_err(error)?;
    Ok(Shader { inner: shader })
}

/// Every stage of the corpus files under `paths` (what `shrew corpus` and `shrew search` read):
/// `(stages, failures)`, stages as `(name, shader)`, failures as `(name, message)`.
#[pyfunction]
#[pyo3(signature = (paths, stage = None))]
#[allow(clippy::type_complexity)]
fn corpus(
    py: Python<'_>,
    paths: Vec<PathBuf>,
    stage: Option<&str>,
) -> PyResult<(Vec<(String, Shader)>, Vec<(String, String)>)> {
    let wanted = self::stage(stage)?;
    let stages = py.detach(|| shrew_harness::corpus::read(&paths));
    let (mut read, mut failed) = (Vec::new(), Vec::new());
    for s in stages {
        match s.shader {
            Ok(shader) if wanted.is_none_or(|w| w == shader.stage) => {
                read.push((s.name, Shader { inner: shader }))
            }
            Ok(_) => {}
            Err(e) => failed.push((s.name, e)),
        }
    }
    Ok((read, failed))
}

/// The passes a pipeline may name for `target`, with what each does.
#[pyfunction]
#[pyo3(signature = (target = "generic"))]
fn passes(target: &str) -> PyResult<Vec<(String, String)>> {
    let registry = self::target(target)?.registry();
    Ok(registry
        .passes()
        .map(|p| (p.name().to_string(), p.description().to_string()))
        .collect())
}

/// Every target: `(name, description, has_backend)`.
#[pyfunction]
fn targets() -> Vec<(&'static str, &'static str, bool)> {
    shrew_targets::all()
        .iter()
        .map(|t| (t.name, t.description, t.backend().is_ok()))
        .collect()
}

/// The default pipeline's text for `target`.
#[pyfunction]
#[pyo3(signature = (target = "generic"))]
fn default_pipeline(target: &str) -> PyResult<String> {
    Ok(self::target(target)?
        .registry()
        .default_pipeline()
        .to_string())
}

/// The names of `Shader.features()`' entries.
#[pyfunction]
fn feature_names() -> Vec<&'static str> {
    shrew_engine::features::NAMES.to_vec()
}

/// Runs a search as `shrew search` does with the same settings (`shard` as `(i, n)`), on
/// `jobs` threads (one per core by default): `(evaluations, summary)`, the JSON lines of
/// `--output` as Python objects.
#[pyfunction]
#[pyo3(signature = (paths, target, objective = "instructions".to_string(), strategies = "random,greedy".to_string(), mode = "per-shader".to_string(), budget = 100, seconds = None, seed = 1, test_fraction = 0.0, stage = None, max_shaders = None, passes = None, prefix = String::new(), suffix = String::new(), max_length = 24, groups = true, check = true, shard = None, jobs = None))]
#[allow(clippy::too_many_arguments)]
fn search(
    py: Python<'_>,
    paths: Vec<PathBuf>,
    target: &str,
    objective: String,
    strategies: String,
    mode: String,
    budget: usize,
    seconds: Option<f64>,
    seed: u64,
    test_fraction: f64,
    stage: Option<&str>,
    max_shaders: Option<usize>,
    passes: Option<String>,
    prefix: String,
    suffix: String,
    max_length: usize,
    groups: bool,
    check: bool,
    shard: Option<(usize, usize)>,
    jobs: Option<usize>,
) -> PyResult<(Py<PyAny>, Py<PyAny>)> {
    let shard = shard
        .map(|(i, n)| shrew_harness::batch::Shard::parse(&format!("{i}/{n}")))
        .transpose()
        .map_err(error)?;
    let settings = searching::Settings {
        stage: self::stage(stage)?,
        objective,
        strategies,
        mode,
        evaluations: budget,
        seconds,
        seed,
        test_fraction,
        max_shaders,
        passes,
        prefix,
        suffix,
        max_length,
        groups,
        check,
        shard,
        ..searching::Settings::new(paths, self::target(target)?)
    };
    let session = settings.session().map_err(error)?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.unwrap_or(0))
        .build()
        .map_err(error)?;
    let (records, summary) = py.detach(|| {
        let mut records = Records(Vec::new());
        let summary = pool.install(|| searching::run_session(&session, &mut records));
        (records.0, summary)
    });
    let summary = summary.map_err(error)?;
    Ok((
        json_to_py(py, &serde_json::Value::Array(records))?,
        json_to_py(py, &summary)?,
    ))
}

/// A search's evaluations as JSON.
struct Records(Vec<serde_json::Value>);

impl searching::Observer for Records {
    fn record(&mut self, record: &searching::Record) {
        self.0.push(record.json());
    }

    fn searched(&mut self, _done: usize, _total: usize) {}
}

/// Joins the runs of the shards of one per-shader search (`shrew report --merge`): each run as
/// the text of its JSON lines; gives the joined run's JSON lines.
#[pyfunction]
fn merge_runs(runs: Vec<String>) -> PyResult<String> {
    let saved = runs
        .iter()
        .enumerate()
        .map(|(i, text)| searching::report::parse(text, &format!("run {}", i + 1)))
        .collect::<Result<Vec<_>, _>>()
        .map_err(error)?;
    Ok(searching::report::merge(&saved).map_err(error)?.lines())
}

/// A saved run's summary as `shrew report` prints it.
#[pyfunction]
fn report_text(summary: &Bound<'_, PyAny>) -> PyResult<String> {
    let json = summary.py().import("json")?;
    let text: String = json.call_method1("dumps", (summary,))?.extract()?;
    let value: serde_json::Value = serde_json::from_str(&text).map_err(error)?;
    Ok(searching::report::text(&value))
}

#[pymodule]
fn _shrew(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("ShrewError", m.py().get_type::<ShrewError>())?;
    m.add_class::<Shader>()?;
    m.add_class::<Kernel>()?;
    m.add_function(wrap_pyfunction!(load, m)?)?;
    m.add_function(wrap_pyfunction!(parse, m)?)?;
    m.add_function(wrap_pyfunction!(corpus, m)?)?;
    m.add_function(wrap_pyfunction!(passes, m)?)?;
    m.add_function(wrap_pyfunction!(targets, m)?)?;
    m.add_function(wrap_pyfunction!(default_pipeline, m)?)?;
    m.add_function(wrap_pyfunction!(feature_names, m)?)?;
    m.add_function(wrap_pyfunction!(search, m)?)?;
    m.add_function(wrap_pyfunction!(merge_runs, m)?)?;
    m.add_function(wrap_pyfunction!(report_text, m)?)?;
    Ok(())
}
