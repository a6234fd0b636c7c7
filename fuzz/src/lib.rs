//! What the fuzz targets share: a structure-aware mutator of SPIR-V modules.
//!
//! libFuzzer's own mutations work on bytes: most of them insert or erase bytes, which breaks the
//! module into words of the wrong boundaries, or change a word count, which the reader rejects
//! before it reads anything else. [`mutate_spirv`] edits a module as a list of instructions
//! instead — an operand set to another id or a small number, an operand added or removed, an
//! instruction deleted, duplicated or moved, an opcode exchanged for another the module uses — and writes every
//! instruction with its right word count, so that mutants reach the checks and the translation
//! behind the parser. A share of mutations stays libFuzzer's, for what only bytes reach (the
//! header, lengths, endianness).

use libfuzzer_sys::fuzzer_mutate;

const MAGIC: u32 = 0x0723_0203;
const HEADER_WORDS: usize = 5;

/// A little-endian module split into its header and its instructions (each its words, the
/// first holding the word count and the opcode).
struct Module {
    header: Vec<u32>,
    insts: Vec<Vec<u32>>,
}

impl Module {
    /// The module in `bytes`, if it is whole words with the magic number and word counts that
    /// walk it exactly.
    fn read(bytes: &[u8]) -> Option<Module> {
        if !bytes.len().is_multiple_of(4) {
            return None;
        }
        let words: Vec<u32> = bytes
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        if words.len() < HEADER_WORDS || words[0] != MAGIC {
            return None;
        }
        let mut insts = Vec::new();
        let mut rest = &words[HEADER_WORDS..];
        while let Some(&first) = rest.first() {
            let count = (first >> 16) as usize;
            if count == 0 || count > rest.len() {
                return None;
            }
            insts.push(rest[..count].to_vec());
            rest = &rest[count..];
        }
        Some(Module {
            header: words[..HEADER_WORDS].to_vec(),
            insts,
        })
    }

    /// The bytes of the module, each instruction's word count set to its length.
    fn write(&self) -> Vec<u8> {
        let header = self.header.iter().copied();
        let insts = self.insts.iter().flat_map(|inst| {
            let first = ((inst.len() as u32) << 16) | (inst[0] & 0xffff);
            std::iter::once(first).chain(inst[1..].iter().copied())
        });
        header.chain(insts).flat_map(u32::to_le_bytes).collect()
    }

    /// The id bound of the header: every id is below it.
    fn bound(&self) -> u32 {
        self.header[3].max(2)
    }
}

/// A small deterministic generator (xorshift), seeded by libFuzzer's seed: a mutation must be
/// the same for the same seed.
struct Rng(u32);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 17;
        self.0 ^= self.0 << 5;
        (self.0 as usize) % n.max(1)
    }
}

/// Mutates the SPIR-V module in `data[..size]` in place and returns its new size (at most
/// `max_size`), as `fuzz_mutator!` wants.
pub fn mutate_spirv(data: &mut [u8], size: usize, max_size: usize, seed: u32) -> usize {
    let mut rng = Rng(seed | 1);
    let module = match Module::read(&data[..size]) {
        Some(module) if !module.insts.is_empty() && rng.below(4) != 0 => module,
        _ => return fuzzer_mutate(data, size, max_size),
    };
    let bytes = mutate_module(module, &mut rng).write();
    if bytes.len() > max_size.min(data.len()) {
        return fuzzer_mutate(data, size, max_size);
    }
    data[..bytes.len()].copy_from_slice(&bytes);
    bytes.len()
}

/// One structural edit of `module`.
fn mutate_module(mut module: Module, rng: &mut Rng) -> Module {
    let count = module.insts.len();
    let at = rng.below(count);
    match rng.below(8) {
        // An operand becomes an id (the likeliest to mean something), a small literal, or has
        // a bit flipped.
        0 | 1 => {
            let bound = module.bound() as usize;
            let inst = &mut module.insts[at];
            if inst.len() > 1 {
                let operand = 1 + rng.below(inst.len() - 1);
                inst[operand] = match rng.below(3) {
                    0 => 1 + rng.below(bound - 1) as u32,
                    1 => rng.below(8) as u32,
                    _ => inst[operand] ^ (1 << rng.below(32)),
                };
            }
        }
        2 => {
            module.insts.remove(at);
        }
        3 => {
            let copy = module.insts[at].clone();
            module.insts.insert(rng.below(count + 1), copy);
        }
        4 => {
            let inst = module.insts.remove(at);
            module.insts.insert(rng.below(count), inst);
        }
        // One operand more (an id) or one less.
        5 => {
            let id = 1 + rng.below(module.bound() as usize - 1) as u32;
            module.insts[at].push(id);
        }
        6 => {
            if module.insts[at].len() > 1 {
                module.insts[at].pop();
            }
        }
        // Another opcode of the module, keeping the operands.
        _ => {
            let opcode = module.insts[rng.below(count)][0] & 0xffff;
            module.insts[at][0] = (module.insts[at][0] & !0xffff) | opcode;
        }
    }
    module
}
