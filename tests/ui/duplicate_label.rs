shrew_rules_macro::rules! {
    pub static BAD;
    #[name = zero] iadd(a, 0) => a;
    #[name = zero] imul(a, 0) => 0;
    #[label = one] imul(a, 1) => a;
}

fn main() {}
