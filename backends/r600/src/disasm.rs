//! The assembly listing of a [`Binary`], in the style of Mesa's `r600_bytecode_disasm`: a
//! header with the size, GPRs and stack entries; one line per CF instruction with its dword
//! index and two words; under an ALU clause one indented line per instruction and per literal
//! dword, under a fetch clause one per fetch; a closing line of dashes. Addresses print as
//! dword indices, like the line numbers.
//!
//! Fields start at fixed columns so that listings line up: an ALU destination at 60 (its bank
//! swizzle at 84), an export's type at 43, its register at 55 and its element size at 68, a
//! fetch's operands at 52. A field whose column has been passed follows after one space.
//!
//! The listing prints the decoded program beside its words; since [`decode`] accepts only
//! words the encoder writes, every instruction sits where the encoder's layout puts it.

use crate::encoding::{Binary, DecodeError, decode, layout};
use crate::isa::{CfOp, FetchOp, sel};
use crate::program::{AluInst, Cf, CfBody, Export, ExportType, Fetch, Group, PredSel, Src};
use shrew_engine::provenance::Origin;
use std::sync::Arc;

/// The listing of `binary`, one line per instruction (see the module documentation).
/// `origins` says what made each ALU instruction, in program order (empty: nothing recorded;
/// see [`crate::program::Program::alu_origins`]), which its line ends with.
pub fn listing(binary: &Binary, origins: &[Option<Arc<Origin>>]) -> Result<String, DecodeError> {
    let program = decode(binary)?;
    let words = &binary.words;
    let layout = layout(&program);
    let mut lines = vec![
        format!(
            "bytecode {} dw -- {} gprs -- {} nstack -------------",
            words.len(),
            binary.gprs,
            binary.stack_size
        ),
        format!("shader 0 -- {}", binary.chip.letter()),
    ];
    // Groups are numbered from 1 across the whole program, as Mesa numbers them.
    let mut group_number = 0;
    let mut alu_number = 0;
    for (cf, place) in program.cf.iter().zip(&layout.places) {
        let mut at = place.at;
        if place.extended {
            lines.push(cf_prefix(at, words) + CfOp::AluExtended.mnemonic());
            at += 2;
        }
        let mut line = cf_prefix(at, words) + cf.op.mnemonic();
        let body = place.body.unwrap_or(0);
        match &cf.body {
            CfBody::Alu { kcache, groups } => {
                let slots: usize = groups.iter().map(Group::clause_slots).sum();
                line += &format!(" {slots} @{body}");
                for (set, k) in kcache.iter().enumerate() {
                    let first = 16 * u32::from(k.line);
                    let end = first + 16 * u32::from(k.lines);
                    line += &format!(" KC{set}[CB{}:{first}-{end}]", k.bank);
                }
            }
            CfBody::Fetch(fetches) => line += &format!(" {} @{body}", fetches.len()),
            &CfBody::Flow {
                addr,
                pop_count,
                cond,
                cf_const,
            } => {
                let target = layout.places.get(addr as usize).map_or(0, |place| place.at);
                line += &format!(" @{target}");
                if cond != 0 {
                    line += &format!(" CND:{cond}");
                }
                if cf_const != 0 {
                    line += &format!(" CF_CONST:{cf_const}");
                }
                if pop_count != 0 {
                    line += &format!(" POP:{pop_count}");
                }
            }
            CfBody::Export(export) => export_operands(&mut line, export),
        }
        line += &cf_flags(cf);
        lines.push(line);
        // In range: the words are the encoding of `program`, laid out by `layout`.
        match &cf.body {
            CfBody::Alu { groups, .. } => {
                let mut pos = body;
                for group in groups {
                    group_number += 1;
                    for (k, inst) in group.insts.iter().enumerate() {
                        let number = (k == 0).then_some(group_number);
                        let mut line = alu_line(pos, &words[pos..pos + 2], number, inst, group);
                        if let Some(Some(origin)) = origins.get(alu_number) {
                            line += &format!("  ; from {origin}");
                        }
                        lines.push(line);
                        alu_number += 1;
                        pos += 2;
                    }
                    for &literal in &group.literals {
                        lines.push(literal_line(pos, literal));
                        pos += 1;
                    }
                    pos += group.literals.len() % 2;
                }
            }
            CfBody::Fetch(fetches) => {
                for (k, fetch) in fetches.iter().enumerate() {
                    let pos = body + 4 * k;
                    lines.push(fetch_line(pos, &words[pos..pos + 3], fetch));
                }
            }
            CfBody::Flow { .. } | CfBody::Export(_) => {}
        }
    }
    lines.push("-".repeat(38));
    Ok(lines.join("\n") + "\n")
}

/// `NNNN WWWWWWWW WWWWWWWW  `: a CF line up to its opcode.
fn cf_prefix(at: usize, words: &[u32]) -> String {
    format!("{at:04} {:08X} {:08X}  ", words[at], words[at + 1])
}

/// The flags every CF instruction may carry, each after a space.
fn cf_flags(cf: &Cf) -> String {
    let flags = [
        (!cf.barrier, " NO_BARRIER"),
        (cf.whole_quad_mode, " WQM"),
        (cf.valid_pixel_mode, " VPM"),
        (cf.end_of_program, " EOP"),
    ];
    flags
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, flag)| *flag)
        .collect()
}

/// Pads `line` with spaces to `column`, or adds one space if it is already there.
fn pad_to(line: &mut String, column: usize) {
    let spaces = column.saturating_sub(line.len()).max(1);
    line.extend(std::iter::repeat_n(' ', spaces));
}

const CHANNELS: [char; 4] = ['x', 'y', 'z', 'w'];

fn channel(chan: u8) -> char {
    CHANNELS[usize::from(chan & 3)]
}

/// A swizzle: 0-3 x-w, 4 zero, 5 one, 6 reserved, 7 masked.
fn swizzle(sels: &[u8]) -> String {
    sels.iter()
        .map(|&s| b"xyzw01?_"[usize::from(s & 7)] as char)
        .collect()
}

/// The register a relative operand adds to its index (INDEX_MODE).
fn index_register(index_mode: u8) -> &'static str {
    match index_mode {
        0 => "AR.x",
        1 => "AR.y",
        2 => "AR.z",
        3 => "AR.w",
        4 => "AL",
        5 => "G",
        6 => "G+AR.x",
        _ => "?",
    }
}

/// A GPR component: `R3.x`, clause temporary `T1.y`, relative `R[3+AR.x].x`.
fn register(gpr: u16, chan: u8, rel: bool, index_mode: u8) -> String {
    let c = channel(chan);
    if rel {
        format!("R[{gpr}+{}].{c}", index_register(index_mode))
    } else if gpr >= u16::from(crate::isa::CLAUSE_TEMP_BASE) {
        format!("T{}.{c}", gpr - u16::from(crate::isa::CLAUSE_TEMP_BASE))
    } else {
        format!("R{gpr}.{c}")
    }
}

/// An ALU source with its modifiers: `-|R1.x|`, `KC0[5].y`, `PV.z`, `0.5`, `[0x3F000000 0.5]`.
fn source(src: &Src, literals: &[u32], index_mode: u8) -> String {
    let c = channel(src.chan);
    let text = match src.sel {
        0..=127 => register(src.sel, src.chan, src.rel, index_mode),
        sel::ZERO => "0".into(),
        sel::ONE => "1.0".into(),
        sel::ONE_INT => "1".into(),
        sel::MINUS_ONE_INT => "-1".into(),
        sel::HALF => "0.5".into(),
        sel::LITERAL => {
            let bits = literals
                .get(usize::from(src.chan))
                .copied()
                .unwrap_or_default();
            format!("[0x{bits:08X} {}]", f32::from_bits(bits))
        }
        sel::PV => format!("PV.{c}"),
        sel::PS => "PS".into(),
        sel::LDS_OQ_A_POP => "LDS_OQ_A_POP".into(),
        other => match sel::kcache(other) {
            Some((set, index)) if src.rel => {
                format!("KC{set}[{index}+{}].{c}", index_register(index_mode))
            }
            Some((set, index)) => format!("KC{set}[{index}].{c}"),
            None if other >= sel::PARAM => format!("Param{}.{c}", other - sel::PARAM),
            None => format!("SEL{other}.{c}"),
        },
    };
    let text = if src.abs { format!("|{text}|") } else { text };
    if src.neg { format!("-{text}") } else { text }
}

/// An ALU instruction line: index, words, the group number on a group's first instruction,
/// flags (M update exec mask, P update predicate, 0/1 predicate select), the opcode with its
/// output modifier and saturation, the destination and the sources.
fn alu_line(
    pos: usize,
    words: &[u32],
    number: Option<usize>,
    inst: &AluInst,
    group: &Group,
) -> String {
    let mut line = format!(" {pos:04} {:08X} {:08X}  ", words[0], words[1]);
    match number {
        Some(n) => line += &format!("{n:4} "),
        None => line += "     ",
    }
    line.push(if inst.update_exec_mask { 'M' } else { ' ' });
    line.push(if inst.update_pred { 'P' } else { ' ' });
    line.push(match inst.pred_sel {
        PredSel::Off => ' ',
        PredSel::Zero => '0',
        PredSel::One => '1',
    });
    line.push(' ');
    line += inst.op.mnemonic();
    line += ["", "*2", "*4", "/2"][usize::from(inst.omod & 3)];
    if inst.dst.clamp {
        line += "_sat";
    }
    pad_to(&mut line, 60);
    let dst = &inst.dst;
    if dst.write {
        line += &register(dst.gpr.into(), dst.chan, dst.rel, inst.index_mode);
    } else {
        line += &format!("__.{}", channel(dst.chan));
    }
    for (i, src) in inst.srcs().iter().enumerate() {
        line += if i == 0 { ",  " } else { ", " };
        line += &source(src, &group.literals, inst.index_mode);
    }
    if inst.bank_swizzle != 0 {
        pad_to(&mut line, 84);
        line += &format!("BS:{}", inst.bank_swizzle);
    }
    line
}

/// A literal dword: index, hex, and its value as a float and as a signed integer.
fn literal_line(pos: usize, bits: u32) -> String {
    let mut line = format!(" {pos:04} {bits:08X}");
    pad_to(&mut line, 60);
    line + &format!("{:.6} ({})", f32::from_bits(bits), bits as i32)
}

/// A fetch line: index, the three used words, the opcode and the operands.
fn fetch_line(pos: usize, words: &[u32], fetch: &Fetch) -> String {
    let mut line = format!(
        " {pos:04} {:08X} {:08X} {:08X}   {}",
        words[0], words[1], words[2], fetch.op
    );
    pad_to(&mut line, 52);
    let dst = format!("R{}.{}", fetch.dst_gpr, swizzle(&fetch.dst_sel));
    if fetch.op.is_gds() {
        // The address and operands (x, y, z), then the second source GPR (unused: R0).
        line += &format!(
            "{dst}, R{}.{}, R0",
            fetch.src_gpr,
            swizzle(&fetch.src_sel[..3])
        );
    } else if fetch.op == FetchOp::ReadScratch {
        let mem = &fetch.vtx.mem;
        line += &dst;
        if mem.indexed {
            line += &format!(", R{}.{}", fetch.src_gpr, channel(fetch.src_sel[0]));
        }
        line += &format!(
            ",  BASE:{} SIZE:{} ES:{} FMT(DTA:{} NUM:{} COMP:{} MODE:{})",
            mem.array_base,
            mem.array_size,
            mem.elem_size,
            fetch.vtx.data_format,
            fetch.vtx.num_format,
            u8::from(fetch.vtx.format_comp_signed),
            u8::from(fetch.vtx.srf_mode),
        );
    } else if fetch.op.is_vertex_fetch() {
        let vtx = &fetch.vtx;
        line += &format!("{dst}, R{}.{}", fetch.src_gpr, channel(fetch.src_sel[0]));
        if vtx.offset != 0 {
            line += &format!("+{}b", vtx.offset);
        }
        let fetch_type = ["VERTEX", "INSTANCE", "NO_INDEX"]
            .get(usize::from(vtx.fetch_type))
            .unwrap_or(&"?");
        line += &format!(
            ",  RID:{}  {fetch_type} MFC:{} UCF:{} FMT(DTA:{} NUM:{} COMP:{} MODE:{})",
            fetch.resource,
            vtx.mega_fetch_count,
            u8::from(vtx.use_const_fields),
            vtx.data_format,
            vtx.num_format,
            u8::from(vtx.format_comp_signed),
            u8::from(vtx.srf_mode),
        );
        if vtx.endian_swap != 0 {
            line += &format!(" ENDIAN:{}", vtx.endian_swap);
        }
    } else {
        line += &format!(
            "{dst}, R{}.{},  RID:{}, SID:{}",
            fetch.src_gpr,
            swizzle(&fetch.src_sel),
            fetch.resource,
            fetch.sampler
        );
        if fetch.lod_bias != 0 {
            line += &format!("  LB:{}", fetch.lod_bias);
        }
        let types: String = fetch
            .coord_normalized
            .iter()
            .map(|&n| if n { 'N' } else { 'U' })
            .collect();
        line += &format!("  CT:{types}");
        if fetch.offset != [0; 3] {
            let [x, y, z] = fetch.offset;
            line += &format!("  OX:{x} OY:{y} OZ:{z}");
        }
    }
    line
}

/// An export's operands, in columns: `PIXEL 0     R0.xyzw      ES:3` (a burst prints ranges).
/// A scratch write prints its write type for the kind, and its index register and array size
/// after the element size: `WRITE_IND_ACK 4  R3.x___      ES:3 @R4.x SIZE:512`.
/// The name of a MEM_RAT operation.
fn rat_mnemonic(inst: u8) -> &'static str {
    use crate::program::rat_inst::*;
    match inst {
        STORE_TYPED => "STORE_TYPED",
        STORE_RAW => "STORE_RAW",
        XCHG_RTN => "XCHG_RTN",
        CMPXCHG_INT_RTN => "CMPXCHG_INT_RTN",
        ADD_RTN => "ADD_RTN",
        MIN_INT_RTN => "MIN_INT_RTN",
        MIN_UINT_RTN => "MIN_UINT_RTN",
        MAX_INT_RTN => "MAX_INT_RTN",
        MAX_UINT_RTN => "MAX_UINT_RTN",
        AND_RTN => "AND_RTN",
        OR_RTN => "OR_RTN",
        XOR_RTN => "XOR_RTN",
        _ => "RAT_INST",
    }
}

fn export_operands(line: &mut String, export: &Export) {
    pad_to(line, 43);
    let kind = match export.kind {
        ExportType::Pixel => "PIXEL",
        ExportType::Pos => "POS",
        ExportType::Param => "PARAM",
        ExportType::Rat => rat_mnemonic(export.rat_inst),
        ExportType::Scratch => match (export.index_gpr.is_some(), export.ack) {
            (false, false) => "WRITE",
            (true, false) => "WRITE_IND",
            (false, true) => "WRITE_ACK",
            (true, true) => "WRITE_IND_ACK",
        },
    };
    let burst = u32::from(export.burst);
    let (base, gpr) = (u32::from(export.base), u32::from(export.gpr));
    if burst > 1 {
        *line += &format!("{kind:<5} {base}-{}", base + burst - 1);
    } else {
        *line += &format!("{kind:<5} {base}");
    }
    pad_to(line, 55);
    let swizzle = swizzle(&export.swizzle);
    if burst > 1 {
        *line += &format!("R{gpr}-{}.{swizzle}", gpr + burst - 1);
    } else {
        *line += &format!("R{gpr}.{swizzle}");
    }
    pad_to(line, 68);
    *line += &format!("ES:{}", export.elem_size);
    if export.kind == ExportType::Scratch {
        if let Some(index) = export.index_gpr {
            *line += &format!(" @R{index}.x");
        }
        *line += &format!(" SIZE:{}", export.array_size);
    }
    if let (ExportType::Rat, Some(index)) = (export.kind, export.index_gpr) {
        *line += &format!(" @R{index}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoding::assemble;
    use crate::isa::{AluOpcode, Chip};
    use crate::program::{Dst, Kcache, MemRead, Program, VtxFormat};

    /// A small Evergreen fragment shader: a branch on a constant, a sample, a multiply-add
    /// with a literal, a reciprocal in the trans slot and the colour export.
    fn shader() -> Program {
        let mut pred = AluInst::new(
            AluOpcode::PredSetneInt,
            Dst::none(0),
            &[Src::sel(sel::KCACHE[0] + 1, 0), Src::sel(sel::ZERO, 0)],
        );
        pred.update_exec_mask = true;
        pred.update_pred = true;
        let mut muladd = AluInst::new(
            AluOpcode::MuladdIeee,
            Dst {
                clamp: true,
                ..Dst::gpr(1, 0)
            },
            &[
                Src::gpr(0, 0),
                Src::sel(sel::KCACHE[0] + 1, 0),
                Src::sel(sel::LITERAL, 0),
            ],
        );
        muladd.src[0].neg = true;
        let mut recip = AluInst::new(AluOpcode::RecipIeee, Dst::gpr(125, 3), &[Src::gpr(0, 2)]);
        recip.src[0].abs = true;
        recip.bank_swizzle = 1;
        let mut mov = AluInst::new(AluOpcode::Mov, Dst::gpr(1, 1), &[Src::sel(sel::PV, 0)]);
        mov.omod = 1;
        mov.pred_sel = PredSel::One;
        let sample = Fetch {
            op: FetchOp::Sample,
            resource: 0,
            sampler: 0,
            src_gpr: 1,
            src_sel: [0, 1, 7, 7],
            dst_gpr: 0,
            dst_sel: [0, 1, 2, 3],
            coord_normalized: [true, true, false, false],
            lod_bias: 0,
            offset: [0; 3],
            vtx: VtxFormat::default(),
        };
        let export = Export {
            elem_size: 3,
            ..Export::new(ExportType::Pixel, 0, 0, [0, 1, 2, 3])
        };
        let mut end = Cf::new(CfOp::ExportDone, CfBody::Export(export));
        end.end_of_program = true;
        Program {
            chip: Chip::Evergreen,
            cf: vec![
                Cf::new(
                    CfOp::AluPushBefore,
                    CfBody::Alu {
                        kcache: vec![Kcache {
                            bank: 0,
                            line: 0,
                            lines: 1,
                        }],
                        groups: vec![Group {
                            insts: vec![pred],
                            literals: vec![],
                        }],
                    },
                ),
                Cf::flow(CfOp::Jump, 4, 1),
                Cf::new(CfOp::Tex, CfBody::Fetch(vec![sample])),
                Cf::new(
                    CfOp::AluPopAfter,
                    CfBody::Alu {
                        kcache: vec![Kcache {
                            bank: 0,
                            line: 0,
                            lines: 1,
                        }],
                        groups: vec![
                            Group {
                                insts: vec![muladd, recip],
                                literals: vec![0x3f00_0000],
                            },
                            Group {
                                insts: vec![mov],
                                literals: vec![],
                            },
                        ],
                    },
                ),
                end,
            ],
            gprs: 2,
            stack_size: 1,
            scratch_elements: 0,
        }
    }

    /// A vertex fetch or memory read of address channel `src.1` of R`src.0` into R`dst.0`
    /// through `dst.1`.
    fn vertex_fetch(op: FetchOp, src: (u8, u8), dst: (u8, [u8; 4]), vtx: VtxFormat) -> Fetch {
        Fetch {
            op,
            resource: 0,
            sampler: 0,
            src_gpr: src.0,
            src_sel: [src.1, 7, 7, 7],
            dst_gpr: dst.0,
            dst_sel: dst.1,
            coord_normalized: [false; 4],
            lod_bias: 0,
            offset: [0; 3],
            vtx,
        }
    }

    #[test]
    fn listing_prints_mesa_style_lines() {
        let text = listing(&assemble(&shader()).unwrap(), &[]).unwrap();
        let expected = [
            "bytecode 24 dw -- 2 gprs -- 1 nstack -------------",
            "shader 0 -- E",
            "0000 40000005 A4000000  ALU_PUSH_BEFORE 1 @10 KC0[CB0:0-16]",
            " 0010 801F0081 0000228C     1 MP  PRED_SETNE_INT            __.x,  KC0[1].x, 0",
            "0002 00000004 82800001  JUMP @8 POP:1",
            "0004 00000006 80400000  TEX 1 @12",
            " 0012 00010010 300D1000 FC800000   SAMPLE           R0.xyzw, R1.xy__,  RID:0, SID:0  CT:NNUU",
            "0006 40000008 A80C0000  ALU_POP_AFTER 4 @16 KC0[CB0:0-16]",
            " 0016 00103000 802300FD     2     MULADD_IEEE_sat           R1.x,  -R0.x, KC0[1].x, [0x3F000000 0.5]",
            " 0018 80000800 6FA44311           RECIP_IEEE                T1.w,  |R0.z|           BS:1",
            " 0020 3F000000                                              0.500000 (1056964608)",
            " 0022 E00000FE 20200CB0     3   1 MOV*2                     R1.y,  PV.x",
            "0008 C0000000 95200688  EXPORT_DONE        PIXEL 0     R0.xyzw      ES:3 EOP",
            "--------------------------------------",
        ];
        assert_eq!(text.lines().collect::<Vec<_>>(), expected);
    }

    #[test]
    fn listing_shows_extended_kcache_vertex_fetches_and_bursts() {
        let mut program = shader();
        let sets = [(1, 0, 1), (2, 1, 2), (3, 2, 1)].map(|(bank, line, lines)| Kcache {
            bank,
            line,
            lines,
        });
        if let CfBody::Alu { kcache, .. } = &mut program.cf[3].body {
            *kcache = sets.to_vec();
        }
        let vfetch = Fetch {
            resource: 3,
            ..vertex_fetch(
                FetchOp::Vfetch,
                (0, 0),
                (1, [0, 1, 2, 5]),
                VtxFormat {
                    offset: 16,
                    mega_fetch_count: 15,
                    data_format: 34,
                    srf_mode: true,
                    ..VtxFormat::default()
                },
            )
        };
        program.cf[2] = Cf::new(CfOp::Vtx, CfBody::Fetch(vec![vfetch]));
        if let CfBody::Export(export) = &mut program.cf[4].body {
            export.burst = 2;
        }
        let text = listing(&assemble(&program).unwrap(), &[]).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[5], "0004 00000008 80800000  VTX 1 @16");
        assert_eq!(
            lines[6],
            " 0016 3C000300 88951001 00080010   VFETCH           R1.xyz1, R0.x+16b,  RID:3  VERTEX MFC:15 UCF:0 FMT(DTA:34 NUM:0 COMP:0 MODE:1)"
        );
        assert_eq!(lines[7], "0006 40C00000 B0000008  ALU_EXT");
        assert_eq!(
            lines[8],
            "0008 4840000A A80C0402  ALU_POP_AFTER 4 @20 KC0[CB1:0-16] KC1[CB2:16-48] KC2[CB3:32-48]"
        );
        assert_eq!(
            lines.last(),
            Some(&"--------------------------------------")
        );
        assert!(lines.contains(
            &"0010 C0000000 95210688  EXPORT_DONE        PIXEL 0-1   R0-1.xyzw    ES:3 EOP"
        ));
    }

    #[test]
    fn listing_shows_scratch_writes_and_reads() {
        let mut program = shader();
        let write = Export {
            elem_size: 3,
            index_gpr: Some(4),
            ack: true,
            array_size: 512,
            ..Export::new(ExportType::Scratch, 5, 3, [0, 7, 7, 7])
        };
        let read = vertex_fetch(
            FetchOp::ReadScratch,
            (4, 1),
            (1, [7, 0, 7, 7]),
            VtxFormat {
                data_format: 34,
                mem: MemRead {
                    array_base: 5,
                    array_size: 512,
                    elem_size: 3,
                    indexed: true,
                },
                ..VtxFormat::default()
            },
        );
        program.cf[2] = Cf::new(CfOp::Vtx, CfBody::Fetch(vec![read]));
        program.cf.insert(2, Cf::flow(CfOp::WaitAck, 0, 0));
        program
            .cf
            .insert(2, Cf::new(CfOp::MemScratch, CfBody::Export(write)));
        let text = listing(&assemble(&program).unwrap(), &[]).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            &lines[5..9],
            [
                "0004 C201E005 94001200  MEM_SCRATCH        WRITE_IND_ACK 5 R3.x___  ES:3 @R4.x SIZE:512",
                "0006 00000000 86800000  WAIT_ACK @0",
                "0008 00000008 80800000  VTX 1 @16",
                " 0016 01041062 089F8E01 20000005   READ_SCRATCH     R1._x__, R4.y,  BASE:5 SIZE:512 ES:3 FMT(DTA:34 NUM:0 COMP:0 MODE:0)",
            ]
        );
    }

    #[test]
    fn words_that_do_not_decode_have_no_listing() {
        let mut binary = assemble(&shader()).unwrap();
        binary.words.truncate(4);
        assert!(listing(&binary, &[]).is_err());
    }
}
