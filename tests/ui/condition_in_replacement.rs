shrew_rules_macro::rules! {
    pub static BAD;
    iadd(a[is_not_const], 0) => a[is_not_const];
}

fn main() {}
