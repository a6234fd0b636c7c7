//! Parsing: the invocation's tokens into a [`Group`] of [`Rule`]s.
//!
//! The input is first split into rules at top-level `;`, with `for` loops expanded by token
//! substitution, so that a syntax error in one rule does not hide the errors of the others.

use proc_macro2::{Delimiter, Span, TokenStream, TokenTree};
use shrew_ops::{AluOp, BaseType, ConvFamily};
use std::fmt;
use syn::parse::{ParseStream, Parser};
use syn::{Attribute, Expr, Ident, Token, Visibility};

/// One macro invocation.
pub struct Group {
    pub attrs: Vec<Attribute>,
    pub vis: Visibility,
    pub name: Ident,
    pub rules: Vec<Rule>,
    /// Errors found while parsing; checking goes on with the rules that parsed.
    pub errors: Vec<syn::Error>,
}

pub struct Rule {
    pub search: Node,
    pub replace: Node,
    pub guard: Option<Expr>,
    /// Where the rule starts.
    pub span: Span,
    /// One direction of an equality `a <=> b`: only the e-graph runs it (the greedy matcher
    /// would undo it with the other direction).
    pub equality: bool,
    /// `#[name = label]`: a name for the rule's functions and test that does not change when
    /// rules are added or moved.
    pub label: Option<Ident>,
    /// `#[wrong]`: the rule is wrong on purpose (for tests of the tools that find wrong rules):
    /// its generated test asserts that the verification rejects it.
    pub wrong: bool,
}

syn::custom_punctuation!(Equivalent, <=>);

/// Which side of a rule a node is on.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Side {
    Search,
    Replace,
}

#[derive(Clone)]
pub enum Node {
    Op(OpNode),
    Var(VarNode),
    Lit(LitNode),
}

#[derive(Copy, Clone, PartialEq, Debug)]
pub enum OpName {
    Op(AluOp),
    Conv(ConvFamily),
}

impl OpName {
    pub fn name(self) -> &'static str {
        match self {
            OpName::Op(op) => op.name(),
            OpName::Conv(f) => f.name(),
        }
    }

    pub fn num_srcs(self) -> usize {
        match self {
            OpName::Op(op) => op.info().num_srcs(),
            OpName::Conv(_) => 1,
        }
    }

    pub fn is_commutative(self) -> bool {
        matches!(self, OpName::Op(op) if op.info().is_commutative())
    }
}

#[derive(Clone)]
pub struct OpNode {
    pub op: OpName,
    pub ident: Ident,
    /// `~op`
    pub inexact: Option<Span>,
    /// `!op`
    pub exact: Option<Span>,
    /// `op@32`
    pub size: Option<(u8, Span)>,
    /// `op[...]`: condition paths and the flags `nsz`, `nnan`, `ninf`, `many_comm`.
    pub conds: Vec<syn::Path>,
    pub flags: Vec<Ident>,
    pub cond_span: Option<Span>,
    pub srcs: Vec<Node>,
}

#[derive(Clone)]
pub struct VarNode {
    pub ident: Ident,
    /// `#a`
    pub is_const: Option<Span>,
    pub size: Option<(u8, Span)>,
    pub ty: Option<(BaseType, Span)>,
    pub conds: Vec<syn::Path>,
    pub cond_span: Option<Span>,
    /// `a.yx`
    pub swizzle: Option<(Vec<u8>, Span)>,
}

#[derive(Copy, Clone, PartialEq, Debug)]
pub enum Literal {
    Int(i64),
    Float(f64),
    Bool(bool),
}

#[derive(Clone)]
pub struct LitNode {
    pub value: Literal,
    pub size: Option<(u8, Span)>,
    pub span: Span,
}

impl Node {
    pub fn span(&self) -> Span {
        match self {
            Node::Op(op) => op.ident.span(),
            Node::Var(var) => var.ident.span(),
            Node::Lit(lit) => lit.span,
        }
    }
}

/// Float-control flags an op node may carry.
pub const FLAGS: [&str; 4] = ["nsz", "nnan", "ninf", "many_comm"];

pub fn parse_group(input: TokenStream) -> syn::Result<Group> {
    let mut tokens: Vec<TokenTree> = input.into_iter().collect();
    let header_end = tokens
        .iter()
        .position(|t| matches!(t, TokenTree::Punct(p) if p.as_char() == ';'))
        .ok_or_else(|| {
            syn::Error::new(
                Span::call_site(),
                "expected a group header: `pub static NAME;`",
            )
        })?;
    let body = tokens.split_off(header_end + 1);
    tokens.pop();
    let (attrs, vis, name) = (|input: ParseStream| {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis: Visibility = input.parse()?;
        input.parse::<Token![static]>()?;
        let name: Ident = input.parse()?;
        Ok((attrs, vis, name))
    })
    .parse2(tokens.into_iter().collect())?;

    let mut errors = Vec::new();
    let mut rules = Vec::new();
    for chunk in split_rules(body, &mut errors) {
        match parse_rule.parse2(chunk) {
            Ok(parsed) => rules.extend(parsed),
            Err(e) => errors.push(e),
        }
    }
    Ok(Group {
        attrs,
        vis,
        name,
        rules,
        errors,
    })
}

/// Splits a token list at top-level `;`, expanding `for` loops.
fn split_rules(tokens: Vec<TokenTree>, errors: &mut Vec<syn::Error>) -> Vec<TokenStream> {
    let mut out = Vec::new();
    let mut current = Vec::new();
    let mut iter = tokens.into_iter().peekable();
    while let Some(tt) = iter.next() {
        match &tt {
            TokenTree::Punct(p) if p.as_char() == ';' => {
                out.push(std::mem::take(&mut current).into_iter().collect());
            }
            TokenTree::Ident(id) if id == "for" && current.is_empty() => {
                let mut header = Vec::new();
                let mut body = None;
                for t in iter.by_ref() {
                    match t {
                        TokenTree::Group(g) if g.delimiter() == Delimiter::Brace => {
                            body = Some(g);
                            break;
                        }
                        t => header.push(t),
                    }
                }
                let Some(body) = body else {
                    errors.push(syn::Error::new(id.span(), "`for` needs a `{ ... }` body"));
                    continue;
                };
                match expand_for(header, body.stream()) {
                    Ok(expanded) => out.extend(split_rules(expanded, errors)),
                    Err(e) => errors.push(e),
                }
            }
            _ => current.push(tt),
        }
    }
    if !current.is_empty() {
        let span = current[0].span();
        errors.push(syn::Error::new(span, "expected `;` after the rule"));
    }
    out
}

/// `for X in [a, b]` or `for (X, Y) in [(a, 1), (b, 2)]`: the body once per item, with the
/// loop identifiers replaced by the item's tokens.
fn expand_for(header: Vec<TokenTree>, body: TokenStream) -> syn::Result<Vec<TokenTree>> {
    let span = header.first().map_or(Span::call_site(), TokenTree::span);
    let bad = || {
        syn::Error::new(
            span,
            "expected `for NAME in [items]` or `for (A, B) in [(..), ..]`",
        )
    };
    let [pattern, TokenTree::Ident(kw_in), TokenTree::Group(list)] = header.as_slice() else {
        return Err(bad());
    };
    if kw_in != "in" || list.delimiter() != Delimiter::Bracket {
        return Err(bad());
    }
    let names: Vec<Ident> = match pattern {
        TokenTree::Ident(id) => vec![id.clone()],
        TokenTree::Group(g) if g.delimiter() == Delimiter::Parenthesis => {
            comma_separated(g.stream())
                .into_iter()
                .map(|item| match item.as_slice() {
                    [TokenTree::Ident(id)] => Ok(id.clone()),
                    _ => Err(bad()),
                })
                .collect::<syn::Result<_>>()?
        }
        _ => return Err(bad()),
    };
    let mut out = Vec::new();
    for item in comma_separated(list.stream()) {
        let span = item_span(&item);
        let values: Vec<Vec<TokenTree>> = if names.len() == 1 {
            vec![item]
        } else {
            match item.as_slice() {
                [TokenTree::Group(g)] if g.delimiter() == Delimiter::Parenthesis => {
                    comma_separated(g.stream())
                }
                _ => return Err(syn::Error::new(span, "expected a tuple")),
            }
        };
        if values.len() != names.len() {
            return Err(syn::Error::new(
                span,
                format!("expected {} values, one per loop name", names.len()),
            ));
        }
        out.extend(substitute(body.clone(), &names, &values));
    }
    Ok(out)
}

fn item_span(item: &[TokenTree]) -> Span {
    item.first().map_or(Span::call_site(), TokenTree::span)
}

fn comma_separated(stream: TokenStream) -> Vec<Vec<TokenTree>> {
    let mut items = vec![Vec::new()];
    for tt in stream {
        match &tt {
            TokenTree::Punct(p) if p.as_char() == ',' => items.push(Vec::new()),
            _ => items.last_mut().expect("never empty").push(tt),
        }
    }
    items.retain(|i| !i.is_empty());
    items
}

fn substitute(body: TokenStream, names: &[Ident], values: &[Vec<TokenTree>]) -> Vec<TokenTree> {
    let mut out = Vec::new();
    for tt in body {
        match tt {
            TokenTree::Ident(ref id) => match names.iter().position(|n| n == id) {
                Some(i) => out.extend(values[i].iter().cloned().map(|mut t| {
                    // Errors in substituted tokens point at the rule's use of the loop name.
                    t.set_span(id.span());
                    t
                })),
                None => out.push(tt),
            },
            TokenTree::Group(g) => {
                let inner = substitute(g.stream(), names, values);
                let mut group = proc_macro2::Group::new(g.delimiter(), inner.into_iter().collect());
                group.set_span(g.span());
                out.push(TokenTree::Group(group));
            }
            tt => out.push(tt),
        }
    }
    out
}

/// A rule `search => replace`, or the two directions of an equality `a <=> b`, optionally
/// after `#[name = label]` and `#[wrong]`.
fn parse_rule(input: ParseStream) -> syn::Result<Vec<Rule>> {
    let (label, wrong) = parse_attributes(input)?;
    let span = input.span();
    let search = parse_node(input)?;
    let equality = input.peek(Equivalent);
    if equality {
        input.parse::<Equivalent>()?;
    } else if input.peek(Token![=>]) {
        input.parse::<Token![=>]>()?;
    } else {
        return Err(input.error("expected `=>` (a rewrite) or `<=>` (an equality)"));
    }
    let replace = parse_node(input)?;
    let guard = if input.peek(Token![if]) {
        input.parse::<Token![if]>()?;
        Some(input.parse::<Expr>()?)
    } else {
        None
    };
    if !input.is_empty() {
        return Err(input.error("expected `if GUARD` or `;` after the replacement"));
    }
    let rule = |search: &Node, replace: &Node| Rule {
        search: search.clone(),
        replace: replace.clone(),
        guard: guard.clone(),
        span,
        equality,
        label: label.clone(),
        wrong,
    };
    let mut rules = vec![rule(&search, &replace)];
    if equality {
        rules.push(rule(&replace, &search));
    }
    Ok(rules)
}

/// The attributes the rule starts with: `#[name = label]` and `#[wrong]`, in any order (`#`
/// followed by an identifier is a constant variable, not an attribute).
fn parse_attributes(input: ParseStream) -> syn::Result<(Option<Ident>, bool)> {
    let (mut label, mut wrong) = (None, false);
    while input.peek(Token![#]) && input.peek2(syn::token::Bracket) {
        input.parse::<Token![#]>()?;
        let content;
        syn::bracketed!(content in input);
        let expected = "expected `#[name = label]` (`label` an identifier) or `#[wrong]`";
        let key: Ident = content
            .parse()
            .map_err(|e| syn::Error::new(e.span(), expected))?;
        if key == "wrong" {
            wrong = true;
        } else if key == "name" {
            content.parse::<Token![=]>()?;
            label = Some(
                content
                    .parse::<Ident>()
                    .map_err(|e| syn::Error::new(e.span(), expected))?,
            );
        } else {
            return Err(syn::Error::new(key.span(), expected));
        }
        if !content.is_empty() {
            return Err(content.error(expected));
        }
    }
    Ok((label, wrong))
}

/// A node. Misplaced markers (`#`, `!`, conditions…) are accepted here and reported by the
/// checker, which knows the side and can report several at once.
fn parse_node(input: ParseStream) -> syn::Result<Node> {
    let tilde = input.parse::<Option<Token![~]>>()?.map(|t| t.span);
    let bang = input.parse::<Option<Token![!]>>()?.map(|t| t.span);
    let hash = input.parse::<Option<Token![#]>>()?.map(|t| t.span);
    if input.peek(Token![-]) || input.peek(syn::Lit) || is_named_constant(input) {
        if let Some(span) = tilde.or(bang).or(hash) {
            return Err(syn::Error::new(span, "constants take no `~`, `!` or `#`"));
        }
        return parse_literal(input).map(Node::Lit);
    }
    let ident: Ident = input.parse()?;
    let size_or_type = parse_size_or_type(input)?;
    let (conds, flags, cond_span) = parse_conditions(input)?;
    if input.peek(syn::token::Paren) {
        let op = resolve_op(&ident)?;
        let content;
        syn::parenthesized!(content in input);
        let mut srcs = Vec::new();
        while !content.is_empty() {
            srcs.push(parse_node(&content)?);
            if !content.is_empty() {
                content.parse::<Token![,]>()?;
            }
        }
        let size = match size_or_type {
            Some(SizeOrType::Type(_, span)) => {
                return Err(syn::Error::new(
                    span,
                    "ops take a bit size (`op@32`), not a type",
                ));
            }
            Some(SizeOrType::Size(bits, span)) => Some((bits, span)),
            None => None,
        };
        if let Some(span) = hash {
            return Err(syn::Error::new(
                span,
                "`#` marks constant variables, not ops",
            ));
        }
        return Ok(Node::Op(OpNode {
            op,
            ident,
            inexact: tilde,
            exact: bang,
            size,
            conds,
            flags,
            cond_span,
            srcs,
        }));
    }
    if resolve_op(&ident).is_ok() {
        return Err(syn::Error::new(
            ident.span(),
            format!("`{ident}` is an opcode: write its sources, `{ident}(...)`"),
        ));
    }
    if let Some(span) = tilde.or(bang) {
        return Err(syn::Error::new(span, "`~` and `!` mark ops, not variables"));
    }
    if let Some(flag) = flags.first() {
        return Err(syn::Error::new(
            flag.span(),
            format!("`{flag}` is a flag of ops, not of variables"),
        ));
    }
    let swizzle = if input.peek(Token![.]) {
        input.parse::<Token![.]>()?;
        let letters: Ident = input.parse()?;
        let comps = shrew_ops::parse_swizzle(&letters.to_string())
            .ok_or_else(|| syn::Error::new(letters.span(), "not a swizzle (`xyzw` or `a`–`p`)"))?;
        Some((comps, letters.span()))
    } else {
        None
    };
    let (size, ty) = match size_or_type {
        Some(SizeOrType::Size(bits, span)) => (Some((bits, span)), None),
        Some(SizeOrType::Type(ty, span)) => (ty.1.map(|b| (b, span)), Some((ty.0, span))),
        None => (None, None),
    };
    Ok(Node::Var(VarNode {
        ident,
        is_const: hash,
        size,
        ty,
        conds,
        cond_span,
        swizzle,
    }))
}

fn is_named_constant(input: ParseStream) -> bool {
    input
        .fork()
        .parse::<Ident>()
        .is_ok_and(|id| id == "NAN" || id == "INF")
}

fn parse_literal(input: ParseStream) -> syn::Result<LitNode> {
    let span = input.span();
    let negative = input.parse::<Option<Token![-]>>()?.is_some();
    let value = if input.peek(syn::Lit) {
        match input.parse::<syn::Lit>()? {
            syn::Lit::Int(i) => {
                no_suffix(i.suffix(), i.span())?;
                let v: u64 = i.base10_parse()?;
                Literal::Int(if negative {
                    (v as i64).wrapping_neg()
                } else {
                    v as i64
                })
            }
            syn::Lit::Float(f) => {
                no_suffix(f.suffix(), f.span())?;
                let v: f64 = f.base10_parse()?;
                Literal::Float(if negative { -v } else { v })
            }
            syn::Lit::Bool(b) if !negative => Literal::Bool(b.value),
            other => {
                return Err(syn::Error::new(
                    other.span(),
                    "expected an integer, float or boolean constant",
                ));
            }
        }
    } else {
        let id: Ident = input.parse()?;
        let v = if id == "NAN" { f64::NAN } else { f64::INFINITY };
        Literal::Float(if negative { -v } else { v })
    };
    let size = match parse_size_or_type(input)? {
        Some(SizeOrType::Size(bits, span)) => Some((bits, span)),
        Some(SizeOrType::Type(_, span)) => {
            return Err(syn::Error::new(
                span,
                "constants take a bit size, not a type",
            ));
        }
        None => None,
    };
    Ok(LitNode { value, size, span })
}

fn no_suffix(suffix: &str, span: Span) -> syn::Result<()> {
    if suffix.is_empty() {
        Ok(())
    } else {
        Err(syn::Error::new(
            span,
            "write sizes as `@N`, not as a literal suffix",
        ))
    }
}

enum SizeOrType {
    Size(u8, Span),
    Type((BaseType, Option<u8>), Span),
}

/// `@32`, `@float`, `@float32`.
fn parse_size_or_type(input: ParseStream) -> syn::Result<Option<SizeOrType>> {
    if !input.peek(Token![@]) {
        return Ok(None);
    }
    input.parse::<Token![@]>()?;
    if input.peek(syn::LitInt) {
        let lit: syn::LitInt = input.parse()?;
        let bits: u8 = lit.base10_parse()?;
        if !shrew_ops::BIT_SIZES.contains(&bits) {
            return Err(syn::Error::new(
                lit.span(),
                "bit sizes are 1, 8, 16, 32 and 64",
            ));
        }
        return Ok(Some(SizeOrType::Size(bits, lit.span())));
    }
    let id: Ident = input.parse()?;
    let text = id.to_string();
    let split = text
        .find(|c: char| c.is_ascii_digit())
        .unwrap_or(text.len());
    let base = match &text[..split] {
        "float" => BaseType::Float,
        "int" => BaseType::Int,
        "uint" => BaseType::Uint,
        "bool" => BaseType::Bool,
        _ => {
            return Err(syn::Error::new(
                id.span(),
                "expected a bit size or a type: float, int, uint, bool (optionally sized)",
            ));
        }
    };
    let bits = if split < text.len() {
        let bits: u8 = text[split..]
            .parse()
            .ok()
            .filter(|b| base.allowed_bit_sizes().contains(b))
            .ok_or_else(|| {
                syn::Error::new(id.span(), format!("{} has no such size", base.name()))
            })?;
        Some(bits)
    } else if base == BaseType::Bool {
        Some(1)
    } else {
        None
    };
    Ok(Some(SizeOrType::Type((base, bits), id.span())))
}

type Conditions = (Vec<syn::Path>, Vec<Ident>, Option<Span>);

/// `[cond, other::cond, nsz]`.
fn parse_conditions(input: ParseStream) -> syn::Result<Conditions> {
    if !input.peek(syn::token::Bracket) {
        return Ok((Vec::new(), Vec::new(), None));
    }
    let content;
    let bracket = syn::bracketed!(content in input);
    let mut conds = Vec::new();
    let mut flags = Vec::new();
    for path in content.parse_terminated(syn::Path::parse_mod_style, Token![,])? {
        match path.get_ident() {
            Some(id) if FLAGS.contains(&id.to_string().as_str()) => flags.push(id.clone()),
            _ => conds.push(path),
        }
    }
    Ok((conds, flags, Some(bracket.span.join())))
}

fn resolve_op(ident: &Ident) -> syn::Result<OpName> {
    let name = ident.to_string();
    if let Some(op) = AluOp::from_name(&name) {
        return Ok(OpName::Op(op));
    }
    if let Some(family) = ConvFamily::from_name(&name) {
        return Ok(OpName::Conv(family));
    }
    let names = AluOp::all()
        .map(|op| op.name())
        .chain(ConvFamily::ALL.iter().map(|f| f.name()));
    let closest = names.min_by_key(|candidate| edit_distance(&name, candidate));
    let hint = match closest {
        Some(c) if edit_distance(&name, c) <= 2 => format!("; did you mean `{c}`?"),
        _ => String::new(),
    };
    Err(syn::Error::new(
        ident.span(),
        format!("unknown opcode `{name}`{hint}"),
    ))
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + (ca != cb) as usize).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

impl Rule {
    /// The guard as written, with token spacing tidied.
    pub fn guard_text(&self) -> Option<String> {
        let guard = self.guard.as_ref()?;
        Some(tidy_tokens(&quote::quote!(#guard).to_string()))
    }
}

// Display: the canonical text of a rule, for doc comments and the metadata table.

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} => {}", self.search, self.replace)?;
        if let Some(guard) = self.guard_text() {
            write!(f, " if {guard}")?;
        }
        Ok(())
    }
}

/// Removes the spaces token printing puts around `.`, after `!` and before `(`.
fn tidy_tokens(text: &str) -> String {
    text.replace(" . ", ".")
        .replace("! ", "!")
        .replace(" (", "(")
        .replace("( ", "(")
        .replace(" )", ")")
        .replace(" ,", ",")
}

fn write_size_and_conds(
    f: &mut fmt::Formatter<'_>,
    size: Option<String>,
    conds: &[syn::Path],
    flags: &[Ident],
) -> fmt::Result {
    if let Some(size) = size {
        write!(f, "@{size}")?;
    }
    if !conds.is_empty() || !flags.is_empty() {
        let names: Vec<String> = conds
            .iter()
            .map(|p| tidy_tokens(&quote::quote!(#p).to_string()).replace(" :: ", "::"))
            .chain(flags.iter().map(Ident::to_string))
            .collect();
        write!(f, "[{}]", names.join(", "))?;
    }
    Ok(())
}

impl fmt::Display for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Node::Op(op) => {
                if op.inexact.is_some() {
                    f.write_str("~")?;
                }
                if op.exact.is_some() {
                    f.write_str("!")?;
                }
                f.write_str(op.op.name())?;
                write_size_and_conds(f, op.size.map(|s| s.0.to_string()), &op.conds, &op.flags)?;
                f.write_str("(")?;
                for (i, src) in op.srcs.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{src}")?;
                }
                f.write_str(")")
            }
            Node::Var(var) => {
                if var.is_const.is_some() {
                    f.write_str("#")?;
                }
                write!(f, "{}", var.ident)?;
                let size = match (var.ty, var.size) {
                    (Some((ty, _)), Some((bits, _))) if ty != BaseType::Bool => {
                        Some(format!("{}{bits}", ty.name()))
                    }
                    (Some((ty, _)), _) => Some(ty.name().to_string()),
                    (None, Some((bits, _))) => Some(bits.to_string()),
                    (None, None) => None,
                };
                write_size_and_conds(f, size, &var.conds, &[])?;
                if let Some((swizzle, _)) = &var.swizzle {
                    write!(f, ".{}", shrew_ops::swizzle_letters(swizzle))?;
                }
                Ok(())
            }
            Node::Lit(lit) => {
                match lit.value {
                    Literal::Int(v) => write!(f, "{v}")?,
                    Literal::Float(v) if v.is_nan() => f.write_str("NAN")?,
                    Literal::Float(v) if v.is_infinite() => {
                        f.write_str(if v < 0.0 { "-INF" } else { "INF" })?
                    }
                    Literal::Float(v) => write!(f, "{v:?}")?,
                    Literal::Bool(b) => write!(f, "{b}")?,
                }
                if let Some((bits, _)) = lit.size {
                    write!(f, "@{bits}")?;
                }
                Ok(())
            }
        }
    }
}
