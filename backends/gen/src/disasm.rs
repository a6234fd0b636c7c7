//! Assembly text in the style of Mesa's Gen disassembler:
//! `[(±fN.S[.pred])] opcode[.sat][.cmod[.fN.S]](exec) dst src0 [src1 [src2]] { ctrl };`, with
//! the operands in columns 16, 32, 48 and 64 (one space when a column is already passed).
//! Jump targets print as byte offsets (`JIP: +32`) unless the caller names them, as a program
//! listing does with `LABELn`.

use crate::encoding::{Dst, IDENTITY_SWIZZLE, Inst, Reg, Src};
use crate::fields::{Descriptor, desc};
use crate::isa::{
    ARF_ACCUMULATOR, ARF_ADDRESS, ARF_FLAG, ARF_NOTIFICATION, ARF_NULL, Gen, Opcode, RegFile, Type,
    restricted_float,
};
use crate::sampler::SamplerMsg;
use shrew_engine::provenance::Origin;
use std::sync::Arc;

/// The names of the Align1 predicate controls 2–13.
const PREDICATE_SUFFIXES: [&str; 14] = [
    "", "", ".anyv", ".allv", ".any2h", ".all2h", ".any4h", ".all4h", ".any8h", ".all8h",
    ".any16h", ".all16h", ".any32h", ".all32h",
];

/// The name the disassembler gives a shared function.
pub fn sfid_name(sfid: u8) -> &'static str {
    match sfid {
        0 => "null",
        2 => "sampler",
        3 => "gateway",
        4 => "sampler",
        5 => "render",
        6 => "urb",
        7 => "thread_spawner",
        9 => "const",
        10 => "data",
        11 => "pixel interp",
        12 => "dp data 1",
        _ => "unknown",
    }
}

/// The decoded function control of a send's descriptor, as Mesa's disassembler prints it, for
/// the messages the backend emits; `None` for the others (printed as raw bits).
fn message_text(sfid: u8, descriptor: Descriptor, hw: Gen) -> Option<String> {
    let get = |field| descriptor.get(field);
    let surface = get(desc::Surface::of(hw).binding_table_index);
    let message_type = desc::data_port_message_type(sfid, descriptor, hw);
    let untyped = desc::UntypedPort::of(hw);
    let typed = desc::TypedPort::of(hw);
    match sfid {
        desc::Sampler::SFID => {
            let f = desc::Sampler::of(hw);
            let name = SamplerMsg::from_code(get(f.message_type), hw)?.name();
            let simd = desc::Sampler::SIMD_NAMES[get(f.simd_mode) as usize];
            let sampler = get(f.sampler_index);
            Some(format!(
                "{name} {simd} Surface = {surface} Sampler = {sampler}"
            ))
        }
        desc::Urb::SFID if get(desc::Urb::of(hw).opcode) == desc::Urb::SIMD8_WRITE => Some(
            format!("{} SIMD8 write", get(desc::Urb::of(hw).global_offset)),
        ),
        desc::Urb::SFID if get(desc::Urb::of(hw).opcode) == desc::Urb::WRITE_HWORD => {
            let interleave = get(desc::Urb::of(hw).swizzle_control) == desc::Urb::INTERLEAVE;
            Some(format!(
                "{} write HWord{}",
                get(desc::Urb::of(hw).global_offset),
                if interleave { " interleave" } else { "" }
            ))
        }
        desc::Urb::SFID if get(desc::Urb::of(hw).opcode) == desc::Urb::SIMD8_READ => Some(format!(
            "{} SIMD8 read",
            get(desc::Urb::of(hw).global_offset)
        )),
        desc::RenderCache::SFID if message_type == Some(desc::RenderCache::RENDER_TARGET_WRITE) => {
            let f = desc::RenderTargetWrite::of(hw);
            let subtype = desc::RenderTargetWrite::SUBTYPE_NAMES.get(get(f.subtype) as usize)?;
            let high = if descriptor.bit(f.slot_group) {
                " Hi"
            } else {
                ""
            };
            let last = if descriptor.bit(f.last_render_target) {
                " LastRT"
            } else {
                ""
            };
            Some(format!(
                "RT write {subtype}{high}{last} Surface = {surface}"
            ))
        }
        desc::Gateway::SFID if get(desc::Gateway::of(hw).subfunction) == desc::Gateway::BARRIER => {
            Some("(barrier msg)".into())
        }
        desc::DataCache::SFID if message_type == Some(desc::DataCache::MEMORY_FENCE) => {
            Some(format!("( DC mfence, Surface = {surface})"))
        }
        desc::DataCache::SFID
            if matches!(
                message_type,
                Some(
                    desc::DataCache::DWORD_SCATTERED_READ | desc::DataCache::DWORD_SCATTERED_WRITE
                )
            ) =>
        {
            let direction = if message_type == Some(desc::DataCache::DWORD_SCATTERED_WRITE) {
                "write"
            } else {
                "read"
            };
            let simd =
                if get(desc::DwordScattered::of(hw).block_size) == desc::DwordScattered::SIMD16 {
                    "SIMD16"
                } else {
                    "SIMD8"
                };
            Some(format!(
                "( DC DWORD scattered {direction}, Surface = {surface}, {simd})"
            ))
        }
        desc::DataCache::SFID if message_type.is_none() => {
            let f = desc::Scratch::of(hw);
            let direction = if descriptor.bit(f.write) {
                "write"
            } else {
                "read"
            };
            let grfs = 1 << get(f.block_size);
            let offset = get(f.offset);
            Some(format!(
                "( DC scratch block {direction}, offset {offset}, {grfs} GRF{})",
                if grfs > 1 { "s" } else { "" }
            ))
        }
        sfid if sfid == typed.sfid
            && (message_type == Some(typed.read) || message_type == Some(typed.write)) =>
        {
            let direction = if message_type == Some(typed.write) {
                "write"
            } else {
                "read"
            };
            let f = desc::TypedSurface::of(hw);
            let half = if get(f.slot_group) == desc::TypedSurface::HIGH {
                "Hi"
            } else {
                "Lo"
            };
            let mask = get(f.disabled_channels);
            Some(format!(
                "( DC typed surface {direction}, Surface = {surface}, SIMD16 {half}, Mask = {mask:#x})"
            ))
        }
        sfid if sfid == typed.sfid && message_type == Some(typed.atomic) => {
            let f = desc::TypedAtomic::of(hw);
            let half = if descriptor.bit(f.high_slots) {
                "Hi"
            } else {
                "Lo"
            };
            let op = ATOMIC_OPS[get(f.operation) as usize];
            Some(format!(
                "( DC typed atomic op, Surface = {surface}, SIMD16 {half}, {op})"
            ))
        }
        sfid if sfid == untyped.sfid && message_type == Some(untyped.atomic) => {
            let f = desc::UntypedAtomic::of(hw);
            let simd = if descriptor.bit(f.simd8) {
                "SIMD8"
            } else {
                "SIMD16"
            };
            let op = ATOMIC_OPS[get(f.operation) as usize];
            Some(format!(
                "( DC untyped atomic op, Surface = {surface}, {simd}, {op})"
            ))
        }
        sfid if sfid == untyped.sfid => {
            let direction = match message_type {
                Some(t) if t == untyped.read => "read",
                Some(t) if t == untyped.write => "write",
                _ => return None,
            };
            let f = desc::UntypedSurface::of(hw);
            let simd = desc::UntypedSurface::SIMD_NAMES[get(f.simd_mode) as usize];
            let mask = get(f.disabled_channels);
            Some(format!(
                "( DC untyped surface {direction}, Surface = {surface}, {simd}, Mask = {mask:#x})"
            ))
        }
        _ => None,
    }
}

/// A line of text that tracks its column.
struct Line(String);

impl Line {
    /// Pads to `column`, with at least one space.
    fn pad(&mut self, column: usize) {
        self.0.push(' ');
        while self.0.len() < column {
            self.0.push(' ');
        }
    }
}

/// One instruction of `hw` as text. `label` names a jump target given as a byte offset from
/// the instruction; `None` prints the offset.
pub fn disassemble(inst: &Inst, hw: Gen, label: &dyn Fn(i32) -> Option<String>) -> String {
    let mut line = Line(String::new());
    if let Some(p) = inst.predicate {
        line.0.push_str(&format!(
            "({}{}{}) ",
            if p.inverse { '-' } else { '+' },
            flag_name(inst.flag),
            PREDICATE_SUFFIXES[p.control as usize]
        ));
    }
    line.0.push_str(inst.opcode.name());
    if let Some(math) = inst.math {
        line.0.push(' ');
        line.0.push_str(math.name());
    }
    if inst.saturate {
        line.0.push_str(".sat");
    }
    if let Some(cond) = inst.cond {
        line.0.push('.');
        line.0.push_str(cond.name());
        // `sel` uses its modifier to choose (min/max) and writes no flag.
        if inst.opcode != Opcode::Sel {
            line.0.push('.');
            line.0.push_str(&flag_name(inst.flag));
        }
    }
    line.0.push_str(&format!("({})", inst.exec_size));
    if inst.opcode.is_control_flow() {
        let target = |offset: i32| label(offset).unwrap_or_else(|| format!("{offset:+}"));
        line.pad(16);
        line.0.push_str(&format!("JIP: {}", target(inst.jip)));
        if inst.opcode.has_uip(hw) {
            line.pad(32);
            line.0.push_str(&format!("UIP: {}", target(inst.uip)));
        }
    } else {
        let mut column = 16;
        // `wait` names its notification register once, as its source.
        if let Some(dst) = inst.dst.as_ref().filter(|_| inst.opcode != Opcode::Wait) {
            line.pad(column);
            line.0.push_str(&dst_text(dst, inst.is_three_src()));
            column += 16;
        }
        let logic = matches!(
            inst.opcode,
            Opcode::And | Opcode::Or | Opcode::Xor | Opcode::Not
        );
        for src in &inst.srcs {
            line.pad(column);
            match (inst.opcode, src) {
                // A call's immediate is the callee's offset: its label.
                (Opcode::Call, &Src::Imm(_, offset)) => {
                    let offset = offset as u32 as i32;
                    let target = label(offset).unwrap_or_else(|| format!("{offset:+}"));
                    line.0.push_str(&format!("JIP: {target}"));
                }
                _ => line.0.push_str(&src_text(src, logic, inst.is_three_src())),
            }
            column += 16;
        }
        if let Some(descriptor) = inst.descriptor() {
            line.0.push('\n');
            line.0.push_str(&" ".repeat(28));
            let send = desc::Send::of(hw);
            // The shared function's own bits: those below the header bit.
            let control = descriptor.0 & ((1 << send.header_present.lo) - 1);
            let function =
                message_text(inst.sfid, descriptor, hw).unwrap_or_else(|| format!("{control:#x}"));
            line.0.push_str(&format!(
                "{} MsgDesc: {function} mlen {} rlen {}",
                sfid_name(inst.sfid),
                descriptor.get(send.mlen),
                descriptor.get(send.rlen)
            ));
        }
    }
    if inst.send_desc().is_some() {
        line.0.push(' ');
    } else {
        line.pad(64);
    }
    line.0.push_str(&control_text(inst));
    line.0
}

/// `f0.0`, `f0.1`, `f1.0`, `f1.1` for flag subregisters 0–3.
fn flag_name(flag: u8) -> String {
    format!("f{}.{}", flag / 2, flag % 2)
}

fn reg_name(file: RegFile, nr: u8) -> String {
    match file {
        RegFile::Grf => format!("g{nr}"),
        RegFile::Arf => match nr & 0xF0 {
            ARF_NULL => "null".into(),
            ARF_ADDRESS => format!("a{}", nr & 0xF),
            ARF_ACCUMULATOR => format!("acc{}", nr & 0xF),
            ARF_FLAG => format!("f{}", nr & 0xF),
            ARF_NOTIFICATION => format!("n{}", nr & 0xF),
            other => format!("arf{other:#x}"),
        },
    }
}

/// The subregister in elements, when it is not 0 (`g4.3`).
fn subreg_text(subnr: u8, ty: Type) -> String {
    let elements = subnr / ty.size();
    if elements == 0 {
        String::new()
    } else {
        format!(".{elements}")
    }
}

fn dst_text(dst: &Dst, align16: bool) -> String {
    let mut text = reg_name(dst.file, dst.nr);
    if dst.file == RegFile::Grf {
        text.push_str(&subreg_text(dst.subnr, dst.ty));
    }
    text.push_str(&format!("<{}>", dst.hstride));
    if align16 && dst.writemask != 0xF {
        text.push('.');
        text.extend(
            "xyzw"
                .chars()
                .enumerate()
                .filter(|(i, _)| dst.writemask >> i & 1 != 0)
                .map(|(_, c)| c),
        );
    }
    text.push_str(dst.ty.name());
    text
}

fn src_text(src: &Src, logic: bool, align16: bool) -> String {
    match *src {
        Src::Reg(reg) => reg_text(&reg, logic, align16),
        Src::Imm(ty, bits) => imm_text(ty, bits),
    }
}

fn reg_text(reg: &Reg, logic: bool, align16: bool) -> String {
    let mut text = String::new();
    if reg.negate {
        // Gen8+ logic operations read a negated source as its bitwise complement.
        text.push(if logic { '~' } else { '-' });
    }
    if reg.abs {
        text.push_str("(abs)");
    }
    text.push_str(&reg_name(reg.file, reg.nr));
    if reg.file == RegFile::Grf {
        text.push_str(&subreg_text(reg.subnr, reg.ty));
    }
    let r = reg.region;
    match r.vstride {
        Some(v) => text.push_str(&format!("<{v},{},{}>", r.width, r.hstride)),
        None => text.push_str(&format!("<{},{}>", r.width, r.hstride)),
    }
    if align16 && reg.region.vstride != Some(0) && reg.swizzle != IDENTITY_SWIZZLE {
        text.push('.');
        text.extend((0..4).map(|i| b"xyzw"[(reg.swizzle >> (2 * i) & 3) as usize] as char));
    }
    text.push_str(reg.ty.name());
    text
}

fn imm_text(ty: Type, bits: u64) -> String {
    match ty {
        Type::F => {
            let value = f32::from_bits(bits as u32);
            format!("{:#010x}F  /* {}F */", bits as u32, format_g(value as f64))
        }
        Type::DF => {
            let value = f64::from_bits(bits);
            format!("{bits:#018x}DF  /* {}DF */", format_g(value))
        }
        Type::HF => format!("{:#06x}HF", bits as u16),
        Type::D => format!("{}D", bits as u32 as i32),
        Type::UD => format!("{:#010x}UD", bits as u32),
        Type::W => format!("{}W", bits as u16 as i16),
        Type::UW => format!("{:#06x}UW", bits as u16),
        Type::Q => format!("{}Q", bits as i64),
        Type::UQ => format!("{bits:#018x}UQ"),
        Type::V | Type::UV => format!("{:#010x}{}", bits as u32, ty.name()),
        Type::VF => {
            let parts: Vec<String> = (0..4)
                .map(|i| format_g(restricted_float((bits >> (8 * i)) as u8) as f64))
                .collect();
            format!("[{}]VF", parts.join(", "))
        }
        Type::UB | Type::B => format!("{bits:#x}{}", ty.name()),
    }
}

/// C's `%g`: six significant digits, no trailing zeros, exponent form outside 1e-4..1e6.
fn format_g(value: f64) -> String {
    if value == 0.0 || !value.is_finite() {
        return if value.is_nan() {
            "nan".into()
        } else if value.is_infinite() {
            if value > 0.0 { "inf" } else { "-inf" }.into()
        } else if value.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    let exponent = value.abs().log10().floor() as i32;
    let trim = |s: String| {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    };
    if !(-4..6).contains(&exponent) {
        let text = format!("{value:.5e}");
        let (mantissa, exp) = text.split_once('e').expect("exponent form");
        let exp: i32 = exp.parse().expect("an integer exponent");
        format!(
            "{}e{}{:02}",
            trim(mantissa.to_string()),
            if exp < 0 { '-' } else { '+' },
            exp.abs()
        )
    } else {
        let decimals = (5 - exponent).max(0) as usize;
        trim(format!("{value:.decimals$}"))
    }
}

/// `{ align1 WE_all 1Q };`
fn control_text(inst: &Inst) -> String {
    let mut parts = vec![
        if inst.is_three_src() {
            "align16"
        } else {
            "align1"
        }
        .to_string(),
    ];
    if inst.mask_all {
        parts.push("WE_all".into());
    }
    match inst.exec_size {
        8 if inst.group.is_multiple_of(8) => parts.push(format!("{}Q", inst.group / 8 + 1)),
        16 => parts.push(format!("{}H", inst.group / 16 + 1)),
        32 => {}
        _ => parts.push(format!("{}N", inst.group / 4 + 1)),
    }
    if inst.acc_write {
        parts.push("AccWrEnable".into());
    }
    if inst.is_eot() {
        parts.push("EOT".into());
    }
    format!("{{ {} }};", parts.join(" "))
}

/// The data port's atomic operations by code, as the disassembly names them.
const ATOMIC_OPS: [&str; 16] = [
    "", "and", "or", "xor", "mov", "inc", "dec", "add", "sub", "rsub", "imax", "imin", "umax",
    "umin", "cmpwr", "predec",
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoding::{Dst, Predicate, Reg};
    use crate::isa::{CondMod, MathFn, Region};

    fn no_labels(_: i32) -> Option<String> {
        None
    }

    fn grf(nr: u8, subnr: u8, ty: Type, region: Region) -> Src {
        Src::Reg(Reg::grf(nr, subnr, ty, region))
    }

    /// Lines of Mesa's Gen9 assembler tests, as its disassembler prints them.
    #[test]
    fn prints_like_mesa() {
        let scalar = Region::SCALAR;
        let vec8 = Region::new(8, 8, 1);
        let mut add = Inst::new(
            Opcode::Add,
            16,
            Some(Dst::grf(4, 0, Type::F)),
            vec![
                grf(1, 0, Type::F, scalar),
                Src::Reg(Reg {
                    negate: true,
                    ..Reg::grf(1, 16, Type::F, scalar)
                }),
            ],
        );
        assert_eq!(
            disassemble(&add, Gen::Gen9, &no_labels),
            "add(16)         g4<1>F          g1<0,1,0>F      -g1.4<0,1,0>F   { align1 1H };"
        );
        add.exec_size = 1;
        add.mask_all = true;
        add.dst = Some(Dst::grf(125, 12, Type::UD));
        add.srcs = vec![grf(0, 12, Type::UD, scalar), grf(7, 0, Type::UD, scalar)];
        assert_eq!(
            disassemble(&add, Gen::Gen9, &no_labels),
            "add(1)          g125.3<1>UD     g0.3<0,1,0>UD   g7<0,1,0>UD     { align1 WE_all 1N };"
        );

        let vec4 = Region::new(4, 4, 1);
        let mad = Inst::new(
            Opcode::Mad,
            8,
            Some(Dst::grf(26, 0, Type::F)),
            vec![
                grf(22, 0, Type::F, vec4),
                Src::Reg(Reg {
                    swizzle: 0,
                    ..Reg::grf(2, 16, Type::F, scalar)
                }),
                grf(5, 0, Type::F, vec4),
            ],
        );
        assert_eq!(
            disassemble(&mad, Gen::Gen9, &no_labels),
            "mad(8)          g26<1>F         g22<4,4,1>F     g2.4<0,1,0>F    g5<4,4,1>F { align16 1Q };"
        );

        let null = Reg {
            file: RegFile::Arf,
            ..Reg::grf(ARF_NULL, 0, Type::F, vec8)
        };
        let mut inv = Inst::new(
            Opcode::Math,
            8,
            Some(Dst::grf(95, 0, Type::F)),
            vec![grf(94, 0, Type::F, vec8), Src::Reg(null)],
        );
        inv.math = Some(MathFn::Inv);
        assert_eq!(
            disassemble(&inv, Gen::Gen9, &no_labels),
            "math inv(8)     g95<1>F         g94<8,8,1>F     null<8,8,1>F    { align1 1Q };"
        );
        let mut pow = inv.clone();
        pow.math = Some(MathFn::Pow);
        pow.dst = Some(Dst::grf(11, 0, Type::F));
        pow.srcs = vec![grf(10, 0, Type::F, vec8), Src::Imm(Type::F, 0x42fc_6666)];
        assert_eq!(
            disassemble(&pow, Gen::Gen9, &no_labels),
            "math pow(8)     g11<1>F         g10<8,8,1>F     0x42fc6666F  /* 126.2F */ { align1 1Q };"
        );

        let mut cmp = Inst::new(
            Opcode::Cmp,
            8,
            Some(Dst::null(Type::F)),
            vec![grf(20, 0, Type::F, vec8), Src::Imm(Type::F, 0xbf80_0000)],
        );
        cmp.cond = Some(CondMod::Z);
        assert_eq!(
            disassemble(&cmp, Gen::Gen9, &no_labels),
            "cmp.z.f0.0(8)   null<1>F        g20<8,8,1>F     0xbf800000F  /* -1F */ { align1 1Q };"
        );

        let mut sel = Inst::new(
            Opcode::Sel,
            8,
            Some(Dst::grf(124, 0, Type::UD)),
            vec![grf(124, 0, Type::UD, vec8), Src::Imm(Type::UD, 0x3f80_0000)],
        );
        sel.predicate = Some(Predicate {
            control: 1,
            inverse: true,
        });
        assert_eq!(
            disassemble(&sel, Gen::Gen9, &no_labels),
            "(-f0.0) sel(8)  g124<1>UD       g124<8,8,1>UD   0x3f800000UD    { align1 1Q };"
        );
        let mut max = Inst::new(
            Opcode::Sel,
            8,
            Some(Dst::grf(17, 0, Type::F)),
            vec![
                Src::Reg(Reg {
                    abs: true,
                    ..Reg::grf(16, 0, Type::F, vec8)
                }),
                Src::Imm(Type::F, 0x3f80_0000),
            ],
        );
        max.cond = Some(CondMod::Ge);
        assert_eq!(
            disassemble(&max, Gen::Gen9, &no_labels),
            "sel.ge(8)       g17<1>F         (abs)g16<8,8,1>F 0x3f800000F  /* 1F */ { align1 1Q };"
        );
    }

    #[test]
    fn jumps_print_labels_or_offsets() {
        let mut halt = Inst::new(Opcode::Halt, 8, None, Vec::new());
        halt.predicate = Some(Predicate {
            control: 6,
            inverse: true,
        });
        halt.flag = 1;
        halt.jip = 32;
        halt.uip = 32;
        let label = |offset: i32| (offset == 32).then(|| "LABEL0".to_string());
        assert_eq!(
            disassemble(&halt, Gen::Gen9, &label),
            "(-f0.1.any4h) halt(8) JIP: LABEL0 UIP: LABEL0                   { align1 1Q };"
        );
        let mut back = Inst::new(Opcode::While, 16, None, Vec::new());
        back.jip = -16;
        assert_eq!(
            disassemble(&back, Gen::Gen9, &no_labels),
            "while(16)       JIP: -16                                        { align1 1H };"
        );
    }

    #[test]
    fn sends_print_their_descriptor() {
        let mut send = Inst::new(
            Opcode::Send,
            8,
            Some(Dst::grf(124, 0, Type::UW)),
            vec![
                grf(13, 0, Type::UD, Region::new(8, 8, 1)),
                Src::Imm(Type::UD, 0x8643_a001),
            ],
        );
        send.sfid = 2;
        assert_eq!(
            disassemble(&send, Gen::Gen9, &no_labels),
            "send(8)         g124<1>UW       g13<8,8,1>UD    0x8643a001UD\n                            \
             sampler MsgDesc: ld_lz SIMD8 Surface = 1 Sampler = 0 mlen 3 rlen 4 { align1 1Q EOT };"
        );
    }

    /// The second SIMD16 render-target write of a SIMD32 thread writes the second 16 pixels:
    /// its slot group prints as Mesa prints it.
    #[test]
    fn a_render_target_write_names_its_slot_group() {
        let mut write = Inst::new(
            Opcode::Sendc,
            16,
            Some(Dst {
                file: RegFile::Arf,
                ..Dst::grf(ARF_NULL, 0, Type::UW)
            }),
            vec![
                grf(120, 0, Type::UD, Region::new(8, 8, 1)),
                Src::Imm(Type::UD, 0x9003_1800),
            ],
        );
        write.sfid = 5;
        write.group = 16;
        assert_eq!(
            disassemble(&write, Gen::Gen9, &no_labels),
            "sendc(16)       null<1>UW       g120<8,8,1>UD   0x90031800UD\n                            \
             render MsgDesc: RT write SIMD16 Hi LastRT Surface = 0 mlen 8 rlen 0 { align1 2H EOT };"
        );
    }

    #[test]
    fn scratch_messages_print_offset_and_size() {
        let mut write = Inst::new(
            Opcode::Send,
            16,
            Some(Dst::grf(0, 0, Type::UW)),
            vec![
                grf(20, 0, Type::UD, Region::new(8, 8, 1)),
                Src::Imm(Type::UD, 0x060e_1003),
            ],
        );
        write.dst = Some(Dst {
            file: RegFile::Arf,
            nr: crate::isa::ARF_NULL,
            ..Dst::grf(0, 0, Type::UW)
        });
        write.sfid = 10;
        write.mask_all = true;
        assert_eq!(
            disassemble(&write, Gen::Gen9, &no_labels),
            "send(16)        null<1>UW       g20<8,8,1>UD    0x060e1003UD\n                            \
             data MsgDesc: ( DC scratch block write, offset 3, 2 GRFs) mlen 3 rlen 0 { align1 WE_all 1H };"
        );
    }

    #[test]
    fn floats_print_like_c() {
        assert_eq!(format_g(126.2f32 as f64), "126.2");
        assert_eq!(format_g(-1.0), "-1");
        assert_eq!(format_g(0.5), "0.5");
        assert_eq!(format_g(1e-10), "1e-10");
        assert_eq!(format_g(3.0e7), "3e+07");
        assert_eq!(restricted_float(0x30), 1.0);
        assert_eq!(restricted_float(0xC0), -2.0);
    }
}

/// A whole program of native instructions as a listing: each line prefixed with its byte
/// offset, and `LABELn:` lines before every jump target, which the jumps name. `origins` says
/// what made each instruction (empty: nothing recorded), which its line ends with.
pub fn listing(program: &[Inst], origins: &[Option<Arc<Origin>>], hw: Gen) -> String {
    let mut targets: Vec<i64> = program
        .iter()
        .enumerate()
        .flat_map(|(index, inst)| {
            let at = 16 * index as i64;
            if inst.opcode.is_control_flow() {
                let uip = inst.opcode.has_uip(hw).then_some(at + inst.uip as i64);
                std::iter::once(at + inst.jip as i64).chain(uip).collect()
            } else if let (Opcode::Call, Some(&Src::Imm(_, offset))) =
                (inst.opcode, inst.srcs.first())
            {
                vec![at + offset as u32 as i32 as i64]
            } else {
                Vec::new()
            }
        })
        .collect();
    targets.sort_unstable();
    targets.dedup();
    let label_of = |offset: i64| {
        targets
            .binary_search(&offset)
            .ok()
            .map(|n| format!("LABEL{n}"))
    };
    let mut out = String::new();
    for (index, inst) in program.iter().enumerate() {
        let at = 16 * index as i64;
        if let Some(label) = label_of(at) {
            out.push_str(&format!("{label}:\n"));
        }
        let text = disassemble(inst, hw, &|offset| label_of(at + offset as i64));
        match origins.get(index).and_then(Option::as_ref) {
            Some(origin) => out.push_str(&format!("{at:#010x}: {text} // from {origin}\n")),
            None => out.push_str(&format!("{at:#010x}: {text}\n")),
        }
    }
    // A jump may target the end of the program.
    if let Some(label) = label_of(16 * program.len() as i64) {
        out.push_str(&format!("{label}:\n"));
    }
    out
}

#[cfg(test)]
mod listing_tests {
    use super::*;
    use crate::encoding::{Predicate, decode, encode};

    /// An if/else/endif program survives encoding and decoding, and its listing names the
    /// jump targets.
    #[test]
    fn a_program_lists_with_offsets_and_labels() {
        let mut branch = Inst::new(Opcode::If, 8, None, Vec::new());
        branch.predicate = Some(Predicate {
            control: 1,
            inverse: false,
        });
        branch.jip = 32;
        branch.uip = 64;
        let mut other = Inst::new(Opcode::Else, 8, None, Vec::new());
        other.jip = 32;
        other.uip = 32;
        let nop = |nr| {
            Inst::new(
                Opcode::Mov,
                8,
                Some(Dst::grf(nr, 0, Type::F)),
                vec![Src::Imm(Type::F, 0)],
            )
        };
        let mut join = Inst::new(Opcode::Endif, 8, None, Vec::new());
        join.jip = 16;
        let program = vec![branch, nop(2), other, nop(3), join];
        let decoded: Vec<Inst> = program
            .iter()
            .map(|inst| decode(encode(inst, Gen::Gen9).unwrap(), Gen::Gen9).unwrap())
            .collect();
        assert_eq!(decoded, program);
        let text = listing(&decoded, &[], Gen::Gen9);
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].starts_with("0x00000000: (+f0.0) if(8)   JIP: LABEL0     UIP: LABEL1"),
            "{text}"
        );
        assert_eq!(lines[2], "LABEL0:");
        assert!(lines[3].starts_with("0x00000020: else(8)"));
        assert!(lines[3].contains("JIP: LABEL1     UIP: LABEL1"), "{text}");
        assert_eq!(lines[5], "LABEL1:");
        assert!(lines[6].starts_with("0x00000040: endif(8)        JIP: LABEL2"));
        assert_eq!(lines[7], "LABEL2:");
    }
}
