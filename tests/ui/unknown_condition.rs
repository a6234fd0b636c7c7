shrew_rules_macro::rules! {
    pub static BAD;
    iadd(a[is_tall], 0) => a;
}

fn main() {}
