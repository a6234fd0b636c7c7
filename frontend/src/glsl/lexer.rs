//! A GLSL tokenizer just precise enough for source rewriting.
//!
//! It splits source text into identifiers, numbers, punctuation, whitespace, comments and
//! preprocessor directives, keeping every byte: concatenating the tokens' text gives the input
//! back. It does not validate anything and never fails; malformed input (an unterminated
//! comment, a stray byte) just becomes tokens of the closest kind.

/// What a [`Token`] is.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum TokenKind {
    /// `[A-Za-z_][A-Za-z0-9_]*`: keywords, type names and identifiers alike.
    Identifier,
    /// A numeric literal (`1`, `0.5e-3`, `0x1F`, `2u`, `1.0lf`).
    Number,
    /// A single punctuation character (`(`, `[`, `;`, `+`, ...), or any other character.
    Punct,
    /// A run of spaces, tabs and newlines.
    Whitespace,
    /// A `//` or `/* */` comment.
    Comment,
    /// A whole preprocessor line from its `#` to the end of the line (continuation lines and
    /// comments inside it included, the final newline excluded).
    Directive,
}

/// One token: its kind, its text (a slice of the source) and the 1-based line it starts on.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Token<'a> {
    pub kind: TokenKind,
    pub text: &'a str,
    pub line: usize,
}

impl Token<'_> {
    /// Whether this token carries meaning (not whitespace or a comment).
    pub fn is_significant(&self) -> bool {
        !matches!(self.kind, TokenKind::Whitespace | TokenKind::Comment)
    }

    /// Whether this is the punctuation character `c`.
    pub fn is_punct(&self, c: char) -> bool {
        self.kind == TokenKind::Punct && self.text.len() == c.len_utf8() && self.text.starts_with(c)
    }
}

/// Splits `source` into tokens (see the module documentation).
pub(crate) fn tokenize(source: &str) -> Vec<Token<'_>> {
    let bytes = source.as_bytes();
    let mut tokens = Vec::new();
    let mut pos = 0;
    let mut line = 1;
    // True while only whitespace has been seen since the last newline: a `#` there starts a
    // directive.
    let mut at_line_start = true;
    while pos < bytes.len() {
        let start = pos;
        let byte = bytes[pos];
        let kind = if byte == b'#' && at_line_start {
            pos = directive_end(bytes, pos);
            TokenKind::Directive
        } else if byte.is_ascii_whitespace() {
            while pos < bytes.len() && bytes[pos].is_ascii_whitespace() {
                pos += 1;
            }
            TokenKind::Whitespace
        } else if bytes[pos..].starts_with(b"//") {
            while pos < bytes.len() && bytes[pos] != b'\n' {
                pos += 1;
            }
            TokenKind::Comment
        } else if bytes[pos..].starts_with(b"/*") {
            pos = block_comment_end(bytes, pos);
            TokenKind::Comment
        } else if byte.is_ascii_alphabetic() || byte == b'_' {
            while pos < bytes.len() && (bytes[pos].is_ascii_alphanumeric() || bytes[pos] == b'_') {
                pos += 1;
            }
            TokenKind::Identifier
        } else if byte.is_ascii_digit()
            || (byte == b'.' && bytes.get(pos + 1).is_some_and(u8::is_ascii_digit))
        {
            pos = number_end(bytes, pos);
            TokenKind::Number
        } else {
            // One character, however many bytes it takes (the source is valid UTF-8, so the
            // next char boundary is within four bytes).
            pos += source[pos..].chars().next().map_or(1, char::len_utf8);
            TokenKind::Punct
        };
        let text = &source[start..pos];
        tokens.push(Token { kind, text, line });
        let newlines = text.bytes().filter(|&b| b == b'\n').count();
        line += newlines;
        at_line_start = match kind {
            TokenKind::Whitespace => at_line_start || newlines > 0,
            // A block comment does not end the line; a `#` after it on the same line is not a
            // directive for GLSL's preprocessor either, but that case does not matter here.
            TokenKind::Comment => at_line_start && newlines == 0,
            _ => false,
        };
    }
    tokens
}

/// End (exclusive) of the directive starting at `start`: the next newline not escaped by a
/// backslash and not inside a block comment.
fn directive_end(bytes: &[u8], start: usize) -> usize {
    let mut pos = start;
    while pos < bytes.len() {
        match bytes[pos] {
            b'\n' => return pos,
            b'\\' if bytes.get(pos + 1) == Some(&b'\n') => pos += 2,
            b'\\' if bytes[pos + 1..].starts_with(b"\r\n") => pos += 3,
            b'/' if bytes.get(pos + 1) == Some(&b'*') => pos = block_comment_end(bytes, pos),
            b'/' if bytes.get(pos + 1) == Some(&b'/') => {
                while pos < bytes.len() && bytes[pos] != b'\n' {
                    pos += 1;
                }
            }
            _ => pos += 1,
        }
    }
    pos
}

/// End (exclusive) of the block comment starting at `start` (the end of input if unterminated).
fn block_comment_end(bytes: &[u8], start: usize) -> usize {
    let mut pos = start + 2;
    while pos < bytes.len() {
        if bytes[pos..].starts_with(b"*/") {
            return pos + 2;
        }
        pos += 1;
    }
    bytes.len()
}

/// End (exclusive) of the numeric literal starting at `start`.
fn number_end(bytes: &[u8], start: usize) -> usize {
    let mut pos = start;
    while pos < bytes.len() {
        let byte = bytes[pos];
        let exponent_sign = (byte == b'+' || byte == b'-')
            && matches!(bytes[pos - 1], b'e' | b'E')
            && !bytes[start..].starts_with(b"0x")
            && !bytes[start..].starts_with(b"0X");
        if byte.is_ascii_alphanumeric() || byte == b'.' || byte == b'_' || exponent_sign {
            pos += 1;
        } else {
            break;
        }
    }
    pos
}

/// The directive's name: `version` for `#version 110`, `define` for `# define X`.
pub(crate) fn directive_name(directive: &str) -> &str {
    let after_hash = directive.trim_start().trim_start_matches('#').trim_start();
    let end = after_hash
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(after_hash.len());
    &after_hash[..end]
}

/// The words of a directive after its name, with comments removed:
/// `["110"]` for `#version 110`, `["GL_ARB_foo", ":", "require"]` for an `#extension`.
pub(crate) fn directive_arguments(directive: &str) -> Vec<&str> {
    let name = directive_name(directive);
    let Some(name_at) = directive.find(name).filter(|_| !name.is_empty()) else {
        return Vec::new();
    };
    tokenize(&directive[name_at + name.len()..])
        .into_iter()
        .filter(Token::is_significant)
        .filter(|token| token.text != "\\")
        .map(|token| token.text)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds_and_texts(source: &str) -> Vec<(TokenKind, &str)> {
        tokenize(source)
            .into_iter()
            .map(|token| (token.kind, token.text))
            .collect()
    }

    #[test]
    fn tokens_reassemble_the_source() {
        let source = "#version 110\n// c\nvarying vec4 c; /* x\ny */ void main() { c = 1.5e-3 * .5; }\n\u{e9}";
        let joined: String = tokenize(source).iter().map(|t| t.text).collect();
        assert_eq!(joined, source);
    }

    #[test]
    fn directives_comments_identifiers_and_numbers() {
        use TokenKind::*;
        assert_eq!(
            kinds_and_texts("  #define A \\\n b\nx1 = 2.0e+5;// end"),
            vec![
                (Whitespace, "  "),
                (Directive, "#define A \\\n b"),
                (Whitespace, "\n"),
                (Identifier, "x1"),
                (Whitespace, " "),
                (Punct, "="),
                (Whitespace, " "),
                (Number, "2.0e+5"),
                (Punct, ";"),
                (Comment, "// end"),
            ]
        );
    }

    #[test]
    fn hash_after_code_is_not_a_directive() {
        let tokens = tokenize("a # b");
        assert!(tokens.iter().all(|t| t.kind != TokenKind::Directive));
    }

    #[test]
    fn line_numbers_count_newlines_inside_tokens() {
        let tokens = tokenize("/* a\nb */ x\n#if 1\ny");
        let line_of = |text: &str| tokens.iter().find(|t| t.text == text).map(|t| t.line);
        assert_eq!(line_of("x"), Some(2));
        assert_eq!(line_of("#if 1"), Some(3));
        assert_eq!(line_of("y"), Some(4));
    }

    #[test]
    fn unterminated_comment_runs_to_the_end() {
        assert_eq!(
            kinds_and_texts("a /* b"),
            vec![
                (TokenKind::Identifier, "a"),
                (TokenKind::Whitespace, " "),
                (TokenKind::Comment, "/* b")
            ]
        );
    }

    #[test]
    fn directive_parts() {
        assert_eq!(directive_name("  #  version 110 // x"), "version");
        assert_eq!(directive_arguments("#version 300 es"), vec!["300", "es"]);
        assert_eq!(
            directive_arguments("#extension GL_ARB_foo: require /* c */"),
            vec!["GL_ARB_foo", ":", "require"]
        );
        assert_eq!(directive_arguments("#"), Vec::<&str>::new());
    }
}
