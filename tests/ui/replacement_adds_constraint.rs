shrew_rules_macro::rules! {
    pub static BAD;
    bcsel(c, a, 0) => iand(c, a);
}

fn main() {}
