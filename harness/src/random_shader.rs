//! Random shaders for differential testing: valid IR whose every result is defined, so that the
//! unoptimized interpreter is an oracle for any pipeline and any target.
//!
//! [`random_shader`] builds a fragment, vertex or compute shader from a seed: arithmetic on
//! floats, integers and booleans (scalars and vectors, with swizzles), excursions to other bit
//! sizes (integers of 8, 16 and 64 bits, floats of 16 and 64, converted from and back to 32
//! bits or compared), nested `if`/`else`, loops
//! with bounded trip counts (some data dependent), `break` and `continue`, `discard`,
//! derivatives, function-local variables carrying values across control flow, SSBO reads,
//! texture reads (texel fetches, samples at an explicit level of detail, size queries),
//! calls of small functions (taking values and returning one, some calling others), SSBO
//! writes (stores and atomics in compute shaders and half the fragment and vertex shaders),
//! and in compute shaders shared memory exchanged between invocations across barriers and
//! atomics on shared memory.
//! Its results leave through the colour of a fragment shader, the varying and position of a
//! vertex shader and the SSBO of a compute shader (see `outputs`): integers and exact floats
//! compared bit for bit, other floats within a tolerance.
//!
//! What "defined" means here, and how the generator keeps to it:
//! - No operation whose result GLSL leaves undefined: divisors and remainders are odd positive
//!   numbers, shift counts and bitfield offsets and counts are masked below the bit size, float
//!   to integer conversions take values in range, and no float is ever NaN or infinite
//!   (reciprocals, roots, logarithms and the like take operands kept inside their domain).
//! - Every float carries [`Facts`]: a bound on its magnitude and either *exact* (a multiple of
//!   2^-n computed without any rounding, so every reassociation, fusion or reordering gives the
//!   same bits) or an estimate of how far rounding and each operation's allowed inaccuracy
//!   (the opcode table's [`Accuracy`](shrew_engine::ops::Accuracy)) may have moved it.
//!   Operations that are discontinuous (comparisons, floor, sign, float to integer) read exact
//!   values only, so a one-ulp difference upstream can never flip a branch or an integer;
//!   values whose possible error grows past what the comparison tolerates are scaled down
//!   until it does not.
//! - Other bit sizes keep the same discipline at their size: shift counts masked below it,
//!   divisors odd, positive and below 2^7, bitfields within half of it; a 16-bit float is
//!   only ever an exact value with at most 11 significant bits and no exponent below the
//!   smallest normal half (so no rounding and no denormal, whichever way a target computes
//!   it), and an operation whose result would not be is left out; 64-bit floats carry the
//!   facts 32-bit arithmetic would (it rounds more).
//! - Derivatives are taken in uniform control flow only (top level of the entry point, before
//!   any discard).
//! - Textures: the runner binds an 8×8 2D texture with its full mip chain, linear filtering
//!   and texels that are multiples of 2^-8 (see [`crate::differential`]). Fetches take a
//!   level masked below the level count and coordinates masked below that level's size;
//!   samples take an explicit integral level of detail (no implicit derivatives, so anywhere
//!   in the control flow) and coordinates at a texel's centre, `(i + 0.5) / size` computed
//!   exactly, where linear filtering weighs that texel alone: both give the texel, exact.
//!   Fragment shaders also sample at any coordinates, a blend whose error is the level's
//!   size times the coordinates' (every implementation samples with the interpreter's
//!   sampler, so exact coordinates give the same bits).
//! - A function's parameters promise what the locals do (a bound, exactness), and its call
//!   sites pass only values that keep those promises; its result's facts are those of every
//!   value it returns. Functions call only functions generated before them (no recursion),
//!   and return early only outside loops (so that every call is inlined, as a target without
//!   calls needs).
//! - Shared memory: each exchange writes a new array at the invocation's own index and reads
//!   it at another's after a barrier, so no write follows a read of the same memory and every
//!   element read was written; barriers stand at the top level of the entry point, where
//!   every invocation reaches them. The shared counters are set before the first barrier and
//!   read after one at the end.
//! - Atomics whose final memory value depends on the order the invocations run in are never
//!   made: memory that several invocations reach takes one commutative operation per address
//!   (add, minimum, maximum, and, or, xor), and the values they return, which depend on the
//!   order, are not read; any operation, exchange and compare-and-swap included, on a dword
//!   only its invocation reaches returns a defined value, which the shader then uses.
//! - SSBO stores go only to dwords their invocation alone reaches: a compute invocation's by
//!   its index in the dispatch, a pixel's by the low bits of its window position (the
//!   runner's grid is 8×4 pixels from an even origin, so they tell its pixels apart); helper
//!   invocations and discarded pixels must leave memory alone. Vertex shaders have no index
//!   of their own (no backend loads the vertex index yet), so they run only the commutative
//!   atomics.

use crate::differential::{HEIGHT, TEXEL_FRAC, TEXTURE_LEVELS, TEXTURE_SIZE, WIDTH};
use shrew_engine::ir::{
    AluSrc, Builder, Builtin, Cursor, Dim, FuncId, LoopBuilder, Mode, Scalar, Shader, Stage, Tex,
    TexOp, TexSrc, Type, ValType, Value, VarId, Variable,
};
use shrew_engine::ops::{AluOp, AtomicOp, BaseType, ConvFamily, IndexKind, Intrinsic};
use shrew_engine::rng::Rng;
use std::collections::BTreeSet;

/// What to generate.
#[derive(Clone, Debug)]
pub struct Options {
    /// [`Stage::Fragment`], [`Stage::Vertex`] or [`Stage::Compute`].
    pub stage: Stage,
    /// How many statements (expressions, stores, control flow) the shader has, at most.
    pub statements: usize,
    /// How deeply `if`s and loops nest.
    pub max_depth: usize,
    /// The opcodes the shader may use, each at a bit size (the op matrix's entries: see
    /// [`crate::op_matrix::entries`]), beyond the few every target has (adds, multiplies,
    /// minimum and maximum, bitwise operations, shifts, comparisons and conversions between
    /// 32-bit floats and integers, which keep operands in their domains and combine the
    /// results); every opcode at every bit size when `None`.
    pub allowed: Option<BTreeSet<(AluOp, u8)>>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            stage: Stage::Fragment,
            statements: 40,
            max_depth: 3,
            allowed: None,
        }
    }
}

/// The workgroup size of generated compute shaders and how many workgroups a run dispatches:
/// 16 invocations, each writing [`SLOTS`] dwords of the 256-dword output SSBO, then owning
/// [`PRIVATE_DWORDS`] more for its atomics.
pub const WORKGROUP_SIZE: [u32; 3] = [4, 2, 1];
pub const WORKGROUPS: [u32; 3] = [2, 1, 1];
/// Invocations in a workgroup.
const LOCAL_INVOCATIONS: u32 = WORKGROUP_SIZE[0] * WORKGROUP_SIZE[1] * WORKGROUP_SIZE[2];
/// Invocations in a dispatch.
const INVOCATIONS: u32 = LOCAL_INVOCATIONS * WORKGROUPS[0] * WORKGROUPS[1] * WORKGROUPS[2];
/// Running hashes of the results: output dwords per invocation of a compute shader.
const SLOTS: u32 = 8;
/// Dwords of the output SSBO each invocation alone applies atomics to, after the hashes.
const PRIVATE_DWORDS: u32 = 8;
/// The atomics whose final memory value is the same in whatever order the invocations apply
/// them (in `atomic_op` order: each one's index is its value).
const COMMUTATIVE_ATOMICS: [AtomicOp; 8] = [
    AtomicOp::Iadd,
    AtomicOp::Imin,
    AtomicOp::Umin,
    AtomicOp::Imax,
    AtomicOp::Umax,
    AtomicOp::Iand,
    AtomicOp::Ior,
    AtomicOp::Ixor,
];
// Texture levels and pixel positions are masked (see `Generator::index_below`), and each
// pixel's private dwords fit the output SSBO.
const _: () = assert!(
    TEXTURE_LEVELS.is_power_of_two()
        && WIDTH.is_power_of_two()
        && HEIGHT.is_power_of_two()
        && WIDTH * HEIGHT * PRIVATE_DWORDS <= 256
);
/// Dwords of the counters SSBO each commutative atomic operation has to itself.
const COUNTERS_PER_OP: u32 = 32;
/// The binary integer operations every bit size takes with any operands (they wrap or
/// saturate), which the 32-bit expressions and the other sizes' excursions both draw from.
const WRAPPING_INT_OPS: [AluOp; 14] = [
    AluOp::Iadd,
    AluOp::Isub,
    AluOp::Imul,
    AluOp::Iand,
    AluOp::Ior,
    AluOp::Ixor,
    AluOp::Imin,
    AluOp::Imax,
    AluOp::Umin,
    AluOp::Umax,
    AluOp::IaddSat,
    AluOp::UaddSat,
    AluOp::IsubSat,
    AluOp::UsubSat,
];

/// A random valid shader: see the module's documentation.
pub fn random_shader(seed: u64, options: &Options) -> Shader {
    let mut shader = Shader::new(options.stage);
    if options.stage == Stage::Compute {
        shader.workgroup_size = WORKGROUP_SIZE;
    }
    let mut generator = Generator {
        b: Builder::new(&mut shader, FuncId(0)),
        rng: Rng::new(seed),
        stage: options.stage,
        max_depth: options.max_depth,
        pool: Vec::new(),
        locals: Vec::new(),
        loops: Vec::new(),
        depth: 0,
        may_have_discarded: false,
        budget: options.statements,
        input_ssbo: None,
        texture: None,
        memory: None,
        storage: None,
        allowed: options.allowed.clone(),
        functions: Vec::new(),
        returning: None,
    };
    generator.inputs();
    generator.declare_locals();
    generator.declare_functions();
    while generator.budget > 0 {
        generator.statement();
    }
    generator.outputs();
    shader
}

/// The kind of value, which says which operations read it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Class {
    Float,
    Int,
    Bool,
}

/// What is known of every component of a value.
#[derive(Copy, Clone, Debug)]
struct Facts {
    /// The largest magnitude (integers: as signed numbers; infinite when unknown).
    bound: f64,
    /// Floats: `Some(n)` when the value is a multiple of 2^-n computed without rounding.
    exact: Option<u32>,
    /// Floats: how far rounding and approximate operations may have moved the value.
    error: f64,
}

impl Facts {
    const ANY_INT: Facts = Facts {
        bound: f64::INFINITY,
        exact: None,
        error: 0.0,
    };
    /// Thousandths within 1, as the differential runner fills uniforms and vertex attributes:
    /// rounded, but the same bits on both sides.
    const THOUSANDTHS: Facts = Facts {
        bound: 1.0,
        exact: None,
        error: 0.0,
    };

    const fn small_int(bound: f64) -> Facts {
        Facts {
            bound,
            ..Facts::ANY_INT
        }
    }

    const fn exact(bound: f64, frac: u32) -> Facts {
        Facts {
            bound,
            exact: Some(frac),
            error: 0.0,
        }
    }

    /// The facts of a float result of magnitude at most `bound` computed from operands
    /// exact to `frac` bits (if they all are) and otherwise off by `error`: exact if it fits
    /// the significand, else rounded once more.
    fn float(bound: f64, frac: Option<u32>, error: f64) -> Facts {
        match frac {
            Some(frac) if bound * 2f64.powi(frac as i32) < SIGNIFICAND => Facts::exact(bound, frac),
            _ => Facts {
                bound,
                exact: None,
                error: error + bound * ROUNDING,
            },
        }
    }

    /// Either of two values (a select, a minimum).
    fn either(a: Facts, b: Facts) -> Facts {
        Facts {
            bound: a.bound.max(b.bound),
            exact: a.exact.zip(b.exact).map(|(x, y)| x.max(y)),
            error: a.error.max(b.error),
        }
    }
}

/// Exact float values stay below 2^24 units of their last bit: f32's significand.
const SIGNIFICAND: f64 = 16_777_216.0;
/// One rounding to f32, relative.
const ROUNDING: f64 = 1.0 / 8_388_608.0;
/// Values that may be off by more than this are scaled down by a power of two until they
/// are not: the outputs are compared within 1e-4 of their magnitude (absolute below 1), and
/// sums of several such values must stay inside that.
const MAX_ERROR: f64 = 1e-5;
/// Floats are clamped back to this magnitude when they grow past it.
const MAX_FLOAT: f64 = 4096.0;

#[derive(Copy, Clone, Debug)]
struct Item {
    value: Value,
    class: Class,
    comps: u8,
    facts: Facts,
}

/// What every value a slot (a local variable, a function's parameter) holds satisfies.
#[derive(Copy, Clone, Debug)]
struct Kind {
    class: Class,
    comps: u8,
    facts: Facts,
}

impl Kind {
    /// The kinds of the locals and of the parameters of generated functions.
    const ALL: [Kind; 6] = [
        Kind::new(Class::Float, 1, Facts::exact(64.0, 6)),
        Kind::new(Class::Float, 4, Facts::exact(64.0, 6)),
        Kind::new(
            Class::Float,
            2,
            Facts {
                bound: MAX_FLOAT,
                exact: None,
                error: 1e-6,
            },
        ),
        Kind::new(Class::Int, 1, Facts::ANY_INT),
        Kind::new(Class::Int, 2, Facts::ANY_INT),
        Kind::new(Class::Bool, 1, Facts::small_int(1.0)),
    ];

    const fn new(class: Class, comps: u8, facts: Facts) -> Kind {
        Kind {
            class,
            comps,
            facts,
        }
    }

    fn accepts(&self, item: &Item) -> bool {
        item.class == self.class
            && item.comps == self.comps
            && item.facts.bound <= self.facts.bound
            && item.facts.error <= self.facts.error
            && match self.facts.exact {
                Some(frac) => item.facts.exact.is_some_and(|f| f <= frac),
                None => true,
            }
    }

    fn val_type(&self) -> ValType {
        let bits = match self.class {
            Class::Bool => 1,
            _ => 32,
        };
        ValType::new(bits, self.comps)
    }

    /// A value of this kind with the facts it promises.
    fn item(&self, value: Value) -> Item {
        Item {
            value,
            class: self.class,
            comps: self.comps,
            facts: self.facts,
        }
    }
}

/// A function-local variable.
#[derive(Copy, Clone)]
struct Local {
    var: VarId,
    kind: Kind,
}

/// A generated function: what its parameters take, and what its result is.
#[derive(Clone)]
struct Callee {
    func: FuncId,
    params: Vec<Kind>,
    result: Kind,
}

/// What a compute shader's memory statements reach (from the entry point only).
#[derive(Copy, Clone)]
struct ComputeMemory {
    /// The invocation's index in its workgroup.
    local_index: Value,
    /// Its index in the dispatch: global x + y × the grid's width.
    invocation: Value,
    /// Shared memory with one counter per commutative atomic operation, when the shader has
    /// it: set by each invocation before a barrier, read after one at the end.
    shared_counters: Option<VarId>,
}

/// The SSBOs a shader writes (from the entry point only).
#[derive(Copy, Clone)]
struct Storage {
    /// Binding 1: in compute shaders [`SLOTS`] hashes per invocation, then
    /// [`PRIVATE_DWORDS`] per invocation; in fragment shaders [`PRIVATE_DWORDS`] per pixel.
    results: VarId,
    /// The index of the first of the invocation's private dwords of `results`, where it has
    /// an index of its own (vertex shaders have none: no backend loads the vertex index yet).
    private: Option<Value>,
    /// Binding 2: commutative atomics of every invocation, [`COUNTERS_PER_OP`] dwords for
    /// each operation, so that only operations that commute meet at one address.
    counters: VarId,
}

/// The function being generated, when it is not the entry point.
struct Returning {
    class: Class,
    comps: u8,
    /// What every value returned so far satisfies: the result's facts.
    facts: Option<Facts>,
}

struct Generator<'a> {
    b: Builder<'a>,
    rng: Rng,
    stage: Stage,
    max_depth: usize,
    /// The values the current position may use, innermost last.
    pool: Vec<Item>,
    locals: Vec<Local>,
    /// The loops around the current position, innermost last.
    loops: Vec<LoopBuilder>,
    depth: usize,
    may_have_discarded: bool,
    /// Statements left to generate.
    budget: usize,
    input_ssbo: Option<VarId>,
    /// The 2D texture the shader reads, when it has one.
    texture: Option<VarId>,
    /// Compute shaders: see [`ComputeMemory`].
    memory: Option<ComputeMemory>,
    /// See [`Storage`]: always in compute shaders, in half the fragment and vertex shaders.
    storage: Option<Storage>,
    allowed: Option<BTreeSet<(AluOp, u8)>>,
    /// The functions generated so far.
    functions: Vec<Callee>,
    /// While a function other than the entry point is generated: its result.
    returning: Option<Returning>,
}

const EXACT_CONSTANTS: [f64; 12] = [
    0.0, 1.0, -1.0, 0.5, 2.0, -0.25, 3.0, 1.5, -8.0, 0.125, 16.0, -0.75,
];
const INT_CONSTANTS: [i64; 10] = [0, 1, -1, 2, 7, 31, 255, -256, 0x7fff_ffff, 0x1234_5678];

impl Generator<'_> {
    /// `Some` when the options allow `op` on 32-bit operands (or on its own sized ones).
    fn allows(&self, op: AluOp) -> Option<()> {
        self.allows_at(op, if op.info().is_unsized() { 32 } else { 0 })
    }

    /// `Some` when the options allow `op` with unsized operands of `bits` bits.
    fn allows_at(&self, op: AluOp, bits: u8) -> Option<()> {
        self.allowed
            .as_ref()
            .is_none_or(|allowed| allowed.contains(&(op, bits)))
            .then_some(())
    }

    /// `Some` when the shader's outputs show inexact floats: a fragment shader's colour does
    /// (within a tolerance); a compute shader's SSBO, compared bit for bit, only shows exact
    /// ones, so it makes no inexact ones.
    fn observes_inexact_floats(&self) -> Option<()> {
        (self.stage == Stage::Fragment).then_some(())
    }

    /// One of the `ops` the options allow on 32-bit operands.
    fn choose(&mut self, ops: &[AluOp]) -> Option<AluOp> {
        self.choose_where(ops, |g, op| g.allows(op))
    }

    /// One of the `ops` the options allow at `bits` bits.
    fn choose_at(&mut self, ops: &[AluOp], bits: u8) -> Option<AluOp> {
        self.choose_where(ops, |g, op| g.allows_at(op, bits))
    }

    fn choose_where(
        &mut self,
        ops: &[AluOp],
        allows: impl Fn(&Self, AluOp) -> Option<()>,
    ) -> Option<AluOp> {
        let allowed: Vec<AluOp> = ops
            .iter()
            .copied()
            .filter(|&op| allows(self, op).is_some())
            .collect();
        (!allowed.is_empty()).then(|| self.rng.pick(&allowed))
    }

    fn push(&mut self, item: Item) {
        let item = self.tame(item);
        self.pool.push(item);
    }

    fn float(&mut self, value: Value, facts: Facts) -> Item {
        let comps = self.b.value_type(value).comps;
        Item {
            value,
            class: Class::Float,
            comps,
            facts,
        }
    }

    fn int(&mut self, value: Value, facts: Facts) -> Item {
        let comps = self.b.value_type(value).comps;
        Item {
            value,
            class: Class::Int,
            comps,
            facts,
        }
    }

    fn boolean(&mut self, value: Value) -> Item {
        let comps = self.b.value_type(value).comps;
        Item {
            value,
            class: Class::Bool,
            comps,
            facts: Facts::small_int(1.0),
        }
    }

    // ---- inputs, locals, outputs ----

    fn inputs(&mut self) {
        match self.stage {
            Stage::Fragment => {
                let v = self.vec4_input("v", 0);
                // Dyadic inputs: multiples of 1/64 within 5 (see the differential runner).
                let item = self.float(v, Facts::exact(5.0, 6));
                self.push(item);
                let coord = self.b.intrinsic(Intrinsic::LoadFragCoord, &[], None, &[]);
                let xy = self.swizzle(coord, &[0, 1]);
                let item = self.float(xy, Facts::exact(8.5, 1));
                self.push(item);
                if self.rng.below(2) == 0 {
                    // The pixel's index in the runner's grid: the low bits of its window
                    // position, the grid's sizes being powers of two from an even origin.
                    let [column, row] = [(0, WIDTH), (1, HEIGHT)].map(|(axis, size)| {
                        let position = self.b.channel(coord, axis);
                        let position = self.b.alu(AluOp::F2u32, &[position]);
                        let mask = self.imm_i(size - 1);
                        self.b.alu(AluOp::Iand, &[position, mask])
                    });
                    let row_dwords = self.imm_i(WIDTH * PRIVATE_DWORDS);
                    let rows = self.b.alu(AluOp::Imul, &[row, row_dwords]);
                    let dwords = self.imm_i(PRIVATE_DWORDS);
                    let columns = self.b.alu(AluOp::Imul, &[column, dwords]);
                    let private = self.b.alu(AluOp::Iadd, &[rows, columns]);
                    self.declare_storage(Some(private));
                }
            }
            Stage::Vertex => {
                for location in 0..2 {
                    let v = self.vec4_input(&format!("v{location}"), location);
                    let item = self.float(v, Facts::THOUSANDTHS);
                    self.push(item);
                }
                if self.rng.below(2) == 0 {
                    self.declare_storage(None);
                }
            }
            Stage::Compute => {
                let id = self
                    .b
                    .intrinsic(Intrinsic::LoadLocalInvocationIndex, &[], None, &[]);
                let item = self.int(id, Facts::small_int(LOCAL_INVOCATIONS as f64));
                self.push(item);
                let ssbo = self.b.shader.add_variable(ssbo_variable("data", 0));
                self.input_ssbo = Some(ssbo);
                self.declare_compute_memory(id);
            }
            stage => panic!("no random {} shaders", stage.name()),
        }
        // The default uniform block holds small floats in thousandths: rounded, but the same
        // bits on both sides.
        let uniform = self.b.shader.add_variable(Variable::new(
            "u",
            Mode::Uniform,
            Type::Vector(Scalar::F32, 4),
        ));
        let deref = self.b.deref_var(uniform);
        let u = self.b.load_deref(deref);
        let item = self.float(u, Facts::THOUSANDTHS);
        self.push(item);
        if self.rng.below(2) == 0 {
            let ty = Type::Texture {
                dim: Dim::D2,
                arrayed: false,
                shadow: false,
                base: BaseType::Float,
            };
            let mut texture = Variable::new("texture", Mode::Uniform, ty);
            texture.binding = Some(0);
            self.texture = Some(self.b.shader.add_variable(texture));
        }
        for _ in 0..3 {
            let c = self.constant(Class::Float, 1);
            self.push(c);
            let c = self.constant(Class::Int, 1);
            self.push(c);
        }
    }

    /// Loads the `vec4` input `name` at `location`.
    fn vec4_input(&mut self, name: &str, location: u32) -> Value {
        let mut input = Variable::new(name, Mode::ShaderIn, Type::Vector(Scalar::F32, 4));
        input.location = Some(location);
        let input = self.b.shader.add_variable(input);
        let deref = self.b.deref_var(input);
        self.b.load_deref(deref)
    }

    fn declare_locals(&mut self) {
        for (i, kind) in Kind::ALL.into_iter().enumerate() {
            let scalar = match kind.class {
                Class::Float => Scalar::F32,
                Class::Int => Scalar::I32,
                Class::Bool => Scalar::BOOL,
            };
            let ty = if kind.comps == 1 {
                Type::Scalar(scalar)
            } else {
                Type::Vector(scalar, kind.comps)
            };
            let var =
                self.b
                    .shader
                    .add_variable(Variable::new(format!("l{i}"), Mode::FunctionTemp, ty));
            let init = self.constant(kind.class, kind.comps);
            let deref = self.b.deref_var(var);
            self.b.store_deref_all(deref, init.value);
            self.locals.push(Local { var, kind });
        }
    }

    /// Functions of one to three parameters returning a value, each generated like the entry
    /// point's body (without locals, discards and derivatives), each possibly calling the
    /// ones before it (so there is no recursion), and the entry point calling any of them.
    /// A function returns early from inside an `if` but never from inside a loop, so that
    /// the inliner takes every call.
    fn declare_functions(&mut self) {
        for index in 0..self.rng.below(4) {
            let params: Vec<Kind> = (0..1 + self.rng.below(3))
                .map(|_| self.rng.pick(&Kind::ALL))
                .collect();
            let result = self.rng.pick(&Kind::ALL);
            let types: Vec<ValType> = params.iter().map(Kind::val_type).collect();
            let func =
                self.b
                    .shader
                    .add_function(&format!("f{index}"), &types, Some(result.val_type()));
            // The entry point's position and scope, back once the function is done.
            let caller = (self.b.func, self.b.cursor);
            let pool = std::mem::take(&mut self.pool);
            let locals = std::mem::take(&mut self.locals);
            let budget = self.budget;
            self.b.func = func;
            self.b.cursor = Cursor::at_end(self.b.function().entry);
            self.returning = Some(Returning {
                class: result.class,
                comps: result.comps,
                facts: None,
            });
            for (i, kind) in params.iter().enumerate() {
                let value = self.b.intrinsic(
                    Intrinsic::LoadParam,
                    &[],
                    Some(kind.val_type()),
                    &[(IndexKind::ParamIdx, i as u32)],
                );
                self.push(kind.item(value));
            }
            self.budget = 2 + self.rng.below(6);
            while self.budget > 0 {
                self.statement();
            }
            self.return_value();
            let facts = self
                .returning
                .take()
                .and_then(|r| r.facts)
                .expect("a function returns");
            self.functions.push(Callee {
                func,
                params,
                result: Kind::new(result.class, result.comps, facts),
            });
            (self.b.func, self.b.cursor) = caller;
            self.pool = pool;
            self.locals = locals;
            self.budget = budget;
        }
    }

    /// `return x` from the function being generated, `x` of its result's class and width.
    fn return_value(&mut self) {
        let returning = self.returning.as_ref().expect("inside a function");
        let (class, comps) = (returning.class, returning.comps);
        let item = match self.operand_of(class, comps, |_| true) {
            Some(item) => item,
            None => self.constant(class, comps),
        };
        let returning = self.returning.as_mut().expect("inside a function");
        returning.facts = Some(match returning.facts {
            Some(facts) => Facts::either(facts, item.facts),
            None => item.facts,
        });
        self.b.ret(Some(item.value));
    }

    /// `if (c) { return x; }` out of the function being generated.
    fn return_early(&mut self) {
        let cond = self.condition();
        let nif = self.b.push_if(cond);
        self.return_value();
        self.b.pop_if(nif);
    }

    /// A call of one of the functions generated so far, on values of the pool its parameters
    /// accept (or constants).
    fn call(&mut self) {
        let callee = self.functions[self.rng.below(self.functions.len())].clone();
        let args: Vec<Value> = callee
            .params
            .iter()
            .map(|kind| {
                let candidates: Vec<Item> = self
                    .pool
                    .iter()
                    .filter(|item| kind.accepts(item))
                    .copied()
                    .collect();
                match candidates.is_empty() {
                    true => self.constant(kind.class, kind.comps).value,
                    false => candidates[self.rng.below(candidates.len())].value,
                }
            })
            .collect();
        let value = self.b.call(callee.func, &args).expect("functions return");
        self.push(callee.result.item(value));
    }

    /// The results. Integers, booleans and exact floats (scaled to integers) are hashed into
    /// [`SLOTS`] running hashes; other floats are summed into two running `acc * 0.5 + x`
    /// (which keeps magnitudes and errors bounded). A compute shader writes the hashes to its
    /// slots of the output SSBO, compared bit for bit. A fragment shader writes the colour
    /// (the two sums, then 26 bits of a digest of the hashes as two integers below 2^13, which
    /// the colour's tolerance tells apart): every target writes colours, not every one SSBOs.
    /// A vertex shader writes that colour as its varying and as its position.
    fn outputs(&mut self) {
        for i in 0..self.locals.len() {
            self.load_local(i);
        }
        if let Some(counters) = self.memory.and_then(|m| m.shared_counters) {
            // Every invocation's atomics done, each counter holds the same value whatever
            // their order.
            self.barrier();
            for k in 0..COMMUTATIVE_ATOMICS.len() {
                let array = self.b.deref_var(counters);
                let index = self.imm_i(k as u32);
                let element = self.b.deref_array(array, index);
                let value = self.b.load_deref(element);
                let item = self.int(value, Facts::ANY_INT);
                self.push(item);
            }
        }
        let items = self.pool.clone();
        let half = self.b.imm_f32(0.5);
        let mut sums: Vec<Value> = (0..2).map(|_| self.b.imm_f32(0.0)).collect();
        let mut hashes: Vec<Value> = Vec::new();
        let mut slot = 0;
        for item in &items {
            for c in 0..item.comps {
                let x = self.b.channel(item.value, c);
                let int = match item.class {
                    Class::Float => {
                        let k = (c as usize + slot) % 2;
                        let scaled = self.b.alu(AluOp::Fmul, &[sums[k], half]);
                        sums[k] = self.b.alu(AluOp::Fadd, &[scaled, x]);
                        match item.facts.exact {
                            // Exactly an integer once scaled by 2^frac (a power of two, so
                            // the product is exact).
                            Some(frac) => {
                                let scale = self.b.imm_f32(2f32.powi(frac as i32));
                                let scaled = self.b.alu(AluOp::Fmul, &[x, scale]);
                                Some(self.b.alu(AluOp::F2i32, &[scaled]))
                            }
                            None => None,
                        }
                    }
                    Class::Int => Some(x),
                    Class::Bool => Some(self.b.alu(AluOp::B2i32, &[x])),
                };
                if let Some(int) = int {
                    let k = slot % SLOTS as usize;
                    if hashes.len() <= k {
                        hashes.push(int);
                    } else {
                        hashes[k] = self.mix(hashes[k], int);
                    }
                    slot += 1;
                }
            }
        }
        if hashes.is_empty() {
            hashes.push(self.b.imm_u32(0));
        }
        match self.stage {
            Stage::Fragment | Stage::Vertex => {
                let digest = hashes[1..]
                    .iter()
                    .copied()
                    .fold(hashes[0], |d, h| self.mix(d, h));
                let digest = self.avalanche(digest);
                let mut colour = sums;
                for shift in [0, 13] {
                    let amount = self.imm_i(shift);
                    let high = self.b.alu(AluOp::Ushr, &[digest, amount]);
                    let bits = self.imm_i(0x1fff);
                    let low = self.b.alu(AluOp::Iand, &[high, bits]);
                    colour.push(self.b.alu(AluOp::U2f32, &[low]));
                }
                let mut var =
                    Variable::new("colour", Mode::ShaderOut, Type::Vector(Scalar::F32, 4));
                var.location = Some(0);
                let var = self.b.shader.add_variable(var);
                let colour = self.b.vec(&colour);
                let deref = self.b.deref_var(var);
                self.b.store_deref_all(deref, colour);
                if self.stage == Stage::Vertex {
                    let mut position =
                        Variable::new("position", Mode::ShaderOut, Type::Vector(Scalar::F32, 4));
                    position.builtin = Some(Builtin::Position);
                    let position = self.b.shader.add_variable(position);
                    let deref = self.b.deref_var(position);
                    self.b.store_deref_all(deref, colour);
                }
            }
            _ => {
                let memory = self.memory.expect("a compute shader's memory");
                let storage = self.storage.expect("a compute shader's SSBOs");
                let slots = self.imm_i(SLOTS);
                let base = self.b.alu(AluOp::Imul, &[memory.invocation, slots]);
                let array = self.b.deref_var(storage.results);
                for (k, &hash) in hashes.iter().enumerate() {
                    let offset = self.imm_i(k as u32);
                    let index = self.b.alu(AluOp::Iadd, &[base, offset]);
                    let element = self.b.deref_array(array, index);
                    self.b.store_deref_all(element, hash);
                }
            }
        }
        self.b.ret(None);
    }

    /// `hash × 0x9e3779b1 + x`.
    fn mix(&mut self, hash: Value, x: Value) -> Value {
        let multiplier = self.imm_i(0x9e37_79b1);
        let mixed = self.b.alu(AluOp::Imul, &[hash, multiplier]);
        self.b.alu(AluOp::Iadd, &[mixed, x])
    }

    /// Makes every bit of `hash` reach the low bits (products only carry upwards).
    fn avalanche(&mut self, hash: Value) -> Value {
        let mut h = hash;
        for (shift, multiplier) in [(16, 0x85eb_ca6b_u32), (13, 0xc2b2_ae35)] {
            let amount = self.imm_i(shift);
            let high = self.b.alu(AluOp::Ushr, &[h, amount]);
            let folded = self.b.alu(AluOp::Ixor, &[h, high]);
            let m = self.imm_i(multiplier);
            h = self.b.alu(AluOp::Imul, &[folded, m]);
        }
        let amount = self.imm_i(16);
        let high = self.b.alu(AluOp::Ushr, &[h, amount]);
        self.b.alu(AluOp::Ixor, &[h, high])
    }

    // ---- statements ----

    fn statement(&mut self) {
        self.budget = self.budget.saturating_sub(1);
        let nested = self.depth < self.max_depth && self.budget > 2;
        let entry_point = self.returning.is_none();
        match self.rng.below(100) {
            0..=44 => self.expression(),
            45..=49 if self.texture.is_some() => self.texture_read(),
            45..=49 => self.expression(),
            50..=54 if !self.functions.is_empty() => self.call(),
            55..=62 if entry_point => self.store_local(),
            63..=69 if entry_point => {
                let i = self.rng.below(self.locals.len());
                self.load_local(i);
            }
            63..=65 if self.loops.is_empty() && self.depth > 0 => self.return_early(),
            70..=79 if nested => self.if_statement(),
            80..=86 if nested => self.loop_statement(),
            87..=90 if !self.loops.is_empty() => self.leave_iteration(),
            k @ 91..=96 if entry_point => match (self.stage, k) {
                (Stage::Fragment, 91..=92) => self.discard(),
                (Stage::Fragment, _) => self.derivative(),
                (Stage::Compute, 91..=93) => {
                    for _ in 0..1 + self.rng.below(3) {
                        self.write_storage();
                    }
                }
                (Stage::Compute, _) => self.exchange_shared(),
                _ => self.expression(),
            },
            97..=99 if self.stage == Stage::Compute => self.load_ssbo(),
            97..=99 if entry_point && self.storage.is_some() => self.write_storage(),
            _ => self.expression(),
        }
    }

    /// Statements until `count` more have been generated (or the budget runs out).
    fn block(&mut self, count: usize) {
        let end = self.budget.saturating_sub(count);
        while self.budget > end {
            self.statement();
        }
    }

    fn store_local(&mut self) {
        let i = self.rng.below(self.locals.len());
        let local = self.locals[i];
        let candidates: Vec<Item> = self
            .pool
            .iter()
            .filter(|item| local.kind.accepts(item))
            .copied()
            .collect();
        if candidates.is_empty() {
            return;
        }
        let item = candidates[self.rng.below(candidates.len())];
        let deref = self.b.deref_var(local.var);
        self.b.store_deref_all(deref, item.value);
    }

    fn load_local(&mut self, i: usize) {
        let local = self.locals[i];
        let deref = self.b.deref_var(local.var);
        let value = self.b.load_deref(deref);
        self.push(local.kind.item(value));
    }

    fn condition(&mut self) -> Value {
        let item = self.operand(Class::Bool, |_| true);
        match item {
            Some(item) => self
                .b
                .channel(item.value, self.rng.below(item.comps as usize) as u8),
            None => self.b.imm_bool(self.rng.below(2) == 0),
        }
    }

    fn if_statement(&mut self) {
        let cond = self.condition();
        let mut nif = self.b.push_if(cond);
        self.depth += 1;
        let scope = self.pool.len();
        let size = 1 + self.rng.below(6);
        self.block(size);
        self.pool.truncate(scope);
        if self.rng.below(2) == 0 {
            self.b.push_else(&mut nif);
            let size = 1 + self.rng.below(6);
            self.block(size);
            self.pool.truncate(scope);
        }
        self.depth -= 1;
        self.b.pop_if(nif);
    }

    /// `for (i = 0; i < n; i++)` with `n` from 1 to 4, a constant or taken from a value (so
    /// invocations may run different trip counts).
    fn loop_statement(&mut self) {
        let counter = self.b.shader.add_variable(Variable::new(
            format!("i{}", self.b.shader.variables.len()),
            Mode::FunctionTemp,
            Type::Scalar(Scalar::I32),
        ));
        let zero = self.b.imm_u32(0);
        let deref = self.b.deref_var(counter);
        self.b.store_deref_all(deref, zero);
        let trips = match self.operand(Class::Int, |_| true) {
            Some(item) if self.rng.below(2) == 0 => {
                let x = self.b.channel(item.value, 0);
                let three = self.b.imm_u32(3);
                let low = self.b.alu(AluOp::Iand, &[x, three]);
                let one = self.b.imm_u32(1);
                self.b.alu(AluOp::Iadd, &[low, one])
            }
            _ => self.b.imm_u32(1 + self.rng.below(4) as u32),
        };
        let lp = self.b.push_loop();
        let deref = self.b.deref_var(counter);
        let i = self.b.load_deref(deref);
        let done = self.b.alu(AluOp::Ige, &[i, trips]);
        let nif = self.b.push_if(done);
        self.b.break_loop(&lp);
        self.b.pop_if(nif);
        let one = self.b.imm_u32(1);
        let next = self.b.alu(AluOp::Iadd, &[i, one]);
        self.b.store_deref_all(deref, next);
        let scope = self.pool.len();
        self.push(Item {
            value: i,
            class: Class::Int,
            comps: 1,
            facts: Facts::small_int(4.0),
        });
        self.loops.push(lp);
        self.depth += 1;
        let size = 1 + self.rng.below(8);
        self.block(size);
        self.depth -= 1;
        let lp = self.loops.pop().expect("the loop just pushed");
        self.pool.truncate(scope);
        self.b.pop_loop(lp);
    }

    /// `if (c) { break; }` or `if (c) { continue; }` out of the innermost loop.
    fn leave_iteration(&mut self) {
        let cond = self.condition();
        let nif = self.b.push_if(cond);
        let lp = self.loops.last().expect("inside a loop");
        if self.rng.below(2) == 0 {
            self.b.break_loop(lp);
        } else {
            self.b.continue_loop(lp);
        }
        self.b.pop_if(nif);
    }

    fn discard(&mut self) {
        let cond = self.condition();
        let nif = self.b.push_if(cond);
        self.b.intrinsic(Intrinsic::Discard, &[], None, &[]);
        self.b.pop_if(nif);
        self.may_have_discarded = true;
    }

    /// A screen-space derivative, where every invocation of the quad takes the same path.
    fn derivative(&mut self) {
        if self.depth > 0 || self.may_have_discarded {
            return self.expression();
        }
        let Some(x) = self.operand(Class::Float, |_| true) else {
            return;
        };
        let Some(op) = self.choose(&[
            AluOp::Fddx,
            AluOp::Fddy,
            AluOp::FddxFine,
            AluOp::FddyFine,
            AluOp::FddxCoarse,
            AluOp::FddyCoarse,
        ]) else {
            return;
        };
        let value = self.b.alu(op, &[x.value]);
        let facts = Facts::float(2.0 * x.facts.bound, x.facts.exact, 2.0 * x.facts.error);
        let item = self.float(value, facts);
        self.push(item);
    }

    fn load_ssbo(&mut self) {
        let Some(ssbo) = self.input_ssbo else { return };
        let index = match self.operand(Class::Int, |_| true) {
            Some(item) => {
                let x = self.b.channel(item.value, 0);
                let mask = self.b.imm_u32(255);
                self.b.alu(AluOp::Iand, &[x, mask])
            }
            None => self.b.imm_u32(self.rng.below(256) as u32),
        };
        let array = self.b.deref_var(ssbo);
        let element = self.b.deref_array(array, index);
        let value = self.b.load_deref(element);
        let item = self.int(value, Facts::ANY_INT);
        self.push(item);
    }

    /// A read of the shader's texture whose result is the same on every implementation: a
    /// texel fetch at an in-range level and coordinates, a sample with an explicit integral
    /// level of detail at a texel's centre (where linear filtering weighs that texel alone)
    /// or, in a fragment shader, anywhere (the blend moves by at most the level's size per
    /// unit of coordinate error on each axis), or the size of a level. Texels are multiples of
    /// 2^-[`TEXEL_FRAC`], so what reads one texel is exact.
    fn texture_read(&mut self) {
        let Some(texture) = self.texture else {
            return self.expression();
        };
        let deref = self.b.deref_var(texture);
        let texel = Facts::exact(1.0, TEXEL_FRAC);
        let (op, mut srcs, facts) = match self.rng.below(5) {
            0 | 1 => {
                let level = self.index_below(TEXTURE_LEVELS);
                let top = self.imm_i(TEXTURE_SIZE - 1);
                // The level's largest coordinate: one less than its size, a power of two.
                let mask = self.b.alu(AluOp::Ushr, &[top, level]);
                let coords: Vec<Value> = (0..2)
                    .map(|_| {
                        let x = self.int_operand(1).value;
                        self.b.alu(AluOp::Iand, &[x, mask])
                    })
                    .collect();
                let coord = self.b.vec(&coords);
                (
                    TexOp::Txf,
                    vec![(TexSrc::Coord, coord), (TexSrc::Lod, level)],
                    texel,
                )
            }
            2 => {
                let level = self.rng.below(TEXTURE_LEVELS as usize) as u32;
                let size = TEXTURE_SIZE >> level;
                let coords: Vec<Value> = (0..2)
                    .map(|_| {
                        // (i + 0.5) / size, exactly: size is a power of two.
                        let i = self.index_below(size);
                        let i = self.b.alu(AluOp::U2f32, &[i]);
                        let half = self.imm_f(0.5);
                        let centre = self.b.alu(AluOp::Fadd, &[i, half]);
                        let scale = self.imm_f(1.0 / size as f32);
                        self.b.alu(AluOp::Fmul, &[centre, scale])
                    })
                    .collect();
                let coord = self.b.vec(&coords);
                let lod = self.imm_f(level as f32);
                (
                    TexOp::Txl,
                    vec![(TexSrc::Coord, coord), (TexSrc::Lod, lod)],
                    texel,
                )
            }
            3 if self.observes_inexact_floats().is_some() => {
                let level = self.rng.below(TEXTURE_LEVELS as usize) as u32;
                let coord = self.float_operand(2, |_| true);
                let lod = self.imm_f(level as f32);
                let slope = 2.0 * f64::from(TEXTURE_SIZE >> level);
                (
                    TexOp::Txl,
                    vec![(TexSrc::Coord, coord.value), (TexSrc::Lod, lod)],
                    Facts::float(1.0, None, slope * coord.facts.error),
                )
            }
            _ => {
                let level = self.index_below(TEXTURE_LEVELS);
                let srcs = vec![(TexSrc::TextureDeref, deref), (TexSrc::Lod, level)];
                let value = self
                    .b
                    .tex(Tex::new(TexOp::Txs, Dim::D2, srcs), ValType::new(32, 2));
                let item = self.int(value, Facts::small_int(TEXTURE_SIZE as f64));
                return self.push(item);
            }
        };
        srcs.insert(0, (TexSrc::TextureDeref, deref));
        let value = self.b.tex(Tex::new(op, Dim::D2, srcs), ValType::new(32, 4));
        let item = self.float(value, facts);
        self.push(item);
    }

    /// A compute shader's output SSBO, counters SSBO and (three times in four) shared
    /// counters, which each invocation sets before a barrier.
    fn declare_compute_memory(&mut self, local_index: Value) {
        let index = self
            .b
            .intrinsic(Intrinsic::LoadGlobalInvocationId, &[], None, &[]);
        let x = self.b.channel(index, 0);
        let y = self.b.channel(index, 1);
        let width = self.imm_i(WORKGROUP_SIZE[0] * WORKGROUPS[0]);
        let row = self.b.alu(AluOp::Imul, &[y, width]);
        let invocation = self.b.alu(AluOp::Iadd, &[row, x]);
        let dwords = self.imm_i(PRIVATE_DWORDS);
        let own = self.b.alu(AluOp::Imul, &[invocation, dwords]);
        let hashes = self.imm_i(SLOTS * INVOCATIONS);
        let private = self.b.alu(AluOp::Iadd, &[own, hashes]);
        self.declare_storage(Some(private));
        let shared_counters = (self.rng.below(4) != 0).then(|| {
            let ty = Type::Array {
                elem: Box::new(Type::Scalar(Scalar::U32)),
                len: LOCAL_INVOCATIONS,
                stride: 0,
            };
            let var =
                self.b
                    .shader
                    .add_variable(Variable::new("shared_counters", Mode::Shared, ty));
            let multiplier = self.imm_i(0x9e37_79b1);
            let spread = self.b.alu(AluOp::Imul, &[local_index, multiplier]);
            let offset = self.rng.next_u64() as u32;
            let offset = self.imm_i(offset);
            let value = self.b.alu(AluOp::Iadd, &[spread, offset]);
            let array = self.b.deref_var(var);
            let element = self.b.deref_array(array, local_index);
            self.b.store_deref_all(element, value);
            self.barrier();
            var
        });
        self.memory = Some(ComputeMemory {
            local_index,
            invocation,
            shared_counters,
        });
    }

    /// The output and counters SSBOs, the invocation's private dwords starting at `private`.
    fn declare_storage(&mut self, private: Option<Value>) {
        let results = self.b.shader.add_variable(ssbo_variable("results", 1));
        let counters = self.b.shader.add_variable(ssbo_variable("counters", 2));
        self.storage = Some(Storage {
            results,
            private,
            counters,
        });
    }

    /// A value of the pool stored to one of the invocation's private dwords (half the time,
    /// where it has them), or an atomic.
    fn write_storage(&mut self) {
        match self.storage.and_then(|s| Some((s.results, s.private?))) {
            Some((results, private)) if self.rng.below(2) == 0 => {
                let slot = self.index_below(PRIVATE_DWORDS);
                let index = self.b.alu(AluOp::Iadd, &[private, slot]);
                let array = self.b.deref_var(results);
                let element = self.b.deref_array(array, index);
                let value = self.int_operand(1).value;
                self.b.store_deref_all(element, value);
            }
            _ => self.atomic(),
        }
    }

    /// A workgroup barrier: every invocation's shared memory writes before it are seen by
    /// every invocation's reads after it. Only in uniform control flow.
    fn barrier(&mut self) {
        const WORKGROUP: u32 = 3;
        const ACQUIRE_RELEASE: u32 = 0b11;
        const SHARED: u32 = 1 << 2;
        self.b.intrinsic(
            Intrinsic::Barrier,
            &[],
            None,
            &[
                (IndexKind::ExecutionScope, WORKGROUP),
                (IndexKind::MemoryScope, WORKGROUP),
                (IndexKind::MemorySemantics, ACQUIRE_RELEASE),
                (IndexKind::MemoryModes, SHARED),
            ],
        );
    }

    /// An integer of the pool masked below `n` (a power of two), or a constant below it.
    fn index_below(&mut self, n: u32) -> Value {
        match self.operand(Class::Int, |_| true) {
            Some(item) if self.rng.below(2) == 0 => {
                let x = self.b.channel(item.value, 0);
                let mask = self.imm_i(n - 1);
                self.b.alu(AluOp::Iand, &[x, mask])
            }
            _ => {
                let k = self.rng.below(n as usize) as u32;
                self.imm_i(k)
            }
        }
    }

    /// An atomic on memory whose final value does not depend on the order the invocations
    /// run in: a commutative operation on the counters SSBO or the shared counters (the value
    /// it returns does depend on the order, so nothing reads it), or any operation, compare
    /// and swap included, on a dword of the invocation's own (whose returned value is
    /// defined, so it joins the pool).
    fn atomic(&mut self) {
        let Some(storage) = self.storage else {
            return self.expression();
        };
        let data = self.int_operand(1).value;
        let scalar = ValType::new(32, 1);
        let shared = match self.memory.and_then(|m| m.shared_counters) {
            Some(var) if self.rng.below(3) == 0 => Some(var),
            _ => None,
        };
        let private = match storage.private {
            Some(private) if self.rng.below(2) == 0 => private,
            _ => {
                let k = self.rng.below(COMMUTATIVE_ATOMICS.len());
                let op = COMMUTATIVE_ATOMICS[k];
                let element = match shared {
                    Some(var) => {
                        let array = self.b.deref_var(var);
                        let index = self.imm_i(k as u32);
                        self.b.deref_array(array, index)
                    }
                    None => {
                        let low = self.index_below(COUNTERS_PER_OP);
                        let first = self.imm_i(k as u32 * COUNTERS_PER_OP);
                        let index = self.b.alu(AluOp::Iadd, &[low, first]);
                        let array = self.b.deref_var(storage.counters);
                        self.b.deref_array(array, index)
                    }
                };
                self.b.intrinsic(
                    Intrinsic::DerefAtomic,
                    &[element, data],
                    Some(scalar),
                    &[(IndexKind::AtomicOp, op as u32)],
                );
                return;
            }
        };
        let slot = self.index_below(PRIVATE_DWORDS);
        let index = self.b.alu(AluOp::Iadd, &[private, slot]);
        let array = self.b.deref_var(storage.results);
        let element = self.b.deref_array(array, index);
        let op = match self.rng.below(5) {
            0 => AtomicOp::Xchg,
            1 => AtomicOp::Cmpxchg,
            _ => self.rng.pick(&COMMUTATIVE_ATOMICS),
        };
        let value = if op == AtomicOp::Cmpxchg {
            // Comparing with the dword as it is (the swap happens) or with another value
            // (it may not).
            let current = self.b.load_deref(element);
            let cond = self.condition();
            let other = self.int_operand(1).value;
            let compare = self.b.alu(AluOp::Bcsel, &[cond, current, other]);
            self.b.intrinsic(
                Intrinsic::DerefAtomicSwap,
                &[element, compare, data],
                Some(scalar),
                &[(IndexKind::AtomicOp, op as u32)],
            )
        } else {
            self.b.intrinsic(
                Intrinsic::DerefAtomic,
                &[element, data],
                Some(scalar),
                &[(IndexKind::AtomicOp, op as u32)],
            )
        };
        let item = self.int(value, Facts::ANY_INT);
        self.push(item);
    }

    /// A value of the pool written to a new shared array at the invocation's index, then,
    /// after a barrier, read back at another invocation's: at the top level of the entry
    /// point only, so that every invocation writes its element and reaches the barrier.
    fn exchange_shared(&mut self) {
        let Some(memory) = self.memory.filter(|_| self.depth == 0) else {
            return self.expression();
        };
        let class = self.rng.pick(&[Class::Int, Class::Float]);
        let Some(item) = self.operand(class, |_| true) else {
            return;
        };
        let scalar = match class {
            Class::Float => Scalar::F32,
            _ => Scalar::U32,
        };
        let elem = match item.comps {
            1 => Type::Scalar(scalar),
            n => Type::Vector(scalar, n),
        };
        let name = format!("shared{}", self.b.shader.variables.len());
        let ty = Type::Array {
            elem: Box::new(elem),
            len: LOCAL_INVOCATIONS,
            stride: 0,
        };
        let var = self
            .b
            .shader
            .add_variable(Variable::new(name, Mode::Shared, ty));
        let array = self.b.deref_var(var);
        let element = self.b.deref_array(array, memory.local_index);
        self.b.store_deref_all(element, item.value);
        self.barrier();
        let k = 1 + self.rng.below(LOCAL_INVOCATIONS as usize - 1) as u32;
        let k = self.imm_i(k);
        let other = match self.rng.below(2) {
            0 => {
                let sum = self.b.alu(AluOp::Iadd, &[memory.local_index, k]);
                let mask = self.imm_i(LOCAL_INVOCATIONS - 1);
                self.b.alu(AluOp::Iand, &[sum, mask])
            }
            _ => self.b.alu(AluOp::Ixor, &[memory.local_index, k]),
        };
        let element = self.b.deref_array(array, other);
        let value = self.b.load_deref(element);
        self.push(Item { value, ..item });
    }

    // ---- expressions ----

    fn expression(&mut self) {
        let made = match self.rng.below(20) {
            0..=8 => self.float_expression(),
            // Other bit sizes where the options allow them.
            9 => self
                .sized_float_expression()
                .or_else(|| self.float_expression()),
            10..=15 => self.int_expression(),
            16 => self
                .sized_int_expression()
                .or_else(|| self.int_expression()),
            _ => self.bool_expression(),
        };
        if let Some(item) = made {
            self.push(item);
        }
    }

    /// A value of the pool of `class` satisfying `accept`, any width.
    fn operand(&mut self, class: Class, accept: impl Fn(&Item) -> bool) -> Option<Item> {
        let candidates: Vec<usize> = (0..self.pool.len())
            .filter(|&i| self.pool[i].class == class && accept(&self.pool[i]))
            .collect();
        if candidates.is_empty() {
            return None;
        }
        // Recent values more often, so chains form.
        let k = candidates.len();
        let pick = if self.rng.below(2) == 0 {
            k - 1 - self.rng.below(k.min(4))
        } else {
            self.rng.below(k)
        };
        Some(self.pool[candidates[pick]])
    }

    /// An operand of `class` with `comps` components: a pool value, swizzled to the width.
    fn operand_of(
        &mut self,
        class: Class,
        comps: u8,
        accept: impl Fn(&Item) -> bool,
    ) -> Option<Item> {
        let item = self.operand(class, accept)?;
        Some(self.reshape(item, comps))
    }

    fn reshape(&mut self, item: Item, comps: u8) -> Item {
        if item.comps == comps {
            return item;
        }
        let swizzle: Vec<u8> = (0..comps)
            .map(|_| self.rng.below(item.comps as usize) as u8)
            .collect();
        Item {
            value: self.swizzle(item.value, &swizzle),
            comps,
            ..item
        }
    }

    fn swizzle(&mut self, value: Value, components: &[u8]) -> Value {
        self.b.alu_swizzled(
            AluOp::Mov,
            vec![AluSrc::swizzled(value, components)],
            components.len() as u8,
        )
    }

    fn constant(&mut self, class: Class, comps: u8) -> Item {
        match class {
            Class::Float => {
                let xs: Vec<f64> = (0..comps)
                    .map(|_| self.rng.pick(&EXACT_CONSTANTS))
                    .collect();
                let bits: Vec<u64> = xs.iter().map(|&x| (x as f32).to_bits() as u64).collect();
                let value = self.b.imm(32, &bits);
                let bound = xs.iter().fold(0.0f64, |m, x| m.max(x.abs()));
                self.float(value, Facts::exact(bound, 3))
            }
            Class::Int => {
                let xs: Vec<u64> = (0..comps)
                    .map(|_| self.rng.pick(&INT_CONSTANTS) as u64)
                    .collect();
                let value = self.b.imm(32, &xs);
                self.int(value, Facts::ANY_INT)
            }
            Class::Bool => {
                let xs: Vec<u64> = (0..comps).map(|_| self.rng.below(2) as u64).collect();
                let value = self.b.imm(1, &xs);
                self.boolean(value)
            }
        }
    }

    fn width(&mut self) -> u8 {
        self.rng.pick(&[1, 1, 1, 2, 3, 4])
    }

    /// A float operand, or a constant when the pool has none that fits.
    fn float_operand(&mut self, comps: u8, accept: impl Fn(&Item) -> bool) -> Item {
        match self.operand_of(Class::Float, comps, accept) {
            Some(item) => item,
            None => self.constant(Class::Float, comps),
        }
    }

    fn int_operand(&mut self, comps: u8) -> Item {
        match self.operand_of(Class::Int, comps, |_| true) {
            Some(item) => item,
            None => self.constant(Class::Int, comps),
        }
    }

    fn imm_f(&mut self, x: f32) -> Value {
        self.b.imm_f32(x)
    }

    fn imm_i(&mut self, x: u32) -> Value {
        self.b.imm_u32(x)
    }

    /// Clamps a float that grew past [`MAX_FLOAT`] back into range, and scales one whose
    /// error grew past [`MAX_ERROR`] down by a power of two (both exactly): the operation that
    /// made it is still checked, at the precision the comparison can see.
    fn tame(&mut self, mut item: Item) -> Item {
        if item.class != Class::Float {
            return item;
        }
        if item.facts.bound > MAX_FLOAT {
            let (lo, hi) = (self.imm_f(-MAX_FLOAT as f32), self.imm_f(MAX_FLOAT as f32));
            let low = self.b.alu(AluOp::Fmax, &[item.value, lo]);
            item.value = self.b.alu(AluOp::Fmin, &[low, hi]);
            item.facts.bound = MAX_FLOAT;
        }
        if item.facts.error > MAX_ERROR {
            let shift = (item.facts.error / MAX_ERROR).log2().ceil() as i32;
            let scale = 2f64.powi(-shift);
            let factor = self.imm_f(scale as f32);
            item.value = self.b.alu(AluOp::Fmul, &[item.value, factor]);
            item.facts.bound *= scale;
            item.facts.error *= scale;
        }
        item
    }

    fn float_expression(&mut self) -> Option<Item> {
        let n = self.width();
        let exact = |item: &Item| item.facts.exact.is_some();
        Some(match self.rng.below(16) {
            // Sums, products, minimum and maximum: exact on exact operands.
            0..=4 => {
                let op = self.choose(&[
                    AluOp::Fadd,
                    AluOp::Fsub,
                    AluOp::Fmul,
                    AluOp::Fmin,
                    AluOp::Fmax,
                ])?;
                let x = self.float_operand(n, |_| true);
                let y = self.float_operand(n, |_| true);
                let value = self.b.alu(op, &[x.value, y.value]);
                let facts = match op {
                    AluOp::Fmul => product(x.facts, y.facts),
                    AluOp::Fmin | AluOp::Fmax => Facts::either(x.facts, y.facts),
                    _ => sum(x.facts, y.facts),
                };
                self.float(value, facts)
            }
            5 => {
                let op = self.choose(&[AluOp::Fneg, AluOp::Fabs, AluOp::Fsat])?;
                let x = self.float_operand(n, |_| true);
                let value = self.b.alu(op, &[x.value]);
                let mut facts = x.facts;
                if op == AluOp::Fsat {
                    facts.bound = facts.bound.min(1.0);
                }
                self.float(value, facts)
            }
            // Discontinuous: exact operands only.
            6 => {
                let op = self.choose(&[
                    AluOp::Ffloor,
                    AluOp::Fceil,
                    AluOp::Ftrunc,
                    AluOp::FroundEven,
                    AluOp::Ffract,
                    AluOp::Fsign,
                ])?;
                let x = self.float_operand(n, exact);
                let value = self.b.alu(op, &[x.value]);
                let facts = match op {
                    AluOp::Ffract => Facts::exact(1.0, x.facts.exact.unwrap_or(0)),
                    AluOp::Fsign => Facts::exact(1.0, 0),
                    _ => Facts::exact(x.facts.bound.ceil() + 1.0, 0),
                };
                self.float(value, facts)
            }
            7 => {
                let op = self.choose(&[AluOp::Ffma, AluOp::Flrp])?;
                let x = self.float_operand(n, |_| true);
                let y = self.float_operand(n, |_| true);
                let z = self.float_operand(n, |_| true);
                if op == AluOp::Ffma {
                    let value = self.b.alu(AluOp::Ffma, &[x.value, y.value, z.value]);
                    self.float(value, sum(product(x.facts, y.facts), z.facts))
                } else {
                    // x + (y - x) t, however the target computes it.
                    let value = self.b.alu(AluOp::Flrp, &[x.value, y.value, z.value]);
                    let t = z.facts;
                    let one_minus_t = sum(Facts::exact(1.0, 0), t);
                    let facts = sum(product(x.facts, one_minus_t), product(y.facts, t));
                    self.float(value, Facts { ..facts })
                }
            }
            8 => {
                let n = self.rng.pick(&[2u8, 3, 4]);
                let op = [AluOp::Fdot2, AluOp::Fdot3, AluOp::Fdot4][n as usize - 2];
                self.allows(op)?;
                let x = self.float_operand(n, |_| true);
                let y = self.float_operand(n, |_| true);
                let value = self.b.alu(op, &[x.value, y.value]);
                let term = product(x.facts, y.facts);
                let facts = (1..n).fold(term, |acc, _| sum(acc, term));
                self.float(value, facts)
            }
            9..=11 => self.approximate(n)?,
            12 => {
                let x = self.int_operand(n);
                let (op, small) = if self.rng.below(2) == 0 {
                    (AluOp::I2f32, self.small_signed(x))
                } else {
                    (AluOp::U2f32, self.masked(x, 0xffff))
                };
                self.allows(op)?;
                let value = self.b.alu(op, &[small.value]);
                self.float(value, Facts::exact(small.facts.bound, 0))
            }
            13 => {
                let c = self.operand_of(Class::Bool, n, |_| true)?;
                if self.rng.below(2) == 0 {
                    self.allows(AluOp::B2f32)?;
                    let value = self.b.alu(AluOp::B2f32, &[c.value]);
                    self.float(value, Facts::exact(1.0, 0))
                } else {
                    let x = self.float_operand(n, |_| true);
                    let y = self.float_operand(n, |_| true);
                    let value = self.b.alu(AluOp::Bcsel, &[c.value, x.value, y.value]);
                    self.float(value, Facts::either(x.facts, y.facts))
                }
            }
            14 => {
                // A vector from scalars of the pool.
                let n = self.rng.pick(&[2u8, 3, 4]);
                let parts: Vec<Item> = (0..n).map(|_| self.float_operand(1, |_| true)).collect();
                let values: Vec<Value> = parts.iter().map(|p| p.value).collect();
                let value = self.b.vec(&values);
                let facts = parts[1..]
                    .iter()
                    .fold(parts[0].facts, |f, p| Facts::either(f, p.facts));
                self.float(value, facts)
            }
            _ => self.unpack()?,
        })
    }

    /// Division, roots, exponentials, logarithms and trigonometry, each on operands kept
    /// inside the domain where it is finite and well conditioned.
    fn approximate(&mut self, n: u8) -> Option<Item> {
        self.observes_inexact_floats()?;
        let x = self.float_operand(n, |_| true);
        let f = x.facts;
        let op = self.choose(&[
            AluOp::Fdiv,
            AluOp::Frcp,
            AluOp::Fsqrt,
            AluOp::Frsq,
            AluOp::Fexp2,
            AluOp::Flog2,
            AluOp::Fpow,
            AluOp::Fsin,
            AluOp::Fcos,
            AluOp::Ftan,
            AluOp::Fatan,
            AluOp::Fatan2,
            AluOp::Fasin,
            AluOp::Facos,
            AluOp::Fsinh,
            AluOp::Fcosh,
            AluOp::Ftanh,
            AluOp::Fasinh,
            AluOp::Facosh,
            AluOp::Fatanh,
        ])?;
        // |x| + c: at least c.
        let at_least = |g: &mut Self, x: Item, c: f32| {
            let abs = g.b.alu(AluOp::Fabs, &[x.value]);
            let c = g.imm_f(c);
            g.b.alu(AluOp::Fadd, &[abs, c])
        };
        // x clamped to [-c, c].
        let within = |g: &mut Self, x: Item, c: f32| {
            let (lo, hi) = (g.imm_f(-c), g.imm_f(c));
            let low = g.b.alu(AluOp::Fmax, &[x.value, lo]);
            g.b.alu(AluOp::Fmin, &[low, hi])
        };
        // The result's facts: magnitude at most `bound`, `slope` bounds the derivative over
        // the domain (how much the operand's error grows), and the opcode's accuracy adds
        // its own error.
        let operand = f.bound;
        let approx = |bound: f64, slope: f64, error: f64| Facts {
            bound,
            exact: None,
            error: slope * error + op.accuracy().error(bound, operand),
        };
        let (value, facts) = match op {
            AluOp::Fdiv => {
                let y = self.float_operand(n, |_| true);
                let d = at_least(self, y, 1.0);
                let value = self.b.alu(op, &[x.value, d]);
                (
                    value,
                    approx(f.bound, 1.0, f.error + f.bound * y.facts.error),
                )
            }
            AluOp::Frcp | AluOp::Frsq => {
                let d = at_least(self, x, 1.0);
                (self.b.alu(op, &[d]), approx(1.0, 1.0, f.error))
            }
            AluOp::Fsqrt if f.exact.is_some() => {
                let abs = self.b.alu(AluOp::Fabs, &[x.value]);
                (self.b.alu(op, &[abs]), approx(f.bound.sqrt(), 0.0, 0.0))
            }
            AluOp::Fsqrt => {
                let d = at_least(self, x, 1.0);
                (
                    self.b.alu(op, &[d]),
                    approx((f.bound + 1.0).sqrt(), 0.5, f.error),
                )
            }
            AluOp::Fexp2 => {
                let d = within(self, x, 8.0);
                (self.b.alu(op, &[d]), approx(256.0, 178.0, f.error))
            }
            AluOp::Flog2 => {
                let d = at_least(self, x, 1.0);
                (
                    self.b.alu(op, &[d]),
                    approx((f.bound + 1.0).log2(), 1.5, f.error),
                )
            }
            AluOp::Fpow => {
                let base = at_least(self, x, 1.0);
                let y = self.float_operand(n, |_| true);
                let exponent = within(self, y, 2.0);
                let b = f.bound + 1.0;
                let bound = b * b;
                let error = 2.0 * b * f.error + b.ln() * bound * y.facts.error;
                (self.b.alu(op, &[base, exponent]), approx(bound, 1.0, error))
            }
            AluOp::Fsin | AluOp::Fcos => {
                // Where their accuracy is defined: [-π, π].
                let d = within(self, x, 3.0);
                (self.b.alu(op, &[d]), approx(1.0, 1.0, f.error))
            }
            AluOp::Ftan => {
                let d = within(self, x, 1.2);
                (self.b.alu(op, &[d]), approx(2.6, 7.6, f.error))
            }
            AluOp::Fatan | AluOp::Ftanh => (self.b.alu(op, &[x.value]), approx(1.6, 1.0, f.error)),
            AluOp::Fatan2 => {
                let y = self.float_operand(n, |_| true);
                let d = at_least(self, y, 1.0);
                let value = self.b.alu(op, &[x.value, d]);
                (value, approx(1.6, 1.0, f.error + y.facts.error))
            }
            AluOp::Fasin | AluOp::Facos | AluOp::Fatanh => {
                let d = within(self, x, 0.75);
                (self.b.alu(op, &[d]), approx(3.2, 2.3, f.error))
            }
            AluOp::Fsinh | AluOp::Fcosh => {
                let d = within(self, x, 4.0);
                (self.b.alu(op, &[d]), approx(27.3, 27.3, f.error))
            }
            AluOp::Fasinh => (
                self.b.alu(op, &[x.value]),
                approx((2.0 * f.bound + 1.0).ln() + 1.0, 1.0, f.error),
            ),
            _ => {
                let d = at_least(self, x, 2.0);
                let bound = (2.0 * (f.bound + 2.0)).ln();
                (self.b.alu(AluOp::Facosh, &[d]), approx(bound, 0.6, f.error))
            }
        };
        Some(self.float(value, facts))
    }

    /// Floats unpacked from an integer: halves (kept normal and finite) or normalized bytes
    /// and shorts.
    fn unpack(&mut self) -> Option<Item> {
        let x = self.int_operand(1);
        Some(match self.rng.below(3) {
            0 => {
                self.allows(AluOp::UnpackHalf2x16)?;
                // Sign and mantissa free, exponent field 1 to 14: normal, below 1.
                let masked = self.masked(x, 0xbbff_bbff);
                let normal = self.imm_i(0x0400_0400);
                let half = self.b.alu(AluOp::Ior, &[masked.value, normal]);
                let value = self.b.alu(AluOp::UnpackHalf2x16, &[half]);
                self.float(value, Facts::exact(1.0, 24))
            }
            1 => {
                self.observes_inexact_floats()?;
                let op = self.choose(&[AluOp::UnpackUnorm4x8, AluOp::UnpackUnorm2x16])?;
                let value = self.b.alu(op, &[x.value]);
                self.float(value, Facts::float(1.0, None, 0.0))
            }
            _ => {
                self.observes_inexact_floats()?;
                let op = self.choose(&[AluOp::UnpackSnorm4x8, AluOp::UnpackSnorm2x16])?;
                let value = self.b.alu(op, &[x.value]);
                self.float(value, Facts::float(1.0, None, 0.0))
            }
        })
    }

    /// `x & mask`.
    fn masked(&mut self, x: Item, mask: u32) -> Item {
        let m = self.imm_i(mask);
        let value = self.b.alu(AluOp::Iand, &[x.value, m]);
        self.int(value, Facts::small_int(mask as f64))
    }

    /// `(x & 0x3ff) - 512`: a small signed integer.
    fn small_signed(&mut self, x: Item) -> Item {
        if x.facts.bound < SIGNIFICAND {
            return x;
        }
        let low = self.masked(x, 0x3ff);
        let half = self.imm_i(512);
        let value = self.b.alu(AluOp::Isub, &[low.value, half]);
        self.int(value, Facts::small_int(512.0))
    }

    fn int_expression(&mut self) -> Option<Item> {
        let n = self.width();
        Some(match self.rng.below(12) {
            0..=3 => {
                let op = self.choose(
                    &[
                        &WRAPPING_INT_OPS[..],
                        &[
                            AluOp::UaddCarry,
                            AluOp::UsubBorrow,
                            AluOp::ImulHigh,
                            AluOp::UmulHigh,
                        ],
                    ]
                    .concat(),
                )?;
                let x = self.int_operand(n);
                let y = self.int_operand(n);
                let value = self.b.alu(op, &[x.value, y.value]);
                let facts = match op {
                    AluOp::UaddCarry | AluOp::UsubBorrow => Facts::small_int(1.0),
                    AluOp::Iadd | AluOp::Isub => Facts::small_int(x.facts.bound + y.facts.bound),
                    AluOp::Imin | AluOp::Imax => Facts::small_int(x.facts.bound.max(y.facts.bound)),
                    _ => Facts::ANY_INT,
                };
                self.int(value, facts)
            }
            4 => {
                let op = self.choose(&[
                    AluOp::Ineg,
                    AluOp::Iabs,
                    AluOp::Isign,
                    AluOp::Inot,
                    AluOp::BitCount,
                    AluOp::UfindMsb,
                    AluOp::IfindMsb,
                    AluOp::FindLsb,
                    AluOp::BitfieldReverse,
                ])?;
                let x = self.int_operand(n);
                let value = self.b.alu(op, &[x.value]);
                let facts = match op {
                    AluOp::Ineg | AluOp::Iabs => x.facts,
                    AluOp::Isign => Facts::small_int(1.0),
                    AluOp::BitCount | AluOp::UfindMsb | AluOp::IfindMsb | AluOp::FindLsb => {
                        Facts::small_int(32.0)
                    }
                    _ => Facts::ANY_INT,
                };
                self.int(value, facts)
            }
            5 => {
                let op = self.choose(&[
                    AluOp::Ishl,
                    AluOp::Ishr,
                    AluOp::Ushr,
                    AluOp::Urol,
                    AluOp::Uror,
                ])?;
                let x = self.int_operand(n);
                let y = self.int_operand(n);
                let count = self.masked(y, 31);
                let value = self.b.alu(op, &[x.value, count.value]);
                self.int(value, Facts::ANY_INT)
            }
            6 => {
                let op = self.choose(&[
                    AluOp::Idiv,
                    AluOp::Irem,
                    AluOp::Imod,
                    AluOp::Udiv,
                    AluOp::Umod,
                ])?;
                let x = self.int_operand(n);
                let y = self.int_operand(n);
                // An odd positive divisor: never zero, never -1.
                let mask = if matches!(op, AluOp::Udiv | AluOp::Umod) {
                    0xffff
                } else {
                    0x7f
                };
                let low = self.masked(y, mask);
                let one = self.imm_i(1);
                let divisor = self.b.alu(AluOp::Ior, &[low.value, one]);
                let value = self.b.alu(op, &[x.value, divisor]);
                let facts = match op {
                    AluOp::Idiv | AluOp::Udiv => x.facts,
                    _ => Facts::small_int(mask as f64),
                };
                self.int(value, facts)
            }
            7 => {
                // Offsets and counts below 16: the field always fits the 32 bits.
                let x = self.int_operand(n);
                let offset = self.int_operand(n);
                let count = self.int_operand(n);
                let offset = self.masked(offset, 15);
                let count = self.masked(count, 15);
                let op = self.choose(&[
                    AluOp::BitfieldInsert,
                    AluOp::UbitfieldExtract,
                    AluOp::IbitfieldExtract,
                ])?;
                let value = match op {
                    AluOp::BitfieldInsert => {
                        let insert = self.int_operand(n);
                        self.b
                            .alu(op, &[x.value, insert.value, offset.value, count.value])
                    }
                    _ => self.b.alu(op, &[x.value, offset.value, count.value]),
                };
                self.int(value, Facts::ANY_INT)
            }
            8 => {
                // Float to integer: exact operands, in range by construction.
                let x = self.float_operand(n, |item| item.facts.exact.is_some());
                let op = self.choose(&[AluOp::F2i32, AluOp::F2u32])?;
                let operand = match op {
                    AluOp::F2i32 => x.value,
                    _ => self.b.alu(AluOp::Fabs, &[x.value]),
                };
                let value = self.b.alu(op, &[operand]);
                self.int(value, Facts::small_int(x.facts.bound))
            }
            9 => {
                let c = self.operand_of(Class::Bool, n, |_| true)?;
                if self.rng.below(2) == 0 {
                    let value = self.b.alu(AluOp::B2i32, &[c.value]);
                    self.int(value, Facts::small_int(1.0))
                } else {
                    let x = self.int_operand(n);
                    let y = self.int_operand(n);
                    let value = self.b.alu(AluOp::Bcsel, &[c.value, x.value, y.value]);
                    self.int(value, Facts::small_int(x.facts.bound.max(y.facts.bound)))
                }
            }
            10 => {
                let n = self.rng.pick(&[2u8, 3, 4]);
                let parts: Vec<Item> = (0..n).map(|_| self.int_operand(1)).collect();
                let values: Vec<Value> = parts.iter().map(|p| p.value).collect();
                let value = self.b.vec(&values);
                let bound = parts.iter().fold(0.0f64, |m, p| m.max(p.facts.bound));
                self.int(value, Facts::small_int(bound))
            }
            _ => {
                self.allows(AluOp::PackHalf2x16)?;
                let x = self.float_operand(2, |item| fits_half(item.facts));
                // The packed bits show the sign of a zero, which optimizations need not keep
                // (`0 × -1` may become +0): packed as magnitudes.
                let magnitude = self.b.alu(AluOp::Fabs, &[x.value]);
                let value = self.b.alu(AluOp::PackHalf2x16, &[magnitude]);
                self.int(value, Facts::ANY_INT)
            }
        })
    }

    /// Integers at 8, 16 or 64 bits: a value of the pool converted (truncated or extended),
    /// one to three operations at that size keeping the 32-bit discipline there (shift counts
    /// masked below the size, odd positive divisors below 2^7, bitfields within the size),
    /// and the result compared (booleans) or converted back to 32 bits (a 64-bit one possibly
    /// its high half).
    fn sized_int_expression(&mut self) -> Option<Item> {
        let bits = self.rng.pick(&[8u8, 16, 64]);
        // The way back first, so that nothing is made where the options rule it out.
        self.allows_at(AluOp::I2i32, bits)?;
        self.allows_at(AluOp::U2u32, bits)?;
        let n = self.width();
        let mut value = self.int_at(bits, n)?;
        for _ in 0..1 + self.rng.below(3) {
            let op = self.choose_at(
                &[
                    &WRAPPING_INT_OPS[..],
                    &[
                        AluOp::ImulHigh,
                        AluOp::UmulHigh,
                        AluOp::Ineg,
                        AluOp::Inot,
                        AluOp::Iabs,
                        AluOp::Isign,
                        AluOp::BitfieldReverse,
                        AluOp::BitCount,
                        AluOp::UfindMsb,
                        AluOp::IfindMsb,
                        AluOp::FindLsb,
                        AluOp::Ishl,
                        AluOp::Ishr,
                        AluOp::Ushr,
                        AluOp::Urol,
                        AluOp::Uror,
                        AluOp::Idiv,
                        AluOp::Irem,
                        AluOp::Imod,
                        AluOp::Udiv,
                        AluOp::Umod,
                        AluOp::UbitfieldExtract,
                        AluOp::IbitfieldExtract,
                        AluOp::BitfieldInsert,
                    ],
                ]
                .concat(),
                bits,
            )?;
            let info = op.info();
            value = match op {
                AluOp::Ishl | AluOp::Ishr | AluOp::Ushr | AluOp::Urol | AluOp::Uror => {
                    let y = self.int_operand(n);
                    let count = self.masked(y, bits as u32 - 1);
                    self.b.alu(op, &[value, count.value])
                }
                AluOp::Idiv | AluOp::Irem | AluOp::Imod | AluOp::Udiv | AluOp::Umod => {
                    // Odd, positive and below 2^7: never zero, never -1, at every size.
                    let y = self.int_at(bits, n)?;
                    let mask = self.b.imm(bits, &[0x7f]);
                    let low = self.b.alu(AluOp::Iand, &[y, mask]);
                    let one = self.b.imm(bits, &[1]);
                    let divisor = self.b.alu(AluOp::Ior, &[low, one]);
                    self.b.alu(op, &[value, divisor])
                }
                AluOp::UbitfieldExtract | AluOp::IbitfieldExtract | AluOp::BitfieldInsert => {
                    // Offsets and counts below half the size: the field always fits.
                    let half = (bits as u32 / 2).min(16) - 1;
                    let offset = self.int_operand(n);
                    let offset = self.masked(offset, half);
                    let count = self.int_operand(n);
                    let count = self.masked(count, half);
                    match op {
                        AluOp::BitfieldInsert => {
                            let insert = self.int_at(bits, n)?;
                            self.b.alu(op, &[value, insert, offset.value, count.value])
                        }
                        _ => self.b.alu(op, &[value, offset.value, count.value]),
                    }
                }
                _ if info.srcs.len() == 2 => {
                    let y = self.int_at(bits, n)?;
                    self.b.alu(op, &[value, y])
                }
                _ => self.b.alu(op, &[value]),
            };
            // Bit counts and bit positions are 32-bit already.
            if info.dst.bits == 32 {
                return Some(self.int(value, Facts::small_int(64.0)));
            }
        }
        if self.rng.below(3) == 0 {
            let op = self.choose_at(
                &[
                    AluOp::Ilt,
                    AluOp::Ige,
                    AluOp::Ult,
                    AluOp::Uge,
                    AluOp::Ieq,
                    AluOp::Ine,
                ],
                bits,
            )?;
            let y = self.int_at(bits, n)?;
            let value = self.b.alu(op, &[value, y]);
            return Some(self.boolean(value));
        }
        if bits == 64 && self.rng.below(2) == 0 {
            self.allows_at(AluOp::Ushr, 64)?;
            let amount = self.imm_i(32);
            value = self.b.alu(AluOp::Ushr, &[value, amount]);
        }
        let family = self.rng.pick(&[ConvFamily::I2i, ConvFamily::U2u]);
        let op = family.op(32).expect("a 32-bit conversion");
        let value = self.b.alu(op, &[value]);
        Some(self.int(value, Facts::ANY_INT))
    }

    /// A 32-bit integer of the pool (or a constant) sign- or zero-extended or truncated to
    /// `bits` bits, `comps` wide.
    fn int_at(&mut self, bits: u8, comps: u8) -> Option<Value> {
        let x = self.int_operand(comps);
        let family = self.rng.pick(&[ConvFamily::I2i, ConvFamily::U2u]);
        let op = family.op(bits).expect("a conversion to every integer size");
        self.allows_at(op, 32)?;
        Some(self.b.alu(op, &[x.value]))
    }

    /// Floats at 16 or 64 bits: exact values of the pool converted (at 16 bits only those
    /// whose every bit fits a half: see [`fits_half`]; at 64 any, which widening keeps), one
    /// to three operations at that size (at 16 bits only those whose result is exact in a
    /// half again), and the result compared (exact values only) or converted back to 32 bits.
    /// Facts at 64 bits are those of 32-bit arithmetic, which rounds more.
    fn sized_float_expression(&mut self) -> Option<Item> {
        let bits = self.rng.pick(&[16u8, 64]);
        // The way back first, so that nothing is made where the options rule it out.
        self.allows_at(AluOp::F2f32, bits)?;
        let n = self.width();
        let fits = |facts: Facts| bits == 64 || fits_half(facts);
        let (mut value, mut facts) = self.float_at(bits, n, fits)?;
        for _ in 0..1 + self.rng.below(3) {
            let op = self.choose_at(
                &[
                    AluOp::Fadd,
                    AluOp::Fsub,
                    AluOp::Fmul,
                    AluOp::Fmin,
                    AluOp::Fmax,
                    AluOp::Ffma,
                    AluOp::Fneg,
                    AluOp::Fabs,
                    AluOp::Fsat,
                    AluOp::Ffloor,
                    AluOp::Fceil,
                    AluOp::Ftrunc,
                    AluOp::FroundEven,
                    AluOp::Ffract,
                    AluOp::Fsign,
                ],
                bits,
            )?;
            let (next, next_facts) = match op {
                AluOp::Fneg | AluOp::Fabs => (self.b.alu(op, &[value]), facts),
                AluOp::Fsat => (
                    self.b.alu(op, &[value]),
                    Facts {
                        bound: facts.bound.min(1.0),
                        ..facts
                    },
                ),
                AluOp::Ffloor
                | AluOp::Fceil
                | AluOp::Ftrunc
                | AluOp::FroundEven
                | AluOp::Ffract
                | AluOp::Fsign => {
                    // Discontinuous: exact operands only.
                    let Some(frac) = facts.exact else { continue };
                    let result = match op {
                        AluOp::Ffract => Facts::exact(1.0, frac),
                        AluOp::Fsign => Facts::exact(1.0, 0),
                        _ => Facts::exact(facts.bound.ceil() + 1.0, 0),
                    };
                    (self.b.alu(op, &[value]), result)
                }
                AluOp::Ffma => {
                    let (y, y_facts) = self.float_at(bits, n, fits)?;
                    let (z, z_facts) = self.float_at(bits, n, fits)?;
                    let result = sum(product(facts, y_facts), z_facts);
                    (self.b.alu(op, &[value, y, z]), result)
                }
                _ => {
                    let (y, y_facts) = self.float_at(bits, n, fits)?;
                    let result = match op {
                        AluOp::Fmul => product(facts, y_facts),
                        AluOp::Fmin | AluOp::Fmax => Facts::either(facts, y_facts),
                        _ => sum(facts, y_facts),
                    };
                    (self.b.alu(op, &[value, y]), result)
                }
            };
            if fits(next_facts) {
                (value, facts) = (next, next_facts);
            }
        }
        if facts.exact.is_some() && self.rng.below(3) == 0 {
            let op = self.choose_at(&[AluOp::Flt, AluOp::Fge, AluOp::Feq, AluOp::Fneu], bits)?;
            let (y, _) = self.float_at(bits, n, |f| fits(f) && f.exact.is_some())?;
            let value = self.b.alu(op, &[value, y]);
            return Some(self.boolean(value));
        }
        let value = self.b.alu(AluOp::F2f32, &[value]);
        // Back to 32 bits: rounded once more unless exact.
        Some(self.float(value, Facts::float(facts.bound, facts.exact, facts.error)))
    }

    /// A float of the pool whose facts satisfy `fits` (or a constant) converted to `bits`
    /// bits, `comps` wide, with its facts.
    fn float_at(
        &mut self,
        bits: u8,
        comps: u8,
        fits: impl Fn(Facts) -> bool,
    ) -> Option<(Value, Facts)> {
        let x = self.float_operand(comps, |item| fits(item.facts));
        let op = ConvFamily::F2f
            .op(bits)
            .expect("a conversion to every float size");
        self.allows_at(op, 32)?;
        Some((self.b.alu(op, &[x.value]), x.facts))
    }

    fn bool_expression(&mut self) -> Option<Item> {
        let n = self.width();
        Some(match self.rng.below(4) {
            0 => {
                let op = self.choose(&[
                    AluOp::Flt,
                    AluOp::Fge,
                    AluOp::Feq,
                    AluOp::Fneu,
                    AluOp::Fltu,
                    AluOp::Fgeu,
                    AluOp::Fequ,
                    AluOp::Fneo,
                    AluOp::Ford,
                    AluOp::Funord,
                ])?;
                let exact = |item: &Item| item.facts.exact.is_some();
                let x = self.float_operand(n, exact);
                let y = self.float_operand(n, exact);
                let value = self.b.alu(op, &[x.value, y.value]);
                self.boolean(value)
            }
            1 => {
                let op = self.choose(&[
                    AluOp::Ilt,
                    AluOp::Ige,
                    AluOp::Ult,
                    AluOp::Uge,
                    AluOp::Ieq,
                    AluOp::Ine,
                ])?;
                let x = self.int_operand(n);
                let y = self.int_operand(n);
                let value = self.b.alu(op, &[x.value, y.value]);
                self.boolean(value)
            }
            2 => {
                let x = self.operand_of(Class::Bool, n, |_| true)?;
                let value = match self.rng.below(5) {
                    0 => {
                        self.allows_at(AluOp::Inot, 1)?;
                        self.b.alu(AluOp::Inot, &[x.value])
                    }
                    k => {
                        let y = self.operand_of(Class::Bool, n, |_| true)?;
                        let op = [AluOp::Iand, AluOp::Ior, AluOp::Ixor, AluOp::Bcsel][k - 1];
                        self.allows_at(op, 1)?;
                        if op == AluOp::Bcsel {
                            let z = self.operand_of(Class::Bool, n, |_| true)?;
                            self.b.alu(op, &[x.value, y.value, z.value])
                        } else {
                            self.b.alu(op, &[x.value, y.value])
                        }
                    }
                };
                self.boolean(value)
            }
            _ => {
                let op = self.choose(&[AluOp::I2b1, AluOp::F2b1])?;
                let x = match op {
                    AluOp::I2b1 => self.int_operand(n),
                    _ => self.float_operand(n, |item| item.facts.exact.is_some()),
                };
                let value = self.b.alu(op, &[x.value]);
                self.boolean(value)
            }
        })
    }
}

/// Whether a float is exact with at most 11 significant bits and no exponent below f16's
/// smallest normal: every conversion to 16 bits gives the same bits, and denormal flushing
/// never meets it.
fn fits_half(facts: Facts) -> bool {
    facts
        .exact
        .is_some_and(|frac| frac <= 14 && facts.bound * 2f64.powi(frac as i32) < 2048.0)
}

/// The facts of `x + y` (or `x - y`).
fn sum(x: Facts, y: Facts) -> Facts {
    let frac = x.exact.zip(y.exact).map(|(a, b)| a.max(b));
    Facts::float(x.bound + y.bound, frac, x.error + y.error)
}

/// The facts of `x * y`.
fn product(x: Facts, y: Facts) -> Facts {
    let frac = x.exact.zip(y.exact).map(|(a, b)| a + b);
    let error = x.error * y.bound + y.error * x.bound + x.error * y.error;
    Facts::float(x.bound * y.bound, frac, error)
}

/// An SSBO of 256 dwords at `binding`.
fn ssbo_variable(name: &str, binding: u32) -> Variable {
    let mut var = Variable::new(
        name,
        Mode::Ssbo,
        Type::Array {
            elem: Box::new(Type::Scalar(Scalar::U32)),
            len: 256,
            stride: 0,
        },
    );
    var.binding = Some(binding);
    var
}
