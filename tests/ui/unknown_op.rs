shrew_rules_macro::rules! {
    pub static BAD;
    fadx(a, 0.0) => a;
}

fn main() {}
