//! Placeholder: replaced by the conditions library.

use super::rewriter::{Ctx, Src};
use crate::ir::{InstKind, Value};

pub fn is_structural(name: &str) -> bool {
    matches!(name, "is_used_once" | "is_not_const")
}

pub fn is_not_const(cx: &Ctx, src: &Src) -> bool {
    !matches!(
        cx.func.get_inst(src.value).map(|i| &i.kind),
        Some(InstKind::Const(_))
    )
}

pub fn is_used_once(cx: &Ctx, v: Value) -> bool {
    cx.uses.count(v) == 1
}
