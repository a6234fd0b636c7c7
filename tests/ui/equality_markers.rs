// Each side of an equality is a search and a replacement: markers valid on one side only are
// errors on either, each reported once; a side that is a bare variable cannot be searched for.
shrew_rules_macro::rules! {
    pub static BAD;
    ~fmul(a, fadd(b, c)) <=> fadd(fmul(a, b), fmul(a, c));
    imul(#a, iadd(b, c)) <=> iadd(imul(a, b), imul(a, c));
    iand(a, b[is_not_const]) <=> iand(b, a);
    a <=> iadd(a, 0);
}

fn main() {}
