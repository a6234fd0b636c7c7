shrew_rules_macro::rules! {
    pub static BAD;
    iadd(a@32, b@16) => a;
}

fn main() {}
