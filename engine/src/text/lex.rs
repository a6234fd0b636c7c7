//! The lexer of the `.shrew` text format. Newlines are tokens because instructions end at the end
//! of their line; spaces, tabs and comments are skipped.

/// A 1-based line and column (columns count characters).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Pos {
    pub line: usize,
    pub col: usize,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// A name or keyword: `[A-Za-z_][A-Za-z0-9_]*` (block labels and swizzles included).
    Ident,
    /// Anything starting with a digit, or `-` and a digit: integers, floats, shapes (`32x4`) and
    /// dimensions (`2d`). The parser interprets the text in context.
    Number,
    /// `%N`.
    Value,
    /// `@name`.
    Var,
    /// `->`.
    Arrow,
    Punct(char),
    Newline,
    Eof,
}

#[derive(Copy, Clone, Debug)]
pub(super) struct Token<'s> {
    pub kind: Kind,
    pub text: &'s str,
    pub pos: Pos,
}

impl Token<'_> {
    /// The token as error messages name it.
    pub fn describe(&self) -> String {
        match self.kind {
            Kind::Newline => "end of line".to_string(),
            Kind::Eof => "end of file".to_string(),
            _ => format!("'{}'", self.text),
        }
    }

    pub fn is_punct(&self, c: char) -> bool {
        self.kind == Kind::Punct(c)
    }

    pub fn is_word(&self, word: &str) -> bool {
        self.kind == Kind::Ident && self.text == word
    }
}

#[derive(Debug)]
pub(super) struct LexError {
    pub pos: Pos,
    pub message: String,
}

const PUNCT: &[u8] = b"(){}[],:=.|-";

fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

pub(super) fn is_ident_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The end of the run of bytes from `i` that satisfy `pred`.
fn scan(bytes: &[u8], mut i: usize, pred: impl Fn(u8) -> bool) -> usize {
    while bytes.get(i).is_some_and(|&c| pred(c)) {
        i += 1;
    }
    i
}

/// The end of a number starting at `start` (a digit, or `-` and a digit). A sign right after an
/// `e` belongs to a float's exponent unless the number is hexadecimal.
fn scan_number(bytes: &[u8], start: usize) -> usize {
    let digits = bytes.get(start..).unwrap_or_default();
    let digits = digits.strip_prefix(b"-").unwrap_or(digits);
    let hex = digits.len() > 1 && digits[0] == b'0' && matches!(digits[1], b'x' | b'X');
    let mut i = start + 1;
    while let Some(&c) = bytes.get(i) {
        let exponent_sign =
            matches!(c, b'+' | b'-') && !hex && matches!(bytes.get(i - 1), Some(b'e' | b'E'));
        if is_ident_char(c) || c == b'.' || exponent_sign {
            i += 1;
        } else {
            break;
        }
    }
    i
}

/// The error for a `%` or `@` at `pos` with nothing valid after it (`next`): the end of the
/// file, located there, when the file ends after it.
fn bare_sigil(pos: Pos, next: Option<u8>, what: &str, sigil: char) -> LexError {
    match next {
        None => LexError {
            pos: Pos {
                col: pos.col + 1,
                ..pos
            },
            message: format!("unexpected end of file after '{sigil}'"),
        },
        Some(_) => LexError {
            pos,
            message: format!("expected {what} after '{sigil}'"),
        },
    }
}

/// Splits `src` into tokens, ending with an [`Kind::Eof`] token.
pub(super) fn lex(src: &str) -> Result<Vec<Token<'_>>, LexError> {
    let bytes = src.as_bytes();
    let mut toks = Vec::new();
    let (mut i, mut line, mut line_start) = (0, 1, 0);
    // Every byte before `i` on the current line is ASCII (anything else is an error or inside a
    // comment, which runs to the end of the line), so byte offsets are character columns.
    let pos_of = |i: usize, line: usize, line_start: usize| Pos {
        line,
        col: i - line_start + 1,
    };
    while let Some(&c) = bytes.get(i) {
        let pos = pos_of(i, line, line_start);
        let start = i;
        let next = bytes.get(i + 1).copied();
        let kind = match c {
            b' ' | b'\t' | b'\r' => {
                i += 1;
                continue;
            }
            b'\n' => {
                i += 1;
                line_start = i;
                line += 1;
                Kind::Newline
            }
            b'/' if next == Some(b'/') => {
                i = scan(bytes, i, |c| c != b'\n');
                continue;
            }
            c if is_ident_start(c) => {
                i = scan(bytes, i + 1, is_ident_char);
                Kind::Ident
            }
            c if c.is_ascii_digit() || (c == b'-' && next.is_some_and(|n| n.is_ascii_digit())) => {
                i = scan_number(bytes, i);
                Kind::Number
            }
            b'%' => {
                i = scan(bytes, i + 1, |c| c.is_ascii_digit());
                if i == start + 1 {
                    return Err(bare_sigil(pos, next, "a value number", '%'));
                }
                Kind::Value
            }
            b'@' => {
                i = scan(bytes, i + 1, is_ident_char);
                if i == start + 1 {
                    return Err(bare_sigil(pos, next, "a variable name", '@'));
                }
                Kind::Var
            }
            b'-' if next == Some(b'>') => {
                i += 2;
                Kind::Arrow
            }
            c if PUNCT.contains(&c) => {
                i += 1;
                Kind::Punct(c as char)
            }
            _ => {
                let ch = src.get(i..).and_then(|s| s.chars().next()).unwrap_or('?');
                return Err(LexError {
                    pos,
                    message: format!("unexpected character '{}'", ch.escape_default()),
                });
            }
        };
        toks.push(Token {
            kind,
            text: src.get(start..i).unwrap_or_default(),
            pos,
        });
    }
    toks.push(Token {
        kind: Kind::Eof,
        text: "",
        pos: pos_of(i, line, line_start),
    });
    Ok(toks)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<(Kind, &str)> {
        lex(src)
            .unwrap()
            .into_iter()
            .map(|t| (t.kind, t.text))
            .collect()
    }

    #[test]
    fn splits_instructions() {
        use Kind::*;
        assert_eq!(
            kinds("32x4 %1 = fmul %0.xy, -1e-7 // note\n"),
            vec![
                (Number, "32x4"),
                (Value, "%1"),
                (Punct('='), "="),
                (Ident, "fmul"),
                (Value, "%0"),
                (Punct('.'), "."),
                (Ident, "xy"),
                (Punct(','), ","),
                (Number, "-1e-7"),
                (Newline, "\n"),
                (Eof, ""),
            ]
        );
        assert_eq!(
            kinds("0x1e-5 -> -inf"),
            vec![
                (Number, "0x1e"),
                (Number, "-5"),
                (Arrow, "->"),
                (Punct('-'), "-"),
                (Ident, "inf"),
                (Eof, ""),
            ]
        );
    }

    #[test]
    fn positions_count_lines_and_columns() {
        let toks = lex("a\n  // é\n   @v $").unwrap_err();
        assert_eq!(toks.pos, Pos { line: 3, col: 7 });
        assert_eq!(toks.message, "unexpected character '$'");
        let toks = lex("a\n  b").unwrap();
        assert_eq!(toks[2].pos, Pos { line: 2, col: 3 });
        assert_eq!(toks[3].pos, Pos { line: 2, col: 4 });
    }

    #[test]
    fn rejects_bare_sigils() {
        assert_eq!(
            lex("x % 3").unwrap_err().message,
            "expected a value number after '%'"
        );
        assert_eq!(
            lex("@ x").unwrap_err().message,
            "expected a variable name after '@'"
        );
        assert_eq!(
            lex("x %").unwrap_err().message,
            "unexpected end of file after '%'"
        );
        assert_eq!(
            lex("é").unwrap_err().message,
            "unexpected character '\\u{e9}'"
        );
    }
}
