shrew_rules_macro::rules! {
    pub static BAD;
    flt(a, b) => ieq(0, 1);
}

fn main() {}
