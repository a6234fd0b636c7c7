shrew_rules_macro::rules! {
    pub static BAD;
    fmul(a, 1.0) => ~fmul(a, 1.0);
}

fn main() {}
