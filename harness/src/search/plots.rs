//! Plots of a saved search, each as SVG and PNG:
//!
//! - `best.svg`: the best ratio over the evaluations, per strategy (per shader: the geometric
//!   mean over the shaders of each one's best so far);
//! - `improvements.svg`: each strategy's per-shader ratios, sorted (the distribution of the
//!   improvement; corpus-wide runs have none);
//! - `passes.svg`: how often each pass stands at each position of the best pipelines found
//!   (a pass in a fixpoint group counts at the group's position).
//!
//! Text needs a TrueType font: `SHREW_PLOT_FONT`, else DejaVu Sans where Debian puts it
//! (`fonts-dejavu-core`).

use super::Item;
use super::report::SavedRun;
use plotters::coord::Shift;
use plotters::prelude::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

const FONT_PATHS: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
];

/// Registers the font plotters draws text with, once.
fn font() -> Result<(), String> {
    static REGISTERED: OnceLock<Result<(), String>> = OnceLock::new();
    REGISTERED
        .get_or_init(|| {
            let paths: Vec<PathBuf> = std::env::var_os("SHREW_PLOT_FONT")
                .map(PathBuf::from)
                .into_iter()
                .chain(FONT_PATHS.iter().map(PathBuf::from))
                .collect();
            let bytes = paths
                .iter()
                .find_map(|p| std::fs::read(p).ok())
                .ok_or_else(|| {
                    "plots need a TrueType font: install fonts-dejavu-core or set SHREW_PLOT_FONT"
                        .to_string()
                })?;
            let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
            plotters::style::register_font("sans-serif", FontStyle::Normal, bytes)
                .map_err(|_| "the plot font is not a TrueType font".to_string())
        })
        .clone()
}

/// Writes the run's plots into `dir` (made if missing); gives the files written.
pub fn write(run: &SavedRun, dir: &Path) -> Result<Vec<PathBuf>, String> {
    font()?;
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
    let mut written = Vec::new();
    let plots: [(&str, Plot); 3] = [
        ("best", best_curves),
        ("improvements", improvements),
        ("passes", passes),
    ];
    for (name, figure) in plots {
        let figure = figure(run);
        let svg = dir.join(format!("{name}.svg"));
        draw(&figure, SVGBackend::new(&svg, SIZE).into_drawing_area())?;
        let png = dir.join(format!("{name}.png"));
        draw(&figure, BitMapBackend::new(&png, SIZE).into_drawing_area())?;
        written.extend([svg, png]);
    }
    Ok(written)
}

const SIZE: (u32, u32) = (900, 560);

/// What a plot shows, from a run.
type Plot = fn(&SavedRun) -> Figure;

/// What a plot shows, apart from any backend.
enum Figure {
    /// Named lines of (x, y) points.
    Lines {
        title: String,
        x: &'static str,
        y: &'static str,
        lines: Vec<(String, Vec<(f64, f64)>)>,
    },
    /// Counts by (column, row): rows named, columns numbered.
    Grid {
        title: String,
        rows: Vec<String>,
        columns: usize,
        counts: Vec<Vec<u32>>,
    },
}

fn results(run: &SavedRun) -> Vec<&Value> {
    run.summary["results"]
        .as_array()
        .map(|r| r.iter().collect())
        .unwrap_or_default()
}

fn curve(value: &Value) -> Vec<(f64, f64)> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| Some((p[0].as_f64()?, p[1].as_f64()?)))
        .collect()
}

/// The value of a step curve (best so far) at `x`.
fn at(curve: &[(f64, f64)], x: f64) -> f64 {
    curve
        .iter()
        .take_while(|&&(px, _)| px <= x)
        .last()
        .map_or(1.0, |&(_, y)| y)
}

fn best_curves(run: &SavedRun) -> Figure {
    let lines = results(run)
        .into_iter()
        .map(|r| {
            let name = r["strategy"].as_str().unwrap_or("").to_string();
            let points = match r.get("shaders") {
                Some(rows) => {
                    let curves: Vec<Vec<(f64, f64)>> = rows
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|row| curve(&row["curve"]))
                        .collect();
                    let end = curves
                        .iter()
                        .flat_map(|c| c.iter().map(|&(x, _)| x))
                        .fold(0.0, f64::max);
                    (0..=end as usize)
                        .map(|k| {
                            let k = k as f64;
                            (k, super::geomean(curves.iter().map(|c| at(c, k))))
                        })
                        .collect()
                }
                None => curve(&r["curve"]),
            };
            (name, points)
        })
        .collect();
    Figure::Lines {
        title: format!("best ratio to the default pipeline ({})", what(run)),
        x: "candidates evaluated",
        y: "ratio (geometric mean)",
        lines,
    }
}

fn improvements(run: &SavedRun) -> Figure {
    let lines = results(run)
        .into_iter()
        .map(|r| {
            let mut ratios: Vec<f64> = r["shaders"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|row| row["ratio"].as_f64())
                .collect();
            ratios.sort_by(f64::total_cmp);
            let points = ratios
                .into_iter()
                .enumerate()
                .map(|(i, y)| (i as f64, y))
                .collect();
            (r["strategy"].as_str().unwrap_or("").to_string(), points)
        })
        .collect();
    Figure::Lines {
        title: format!("per-shader ratio, sorted ({})", what(run)),
        x: "shaders, best first",
        y: "ratio to the default pipeline",
        lines,
    }
}

fn passes(run: &SavedRun) -> Figure {
    let pipelines: Vec<&str> = results(run)
        .into_iter()
        .flat_map(|r| match r.get("shaders") {
            Some(rows) => rows
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|row| row["pipeline"].as_str())
                .collect::<Vec<_>>(),
            None => r["pipeline"].as_str().into_iter().collect(),
        })
        .filter(|p| *p != super::DEFAULT)
        .collect();
    let mut rows: Vec<String> = Vec::new();
    let mut counts: Vec<Vec<u32>> = Vec::new();
    let mut columns = 0;
    for pipeline in pipelines {
        let items = super::pipeline_items(pipeline).unwrap_or_default();
        for (position, item) in items.into_iter().enumerate() {
            columns = columns.max(position + 1);
            let passes = match item {
                Item::Pass(name) => vec![name],
                Item::Group(names) => names,
            };
            for pass in passes.into_iter().map(str::to_string) {
                let row = match rows.iter().position(|r| *r == pass) {
                    Some(row) => row,
                    None => {
                        rows.push(pass);
                        counts.push(Vec::new());
                        rows.len() - 1
                    }
                };
                if counts[row].len() <= position {
                    counts[row].resize(position + 1, 0);
                }
                counts[row][position] += 1;
            }
        }
    }
    for row in &mut counts {
        row.resize(columns, 0);
    }
    Figure::Grid {
        title: format!("passes by position in the best pipelines ({})", what(run)),
        rows,
        columns,
        counts,
    }
}

fn what(run: &SavedRun) -> String {
    let s = &run.summary;
    format!(
        "{}, {}, {}",
        s["target"].as_str().unwrap_or(""),
        s["objective"].as_str().unwrap_or(""),
        s["mode"].as_str().unwrap_or("")
    )
}

fn draw<DB: DrawingBackend>(figure: &Figure, root: DrawingArea<DB, Shift>) -> Result<(), String> {
    let fail = |e: DrawingAreaErrorKind<DB::ErrorType>| format!("cannot draw a plot: {e}");
    root.fill(&WHITE).map_err(fail)?;
    match figure {
        Figure::Lines { title, x, y, lines } => {
            let points = lines.iter().flat_map(|(_, p)| p.iter());
            let max_x = points.clone().map(|p| p.0).fold(1.0, f64::max);
            let (min_y, max_y) = points
                .map(|p| p.1)
                .fold((1.0f64, 1.0f64), |(lo, hi), y| (lo.min(y), hi.max(y)));
            let pad = ((max_y - min_y) * 0.05).max(0.01);
            let mut chart = ChartBuilder::on(&root)
                .caption(title, ("sans-serif", 20))
                .margin(12)
                .x_label_area_size(40)
                .y_label_area_size(60)
                .build_cartesian_2d(0.0..max_x, (min_y - pad)..(max_y + pad))
                .map_err(fail)?;
            chart
                .configure_mesh()
                .x_desc(*x)
                .y_desc(*y)
                .draw()
                .map_err(fail)?;
            for (i, (name, points)) in lines.iter().enumerate() {
                let color = Palette99::pick(i).to_rgba();
                chart
                    .draw_series(LineSeries::new(
                        points.iter().copied(),
                        color.stroke_width(2),
                    ))
                    .map_err(fail)?
                    .label(name)
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
            }
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .draw()
                .map_err(fail)?;
        }
        Figure::Grid {
            title,
            rows,
            columns,
            counts,
        } => {
            let most = counts.iter().flatten().copied().max().unwrap_or(0).max(1);
            let mut chart = ChartBuilder::on(&root)
                .caption(title, ("sans-serif", 20))
                .margin(12)
                .x_label_area_size(40)
                .y_label_area_size(170)
                .build_cartesian_2d(
                    0..(*columns).max(1),
                    (0..rows.len().max(1)).into_segmented(),
                )
                .map_err(fail)?;
            // Each row's name at the middle of its band.
            let row_name = |r: &SegmentValue<usize>| match r {
                SegmentValue::CenterOf(r) => rows.get(*r).cloned().unwrap_or_default(),
                _ => String::new(),
            };
            chart
                .configure_mesh()
                .disable_mesh()
                .x_desc("position")
                .y_labels(rows.len().max(1))
                .y_label_formatter(&row_name)
                .draw()
                .map_err(fail)?;
            let cells = counts.iter().enumerate().flat_map(|(r, row)| {
                row.iter().enumerate().map(move |(c, &n)| {
                    let shade = 1.0 - 0.85 * n as f64 / most as f64;
                    let level = (255.0 * shade) as u8;
                    Rectangle::new(
                        [
                            (c, SegmentValue::Exact(r)),
                            (c + 1, SegmentValue::Exact(r + 1)),
                        ],
                        RGBColor(level, level, 255).filled(),
                    )
                })
            });
            chart.draw_series(cells).map_err(fail)?;
        }
    }
    root.present().map_err(fail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipelines_split_into_positions_with_groups_at_one() {
        assert_eq!(
            super::super::pipeline_items("dce,(cse,dce)*,copy-prop"),
            Some(vec![
                Item::Pass("dce"),
                Item::Group(vec!["cse", "dce"]),
                Item::Pass("copy-prop")
            ])
        );
        assert_eq!(super::super::pipeline_items(""), Some(vec![]));
    }

    #[test]
    fn a_step_curve_holds_its_last_value() {
        let c = [(0.0, 1.0), (3.0, 0.9), (7.0, 0.8)];
        assert_eq!(
            [at(&c, 0.0), at(&c, 2.0), at(&c, 3.0), at(&c, 10.0)],
            [1.0, 1.0, 0.9, 0.8]
        );
    }
}
