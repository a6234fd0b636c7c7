shrew_rules_macro::rules! {
    pub static BAD;
    iadd(a, b) => iadd(b, a);
    iadd(a, 0) => a;
}

fn main() {}
