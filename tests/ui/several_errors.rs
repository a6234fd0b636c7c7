shrew_rules_macro::rules! {
    pub static BAD;
    fadx(a, 0.0) => a;
    iadd(a) => a;
    iadd(a, 0) => b;
    imul(a, 1) => a;
}

fn main() {}
