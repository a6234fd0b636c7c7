//! Parser of the `.shrew` text format: recursive descent over the tokens of [`super::lex`].
//!
//! A function is read in two steps. The first reads its text into instructions that already
//! use the value and block ids written in the text; the second, once the whole file is read,
//! checks that every referenced value and block exists, numbers the instructions that have no
//! result, forces the CFG's node indices to the written block ids, and resolves what may refer
//! forward (calls to functions defined later, struct members by name through deref chains).

use super::lex::{Kind, Pos, Token, lex};
use super::{alu_src_comps, builtin_type, literal};
use crate::ir::*;
use petgraph::stable_graph::{NodeIndex, StableDiGraph};
use shrew_ops::{AluOp, IndexKind, Intrinsic, parse_swizzle};
use std::collections::{HashMap, HashSet};

/// Where and why a text failed to parse. Displays as `file:line:col: message`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}:{col}: {message}")]
pub struct ParseError {
    /// The file name given to [`parse`].
    pub file: String,
    /// 1-based line of the offending token.
    pub line: usize,
    /// 1-based column (in characters) of the offending token.
    pub col: usize,
    /// What was expected, or what is wrong.
    pub message: String,
}

/// Largest value or block id accepted. Ids size the instruction arena and the CFG, so a typo
/// like `%99999999` must be an error rather than a huge allocation.
const MAX_ID: u32 = (1 << 20) - 1;

/// Most array dimensions a type may have.
const MAX_ARRAY_DIMS: usize = 64;

const TERMINATORS: [&str; 4] = ["jump", "branch", "return", "unreachable"];

/// Parses a shader from `.shrew` text; `file` names the source in errors.
pub fn parse(src: &str, file: &str) -> std::result::Result<Shader, ParseError> {
    let toks = lex(src).map_err(|e| ParseError {
        file: file.to_string(),
        line: e.pos.line,
        col: e.pos.col,
        message: e.message,
    })?;
    Parser::new(file, toks).shader_file()
}

type Result<T> = std::result::Result<T, ParseError>;

/// A function as read in the first step.
struct FuncText<'s> {
    name: &'s str,
    name_pos: Pos,
    entry: Option<Pos>,
    params: Vec<ValType>,
    ret: Option<ValType>,
    blocks: Vec<BlockText>,
    insts: Vec<InstText>,
    /// Defined values and blocks, by id.
    values: HashMap<u32, Pos>,
    block_ids: HashSet<u32>,
    /// Every reference, checked once the function is read.
    value_uses: Vec<(u32, Pos)>,
    block_uses: Vec<(u32, Pos)>,
    /// Calls (instruction index, callee name) and named struct members (instruction index,
    /// member name), resolved in the second step.
    calls: Vec<(usize, &'s str, Pos)>,
    members: Vec<(usize, &'s str, Pos)>,
}

struct BlockText {
    id: u32,
    structure: Option<Structure>,
    /// Indices into [`FuncText::insts`].
    insts: Vec<usize>,
    terminator: Terminator,
    succs: Vec<(Edge, BlockId)>,
}

struct InstText {
    /// The written id; instructions without a result get theirs in the second step.
    id: Option<u32>,
    def: Option<ValType>,
    kind: InstKind,
    block: u32,
}

struct Parser<'s> {
    file: &'s str,
    toks: Vec<Token<'s>>,
    at: usize,
    eof: Token<'s>,
    /// The last token of an unfinished last line: it may be cut short, so errors in a function
    /// at it or after it are the end of the file's doing ([`Parser::error`]).
    cut: Option<Token<'s>>,
    /// Whether a function is being read: a file never ends inside one.
    in_function: bool,
    shader: Shader,
    struct_ids: HashMap<&'s str, StructId>,
    var_ids: HashMap<&'s str, VarId>,
}

impl<'s> Parser<'s> {
    fn new(file: &'s str, toks: Vec<Token<'s>>) -> Parser<'s> {
        let eof = toks.last().copied().unwrap_or(Token {
            kind: Kind::Eof,
            text: "",
            pos: Pos { line: 1, col: 1 },
        });
        // The last token, when the last line is unfinished (a closing '}' finishes a file).
        let cut = toks
            .iter()
            .rev()
            .nth(1)
            .filter(|t| !matches!(t.kind, Kind::Newline | Kind::Punct('}')))
            .copied();
        Parser {
            file,
            toks,
            at: 0,
            eof,
            cut,
            in_function: false,
            shader: Shader {
                stage: Stage::Vertex,
                workgroup_size: [1, 1, 1],
                structs: Vec::new(),
                variables: Vec::new(),
                functions: Vec::new(),
                entry: FuncId(0),
            },
            struct_ids: HashMap::new(),
            var_ids: HashMap::new(),
        }
    }

    // ---- Tokens and errors.

    fn peek(&self) -> Token<'s> {
        self.peek_at(0)
    }

    fn peek_at(&self, n: usize) -> Token<'s> {
        self.toks.get(self.at + n).copied().unwrap_or(self.eof)
    }

    fn bump(&mut self) -> Token<'s> {
        let tok = self.peek();
        if tok.kind != Kind::Eof {
            self.at += 1;
        }
        tok
    }

    /// An error at `pos`. A function cut short in a line (`fadd` cut to `fad`) fails at or
    /// after its last token: such errors say the file ends there rather than what the partial
    /// line is not.
    fn error(&self, pos: Pos, message: impl Into<String>) -> ParseError {
        let (pos, message) = match self.cut {
            Some(cut) if self.in_function && (pos == cut.pos || self.peek().kind == Kind::Eof) => (
                self.eof.pos,
                format!("unexpected end of file after '{}'", cut.text),
            ),
            _ => (pos, message.into()),
        };
        ParseError {
            file: self.file.to_string(),
            line: pos.line,
            col: pos.col,
            message,
        }
    }

    /// `expected WHAT, found TOKEN`, at the token.
    fn expected(&self, tok: Token<'s>, what: &str) -> ParseError {
        let message = if tok.kind == Kind::Eof {
            format!("unexpected end of file: expected {what}")
        } else {
            format!("expected {what}, found {}", tok.describe())
        };
        self.error(tok.pos, message)
    }

    fn eat_punct(&mut self, c: char) -> bool {
        let found = self.peek().is_punct(c);
        if found {
            self.bump();
        }
        found
    }

    fn expect_punct(&mut self, c: char, what: &str) -> Result<Token<'s>> {
        let tok = self.bump();
        if tok.is_punct(c) {
            Ok(tok)
        } else {
            Err(self.expected(tok, what))
        }
    }

    fn eat_word(&mut self, word: &str) -> bool {
        let found = self.peek().is_word(word);
        if found {
            self.bump();
        }
        found
    }

    fn expect_word(&mut self, word: &str, what: &str) -> Result<()> {
        let tok = self.bump();
        if tok.is_word(word) {
            Ok(())
        } else {
            Err(self.expected(tok, what))
        }
    }

    fn ident(&mut self, what: &str) -> Result<Token<'s>> {
        let tok = self.bump();
        if tok.kind == Kind::Ident {
            Ok(tok)
        } else {
            Err(self.expected(tok, what))
        }
    }

    /// Parses a `(name=value, ...)` list when one comes next, handing each name to `value`
    /// once its `=` is read; `name` describes the names (`a texture attribute`) and `noun` is
    /// what messages call one (`attribute`). A name given twice is an error. Returns whether
    /// the list was there.
    fn attributes(
        &mut self,
        name: &str,
        noun: &str,
        mut value: impl FnMut(&mut Self, Token<'s>) -> Result<()>,
    ) -> Result<bool> {
        if !self.eat_punct('(') {
            return Ok(false);
        }
        let mut seen = HashSet::new();
        loop {
            let attr = self.ident(name)?;
            if !seen.insert(attr.text) {
                return Err(self.error(attr.pos, format!("{noun} '{}' given twice", attr.text)));
            }
            self.expect_punct('=', &format!("'=' after the {noun} name"))?;
            value(self, attr)?;
            if self.eat_punct(')') {
                return Ok(true);
            }
            self.expect_punct(',', &format!("',' or ')' after an {noun}"))?;
        }
    }

    fn number<T: std::str::FromStr>(&mut self, what: &str) -> Result<T> {
        let tok = self.bump();
        match tok.text.parse() {
            Ok(n) if tok.kind == Kind::Number => Ok(n),
            _ => Err(self.expected(tok, what)),
        }
    }

    /// Ends a line inside a function: a newline (the end of the file is never one there, as
    /// the function is not closed yet).
    fn expect_eol(&mut self, what: &str) -> Result<()> {
        if self.peek().kind == Kind::Newline {
            self.bump();
            Ok(())
        } else {
            Err(self.expected(self.peek(), what))
        }
    }

    /// Ends a line outside functions: a newline, or the end of the file.
    fn expect_eol_or_eof(&mut self, what: &str) -> Result<()> {
        if self.peek().kind == Kind::Eof {
            Ok(())
        } else {
            self.expect_eol(what)
        }
    }

    fn skip_newlines(&mut self) {
        while self.peek().kind == Kind::Newline {
            self.bump();
        }
    }

    /// Skips newlines inside braces (struct declarations may span lines).
    fn eat_punct_across_lines(&mut self, c: char) -> bool {
        self.skip_newlines();
        self.eat_punct(c)
    }

    // ---- Declarations.

    fn shader_file(mut self) -> Result<Shader> {
        self.skip_newlines();
        self.expect_word("shader", "'shader STAGE' at the start of the file")?;
        let tok = self.bump();
        self.shader.stage = (tok.kind == Kind::Ident)
            .then(|| Stage::from_name(tok.text))
            .flatten()
            .ok_or_else(|| {
                self.expected(
                    tok,
                    &format!("a stage ({})", names(&Stage::ALL, Stage::name)),
                )
            })?;
        if self.eat_punct('(') {
            self.expect_word("workgroup_size", "'workgroup_size'")?;
            self.expect_punct('=', "'=' after 'workgroup_size'")?;
            for i in 0..3 {
                if i > 0 {
                    self.expect_punct(',', "',' between workgroup sizes")?;
                }
                self.shader.workgroup_size[i] = self.number("a workgroup size")?;
            }
            self.expect_punct(')', "')' after the workgroup size")?;
        }
        self.expect_eol_or_eof("end of line after the shader header")?;
        let mut funcs = Vec::new();
        loop {
            self.skip_newlines();
            let tok = self.peek();
            match (tok.kind, tok.text) {
                // A file ends after its functions: before any, it is cut short.
                (Kind::Eof, _) if !funcs.is_empty() => break,
                (Kind::Ident, "struct") => self.struct_decl()?,
                (Kind::Ident, "var") => self.var_decl()?,
                (Kind::Ident, "fn" | "entry") => funcs.push(self.function()?),
                _ => return Err(self.expected(tok, "'struct', 'var', 'fn' or 'entry fn'")),
            }
        }
        self.finish(funcs)
    }

    fn struct_decl(&mut self) -> Result<()> {
        self.bump();
        let name = self.ident("a struct name")?;
        if self.struct_ids.contains_key(name.text) {
            return Err(self.error(name.pos, format!("struct {} declared twice", name.text)));
        }
        if super::is_type_keyword(name.text) {
            return Err(self.error(
                name.pos,
                format!(
                    "'{}' already names a type; choose another struct name",
                    name.text
                ),
            ));
        }
        self.expect_punct('{', "'{' after the struct name")?;
        let mut members: Vec<Member> = Vec::new();
        if !self.eat_punct_across_lines('}') {
            loop {
                let member = self.ident("a member name")?;
                if members.iter().any(|m| m.name == member.text) {
                    return Err(self.error(
                        member.pos,
                        format!("member '{}' declared twice", member.text),
                    ));
                }
                self.expect_punct(':', "':' after the member name")?;
                let ty = self.ty()?;
                let offset = if self.eat_word("offset") {
                    Some(self.number("a byte offset")?)
                } else {
                    None
                };
                members.push(Member {
                    name: member.text.to_string(),
                    ty,
                    offset,
                });
                if self.eat_punct_across_lines('}') {
                    break;
                }
                self.expect_punct(',', "',' or '}' after a member")?;
                self.skip_newlines();
            }
        }
        self.expect_eol_or_eof("end of line after the struct")?;
        let id = self.shader.add_struct(StructType {
            name: name.text.to_string(),
            members,
        });
        self.struct_ids.insert(name.text, id);
        Ok(())
    }

    fn var_decl(&mut self) -> Result<()> {
        self.bump();
        let tok = self.bump();
        let mode = (tok.kind == Kind::Ident)
            .then(|| Mode::from_name(tok.text))
            .flatten()
            .ok_or_else(|| {
                self.expected(tok, &format!("a mode ({})", names(&Mode::ALL, Mode::name)))
            })?;
        let ty = self.ty()?;
        let name = self.bump();
        if name.kind != Kind::Var {
            return Err(self.expected(name, "a variable name like '@color'"));
        }
        let name_text = name.text.get(1..).unwrap_or_default();
        if self.var_ids.contains_key(name_text) {
            return Err(self.error(name.pos, format!("variable {} declared twice", name.text)));
        }
        let mut var = Variable::new(name_text, mode, ty);
        self.attributes("a variable attribute", "attribute", |p, attr| {
            match attr.text {
                "location" => var.location = Some(p.number("a location")?),
                "binding" => var.binding = Some(p.number("a binding")?),
                "desc_set" => var.desc_set = Some(p.number("a descriptor set")?),
                "builtin" => {
                    let tok = p.bump();
                    var.builtin = Some(Builtin::from_name(tok.text).ok_or_else(|| {
                        p.expected(
                            tok,
                            &format!("a builtin ({})", names(&Builtin::ALL, Builtin::name)),
                        )
                    })?);
                }
                "interp" => {
                    let tok = p.bump();
                    var.interp = Interp::from_name(tok.text).ok_or_else(|| {
                        p.expected(tok, "an interpolation (smooth, flat, noperspective)")
                    })?;
                }
                "array_of_blocks" | "atomic_counters" => {
                    let tok = p.bump();
                    let flag = match tok.text {
                        "true" => true,
                        "false" => false,
                        _ => return Err(p.expected(tok, "true or false")),
                    };
                    match attr.text {
                        "array_of_blocks" => var.array_of_blocks = flag,
                        _ => var.atomic_counters = flag,
                    }
                }
                _ => {
                    return Err(p.error(
                        attr.pos,
                        format!(
                            "unknown variable attribute '{}' (expected location, binding, \
                         desc_set, builtin, interp, array_of_blocks or atomic_counters)",
                            attr.text
                        ),
                    ));
                }
            }
            Ok(())
        })?;
        if self.eat_punct('=') {
            var.init = Some(self.initializer(name, &var.ty)?);
        }
        self.expect_eol_or_eof("end of line after the variable")?;
        let id = self.shader.add_variable(var);
        self.var_ids.insert(name_text, id);
        Ok(())
    }

    fn ty(&mut self) -> Result<Type> {
        let tok = self.bump();
        if tok.kind != Kind::Ident {
            return Err(self.expected(tok, "a type"));
        }
        let base = match tok.text {
            "image" => {
                self.expect_punct('(', "'(' after 'image'")?;
                let dim = self.dim()?;
                let arrayed = self.eat_word("array");
                self.expect_punct(',', "',' before the base type")?;
                let base = self.base_type()?;
                self.expect_punct(')', "')' after the base type")?;
                Type::Image { dim, arrayed, base }
            }
            "texture" => {
                self.expect_punct('(', "'(' after 'texture'")?;
                let dim = self.dim()?;
                let arrayed = self.eat_word("array");
                let shadow = self.eat_word("shadow");
                self.expect_punct(',', "',' before the base type")?;
                let base = self.base_type()?;
                self.expect_punct(')', "')' after the base type")?;
                Type::Texture {
                    dim,
                    arrayed,
                    shadow,
                    base,
                }
            }
            "sampler" => {
                let shadow = self.eat_punct('(');
                if shadow {
                    self.expect_word("shadow", "'shadow'")?;
                    self.expect_punct(')', "')' after 'shadow'")?;
                }
                Type::Sampler { shadow }
            }
            word => match builtin_type(word) {
                Some(ty) => ty,
                None => Type::Struct(
                    *self
                        .struct_ids
                        .get(word)
                        .ok_or_else(|| self.error(tok.pos, format!("unknown type '{word}'")))?,
                ),
            },
        };
        // Dimensions read outermost first, so the last one is the innermost array.
        let mut dims = Vec::new();
        while self.peek().is_punct('[') {
            let open = self.bump();
            if dims.len() == MAX_ARRAY_DIMS {
                return Err(self.error(
                    open.pos,
                    format!("too many array dimensions (at most {MAX_ARRAY_DIMS})"),
                ));
            }
            let len = if self.peek().kind == Kind::Number {
                self.number("an array length")?
            } else {
                0
            };
            let stride = if self.eat_word("stride") {
                self.number("an array stride")?
            } else {
                0
            };
            self.expect_punct(']', "']' after the array length")?;
            dims.push((len, stride));
        }
        Ok(dims
            .into_iter()
            .rev()
            .fold(base, |elem, (len, stride)| Type::Array {
                elem: Box::new(elem),
                len,
                stride,
            }))
    }

    fn dim(&mut self) -> Result<Dim> {
        let tok = self.bump();
        matches!(tok.kind, Kind::Ident | Kind::Number)
            .then(|| Dim::from_name(tok.text))
            .flatten()
            .ok_or_else(|| {
                let all: Vec<_> = Dim::ALL.iter().map(|d| d.name()).collect();
                self.expected(tok, &format!("a dimension ({})", all.join(", ")))
            })
    }

    fn base_type(&mut self) -> Result<shrew_ops::BaseType> {
        let tok = self.bump();
        parse_base(tok.text)
            .filter(|_| tok.kind == Kind::Ident)
            .ok_or_else(|| self.expected(tok, "a base type (float, int, uint, bool)"))
    }

    /// A value shape: `BITS` or `BITSxCOMPS`.
    fn shape(&mut self) -> Result<ValType> {
        let tok = self.bump();
        if tok.kind != Kind::Number {
            return Err(self.expected(tok, "a value shape like '32' or '32x4'"));
        }
        let (bits, comps) = tok.text.split_once('x').unwrap_or((tok.text, "1"));
        let invalid = || {
            self.error(
                tok.pos,
                format!(
                    "invalid value shape '{}' (expected like '32' or '32x4')",
                    tok.text
                ),
            )
        };
        let bits: u8 = bits.parse().map_err(|_| invalid())?;
        let comps: u8 = comps.parse().map_err(|_| invalid())?;
        if !shrew_ops::BIT_SIZES.contains(&bits) {
            return Err(self.error(
                tok.pos,
                format!("invalid bit size {bits} (expected 1, 8, 16, 32 or 64)"),
            ));
        }
        if !shrew_ops::is_valid_component_count(comps as usize) {
            return Err(self.error(
                tok.pos,
                format!("invalid component count {comps} (expected 1 to 5, 8 or 16)"),
            ));
        }
        Ok(ValType::new(bits, comps))
    }

    // ---- Functions and blocks.

    fn function(&mut self) -> Result<FuncText<'s>> {
        self.in_function = true;
        let first = self.peek();
        let entry = self.eat_word("entry").then_some(first.pos);
        self.expect_word("fn", "'fn'")?;
        let name = self.ident("a function name")?;
        self.expect_punct('(', "'(' after the function name")?;
        let mut params = Vec::new();
        if !self.eat_punct(')') {
            loop {
                params.push(self.shape()?);
                if self.eat_punct(')') {
                    break;
                }
                self.expect_punct(',', "',' or ')' after a parameter")?;
            }
        }
        let ret = if self.peek().kind == Kind::Arrow {
            self.bump();
            Some(self.shape()?)
        } else {
            None
        };
        self.expect_punct('{', "'{' after the function signature")?;
        self.expect_eol("end of line after '{'")?;
        let mut f = FuncText {
            name: name.text,
            name_pos: name.pos,
            entry,
            params,
            ret,
            blocks: Vec::new(),
            insts: Vec::new(),
            values: HashMap::new(),
            block_ids: HashSet::new(),
            value_uses: Vec::new(),
            block_uses: Vec::new(),
            calls: Vec::new(),
            members: Vec::new(),
        };
        loop {
            self.skip_newlines();
            let tok = self.peek();
            if tok.is_punct('}') {
                self.bump();
                if f.blocks.is_empty() {
                    return Err(self.error(tok.pos, format!("function '{}' has no blocks", f.name)));
                }
                break;
            }
            self.block(&mut f)?;
        }
        self.in_function = false;
        self.expect_eol_or_eof("end of line after '}'")?;
        Ok(f)
    }

    /// The block id of a `bN` token.
    fn block_id(&self, tok: Token<'s>) -> Result<Option<u32>> {
        let digits = match tok.text.strip_prefix('b') {
            Some(d) if tok.kind == Kind::Ident && !d.is_empty() => d,
            _ => return Ok(None),
        };
        if !digits.bytes().all(|c| c.is_ascii_digit()) {
            return Ok(None);
        }
        match digits.parse::<u32>() {
            Ok(id) if id <= MAX_ID => Ok(Some(id)),
            _ => Err(self.error(
                tok.pos,
                format!("block id {} is too large (at most b{MAX_ID})", tok.text),
            )),
        }
    }

    fn at_label(&self) -> bool {
        matches!(self.block_id(self.peek()), Ok(Some(_))) && self.peek_at(1).is_punct(':')
    }

    fn block_ref(&mut self, f: &mut FuncText<'s>, what: &str) -> Result<BlockId> {
        let tok = self.bump();
        let id = self
            .block_id(tok)?
            .ok_or_else(|| self.expected(tok, what))?;
        f.block_uses.push((id, tok.pos));
        Ok(NodeIndex::new(id as usize))
    }

    fn value_ref(&mut self, f: &mut FuncText<'s>, what: &str) -> Result<Value> {
        let tok = self.bump();
        if tok.kind != Kind::Value {
            return Err(self.expected(tok, what));
        }
        let id = self.value_id(tok)?;
        f.value_uses.push((id, tok.pos));
        Ok(Value(id))
    }

    fn value_id(&self, tok: Token<'s>) -> Result<u32> {
        match tok.text.get(1..).unwrap_or_default().parse::<u32>() {
            Ok(id) if id <= MAX_ID => Ok(id),
            _ => Err(self.error(
                tok.pos,
                format!("value id {} is too large (at most %{MAX_ID})", tok.text),
            )),
        }
    }

    fn block(&mut self, f: &mut FuncText<'s>) -> Result<()> {
        let label = self.peek();
        let id = match self.block_id(label)? {
            Some(id) if self.peek_at(1).is_punct(':') => id,
            _ => {
                let what = match f.blocks.last() {
                    Some(b) => format!(
                        "a block label like 'b0:' or '}}' after the terminator of b{}",
                        b.id
                    ),
                    None => "a block label like 'b0:'".to_string(),
                };
                return Err(self.expected(label, &what));
            }
        };
        self.bump();
        self.bump();
        if !f.block_ids.insert(id) {
            return Err(self.error(label.pos, format!("block b{id} defined twice")));
        }
        let structure = if self.eat_word("selection") {
            self.expect_word("merge", "'merge' after 'selection'")?;
            self.expect_punct('=', "'=' after 'merge'")?;
            let merge = self.block_ref(f, "a merge block like 'b3'")?;
            Some(Structure::Selection { merge })
        } else if self.eat_word("loop") {
            self.expect_word("merge", "'merge' after 'loop'")?;
            self.expect_punct('=', "'=' after 'merge'")?;
            let merge = self.block_ref(f, "a merge block like 'b3'")?;
            self.expect_word("continue", "'continue' after the merge block")?;
            self.expect_punct('=', "'=' after 'continue'")?;
            let cont = self.block_ref(f, "a continue block like 'b2'")?;
            Some(Structure::Loop { merge, cont })
        } else {
            None
        };
        self.expect_eol(if structure.is_some() {
            "end of line after the block structure"
        } else {
            "'selection', 'loop' or end of line after the block label"
        })?;
        let index = f.blocks.len();
        f.blocks.push(BlockText {
            id,
            structure,
            insts: Vec::new(),
            terminator: Terminator::Unreachable,
            succs: Vec::new(),
        });
        loop {
            self.skip_newlines();
            let tok = self.peek();
            match tok.kind {
                Kind::Number => self.instruction(f, index)?,
                Kind::Ident if TERMINATORS.contains(&tok.text) => {
                    return self.terminator(f, index);
                }
                Kind::Ident if !self.at_label() => self.instruction(f, index)?,
                _ => {
                    return Err(self.expected(
                        tok,
                        &format!("an instruction or a terminator to end block b{id}"),
                    ));
                }
            }
        }
    }

    fn terminator(&mut self, f: &mut FuncText<'s>, block: usize) -> Result<()> {
        let tok = self.bump();
        let (terminator, succs) = match tok.text {
            "jump" => {
                let target = self.block_ref(f, "a target block like 'b1'")?;
                (Terminator::Jump, vec![(Edge::Jump, target)])
            }
            "branch" => {
                let cond = self.value_ref(f, "a condition like '%3'")?;
                self.expect_punct(',', "',' after the condition")?;
                let then = self.block_ref(f, "a target block like 'b1'")?;
                self.expect_punct(',', "',' after the first target")?;
                let els = self.block_ref(f, "a target block like 'b2'")?;
                (
                    Terminator::Branch { cond },
                    vec![(Edge::True, then), (Edge::False, els)],
                )
            }
            "return" => {
                let value = if self.peek().kind == Kind::Value {
                    Some(self.value_ref(f, "a value")?)
                } else {
                    None
                };
                (Terminator::Return { value }, Vec::new())
            }
            _ => (Terminator::Unreachable, Vec::new()),
        };
        self.expect_eol("end of line after the terminator")?;
        if let Some(b) = f.blocks.get_mut(block) {
            b.terminator = terminator;
            b.succs = succs;
        }
        Ok(())
    }

    // ---- Instructions.

    fn instruction(&mut self, f: &mut FuncText<'s>, block: usize) -> Result<()> {
        let (id, def) = if self.peek().kind == Kind::Number {
            let shape = self.shape()?;
            let tok = self.bump();
            if tok.kind != Kind::Value {
                return Err(self.expected(tok, "a value like '%3' after the shape"));
            }
            let id = self.value_id(tok)?;
            if f.values.insert(id, tok.pos).is_some() {
                return Err(self.error(tok.pos, format!("value %{id} defined twice")));
            }
            self.expect_punct('=', "'=' after the value")?;
            (Some(id), Some(shape))
        } else {
            (None, None)
        };
        let op = self.ident("an opcode")?;
        let index = f.insts.len();
        let kind = match op.text {
            "load_const" => self.load_const(op, def)?,
            "undef" => {
                self.expect_eol("end of line after 'undef'")?;
                InstKind::Undef
            }
            "phi" => self.phi(f)?,
            "deref_var" => {
                let tok = self.bump();
                if tok.kind != Kind::Var {
                    return Err(self.expected(tok, "a variable like '@color'"));
                }
                let var = *self
                    .var_ids
                    .get(tok.text.get(1..).unwrap_or_default())
                    .ok_or_else(|| self.error(tok.pos, format!("unknown variable {}", tok.text)))?;
                self.expect_eol("end of line after the variable")?;
                InstKind::Deref(Deref::Var(var))
            }
            "deref_array" => {
                let parent = self.value_ref(f, "the parent deref")?;
                self.expect_punct('[', "'[' after the parent deref")?;
                let index = self.value_ref(f, "an index value")?;
                self.expect_punct(']', "']' after the index")?;
                self.expect_eol("end of line after the deref")?;
                InstKind::Deref(Deref::Array { parent, index })
            }
            "deref_struct" => {
                let parent = self.value_ref(f, "the parent deref")?;
                self.expect_punct('.', "'.' after the parent deref")?;
                let tok = self.bump();
                let member = match tok.kind {
                    Kind::Number => tok
                        .text
                        .parse()
                        .map_err(|_| self.expected(tok, "a member name or number"))?,
                    Kind::Ident => {
                        f.members.push((index, tok.text, tok.pos));
                        0
                    }
                    _ => return Err(self.expected(tok, "a member name or number")),
                };
                self.expect_eol("end of line after the deref")?;
                InstKind::Deref(Deref::Struct { parent, member })
            }
            "call" => {
                let callee = self.ident("a function name")?;
                f.calls.push((index, callee.text, callee.pos));
                self.expect_punct('(', "'(' after the function name")?;
                let mut args = Vec::new();
                if !self.eat_punct(')') {
                    loop {
                        args.push(self.value_ref(f, "an argument like '%3'")?);
                        if self.eat_punct(')') {
                            break;
                        }
                        self.expect_punct(',', "',' or ')' after an argument")?;
                    }
                }
                self.expect_eol("end of line after the call")?;
                InstKind::Call {
                    func: FuncId(0),
                    args,
                }
            }
            name if TERMINATORS.contains(&name) => {
                return Err(self.error(
                    op.pos,
                    format!("'{name}' is a terminator and defines no value"),
                ));
            }
            name => {
                if let Some(alu) = AluOp::from_name(name) {
                    self.alu(f, op, alu, def)?
                } else if let Some(tex) = TexOp::from_name(name) {
                    self.tex(f, tex)?
                } else if let Some(intrinsic) = Intrinsic::from_name(name) {
                    self.intrinsic(f, op, intrinsic)?
                } else {
                    return Err(self.error(op.pos, format!("unknown opcode '{name}'")));
                }
            }
        };
        let block_id = f.blocks.get(block).map_or(0, |b| b.id);
        f.insts.push(InstText {
            id,
            def,
            kind,
            block: block_id,
        });
        if let Some(b) = f.blocks.get_mut(block) {
            b.insts.push(index);
        }
        Ok(())
    }

    /// A variable's initializer: `(v, ...)`, one literal per scalar of its type.
    fn initializer(&mut self, name: Token<'s>, ty: &Type) -> Result<Vec<u64>> {
        let scalars = crate::interp::memory::try_flatten_type(&self.shader, ty)
            .map_err(|e| self.error(name.pos, format!("{} has no initializer: {e}", name.text)))?;
        self.expect_punct('(', "'(' before the initializer's values")?;
        let mut values = Vec::with_capacity(scalars.len());
        loop {
            let bits = scalars.get(values.len()).map_or(32, |s| s.bits);
            values.push(self.literal(bits)?);
            if self.eat_punct(')') {
                break;
            }
            self.expect_punct(',', "',' or ')' after a value")?;
        }
        if values.len() != scalars.len() {
            return Err(self.error(
                name.pos,
                format!(
                    "{} has {} scalars, but its initializer gives {} values",
                    name.text,
                    scalars.len(),
                    values.len()
                ),
            ));
        }
        Ok(values)
    }

    fn load_const(&mut self, op: Token<'s>, def: Option<ValType>) -> Result<InstKind> {
        let Some(def) = def else {
            return Err(self.error(
                op.pos,
                "load_const must define a value, like '32 %0 = load_const (1.0)'",
            ));
        };
        self.expect_punct('(', "'(' before the constant's components")?;
        let mut comps = Vec::new();
        loop {
            comps.push(self.literal(def.bits)?);
            if self.eat_punct(')') {
                break;
            }
            self.expect_punct(',', "',' or ')' after a component")?;
        }
        self.expect_eol("end of line after the constant")?;
        if comps.len() != def.comps as usize {
            return Err(self.error(
                op.pos,
                format!(
                    "a {def} constant needs {} components, found {}",
                    def.comps,
                    comps.len()
                ),
            ));
        }
        Ok(InstKind::Const(comps))
    }

    fn literal(&mut self, bits: u8) -> Result<u64> {
        let tok = self.bump();
        let value = match tok.kind {
            Kind::Number => literal::parse_number(tok.text, bits),
            Kind::Ident => literal::parse_word(tok.text, false, bits),
            Kind::Punct('-') if self.peek().kind == Kind::Ident => {
                literal::parse_word(self.bump().text, true, bits)
            }
            _ => {
                return Err(self.expected(tok, "a constant (a number, true, false, inf or nan)"));
            }
        };
        value.map_err(|message| self.error(tok.pos, message))
    }

    fn phi(&mut self, f: &mut FuncText<'s>) -> Result<InstKind> {
        let mut srcs = Vec::new();
        if self.peek().kind == Kind::Ident {
            loop {
                let block = self.block_ref(f, "a predecessor block like 'b1'")?;
                self.expect_punct(':', "':' after the predecessor block")?;
                let value = self.value_ref(f, "a value like '%3'")?;
                srcs.push((block, value));
                if !self.eat_punct(',') {
                    break;
                }
            }
        }
        self.expect_eol("',' or end of line after a phi source")?;
        Ok(InstKind::Phi(srcs))
    }

    /// `%a, %b, …` (possibly none) of intrinsics.
    fn value_list(&mut self, f: &mut FuncText<'s>) -> Result<Vec<Value>> {
        let mut values = Vec::new();
        if self.peek().kind == Kind::Value {
            loop {
                values.push(self.value_ref(f, "a source like '%3'")?);
                if !self.eat_punct(',') {
                    break;
                }
            }
        }
        Ok(values)
    }

    fn alu(
        &mut self,
        f: &mut FuncText<'s>,
        op_tok: Token<'s>,
        op: AluOp,
        def: Option<ValType>,
    ) -> Result<InstKind> {
        let mut srcs = Vec::new();
        if self.peek().kind == Kind::Value {
            loop {
                let value = self.value_ref(f, "a source like '%3'")?;
                let mut src = AluSrc::new(value);
                if self.eat_punct('.') {
                    let tok = self.bump();
                    let swizzle = (tok.kind == Kind::Ident)
                        .then(|| parse_swizzle(tok.text))
                        .flatten()
                        .ok_or_else(|| self.expected(tok, "a swizzle like 'xyzw'"))?;
                    let read = alu_src_comps(op, srcs.len(), def);
                    if swizzle.len() != read {
                        return Err(self.error(
                            tok.pos,
                            format!(
                                "swizzle '{}' has {} components but {op} reads {read} from \
                                 this source",
                                tok.text,
                                swizzle.len()
                            ),
                        ));
                    }
                    src = AluSrc::swizzled(value, &swizzle);
                }
                srcs.push(src);
                if !self.eat_punct(',') {
                    break;
                }
            }
        }
        let mut exact = false;
        let mut fp = FpFlags::default();
        let has_flags = self.eat_punct('{');
        if has_flags {
            loop {
                let tok = self.bump();
                match tok.text {
                    "exact" if tok.kind == Kind::Ident => exact = true,
                    name => match FpFlags::NAMES.iter().position(|n| *n == name) {
                        Some(bit) if tok.kind == Kind::Ident => fp.0 |= 1 << bit,
                        _ => {
                            return Err(self.expected(
                                tok,
                                "a flag (exact, preserve_sz, preserve_nan, preserve_inf)",
                            ));
                        }
                    },
                }
                if self.eat_punct('}') {
                    break;
                }
                self.expect_punct(',', "',' or '}' after a flag")?;
            }
        }
        self.expect_eol(if has_flags {
            "end of line after the flags"
        } else if srcs.is_empty() {
            "a source like '%3'"
        } else {
            "',', '{' or end of line after source"
        })?;
        let expected = op.info().srcs.len();
        if srcs.len() != expected {
            return Err(self.error(
                op_tok.pos,
                format!(
                    "wrong number of sources for {op}: expected {expected}, found {}",
                    srcs.len()
                ),
            ));
        }
        Ok(InstKind::Alu(Alu {
            op,
            srcs,
            exact,
            fp,
        }))
    }

    fn intrinsic(
        &mut self,
        f: &mut FuncText<'s>,
        op_tok: Token<'s>,
        op: Intrinsic,
    ) -> Result<InstKind> {
        let mut inst = IntrinsicInst::new(op, self.value_list(f)?);
        let has_indices = self.attributes("an index name", "index", |p, name| {
            let kind = IndexKind::from_name(name.text)
                .ok_or_else(|| p.error(name.pos, format!("unknown index '{}'", name.text)))?;
            if !op.info().has_index(kind) {
                return Err(p.error(name.pos, format!("{op} has no index '{}'", name.text)));
            }
            // Flag sets are several tokens (`acquire|release`).
            let start = p.peek();
            let mut text = String::new();
            while matches!(p.peek().kind, Kind::Ident | Kind::Number | Kind::Punct('|')) {
                text.push_str(p.bump().text);
            }
            let value = kind.parse_value(&text).ok_or_else(|| {
                if text.is_empty() {
                    p.expected(start, &format!("a value for index '{}'", name.text))
                } else {
                    p.error(
                        start.pos,
                        format!("invalid value '{text}' for index '{}'", name.text),
                    )
                }
            })?;
            inst.set_index(kind, value);
            Ok(())
        })?;
        self.expect_eol(if has_indices {
            "end of line after the indices"
        } else if inst.srcs.is_empty() {
            "a source like '%3', '(' or end of line"
        } else {
            "',', '(' or end of line after source"
        })?;
        let expected = op.info().srcs.len();
        if inst.srcs.len() != expected {
            return Err(self.error(
                op_tok.pos,
                format!(
                    "wrong number of sources for {op}: expected {expected}, found {}",
                    inst.srcs.len()
                ),
            ));
        }
        Ok(InstKind::Intrinsic(inst))
    }

    fn tex(&mut self, f: &mut FuncText<'s>, op: TexOp) -> Result<InstKind> {
        let dim = self.dim()?;
        let mut tex = Tex {
            op,
            dim,
            is_array: self.eat_word("array"),
            is_shadow: self.eat_word("shadow"),
            dest_type: shrew_ops::BaseType::Float,
            texture: 0,
            sampler: 0,
            component: 0,
            srcs: Vec::new(),
        };
        if self.peek().kind == Kind::Value {
            loop {
                let value = self.value_ref(f, "a source like '%3'")?;
                self.expect_punct('(', "'(' and the role of the source, like '(coord)'")?;
                let tok = self.bump();
                let role = (tok.kind == Kind::Ident)
                    .then(|| TexSrc::from_name(tok.text))
                    .flatten()
                    .ok_or_else(|| {
                        self.expected(
                            tok,
                            &format!("a source role ({})", names(&TexSrc::ALL, TexSrc::name)),
                        )
                    })?;
                self.expect_punct(')', "')' after the source role")?;
                tex.srcs.push((role, value));
                if !self.eat_punct(',') {
                    break;
                }
            }
        }
        let has_attrs = self.attributes("a texture attribute", "attribute", |p, attr| {
            match attr.text {
                "texture" => tex.texture = p.number("a texture index")?,
                "sampler" => tex.sampler = p.number("a sampler index")?,
                "component" => tex.component = p.number("a component number")?,
                "dest_type" => tex.dest_type = p.base_type()?,
                _ => {
                    return Err(p.error(
                        attr.pos,
                        format!(
                            "unknown texture attribute '{}' (expected texture, sampler, \
                         dest_type or component)",
                            attr.text
                        ),
                    ));
                }
            }
            Ok(())
        })?;
        self.expect_eol(if has_attrs {
            "end of line after the attributes"
        } else {
            "',', '(' or end of line after source"
        })?;
        Ok(InstKind::Tex(tex))
    }

    // ---- Second step.

    fn finish(mut self, funcs: Vec<FuncText<'s>>) -> Result<Shader> {
        let mut func_ids = HashMap::new();
        let mut entry = None;
        for (index, f) in funcs.iter().enumerate() {
            if func_ids.insert(f.name, FuncId(index as u32)).is_some() {
                return Err(self.error(f.name_pos, format!("function '{}' defined twice", f.name)));
            }
            if let Some(pos) = f.entry {
                if entry.is_some() {
                    return Err(self.error(pos, "only one function may be marked 'entry'"));
                }
                entry = Some(index);
            }
        }
        let entry =
            entry.ok_or_else(|| self.error(self.eof.pos, "no function is marked 'entry'"))?;
        self.shader.entry = FuncId(entry as u32);
        for f in funcs {
            let func = self.build_function(f, &func_ids)?;
            self.shader.functions.push(func);
        }
        Ok(self.shader)
    }

    fn build_function(
        &self,
        mut f: FuncText<'s>,
        func_ids: &HashMap<&str, FuncId>,
    ) -> Result<Function> {
        // Report the first dangling reference in the text.
        let dangling = f
            .block_uses
            .iter()
            .filter(|(id, _)| !f.block_ids.contains(id))
            .map(|&(id, pos)| (pos, format!("unknown block b{id}")))
            .chain(
                f.value_uses
                    .iter()
                    .filter(|(id, _)| !f.values.contains_key(id))
                    .map(|&(id, pos)| (pos, format!("undefined value %{id}"))),
            )
            .chain(
                f.calls
                    .iter()
                    .filter(|(_, name, _)| !func_ids.contains_key(name))
                    .map(|&(_, name, pos)| (pos, format!("unknown function '{name}'"))),
            )
            .min_by_key(|(pos, _)| *pos);
        if let Some((pos, message)) = dangling {
            return Err(self.error(pos, message));
        }
        for &(index, name, _) in &f.calls {
            if let (Some(inst), Some(&id)) = (f.insts.get_mut(index), func_ids.get(name))
                && let InstKind::Call { func, .. } = &mut inst.kind
            {
                *func = id;
            }
        }

        // Instructions without a result are numbered after the largest written id.
        let mut next = f.values.keys().max().map_or(0, |&max| max + 1);
        let ids: Vec<u32> = f
            .insts
            .iter()
            .map(|inst| {
                inst.id.unwrap_or_else(|| {
                    next += 1;
                    next - 1
                })
            })
            .collect();
        let mut insts: Vec<Option<Inst>> = vec![None; next as usize];

        // Node indices are the written block ids: add nodes up to the largest id, then remove
        // the ones the text does not define.
        let max_block = f.blocks.iter().map(|b| b.id).max().unwrap_or(0);
        let mut cfg = StableDiGraph::with_capacity(max_block as usize + 1, 2 * f.blocks.len());
        for _ in 0..=max_block {
            cfg.add_node(Block::default());
        }
        for id in 0..=max_block {
            if !f.block_ids.contains(&id) {
                cfg.remove_node(NodeIndex::new(id as usize));
            }
        }
        for b in &f.blocks {
            let node = NodeIndex::new(b.id as usize);
            for &(edge, target) in &b.succs {
                cfg.add_edge(node, target, edge);
            }
            if let Some(block) = cfg.node_weight_mut(node) {
                block.insts = b
                    .insts
                    .iter()
                    .filter_map(|&i| ids.get(i).map(|&id| Value(id)))
                    .collect();
                block.terminator = Some(b.terminator.clone());
                block.structure = b.structure;
            }
        }
        for (text, &id) in f.insts.drain(..).zip(&ids) {
            if let Some(slot) = insts.get_mut(id as usize) {
                *slot = Some(Inst {
                    kind: text.kind,
                    def: text.def,
                    block: NodeIndex::new(text.block as usize),
                });
            }
        }
        let entry = NodeIndex::new(f.blocks.first().map_or(0, |b| b.id) as usize);
        let mut func = Function {
            name: f.name.to_string(),
            params: f.params,
            ret: f.ret,
            insts,
            cfg,
            entry,
            provenance: None,
        };
        let members: Vec<(Value, &str, Pos)> = f
            .members
            .iter()
            .filter_map(|&(index, name, pos)| Some((Value(*ids.get(index)?), name, pos)))
            .collect();
        self.resolve_members(&mut func, &members)?;
        Ok(func)
    }

    /// Turns member names into member numbers. A member's struct is the type its parent deref
    /// points to, found by walking the chain from the variable; named members met on the way
    /// are resolved as the walk reaches them, so chains may be written in any order.
    fn resolve_members(&self, func: &mut Function, members: &[(Value, &str, Pos)]) -> Result<()> {
        let mut pending: HashMap<Value, (&str, Pos)> = members
            .iter()
            .map(|&(v, name, pos)| (v, (name, pos)))
            .collect();
        for &(v, name, pos) in members {
            if !pending.contains_key(&v) {
                continue;
            }
            let Some((var, steps)) = deref_chain(func, v) else {
                return Err(self.error(
                    pos,
                    format!("cannot look up member '{name}': {v} is not in a deref chain"),
                ));
            };
            let mut ty = self
                .shader
                .variables
                .get(var.0 as usize)
                .map(|var| var.ty.clone())
                .ok_or_else(|| self.error(pos, format!("cannot look up member '{name}'")))?;
            for step in steps {
                // `deref_chain` only returns deref steps.
                let Some(Inst {
                    kind: InstKind::Deref(deref),
                    ..
                }) = func.insts.get_mut(step.index()).and_then(Option::as_mut)
                else {
                    continue;
                };
                if let (Some((name, pos)), Deref::Struct { member, .. }) =
                    (pending.remove(&step), &mut *deref)
                {
                    *member = self.member_index(&ty, name, pos)?;
                }
                ty = self.shader.deref_step_type(&ty, deref).ok_or_else(|| {
                    self.error(
                        pos,
                        format!(
                            "cannot look up member '{name}': {step} does not apply to {}",
                            self.shader.type_name(&ty)
                        ),
                    )
                })?;
            }
        }
        Ok(())
    }

    fn member_index(&self, ty: &Type, name: &str, pos: Pos) -> Result<u32> {
        let Type::Struct(id) = ty else {
            return Err(self.error(
                pos,
                format!(
                    "member '{name}' of {}, which is not a struct",
                    self.shader.type_name(ty)
                ),
            ));
        };
        let st = self
            .shader
            .structs
            .get(id.0 as usize)
            .ok_or_else(|| self.error(pos, format!("unknown struct of member '{name}'")))?;
        st.members
            .iter()
            .position(|m| m.name == name)
            .map(|i| i as u32)
            .ok_or_else(|| self.error(pos, format!("struct {} has no member '{name}'", st.name)))
    }
}

/// `a, b, c`: a vocabulary's names, for error messages.
fn names<T: Copy>(all: &[T], name: fn(T) -> &'static str) -> String {
    all.iter().map(|&x| name(x)).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::print;
    use proptest::prelude::*;

    /// The grammar example of the module documentation.
    fn doc_example() -> String {
        let doc = include_str!("mod.rs");
        let start = doc.find("```text\n").unwrap() + "```text\n".len();
        let end = start + doc[start..].find("//! ```").unwrap();
        doc[start..end]
            .lines()
            .map(|l| {
                l.strip_prefix("//! ")
                    .unwrap_or(l.trim_start_matches("//!"))
            })
            .map(|l| format!("{l}\n"))
            .collect()
    }

    #[test]
    fn the_documented_example_round_trips() {
        let text = doc_example();
        let shader = parse(&text, "doc").unwrap();
        assert_eq!(print(&shader), text);
        let main = shader.entry_function();
        // Ids are kept: written ones as written, the others numbered after the largest.
        assert_eq!(main.name, "main");
        assert_eq!(main.insts.len(), 14);
        assert!(main.insts[6].is_none());
        let discard = &main.insts[12].as_ref().unwrap().kind;
        assert!(matches!(discard, InstKind::Intrinsic(i) if i.op == Intrinsic::Discard));
        assert_eq!(main.cfg.node_count(), 7);
    }

    #[test]
    fn block_ids_and_member_names_are_resolved() {
        let text = "\
shader compute (workgroup_size=8,4,1)
struct Inner { a: u32, b: u32x2 }
struct Outer { pad: f32, inner: Inner[2] }
var ssbo Outer @buf (binding=3)

entry fn main() {
b5:
    32 %9 = deref_struct %7.b
    32 %3 = load_const (1)
    32 %7 = deref_array %6[%3]
    32 %6 = deref_struct %5.inner
    32 %5 = deref_var @buf
    32x2 %10 = load_deref %9
    jump b2
b2:
    unreachable
}
";
        let shader = parse(text, "t").unwrap();
        assert_eq!(shader.workgroup_size, [8, 4, 1]);
        let f = shader.entry_function();
        assert_eq!(f.entry.index(), 5);
        assert_eq!(
            f.blocks().iter().map(|b| b.index()).collect::<Vec<_>>(),
            [2, 5]
        );
        let member = |v: u32| match &f.inst(Value(v)).kind {
            InstKind::Deref(Deref::Struct { member, .. }) => *member,
            _ => panic!(),
        };
        assert_eq!((member(9), member(6)), (1, 1));
        // The entry block prints first even though b2 has the smaller id.
        let printed = print(&shader);
        assert!(printed.contains("{\nb5:\n"), "{printed}");
        assert_eq!(print(&parse(&printed, "t").unwrap()), printed);
    }

    #[test]
    fn op_names_do_not_collide() {
        let mut seen = HashSet::new();
        let special = [
            "load_const",
            "undef",
            "phi",
            "deref_var",
            "deref_array",
            "deref_struct",
            "call",
        ];
        let names = special
            .into_iter()
            .chain(TERMINATORS)
            .chain(AluOp::all().map(|op| op.name()))
            .chain(TexOp::ALL.map(|op| op.name()))
            .chain(Intrinsic::all().map(|op| op.name()));
        for name in names {
            assert!(seen.insert(name), "{name} names two operations");
        }
    }

    /// The error for a function body of `lines` (whose first line is line 6).
    fn body_error(lines: &str) -> String {
        let text = format!(
            "shader fragment\nstruct S {{ a: f32, b: u32 }}\nvar ssbo S @s\n\nentry fn main() {{\n{lines}\n}}\n"
        );
        error(&text)
    }

    fn error(text: &str) -> String {
        match parse(text, "t.shrew") {
            Ok(_) => panic!("parsed:\n{text}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn reports_lexical_and_header_errors() {
        assert_eq!(
            error("shader vertex $"),
            "t.shrew:1:15: unexpected character '$'"
        );
        assert_eq!(
            error("\n\nfn main() {"),
            "t.shrew:3:1: expected 'shader STAGE' at the start of the file, found 'fn'"
        );
        assert_eq!(
            error("shader pixel\n"),
            "t.shrew:1:8: expected a stage (vertex, tess_ctrl, tess_eval, geometry, fragment, \
             compute), found 'pixel'"
        );
        assert_eq!(
            error("shader compute (workgroup_size=8,8)"),
            "t.shrew:1:35: expected ',' between workgroup sizes, found ')'"
        );
        assert_eq!(
            error("shader vertex\nconst x"),
            "t.shrew:2:1: expected 'struct', 'var', 'fn' or 'entry fn', found 'const'"
        );
    }

    /// A shipped example cut anywhere inside its function fails at the end of the file, saying
    /// so (never as an unknown opcode or a malformed line); cut before, it fails all the same.
    #[test]
    fn truncated_files_report_the_end_of_the_file() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
        let mut files = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "shrew") {
                continue;
            }
            files += 1;
            let text = std::fs::read_to_string(&path).unwrap();
            let function = text.find("entry fn").unwrap() + "entry fn".len();
            let end = text.rfind('}').unwrap() + 1;
            for cut in (0..text.len()).filter(|&i| text.is_char_boundary(i)) {
                let cut_text = &text[..cut];
                let result = parse(cut_text, "t.shrew");
                if cut >= end {
                    assert!(result.is_ok(), "{}: cut at {cut}", path.display());
                    continue;
                }
                let e = result.expect_err(cut_text);
                if cut >= function {
                    let line = cut_text.matches('\n').count() + 1;
                    let col = cut_text.len() - cut_text.rfind('\n').map_or(0, |n| n + 1) + 1;
                    assert!(
                        e.message.starts_with("unexpected end of file")
                            && (e.line, e.col) == (line, col),
                        "{}: cut at {cut}: {e}",
                        path.display()
                    );
                }
            }
        }
        assert_eq!(files, 4);
    }

    #[test]
    fn reports_declaration_errors() {
        assert_eq!(
            error("shader vertex\nvar uniform vec4 @v"),
            "t.shrew:2:13: unknown type 'vec4'"
        );
        assert_eq!(
            error("shader vertex\nvar uniform f32 @v\nvar uniform f32 @v\n"),
            "t.shrew:3:17: variable @v declared twice"
        );
        assert_eq!(
            error("shader vertex\nstruct S {}\nstruct S { a: f32 }"),
            "t.shrew:3:8: struct S declared twice"
        );
        assert_eq!(
            error("shader vertex\nstruct u32x2 {}"),
            "t.shrew:2:8: 'u32x2' already names a type; choose another struct name"
        );
        assert_eq!(
            error("shader vertex\nstruct S { a: f32, a: f32 }"),
            "t.shrew:2:20: member 'a' declared twice"
        );
        assert_eq!(
            error("shader vertex\nvar shader_out f32x4 @p (builtin=position, location=1, lod=2)"),
            "t.shrew:2:56: unknown variable attribute 'lod' (expected location, binding, \
             desc_set, builtin, interp, array_of_blocks or atomic_counters)"
        );
        assert_eq!(
            error("shader vertex\nvar uniform image(2d, half) @i"),
            "t.shrew:2:23: expected a base type (float, int, uint, bool), found 'half'"
        );
        assert_eq!(
            error(&format!(
                "shader vertex\nvar uniform f32{} @a",
                "[2]".repeat(65)
            )),
            "t.shrew:2:208: too many array dimensions (at most 64)"
        );
    }

    #[test]
    fn reports_function_errors() {
        assert_eq!(
            error("shader vertex\nfn f() {\nb0:\n    return\n}\n"),
            "t.shrew:6:1: no function is marked 'entry'"
        );
        assert_eq!(
            error(
                "shader vertex\nentry fn f() {\nb0:\n    return\n}\nentry fn g() {\nb0:\n    return\n}"
            ),
            "t.shrew:6:1: only one function may be marked 'entry'"
        );
        assert_eq!(
            error(
                "shader vertex\nentry fn f() {\nb0:\n    return\n}\nfn f() {\nb0:\n    return\n}"
            ),
            "t.shrew:6:4: function 'f' defined twice"
        );
        assert_eq!(
            error("shader vertex\nentry fn f() {\n}"),
            "t.shrew:3:1: function 'f' has no blocks"
        );
        assert_eq!(
            error("shader vertex\nentry fn f(32x3, 7) {"),
            "t.shrew:2:18: invalid bit size 7 (expected 1, 8, 16, 32 or 64)"
        );
    }

    #[test]
    fn reports_block_errors() {
        assert_eq!(
            body_error("b0:\n    32 %0 = undef\nb1:\n    return"),
            "t.shrew:8:1: expected an instruction or a terminator to end block b0, found 'b1'"
        );
        assert_eq!(
            body_error("b0:\n    return\n    32 %0 = undef"),
            "t.shrew:8:5: expected a block label like 'b0:' or '}' after the terminator of b0, \
             found '32'"
        );
        assert_eq!(
            body_error("b0:\n    jump b1\nb1:\n    jump b0\nb1:\n    return"),
            "t.shrew:10:1: block b1 defined twice"
        );
        assert_eq!(
            body_error("b0: selection merge=b9\n    return"),
            "t.shrew:6:21: unknown block b9"
        );
        assert_eq!(
            body_error("b0: loop merge=b0 cont=b0\n    return"),
            "t.shrew:6:19: expected 'continue' after the merge block, found 'cont'"
        );
        assert_eq!(
            body_error("b0:\n    return %1 %2"),
            "t.shrew:7:15: expected end of line after the terminator, found '%2'"
        );
        assert_eq!(
            body_error("b2000000:\n    return"),
            "t.shrew:6:1: block id b2000000 is too large (at most b1048575)"
        );
    }

    #[test]
    fn reports_value_errors() {
        assert_eq!(
            body_error("b0:\n    32 %0 = undef\n    32 %1 = iadd %0, %7\n    return"),
            "t.shrew:8:22: undefined value %7"
        );
        assert_eq!(
            body_error("b0:\n    32 %3 = undef\n    32 %3 = undef\n    return"),
            "t.shrew:8:8: value %3 defined twice"
        );
        assert_eq!(
            body_error("b0:\n    32 %99999999 = undef\n    return"),
            "t.shrew:7:8: value id %99999999 is too large (at most %1048575)"
        );
        assert_eq!(
            body_error("b0:\n    32x6 %0 = undef\n    return"),
            "t.shrew:7:5: invalid component count 6 (expected 1 to 5, 8 or 16)"
        );
        assert_eq!(
            body_error("b0:\n    32y4 %0 = undef\n    return"),
            "t.shrew:7:5: invalid value shape '32y4' (expected like '32' or '32x4')"
        );
        assert_eq!(
            body_error("b0:\n    32 = undef\n    return"),
            "t.shrew:7:8: expected a value like '%3' after the shape, found '='"
        );
    }

    #[test]
    fn reports_alu_errors() {
        let def = "b0:\n    32x4 %0 = undef\n";
        assert_eq!(
            body_error(&format!("{def}    32 %1 = fadd3 %0.x, %0.y\n    return")),
            "t.shrew:8:13: unknown opcode 'fadd3'"
        );
        assert_eq!(
            body_error(&format!(
                "{def}    32 %1 = fadd %0.x, %0.y, %0.z\n    return"
            )),
            "t.shrew:8:13: wrong number of sources for fadd: expected 2, found 3"
        );
        assert_eq!(
            body_error(&format!("{def}    32 %1 = fadd %0.x, %0.y foo\n    return")),
            "t.shrew:8:29: expected ',', '{' or end of line after source, found 'foo'"
        );
        assert_eq!(
            body_error(&format!("{def}    32x2 %1 = fadd %0.x, %0.yz\n    return")),
            "t.shrew:8:23: swizzle 'x' has 1 components but fadd reads 2 from this source"
        );
        assert_eq!(
            body_error(&format!("{def}    32 %1 = fneg %0.q\n    return")),
            "t.shrew:8:21: expected a swizzle like 'xyzw', found 'q'"
        );
        assert_eq!(
            body_error(&format!("{def}    32 %1 = fneg %0.x {{fast}}\n    return")),
            "t.shrew:8:24: expected a flag (exact, preserve_sz, preserve_nan, preserve_inf), \
             found 'fast'"
        );
        assert_eq!(
            body_error(&format!("{def}    32 %1 = return\n    return")),
            "t.shrew:8:13: 'return' is a terminator and defines no value"
        );
    }

    #[test]
    fn reports_constant_errors() {
        assert_eq!(
            body_error("b0:\n    32x2 %0 = load_const (1.0)\n    return"),
            "t.shrew:7:15: a 32x2 constant needs 2 components, found 1"
        );
        assert_eq!(
            body_error("b0:\n    8 %0 = load_const (300)\n    return"),
            "t.shrew:7:24: literal '300' does not fit in 8 bits"
        );
        assert_eq!(
            body_error("b0:\n    8 %0 = load_const (-inf)\n    return"),
            "t.shrew:7:24: float literal '-inf' needs a 16-, 32- or 64-bit value, not 8-bit"
        );
        assert_eq!(
            body_error("b0:\n    32 %0 = load_const (%1)\n    return"),
            "t.shrew:7:25: expected a constant (a number, true, false, inf or nan), found '%1'"
        );
        assert_eq!(
            body_error("b0:\n    load_const (1)\n    return"),
            "t.shrew:7:5: load_const must define a value, like '32 %0 = load_const (1.0)'"
        );
    }

    #[test]
    fn reports_intrinsic_errors() {
        let def = "b0:\n    32 %0 = deref_struct %1.b\n    32 %1 = deref_var @s\n";
        assert_eq!(
            body_error(&format!(
                "{def}    32 %2 = load_deref %1 (base=1)\n    return"
            )),
            "t.shrew:9:28: load_deref has no index 'base'"
        );
        assert_eq!(
            body_error(&format!(
                "{def}    32 %2 = load_deref %1 (bogus=1)\n    return"
            )),
            "t.shrew:9:28: unknown index 'bogus'"
        );
        assert_eq!(
            body_error(&format!(
                "{def}    store_deref %0, %0 (write_mask=xq)\n    return"
            )),
            "t.shrew:9:36: invalid value 'xq' for index 'write_mask'"
        );
        assert_eq!(
            body_error(&format!(
                "{def}    store_deref %0, %0 (write_mask=x, write_mask=y)\n    return"
            )),
            "t.shrew:9:39: index 'write_mask' given twice"
        );
        assert_eq!(
            body_error(&format!("{def}    store_deref %0\n    return")),
            "t.shrew:9:5: wrong number of sources for store_deref: expected 2, found 1"
        );
        assert_eq!(
            body_error(&format!("{def}    store_deref %0, %0 bar\n    return")),
            "t.shrew:9:24: expected ',', '(' or end of line after source, found 'bar'"
        );
    }

    #[test]
    fn reports_deref_call_and_texture_errors() {
        assert_eq!(
            body_error("b0:\n    32 %0 = deref_var @x\n    return"),
            "t.shrew:7:23: unknown variable @x"
        );
        assert_eq!(
            body_error("b0:\n    32 %0 = deref_var @s\n    32 %1 = deref_struct %0.c\n    return"),
            "t.shrew:8:29: struct S has no member 'c'"
        );
        assert_eq!(
            body_error(
                "b0:\n    32 %0 = deref_var @s\n    32 %1 = deref_struct %0.a\n    \
                 32 %2 = deref_struct %1.a\n    return"
            ),
            "t.shrew:9:29: member 'a' of f32, which is not a struct"
        );
        assert_eq!(
            body_error("b0:\n    32 %0 = undef\n    32 %1 = deref_struct %0.a\n    return"),
            "t.shrew:8:29: cannot look up member 'a': %1 is not in a deref chain"
        );
        assert_eq!(
            body_error("b0:\n    call nothing()\n    return"),
            "t.shrew:7:10: unknown function 'nothing'"
        );
        assert_eq!(
            body_error("b0:\n    32 %0 = undef\n    32x4 %1 = tex 2d %0 (uv)\n    return"),
            "t.shrew:8:26: expected a source role (coord, projector, comparator, offset, bias, \
             lod, min_lod, ddx, ddy, ms_index, texture_deref, sampler_deref, texture_offset, \
             sampler_offset), found 'uv'"
        );
        assert_eq!(
            body_error("b0:\n    32x4 %1 = txs 4d\n    return"),
            "t.shrew:7:19: expected a dimension (1d, 2d, 3d, cube, rect, buf, ms, subpass), \
             found '4d'"
        );
        assert_eq!(
            body_error("b0:\n    32x4 %1 = txs 2d (lod=3)\n    return"),
            "t.shrew:7:23: unknown texture attribute 'lod' (expected texture, sampler, \
             dest_type or component)"
        );
    }

    /// Parsing returns `Ok` or `Err` and never panics; whatever parses also prints, and the
    /// printed text parses back to itself.
    fn parse_print_parse(text: &str) {
        if let Ok(shader) = parse(text, "fuzz") {
            let printed = print(&shader);
            let again = parse(&printed, "printed").unwrap_or_else(|e| panic!("{e}\n{printed}"));
            assert_eq!(print(&again), printed);
        }
    }

    /// Words and punctuation of the format, so random text gets past the first tokens.
    const VOCAB: &[&str] = &[
        "shader",
        "fragment",
        "compute",
        "entry",
        "fn",
        "main",
        "(",
        ")",
        "{",
        "}",
        "\n",
        "\n",
        "\n",
        "b0",
        "b1",
        "b2",
        "b3",
        ":",
        "%0",
        "%1",
        "%2",
        "%3",
        "=",
        "32",
        "1",
        "32x4",
        "32x2",
        "16",
        "64",
        ",",
        "fadd",
        "fdot2",
        "vec2",
        "load_const",
        "1.0",
        "-0.0",
        "0x7f",
        "-",
        "inf",
        "nan",
        "true",
        "jump",
        "branch",
        "return",
        "unreachable",
        "phi",
        "undef",
        "deref_var",
        "@v",
        "@s",
        "var",
        "uniform",
        "ssbo",
        "f32x4",
        "u32[]",
        "struct",
        "S",
        "a",
        "[",
        "]",
        "deref_struct",
        "deref_array",
        ".",
        "x",
        "xyzw",
        "store_deref",
        "load_deref",
        "write_mask",
        "xy",
        "barrier",
        "acquire|release",
        "tex",
        "2d",
        "array",
        "coord",
        "texture=1",
        "call",
        "selection",
        "merge",
        "loop",
        "continue",
        "->",
        "{exact}",
        "// c\n",
    ];

    const PRELUDE: &str =
        "shader fragment\nstruct S { a: f32, b: u32x2 }\nvar ssbo S[4] @s\nvar uniform f32x4 @v\n";

    /// A second valid seed with the constructs the documented example lacks.
    const SEED: &str = "\
shader compute (workgroup_size=2,1,1)
struct S { a: f32, b: u32x2 offset 16 }
var ssbo S[4] @s (binding=0)
var uniform texture(2d array, float) @t (binding=1)
var ubo S[2] @blocks (binding=2, array_of_blocks=true)
var ssbo u32[2] @counters (binding=0, atomic_counters=true)

entry fn main() {
b0:
    32 %0 = load_local_invocation_index
    32 %1 = deref_var @s                            // ssbo S[4]
    32 %2 = deref_array %1[%0]                      // ssbo S
    32 %3 = deref_struct %2.b                       // ssbo u32x2
    32x2 %4 = load_deref %3
    32 %5 = deref_var @t                            // uniform texture(2d array, float)
    32x3 %6 = u2f32 %4.xyx
    32x4 %7 = tex 2d array %5 (texture_deref), %6 (coord) (dest_type=uint)
    32x2 %8 = ushr %7.zw, %4.xx
    store_deref %3, %8 (write_mask=y, access=coherent|restrict)
    barrier (execution_scope=workgroup, memory_semantics=acquire|release)
    64 %9 = load_const (0x7ff0000000000000)
    return
}
";

    #[test]
    fn the_fuzz_seed_round_trips() {
        let shader = parse(SEED, "seed").unwrap();
        assert_eq!(print(&shader), SEED);
    }

    /// One edit of valid text that mostly keeps it parseable, so that fuzzing reaches the
    /// second step and the printer: replace a token by another of the same kind or by a word of
    /// the vocabulary, delete a token, delete a line, or move a line.
    fn mutate(text: &mut String, at: prop::sample::Index, op: u8, pick: prop::sample::Index) {
        let spans: Vec<(usize, usize, Kind)> = match lex(text) {
            Ok(toks) => toks
                .iter()
                .filter(|t| t.kind != Kind::Eof)
                .map(|t| {
                    (
                        t.text.as_ptr() as usize - text.as_ptr() as usize,
                        t.text.len(),
                        t.kind,
                    )
                })
                .collect(),
            Err(_) => return,
        };
        if spans.is_empty() {
            return;
        }
        let (start, len, kind) = spans[at.index(spans.len())];
        match op {
            // Same-kind swaps are the likeliest to keep the text parseable, so they are common.
            0..=3 => {
                let same: Vec<_> = spans.iter().filter(|s| s.2 == kind).collect();
                let (from, n, _) = *same[pick.index(same.len())];
                let replacement = text[from..from + n].to_string();
                text.replace_range(start..start + len, &replacement);
            }
            4 => text.replace_range(start..start + len, VOCAB[pick.index(VOCAB.len())]),
            5 => text.replace_range(start..start + len, ""),
            6 => text.replace_range(line_of(text, start), ""),
            _ => {
                let line = text[line_of(text, start)].to_string();
                text.replace_range(line_of(text, start), "");
                let to = spans[pick.index(spans.len())].0.min(text.len());
                text.insert_str(line_of(text, to).start, &line);
            }
        }
    }

    /// The byte range of the line holding `offset`, newline included.
    fn line_of(text: &str, offset: usize) -> std::ops::Range<usize> {
        let begin = text[..offset].rfind('\n').map_or(0, |p| p + 1);
        let end = text[offset..]
            .find('\n')
            .map_or(text.len(), |p| offset + p + 1);
        begin..end
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        #[test]
        fn random_text_never_panics(text in "\\PC{0,300}") {
            parse_print_parse(&text);
        }

        #[test]
        fn random_tokens_never_panic(
            words in prop::collection::vec(prop::sample::select(VOCAB), 0..150),
        ) {
            parse_print_parse(&format!("{PRELUDE}{}", words.join(" ")));
        }

        #[test]
        fn mutated_valid_text_never_panics(
            seed in any::<bool>(),
            edits in prop::collection::vec((any::<prop::sample::Index>(), 0..8u8, any::<prop::sample::Index>()), 1..4),
        ) {
            let mut text = if seed { SEED.to_string() } else { doc_example() };
            for (at, op, pick) in edits {
                mutate(&mut text, at, op, pick);
            }
            parse_print_parse(&text);
        }
    }
}
