//! The values of GLSL uniform initializers, as a `uniform` command's: every scalar of the
//! uniform in the order its leaves are laid out (vector components, matrix columns, array
//! elements, struct members).
//!
//! glslang's SPIR-V drops the initializers of uniforms, so a test that sets a uniform it also
//! initializes gets the initial value from here, set before its first command. The initializer
//! must be a constant made of literals, `-`, constructors (of scalars, vectors, matrices,
//! arrays and structs) and initializer lists; anything else (an operator, a function, a
//! constant's name) is refused with the reason.

/// The scalars of an initializer, and how many elements it lists at its top level (an unsized
/// array's length).
#[derive(Debug, PartialEq)]
pub(crate) struct Initializer {
    pub(crate) scalars: Vec<String>,
    pub(crate) elements: usize,
}

/// Evaluates the initializer `text` (what follows the `=`) of a shader whose struct types are
/// `structs`.
pub(crate) fn evaluate(text: &str, structs: &[String]) -> Result<Initializer, String> {
    let tokens = tokenize(text)?;
    let mut parser = Parser {
        tokens,
        at: 0,
        structs,
    };
    let (scalars, elements) = parser.expression()?;
    if parser.at != parser.tokens.len() {
        return Err(format!(
            "`{}` after the initializer's value",
            parser.tokens[parser.at]
        ));
    }
    Ok(Initializer { scalars, elements })
}

fn tokenize(text: &str) -> Result<Vec<String>, String> {
    let mut tokens = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some((start, c)) = chars.next() {
        if c.is_whitespace() {
            continue;
        }
        if "(){}[],-".contains(c) {
            tokens.push(c.to_string());
            continue;
        }
        if !(c.is_ascii_alphanumeric() || c == '_' || c == '.') {
            return Err(format!("`{c}` in a uniform initializer"));
        }
        let mut end = start + c.len_utf8();
        while let Some(&(i, d)) = chars.peek() {
            // An exponent's sign belongs to its number (`1e-5`).
            let exponent_sign = matches!(d, '+' | '-')
                && text[start..i].ends_with(['e', 'E'])
                && text[start..].starts_with(|x: char| x.is_ascii_digit() || x == '.');
            if !(d.is_ascii_alphanumeric() || d == '_' || d == '.' || exponent_sign) {
                break;
            }
            end = i + d.len_utf8();
            chars.next();
        }
        tokens.push(text[start..end].to_string());
    }
    Ok(tokens)
}

struct Parser<'s> {
    tokens: Vec<String>,
    at: usize,
    structs: &'s [String],
}

impl Parser<'_> {
    fn next(&mut self) -> Result<String, String> {
        let token = self.tokens.get(self.at).cloned();
        self.at += 1;
        token.ok_or_else(|| "the uniform initializer ends early".to_string())
    }

    fn expect(&mut self, token: &str) -> Result<(), String> {
        match self.next()? {
            t if t == token => Ok(()),
            t => Err(format!("`{t}` where the initializer needs `{token}`")),
        }
    }

    /// A value's scalars, and its top-level element count (1 but for lists and arrays).
    fn expression(&mut self) -> Result<(Vec<String>, usize), String> {
        let token = self.next()?;
        match token.as_str() {
            "-" => {
                let (scalars, elements) = self.expression()?;
                let negated = scalars
                    .into_iter()
                    .map(|s| match s.strip_prefix('-') {
                        Some(positive) => positive.to_string(),
                        None => format!("-{s}"),
                    })
                    .collect();
                Ok((negated, elements))
            }
            "(" => {
                let value = self.expression()?;
                self.expect(")")?;
                Ok(value)
            }
            "{" => {
                let parts = self.arguments("}")?;
                let elements = parts.len();
                Ok((parts.concat(), elements))
            }
            "true" => Ok((vec!["1".into()], 1)),
            "false" => Ok((vec!["0".into()], 1)),
            t if t.starts_with(|c: char| c.is_ascii_digit() || c == '.') => {
                Ok((vec![literal(t)], 1))
            }
            name => self.constructor(name),
        }
    }

    /// `T(...)`, `T[N](...)` or `T[](...)` after its type name.
    fn constructor(&mut self, name: &str) -> Result<(Vec<String>, usize), String> {
        let mut array = false;
        if self.tokens.get(self.at).is_some_and(|t| t == "[") {
            self.at += 1;
            if self.tokens.get(self.at).is_some_and(|t| t != "]") {
                self.at += 1;
            }
            self.expect("]")?;
            array = true;
        }
        if self.tokens.get(self.at).is_none_or(|t| t != "(") {
            return Err(format!(
                "`{name}` in a uniform initializer is not a constructor"
            ));
        }
        self.at += 1;
        let parts = self.arguments(")")?;
        if array {
            let elements = parts.len();
            return Ok((parts.concat(), elements));
        }
        let scalars = parts.concat();
        let shaped = match shape(name) {
            Some(Shape::Vector(n)) if scalars.len() == 1 => vec![scalars[0].clone(); n],
            Some(Shape::Vector(n)) => take(scalars, n, name)?,
            Some(Shape::Matrix { cols, rows }) if scalars.len() == 1 => (0..cols * rows)
                .map(|i| match i % rows == i / rows {
                    true => scalars[0].clone(),
                    false => "0".into(),
                })
                .collect(),
            Some(Shape::Matrix { cols, rows }) => take(scalars, cols * rows, name)?,
            // A struct: its members' values one after another.
            None if self.structs.iter().any(|s| s == name) => scalars,
            None => return Err(format!("{name}() in a uniform initializer")),
        };
        Ok((shaped, 1))
    }

    /// Comma-separated values up to `close`.
    fn arguments(&mut self, close: &str) -> Result<Vec<Vec<String>>, String> {
        let mut parts = Vec::new();
        loop {
            if self.tokens.get(self.at).is_some_and(|t| t == close) {
                self.at += 1;
                return Ok(parts);
            }
            parts.push(self.expression()?.0);
            match self.next()? {
                t if t == "," => {}
                t if t == close => return Ok(parts),
                t => return Err(format!("`{t}` in a uniform initializer")),
            }
        }
    }
}

/// The first `n` scalars (a constructor drops what its last argument has beyond them).
fn take(mut scalars: Vec<String>, n: usize, name: &str) -> Result<Vec<String>, String> {
    if scalars.len() < n {
        return Err(format!("{name}() of {} scalars", scalars.len()));
    }
    scalars.truncate(n);
    Ok(scalars)
}

/// A number as a `uniform` command writes it (its suffix dropped: `1.0lf`, `2u`, `0.5f`).
fn literal(token: &str) -> String {
    let hex = token.starts_with("0x") || token.starts_with("0X");
    let suffixes: &[&str] = if hex {
        &["u", "U"]
    } else {
        &["lf", "LF", "f", "F", "u", "U"]
    };
    let mut text = token;
    for suffix in suffixes {
        if let Some(stripped) = text.strip_suffix(suffix) {
            text = stripped;
            break;
        }
    }
    text.to_string()
}

enum Shape {
    Vector(usize),
    Matrix { cols: usize, rows: usize },
}

/// The shape of a built-in scalar, vector or matrix type named `name`.
fn shape(name: &str) -> Option<Shape> {
    if matches!(
        name,
        "float" | "double" | "int" | "uint" | "bool" | "int64_t" | "uint64_t"
    ) {
        return Some(Shape::Vector(1));
    }
    let digit = |s: &str| s.parse::<usize>().ok().filter(|n| (2..=4).contains(n));
    if let Some(n) = ["vec", "dvec", "ivec", "uvec", "bvec", "i64vec", "u64vec"]
        .iter()
        .find_map(|p| name.strip_prefix(p).and_then(digit))
    {
        return Some(Shape::Vector(n));
    }
    let dims = name
        .strip_prefix("dmat")
        .or_else(|| name.strip_prefix("mat"))?;
    let (cols, rows) = match dims.split_once('x') {
        Some((c, r)) => (digit(c)?, digit(r)?),
        None => (digit(dims)?, digit(dims)?),
    };
    Some(Shape::Matrix { cols, rows })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn evaluated(text: &str) -> Initializer {
        evaluate(text, &["S".to_string()]).unwrap()
    }

    fn scalars(text: &str) -> Vec<String> {
        evaluated(text).scalars
    }

    #[test]
    fn constructors_lists_and_literals() {
        assert_eq!(
            scalars("dvec4(0.0lf, 1.0lf, 0.0lf, 0.0lf)"),
            ["0.0", "1.0", "0.0", "0.0"]
        );
        assert_eq!(scalars("vec3(-2)"), ["-2", "-2", "-2"]);
        assert_eq!(scalars("{ 0, 1, -0x10 }"), ["0", "1", "-0x10"]);
        assert_eq!(scalars("-vec2(1.0, -1e-5)"), ["-1.0", "1e-5"]);
        // A scalar makes a matrix's diagonal; other arguments fill it column by column.
        assert_eq!(scalars("dmat2x3(2.0)"), ["2.0", "0", "0", "0", "2.0", "0"]);
        assert_eq!(scalars("mat2(vec2(1, 2), 3, 4)"), ["1", "2", "3", "4"]);
        // Structs and arrays: their parts in order.
        assert_eq!(scalars("S(2.0lf, dvec2(0.5lf, true))"), ["2.0", "0.5", "1"]);
        let array = evaluated("dvec2[](dvec2(0.0), dvec2(1.0, 2.0), dvec2(3.0))");
        assert_eq!(array.elements, 3);
        assert_eq!(array.scalars, ["0.0", "0.0", "1.0", "2.0", "3.0", "3.0"]);
        assert_eq!(evaluated("{ { 0, 1 }, { 2, 3 } }").elements, 2);
    }

    #[test]
    fn anything_but_a_constant_of_literals_is_refused() {
        for text in ["1.0 + 2.0", "sqrt(2.0)", "K", "vec3(1, 2)", "vec2(1, 2"] {
            assert!(evaluate(text, &[]).is_err(), "{text}");
        }
    }
}
