shrew_rules_macro::rules! {
    pub static BAD;
    iadd(#a, 0) => #a;
}

fn main() {}
