shrew_rules_macro::rules! {
    pub static BAD;
    iadd(iadd(a, b), iadd(imul(c, d), imul(e, f))) => a;
}

fn main() {}
