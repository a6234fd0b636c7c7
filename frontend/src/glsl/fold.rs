//! Constant expressions glslang does not fold.
//!
//! GLSL makes a built-in function of constant arguments a constant expression (`bitCount`,
//! `findMSB`, `ldexp`, `packDouble2x32`, ...), and an array size must be one; glslang folds
//! few of these built-ins and refuses such a size ("array size must be a constant integer
//! expression"). [`Glslang::fold_array_sizes`] evaluates the sizes itself: in the
//! preprocessed source (macros expanded), every bracketed expression that is not an integer
//! literal becomes an assignment of a compute shader with the source's extensions, which
//! glslang compiles (at run time every built-in works) and shrew's interpreter runs; each
//! expression that compiles there, so that it depends on nothing of the shader, is replaced
//! by its value. That is exact where it applies: such an expression has the same value
//! wherever it stands, array size or index.

use super::lexer::{TokenKind, tokenize};
use super::{CompileOptions, GlslError, Glslang};
use crate::spirv;
use shrew_engine::interp::{Launch, Resources, run};
use shrew_engine::ir::Stage;

/// Most bracketed expressions one source has evaluated.
const MAX_EXPRESSIONS: usize = 256;

impl Glslang {
    /// `source` (preprocessed) with its constant bracketed expressions replaced by their
    /// values; `None` when there are none, or glslang cannot preprocess it.
    pub(super) fn fold_array_sizes(&self, source: &str, stage: Stage) -> Option<String> {
        let preprocessed = self.preprocess(source, stage).ok()?;
        let tokens = tokenize(&preprocessed);
        // Each bracketed expression that is not a literal: its byte range, inside the
        // brackets.
        let mut groups = Vec::new();
        let mut offset = 0;
        let mut open: Vec<(usize, bool)> = Vec::new();
        for token in &tokens {
            if token.is_punct('[') {
                open.push((offset + 1, false));
            } else if token.is_punct(']') {
                // Nested groups are evaluated as parts of the outermost one.
                match (open.pop(), open.last_mut()) {
                    (Some((start, true)), None) => groups.push(start..offset),
                    (Some((_, true)), Some((_, outer))) => *outer = true,
                    _ => {}
                }
            } else if let Some((_, computed)) = open.last_mut()
                && token.is_significant()
                && token.kind != TokenKind::Number
            {
                *computed = true;
            }
            offset += token.text.len();
        }
        groups.truncate(MAX_EXPRESSIONS);
        if groups.is_empty() {
            return None;
        }
        let extensions: Vec<&str> = tokens
            .iter()
            .filter(|t| {
                t.kind == TokenKind::Directive
                    && super::lexer::directive_name(t.text) == "extension"
            })
            .map(|t| t.text)
            .collect();
        let expressions: Vec<&str> = groups.iter().map(|g| &preprocessed[g.clone()]).collect();
        let values = self.evaluate(&extensions, &expressions)?;
        let mut folded = preprocessed.clone();
        for (group, value) in groups.iter().zip(&values).rev() {
            if let Some(value) = value {
                folded.replace_range(group.clone(), &value.to_string());
            }
        }
        (folded != preprocessed).then_some(folded)
    }

    /// The integer values of `expressions` (C-like GLSL expressions without free names),
    /// each `None` where it does not compile alone.
    fn evaluate(&self, extensions: &[&str], expressions: &[&str]) -> Option<Vec<Option<i64>>> {
        let mut kept: Vec<bool> = vec![true; expressions.len()];
        // Each attempt drops the expressions glslang refuses, by their lines.
        for _ in 0..expressions.len() {
            let mut helper = String::from("#version 460\n");
            for extension in extensions {
                helper.push_str(extension);
                helper.push('\n');
            }
            helper.push_str(&format!(
                "layout(local_size_x = 1) in;\nlayout(std430, binding = 0) buffer ShrewFolded \
                 {{ int shrew_folded[{}]; }};\nvoid main() {{\n",
                expressions.len()
            ));
            // The 1-based line of the first expression.
            let first_line = helper.lines().count() + 1;
            for (i, expression) in expressions.iter().enumerate() {
                // One line per expression, so that an error names it.
                let line = expression.replace('\n', " ");
                if kept[i] {
                    helper.push_str(&format!("shrew_folded[{i}] = int({line});\n"));
                } else {
                    helper.push('\n');
                }
            }
            helper.push_str("}\n");
            match self.compile(&helper, Stage::Compute, &CompileOptions::default()) {
                Ok(words) => return Some(run_helper(&words, expressions.len(), &kept)),
                Err(error) => {
                    let line = error.first_error_line()?;
                    let index = line.checked_sub(first_line)?;
                    if !kept.get(index).copied().unwrap_or(false) {
                        return None;
                    }
                    kept[index] = false;
                }
            }
        }
        None
    }

    /// `source` after glslang's preprocessor (`-E`), with its lines where they were.
    fn preprocess(&self, source: &str, stage: Stage) -> Result<String, GlslError> {
        let mut command = std::process::Command::new(self.program());
        command.args(["-E", "--stdin", "-S", super::glslang_stage_name(stage)]);
        let output =
            super::run_with_input(&mut command, source).map_err(|error| GlslError::Run {
                program: self.program().display().to_string(),
                message: error.to_string(),
            })?;
        if !output.status.success() {
            return Err(GlslError::Rejected {
                stage,
                diagnostics: "the preprocessor failed".into(),
            });
        }
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }
}

/// Runs the helper's one invocation and reads the values it stored (`None` for the
/// expressions it left out).
fn run_helper(words: &[u32], count: usize, kept: &[bool]) -> Vec<Option<i64>> {
    let values = (|| {
        let shader = spirv::translate(words, &spirv::Options::default()).ok()?;
        let mut resources = Resources::default();
        resources.ssbos.insert(0, vec![0; 4 * count]);
        run(&shader, &Launch::default(), &mut resources).ok()?;
        resources.ssbos.remove(&0)
    })();
    let Some(bytes) = values else {
        return vec![None; count];
    };
    (0..count)
        .map(|i| {
            let word = bytes.get(4 * i..4 * i + 4)?;
            kept[i].then(|| i32::from_le_bytes(word.try_into().unwrap()) as i64)
        })
        .collect()
}

/// Whether glslang refused an array size it could not fold.
pub(super) fn needs_folding(error: &GlslError) -> bool {
    matches!(error, GlslError::Rejected { diagnostics, .. }
        if diagnostics.contains("must be a constant integer expression"))
}
