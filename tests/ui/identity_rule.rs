shrew_rules_macro::rules! {
    pub static BAD;
    ~iadd(a, b) => iadd(a, b);
}

fn main() {}
