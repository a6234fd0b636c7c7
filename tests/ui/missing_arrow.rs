// A rule needs `=>` or `<=>` between its sides.
shrew_rules_macro::rules! {
    pub static BAD;
    iadd(a, 0) = a;
    imul(a, 1) <= a;
}

fn main() {}
