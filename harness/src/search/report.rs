//! Reports of saved searches: a run's JSON lines (`shrew search --output`) read back, its
//! summary as text, and two runs side by side (two strategies, seeds or commits).

use serde_json::Value;
use std::path::Path;

/// A saved search: its evaluations and its summary.
#[derive(Clone, Debug)]
pub struct SavedRun {
    pub evaluations: Vec<Value>,
    pub summary: Value,
}

/// Reads a run's JSON lines: every evaluation, then the summary line.
pub fn load(path: &Path) -> Result<SavedRun, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    parse(&text, &path.display().to_string())
}

/// A run's JSON lines from text; `name` says where they come from in errors.
pub fn parse(text: &str, name: &str) -> Result<SavedRun, String> {
    let mut evaluations = Vec::new();
    let mut summary = None;
    for (n, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let value: Value = serde_json::from_str(line)
            .map_err(|e| format!("{}:{}: not a JSON line: {e}", name, n + 1))?;
        match value.get("summary") {
            Some(s) => summary = Some(s.clone()),
            None => evaluations.push(value),
        }
    }
    let summary =
        summary.ok_or_else(|| format!("{}: no summary line (the search did not finish?)", name))?;
    Ok(SavedRun {
        evaluations,
        summary,
    })
}

impl SavedRun {
    /// The run as JSON lines again: the evaluations, then the summary.
    pub fn lines(&self) -> String {
        let summary = serde_json::json!({ "summary": self.summary });
        self.evaluations
            .iter()
            .chain([&summary])
            .map(|v| v.to_string() + "\n")
            .collect()
    }
}

/// Joins the runs of the shards of one per-shader search into the run the search makes
/// unsharded: the evaluations and each strategy's shaders in its order (the geometric means
/// recomputed), the bugs in the order of the evaluations. The runs must be of one target,
/// objective, seed and corpus.
pub fn merge(runs: &[SavedRun]) -> Result<SavedRun, String> {
    let first = runs.first().ok_or("no run to merge")?;
    for key in [
        "target",
        "objective",
        "mode",
        "seed",
        "shaders",
        "train",
        "test",
    ] {
        if let Some(other) = runs.iter().find(|r| r.summary[key] != first.summary[key]) {
            return Err(format!(
                "the runs are not shards of one search: `{key}` is {} in one, {} in another",
                first.summary[key], other.summary[key]
            ));
        }
    }
    if first.summary["mode"] != "per-shader" {
        return Err("only per-shader searches have shards".into());
    }
    // Shard I of N holds the searched shaders at positions I, I + N, ...: its J-th row
    // (from 0) is at position J * N + I - 1 of the unsharded search.
    let mut positions: std::collections::HashMap<String, usize> = Default::default();
    for run in runs {
        let shard = run.summary["shard"].as_str().unwrap_or("1/1");
        let crate::batch::Shard { index, count } = crate::batch::Shard::parse(shard)?;
        let first_result = &run.summary["results"][0]["shaders"];
        for (j, row) in first_result.as_array().into_iter().flatten().enumerate() {
            let name = row["shader"].as_str().unwrap_or("").to_string();
            positions.insert(name, j * count + index - 1);
        }
    }
    let position = |v: &Value| positions.get(v["shader"].as_str().unwrap_or("")).copied();
    let strategies: Vec<&Value> = first.summary["results"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| &r["strategy"])
        .collect();
    // The evaluations in the unsharded search's order: strategy by strategy, shader by shader,
    // each shader's in the order they were made.
    let mut evaluations: Vec<Value> = runs.iter().flat_map(|r| r.evaluations.clone()).collect();
    evaluations.sort_by_key(|e| {
        let strategy = strategies.iter().position(|s| **s == e["strategy"]);
        (strategy, position(e))
    });
    for (i, e) in evaluations.iter_mut().enumerate() {
        e["evaluation"] = i.into();
    }
    let mut summary = first.summary.clone();
    let mut results: Vec<Value> = Vec::new();
    for strategy in strategies {
        let mut rows: Vec<Value> = runs
            .iter()
            .flat_map(|r| r.summary["results"].as_array().cloned().unwrap_or_default())
            .filter(|r| &r["strategy"] == strategy)
            .flat_map(|r| r["shaders"].as_array().cloned().unwrap_or_default())
            .collect();
        rows.sort_by_key(|r| position(r));
        let geomean = super::geomean(rows.iter().filter_map(|r| r["ratio"].as_f64()));
        results.push(serde_json::json!({
            "strategy": strategy,
            "geomean_ratio": geomean,
            "shaders": rows,
        }));
    }
    summary["results"] = results.into();
    summary["bugs"] = evaluations
        .iter()
        .filter(|e| e["status"] == "wrong")
        .map(|e| serde_json::json!({ "shader": e["shader"], "pipeline": e["pipeline"], "message": e["message"] }))
        .collect::<Vec<_>>()
        .into();
    summary["shard"] = Value::Null;
    Ok(SavedRun {
        evaluations,
        summary,
    })
}

fn ratio_text(v: &Value) -> String {
    match v.as_f64() {
        Some(r) => format!("{r:.4}"),
        None => "-".into(),
    }
}

/// One line per strategy of a summary: its name and its figure (the geometric-mean ratio per
/// shader, or the corpus-wide pipeline's train and test ratios).
fn strategy_figures(summary: &Value) -> Vec<(String, String)> {
    summary["results"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            let name = r["strategy"].as_str().unwrap_or("").to_string();
            let figure = match r.get("geomean_ratio") {
                Some(g) => format!("geomean {}", ratio_text(g)),
                None => format!(
                    "train {}, test {}",
                    ratio_text(&r["train_ratio"]),
                    ratio_text(&r["test_ratio"])
                ),
            };
            (name, figure)
        })
        .collect()
}

/// Two runs side by side: what each was, then each strategy's figure in both.
pub fn compare(a: &SavedRun, b: &SavedRun) -> String {
    let what = |run: &SavedRun| {
        let s = &run.summary;
        format!(
            "{} {} {} seed {}: {} shaders, {} evaluations, {} bugs",
            s["target"].as_str().unwrap_or(""),
            s["objective"].as_str().unwrap_or(""),
            s["mode"].as_str().unwrap_or(""),
            s["seed"],
            s["shaders"],
            run.evaluations.len(),
            s["bugs"].as_array().map_or(0, Vec::len)
        )
    };
    let mut out = format!("A: {}\nB: {}\n", what(a), what(b));
    let (fa, fb) = (strategy_figures(&a.summary), strategy_figures(&b.summary));
    let mut names: Vec<&String> = fa.iter().chain(&fb).map(|(n, _)| n).collect();
    names.sort();
    names.dedup();
    let find = |f: &[(String, String)], n: &str| {
        f.iter()
            .find(|(m, _)| m == n)
            .map_or("-".to_string(), |(_, v)| v.clone())
    };
    let width = names.iter().map(|n| n.len()).max().unwrap_or(0);
    for name in names {
        out += &format!(
            "{name:<width$}  A {:<24}  B {}\n",
            find(&fa, name),
            find(&fb, name)
        );
    }
    out
}

/// The summary as text: per strategy, the geometric-mean ratio (and per shader, or the
/// corpus-wide pipeline), then the bugs found.
pub fn text(summary: &Value) -> String {
    let mut out = format!(
        "{} shaders on {} ({} train, {} test; checked on the emulator: {} by their piglit test, \
         {} with random inputs), objective {}, ratios against the default pipeline (below 1 \
         is better)\n",
        summary["shaders"],
        summary["target"].as_str().unwrap_or(""),
        summary["train"],
        summary["test"],
        summary["checked_by_piglit"],
        summary["checked_by_random_inputs"],
        summary["objective"].as_str().unwrap_or(""),
    );
    for result in summary["results"].as_array().into_iter().flatten() {
        let strategy = result["strategy"].as_str().unwrap_or("");
        match result.get("geomean_ratio") {
            Some(geomean) => {
                out += &format!("{strategy}: geomean {}\n", ratio_text(geomean));
                for row in result["shaders"].as_array().into_iter().flatten() {
                    out += &format!(
                        "  {} {}  {}\n",
                        ratio_text(&row["ratio"]),
                        row["shader"].as_str().unwrap_or(""),
                        row["pipeline"].as_str().unwrap_or("")
                    );
                }
            }
            None => {
                out += &format!(
                    "{strategy}: train {}, test {}  {}\n",
                    ratio_text(&result["train_ratio"]),
                    ratio_text(&result["test_ratio"]),
                    result["pipeline"].as_str().unwrap_or("")
                );
            }
        }
    }
    for bug in summary["bugs"].as_array().into_iter().flatten() {
        out += &format!(
            "BUG: {} -p {}: {}\n",
            bug["shader"].as_str().unwrap_or(""),
            bug["pipeline"].as_str().unwrap_or(""),
            bug["message"]
                .as_str()
                .unwrap_or("")
                .lines()
                .next()
                .unwrap_or("")
        );
    }
    out
}
