shrew_rules_macro::rules! {
    pub static BAD;
    fadd(a) => a;
}

fn main() {}
