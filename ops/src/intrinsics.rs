//! The intrinsic table: every non-ALU operation with a fixed meaning (loads, stores, atomics,
//! barriers, discards, system values), with the flags passes need to move or delete them and the
//! named indices they carry.

/// How a source of an intrinsic is shaped.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SrcShape {
    /// A deref value (the result of a deref instruction).
    Deref,
    /// A 32-bit scalar integer: an offset, buffer index, sample index or LOD.
    Scalar32,
    /// A 64-bit scalar address.
    Address64,
    /// A 1-bit scalar condition.
    Cond,
    /// Image coordinates: 1–4 components of 32 bits.
    Coord,
    /// Data of the instruction's own shape: the stored value, atomic operand.
    Data,
}

/// The result of an intrinsic.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum DestShape {
    None,
    /// Shape chosen by the instruction (checked against the deref or memory by the verifier).
    Data,
    /// A fixed shape.
    Fixed {
        comps: u8,
        bits: u8,
    },
}

/// A set of memory classes an intrinsic reads or writes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct MemClass(pub u8);

impl MemClass {
    pub const NONE: MemClass = MemClass(0);
    pub const SSBO: MemClass = MemClass(1);
    pub const IMAGE: MemClass = MemClass(2);
    pub const SHARED: MemClass = MemClass(4);
    pub const GLOBAL: MemClass = MemClass(8);
    pub const OUTPUT: MemClass = MemClass(16);
    /// The class follows the mode of the variable the deref source points into.
    pub const VARIABLE: MemClass = MemClass(32);
    /// The invocation's own scratch memory, where temporaries that stay in memory live.
    pub const SCRATCH: MemClass = MemClass(64);

    pub const fn union(self, other: MemClass) -> MemClass {
        MemClass(self.0 | other.0)
    }

    pub fn contains(self, other: MemClass) -> bool {
        self.0 & other.0 == other.0
    }

    /// Whether the two classes share a kind of memory.
    pub fn intersects(self, other: MemClass) -> bool {
        self.0 & other.0 != 0
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
}

/// The intrinsic may be deleted when its result is unused.
pub const CAN_ELIMINATE: u8 = 1;
/// The intrinsic may be moved or merged with an identical one (it reads nothing that changes).
pub const CAN_REORDER: u8 = 2;
/// The intrinsic orders memory or execution (a barrier).
pub const BARRIER: u8 = 4;
/// The intrinsic ends or changes the invocation's participation (discard, demote, terminate).
pub const CONTROL: u8 = 8;
/// The intrinsic combines values of the invocations of its subgroup that execute it together:
/// moving it into or out of control flow, or merging two of them, changes its result.
pub const CROSS_INVOCATION: u8 = 16;

/// A named constant index an intrinsic carries.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum IndexKind {
    Base,
    Component,
    Range,
    RangeBase,
    Location,
    Binding,
    DescSet,
    WriteMask,
    Access,
    DstAccess,
    SrcAccess,
    AtomicOp,
    /// The binary ALU operation a subgroup reduction or scan combines values with.
    ReductionOp,
    ImageDim,
    ImageArray,
    ExecutionScope,
    MemoryScope,
    MemorySemantics,
    MemoryModes,
    ParamIdx,
    /// A power of two bytes the access's run-time offset is a multiple of (for the accesses
    /// with a `base`: the offset source, `base` excluded).
    AlignMul,
}

/// Names of the values of enumerated indices, in value order.
const ATOMIC_OPS: &[&str] = &[
    "iadd", "imin", "umin", "imax", "umax", "iand", "ior", "ixor", "xchg", "cmpxchg", "fadd",
    "fmin", "fmax",
];
/// The ALU opcodes the `reduction_op` index names ([`reduction_op`]).
const REDUCTION_OPS: &[&str] = &[
    "iadd", "imul", "fadd", "fmul", "imin", "umin", "fmin", "imax", "umax", "fmax", "iand", "ior",
    "ixor",
];
const IMAGE_DIMS: &[&str] = &["1d", "2d", "3d", "cube", "rect", "buf", "ms", "subpass"];
const SCOPES: &[&str] = &[
    "none",
    "invocation",
    "subgroup",
    "workgroup",
    "queue_family",
    "device",
];
/// The `coherent` bit of an `access` index: other invocations' writes may become visible
/// between two accesses, so they may not be merged.
pub const ACCESS_COHERENT: u32 = 1 << 0;
/// The `volatile` bit of an `access` index: the access may not be removed, merged or moved.
pub const ACCESS_VOLATILE: u32 = 1 << 1;
/// The `restrict` bit of an `access` index: no other variable reaches the same memory.
pub const ACCESS_RESTRICT: u32 = 1 << 2;

/// Flag names of bit-set indices, bit 0 first.
const ACCESS_FLAGS: &[&str] = &[
    "coherent",
    "volatile",
    "restrict",
    "non_readable",
    "non_writeable",
    "can_reorder",
];
const SEMANTICS_FLAGS: &[&str] = &["acquire", "release", "make_available", "make_visible"];
const MODE_FLAGS: &[&str] = &[
    "ssbo",
    "image",
    "shared",
    "global",
    "output",
    "function_temp",
    "shader_temp",
];

/// How an index's value is written in IR text.
enum IndexFormat {
    Int,
    Enum(&'static [&'static str]),
    Flags(&'static [&'static str]),
    /// A component mask written as `xyzw` letters.
    Mask,
}

impl IndexKind {
    pub fn name(self) -> &'static str {
        match self {
            IndexKind::Base => "base",
            IndexKind::Component => "component",
            IndexKind::Range => "range",
            IndexKind::RangeBase => "range_base",
            IndexKind::Location => "location",
            IndexKind::Binding => "binding",
            IndexKind::DescSet => "desc_set",
            IndexKind::WriteMask => "write_mask",
            IndexKind::Access => "access",
            IndexKind::DstAccess => "dst_access",
            IndexKind::SrcAccess => "src_access",
            IndexKind::AtomicOp => "atomic_op",
            IndexKind::ReductionOp => "reduction_op",
            IndexKind::ImageDim => "image_dim",
            IndexKind::ImageArray => "image_array",
            IndexKind::ExecutionScope => "execution_scope",
            IndexKind::MemoryScope => "memory_scope",
            IndexKind::MemorySemantics => "memory_semantics",
            IndexKind::MemoryModes => "memory_modes",
            IndexKind::ParamIdx => "param_idx",
            IndexKind::AlignMul => "align_mul",
        }
    }

    pub const ALL: &'static [IndexKind] = &[
        IndexKind::Base,
        IndexKind::Component,
        IndexKind::Range,
        IndexKind::RangeBase,
        IndexKind::Location,
        IndexKind::Binding,
        IndexKind::DescSet,
        IndexKind::WriteMask,
        IndexKind::Access,
        IndexKind::DstAccess,
        IndexKind::SrcAccess,
        IndexKind::AtomicOp,
        IndexKind::ReductionOp,
        IndexKind::ImageDim,
        IndexKind::ImageArray,
        IndexKind::ExecutionScope,
        IndexKind::MemoryScope,
        IndexKind::MemorySemantics,
        IndexKind::MemoryModes,
        IndexKind::ParamIdx,
        IndexKind::AlignMul,
    ];

    pub fn from_name(name: &str) -> Option<IndexKind> {
        IndexKind::ALL.iter().copied().find(|k| k.name() == name)
    }

    fn format(self) -> IndexFormat {
        match self {
            IndexKind::AtomicOp => IndexFormat::Enum(ATOMIC_OPS),
            IndexKind::ReductionOp => IndexFormat::Enum(REDUCTION_OPS),
            IndexKind::ImageDim => IndexFormat::Enum(IMAGE_DIMS),
            IndexKind::ExecutionScope | IndexKind::MemoryScope => IndexFormat::Enum(SCOPES),
            IndexKind::Access | IndexKind::DstAccess | IndexKind::SrcAccess => {
                IndexFormat::Flags(ACCESS_FLAGS)
            }
            IndexKind::MemorySemantics => IndexFormat::Flags(SEMANTICS_FLAGS),
            IndexKind::MemoryModes => IndexFormat::Flags(MODE_FLAGS),
            IndexKind::WriteMask => IndexFormat::Mask,
            _ => IndexFormat::Int,
        }
    }

    /// Writes an index value as IR text: a number, an enum name, `a|b` flags (`0` when empty)
    /// or a component mask.
    pub fn format_value(self, value: u32) -> String {
        match self.format() {
            IndexFormat::Int => value.to_string(),
            IndexFormat::Enum(names) => names
                .get(value as usize)
                .map_or_else(|| value.to_string(), |n| n.to_string()),
            IndexFormat::Flags(names) => {
                let set: Vec<&str> = (0..names.len())
                    .filter(|b| value & (1 << b) != 0)
                    .map(|b| names[b])
                    .collect();
                if set.is_empty() || value >> names.len() != 0 {
                    value.to_string()
                } else {
                    set.join("|")
                }
            }
            IndexFormat::Mask => {
                let comps: Vec<u8> = (0..16).filter(|c| value & (1 << c) != 0).collect();
                if comps.is_empty() {
                    "0".to_string()
                } else {
                    crate::swizzle_letters(&comps)
                }
            }
        }
    }

    /// Parses what [`IndexKind::format_value`] writes; also accepts plain numbers.
    pub fn parse_value(self, text: &str) -> Option<u32> {
        if let Ok(v) = text.parse::<u32>() {
            return Some(v);
        }
        match self.format() {
            IndexFormat::Int => None,
            IndexFormat::Enum(names) => names.iter().position(|n| *n == text).map(|i| i as u32),
            IndexFormat::Flags(names) => text.split('|').try_fold(0u32, |acc, flag| {
                names
                    .iter()
                    .position(|n| *n == flag)
                    .map(|b| acc | (1 << b))
            }),
            IndexFormat::Mask => crate::parse_swizzle(text)
                .map(|comps| comps.iter().fold(0u32, |acc, &c| acc | (1 << c))),
        }
    }
}

/// The atomic operations the `atomic_op` index names, in value order.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum AtomicOp {
    Iadd,
    Imin,
    Umin,
    Imax,
    Umax,
    Iand,
    Ior,
    Ixor,
    Xchg,
    Cmpxchg,
    Fadd,
    Fmin,
    Fmax,
}

impl AtomicOp {
    pub fn from_index(v: u32) -> Option<AtomicOp> {
        use AtomicOp::*;
        [
            Iadd, Imin, Umin, Imax, Umax, Iand, Ior, Ixor, Xchg, Cmpxchg, Fadd, Fmin, Fmax,
        ]
        .get(v as usize)
        .copied()
    }
}

/// The ALU opcode of a `reduction_op` index value.
pub fn reduction_op(value: u32) -> Option<crate::AluOp> {
    REDUCTION_OPS
        .get(value as usize)
        .and_then(|name| crate::AluOp::from_name(name))
}

/// The `reduction_op` index value of an ALU opcode, if subgroups reduce with it.
pub fn reduction_index(op: crate::AluOp) -> Option<u32> {
    REDUCTION_OPS
        .iter()
        .position(|name| *name == op.name())
        .map(|i| i as u32)
}

/// The identity of a reduction's operation at `bits` bits (raw bits): what a scan starts from
/// and what a lane that takes no part contributes.
pub fn reduction_identity(op: crate::AluOp, bits: u8) -> u64 {
    use crate::AluOp::*;
    let ones = crate::eval::mask(u64::MAX, bits);
    let float = |x: f64| crate::eval::fput(x, bits);
    match op {
        Imul => 1,
        Fadd => float(0.0),
        Fmul => float(1.0),
        Imin => ones >> 1,
        Umin | Iand => ones,
        Fmin => float(f64::INFINITY),
        Imax => crate::eval::mask(1u64 << (bits.max(1) - 1), bits),
        Fmax => float(f64::NEG_INFINITY),
        _ => 0,
    }
}

/// Everything the table says about one intrinsic.
pub struct IntrinsicInfo {
    pub intrinsic: Intrinsic,
    pub name: &'static str,
    pub srcs: &'static [SrcShape],
    pub dest: DestShape,
    pub indices: &'static [IndexKind],
    pub flags: u8,
    pub reads: MemClass,
    pub writes: MemClass,
}

impl IntrinsicInfo {
    pub fn can_eliminate(&self) -> bool {
        self.flags & CAN_ELIMINATE != 0
    }
    pub fn can_reorder(&self) -> bool {
        self.flags & CAN_REORDER != 0
    }
    pub fn is_barrier(&self) -> bool {
        self.flags & BARRIER != 0
    }
    /// Discard, demote and terminate: they change which invocations continue.
    pub fn is_control(&self) -> bool {
        self.flags & CONTROL != 0
    }
    /// Ballots, votes and reads of other invocations: see [`CROSS_INVOCATION`].
    pub fn is_cross_invocation(&self) -> bool {
        self.flags & CROSS_INVOCATION != 0
    }
    pub fn has_dest(&self) -> bool {
        self.dest != DestShape::None
    }
    pub fn has_index(&self, kind: IndexKind) -> bool {
        self.indices.contains(&kind)
    }
}

macro_rules! intrinsic_table {
    ($( $variant:ident $name:literal ($($src:ident),*) -> $dest:expr, [$($index:ident),*], $flags:expr,
        reads $reads:expr, writes $writes:expr; )*) => {
        /// An intrinsic. See [`INTRINSICS`].
        #[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u16)]
        pub enum Intrinsic {
            $($variant),*
        }

        /// The table, indexed by `Intrinsic as usize`.
        pub static INTRINSICS: &[IntrinsicInfo] = &[
            $(IntrinsicInfo {
                intrinsic: Intrinsic::$variant,
                name: $name,
                srcs: &[$(SrcShape::$src),*],
                dest: $dest,
                indices: &[$(IndexKind::$index),*],
                flags: $flags,
                reads: $reads,
                writes: $writes,
            }),*
        ];

        impl Intrinsic {
            pub fn from_name(name: &str) -> Option<Intrinsic> {
                match name {
                    $($name => Some(Intrinsic::$variant),)*
                    _ => None,
                }
            }
        }
    };
}

impl Intrinsic {
    pub fn info(self) -> &'static IntrinsicInfo {
        &INTRINSICS[self as usize]
    }

    pub fn name(self) -> &'static str {
        self.info().name
    }
}

impl std::fmt::Display for Intrinsic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

const NONE: DestShape = DestShape::None;
const DATA: DestShape = DestShape::Data;
const fn fixed(comps: u8, bits: u8) -> DestShape {
    DestShape::Fixed { comps, bits }
}
const PURE: u8 = CAN_ELIMINATE | CAN_REORDER;
const SUBGROUP: u8 = CAN_ELIMINATE | CROSS_INVOCATION;
const ELIM: u8 = CAN_ELIMINATE;
const M0: MemClass = MemClass::NONE;
const VAR: MemClass = MemClass::VARIABLE;
const SSBO: MemClass = MemClass::SSBO;
const IMAGE: MemClass = MemClass::IMAGE;
const SHARED: MemClass = MemClass::SHARED;
const GLOBAL: MemClass = MemClass::GLOBAL;
const OUTPUT: MemClass = MemClass::OUTPUT;
const SCRATCH: MemClass = MemClass::SCRATCH;
const ALL_MEMORY: MemClass = SSBO.union(IMAGE).union(SHARED).union(GLOBAL).union(OUTPUT);

intrinsic_table! {
    // Variables through derefs.
    LoadDeref "load_deref" (Deref) -> DATA, [Access], ELIM, reads VAR, writes M0;
    StoreDeref "store_deref" (Deref, Data) -> NONE, [WriteMask, Access], 0, reads M0, writes VAR;
    CopyDeref "copy_deref" (Deref, Deref) -> NONE, [DstAccess, SrcAccess], 0, reads VAR, writes VAR;
    DerefAtomic "deref_atomic" (Deref, Data) -> DATA, [AtomicOp, Access], 0, reads VAR, writes VAR;
    DerefAtomicSwap "deref_atomic_swap" (Deref, Data, Data) -> DATA, [AtomicOp, Access], 0, reads VAR, writes VAR;

    // Lowered I/O: offsets are in vec4 slots from `base`.
    LoadInput "load_input" (Scalar32) -> DATA, [Base, Component], PURE, reads M0, writes M0;
    LoadOutput "load_output" (Scalar32) -> DATA, [Base, Component], ELIM, reads OUTPUT, writes M0;
    StoreOutput "store_output" (Data, Scalar32) -> NONE, [Base, WriteMask, Component], 0, reads M0, writes OUTPUT;
    LoadUniform "load_uniform" (Scalar32) -> DATA, [Base, Range], PURE, reads M0, writes M0;
    LoadPushConstant "load_push_constant" (Scalar32) -> DATA, [Base, Range], PURE, reads M0, writes M0;
    // The shader's constant data (`constant` variables), at byte `base` plus the source.
    LoadConstant "load_constant" (Scalar32) -> DATA, [Base, Range], PURE, reads M0, writes M0;
    LoadParam "load_param" () -> DATA, [ParamIdx], PURE, reads M0, writes M0;

    // Buffers: (buffer index, byte offset).
    LoadUbo "load_ubo" (Scalar32, Scalar32) -> DATA, [Access, AlignMul, RangeBase, Range], PURE, reads M0, writes M0;
    LoadSsbo "load_ssbo" (Scalar32, Scalar32) -> DATA, [Access, AlignMul], ELIM, reads SSBO, writes M0;
    StoreSsbo "store_ssbo" (Data, Scalar32, Scalar32) -> NONE, [WriteMask, Access, AlignMul], 0, reads M0, writes SSBO;
    SsboAtomic "ssbo_atomic" (Scalar32, Scalar32, Data) -> DATA, [AtomicOp, Access], 0, reads SSBO, writes SSBO;
    SsboAtomicSwap "ssbo_atomic_swap" (Scalar32, Scalar32, Data, Data) -> DATA, [AtomicOp, Access], 0, reads SSBO, writes SSBO;
    GetSsboSize "get_ssbo_size" (Scalar32) -> fixed(1, 32), [], PURE, reads M0, writes M0;
    LoadShared "load_shared" (Scalar32) -> DATA, [Base, AlignMul], ELIM, reads SHARED, writes M0;
    StoreShared "store_shared" (Data, Scalar32) -> NONE, [Base, WriteMask, AlignMul], 0, reads M0, writes SHARED;
    SharedAtomic "shared_atomic" (Scalar32, Data) -> DATA, [Base, AtomicOp], 0, reads SHARED, writes SHARED;
    SharedAtomicSwap "shared_atomic_swap" (Scalar32, Data, Data) -> DATA, [Base, AtomicOp], 0, reads SHARED, writes SHARED;
    // The invocation's temporaries that stay in memory, at byte `base` plus the source.
    LoadScratch "load_scratch" (Scalar32) -> DATA, [Base, AlignMul], ELIM, reads SCRATCH, writes M0;
    StoreScratch "store_scratch" (Data, Scalar32) -> NONE, [Base, WriteMask, AlignMul], 0, reads M0, writes SCRATCH;
    LoadGlobal "load_global" (Address64) -> DATA, [Access, AlignMul], ELIM, reads GLOBAL, writes M0;
    StoreGlobal "store_global" (Data, Address64) -> NONE, [WriteMask, Access, AlignMul], 0, reads M0, writes GLOBAL;

    // Images through derefs: (image, coordinates, sample index, ...).
    ImageDerefLoad "image_deref_load" (Deref, Coord, Scalar32, Scalar32) -> DATA, [ImageDim, ImageArray, Access], ELIM, reads IMAGE, writes M0;
    ImageDerefStore "image_deref_store" (Deref, Coord, Scalar32, Data, Scalar32) -> NONE, [ImageDim, ImageArray, Access], 0, reads M0, writes IMAGE;
    ImageDerefAtomic "image_deref_atomic" (Deref, Coord, Scalar32, Data) -> DATA, [ImageDim, ImageArray, AtomicOp, Access], 0, reads IMAGE, writes IMAGE;
    ImageDerefAtomicSwap "image_deref_atomic_swap" (Deref, Coord, Scalar32, Data, Data) -> DATA, [ImageDim, ImageArray, AtomicOp, Access], 0, reads IMAGE, writes IMAGE;
    ImageDerefSize "image_deref_size" (Deref, Scalar32) -> DATA, [ImageDim, ImageArray], PURE, reads M0, writes M0;

    // Synchronisation.
    Barrier "barrier" () -> NONE, [ExecutionScope, MemoryScope, MemorySemantics, MemoryModes], BARRIER, reads ALL_MEMORY, writes ALL_MEMORY;

    // Fragment kills. `discard` and `terminate` end the invocation; `demote` turns it into a
    // helper invocation that keeps running for its quad's derivatives.
    Discard "discard" () -> NONE, [], CONTROL, reads M0, writes M0;
    DiscardIf "discard_if" (Cond) -> NONE, [], CONTROL, reads M0, writes M0;
    Demote "demote" () -> NONE, [], CONTROL, reads M0, writes M0;
    DemoteIf "demote_if" (Cond) -> NONE, [], CONTROL, reads M0, writes M0;
    Terminate "terminate" () -> NONE, [], CONTROL, reads M0, writes M0;
    TerminateIf "terminate_if" (Cond) -> NONE, [], CONTROL, reads M0, writes M0;
    IsHelperInvocation "is_helper_invocation" () -> fixed(1, 1), [], ELIM, reads M0, writes M0;

    // System values.
    LoadHelperInvocation "load_helper_invocation" () -> fixed(1, 1), [], PURE, reads M0, writes M0;
    LoadFrontFace "load_front_face" () -> fixed(1, 1), [], PURE, reads M0, writes M0;
    LoadFragCoord "load_frag_coord" () -> fixed(4, 32), [], PURE, reads M0, writes M0;
    LoadPointCoord "load_point_coord" () -> fixed(2, 32), [], PURE, reads M0, writes M0;
    LoadSampleId "load_sample_id" () -> fixed(1, 32), [], PURE, reads M0, writes M0;
    LoadVertexId "load_vertex_id" () -> fixed(1, 32), [], PURE, reads M0, writes M0;
    LoadInstanceId "load_instance_id" () -> fixed(1, 32), [], PURE, reads M0, writes M0;
    LoadBaseVertex "load_base_vertex" () -> fixed(1, 32), [], PURE, reads M0, writes M0;
    LoadBaseInstance "load_base_instance" () -> fixed(1, 32), [], PURE, reads M0, writes M0;
    LoadDrawId "load_draw_id" () -> fixed(1, 32), [], PURE, reads M0, writes M0;
    LoadPrimitiveId "load_primitive_id" () -> fixed(1, 32), [], PURE, reads M0, writes M0;
    LoadInvocationId "load_invocation_id" () -> fixed(1, 32), [], PURE, reads M0, writes M0;
    LoadLocalInvocationId "load_local_invocation_id" () -> fixed(3, 32), [], PURE, reads M0, writes M0;
    LoadLocalInvocationIndex "load_local_invocation_index" () -> fixed(1, 32), [], PURE, reads M0, writes M0;
    LoadGlobalInvocationId "load_global_invocation_id" () -> fixed(3, 32), [], PURE, reads M0, writes M0;
    LoadWorkgroupId "load_workgroup_id" () -> fixed(3, 32), [], PURE, reads M0, writes M0;
    LoadNumWorkgroups "load_num_workgroups" () -> fixed(3, 32), [], PURE, reads M0, writes M0;
    LoadWorkgroupSize "load_workgroup_size" () -> fixed(3, 32), [], PURE, reads M0, writes M0;

    // Subgroups: the invocations of a subgroup that execute one of these together (the
    // active ones) combine their values. Masks hold one bit per invocation of the subgroup,
    // 32 in each component, invocation 0 in bit 0 of x.
    Ballot "ballot" (Cond) -> fixed(4, 32), [], SUBGROUP, reads M0, writes M0;
    // Each invocation's value of the invocation its second source names.
    ReadInvocation "read_invocation" (Data, Scalar32) -> DATA, [], SUBGROUP, reads M0, writes M0;
    // The value of the active invocation with the lowest index.
    ReadFirstInvocation "read_first_invocation" (Data) -> DATA, [], SUBGROUP, reads M0, writes M0;
    // Each invocation's combination, by the `reduction_op`, of the active invocations' values
    // in index order: all of them, those up to its own, or those before it (the operation's
    // identity for the first).
    Reduce "reduce" (Data) -> DATA, [ReductionOp], SUBGROUP, reads M0, writes M0;
    InclusiveScan "inclusive_scan" (Data) -> DATA, [ReductionOp], SUBGROUP, reads M0, writes M0;
    ExclusiveScan "exclusive_scan" (Data) -> DATA, [ReductionOp], SUBGROUP, reads M0, writes M0;
    VoteAll "vote_all" (Cond) -> fixed(1, 1), [], SUBGROUP, reads M0, writes M0;
    VoteAny "vote_any" (Cond) -> fixed(1, 1), [], SUBGROUP, reads M0, writes M0;
    VoteAllEqual "vote_all_equal" (Cond) -> fixed(1, 1), [], SUBGROUP, reads M0, writes M0;
    LoadSubgroupInvocation "load_subgroup_invocation" () -> fixed(1, 32), [], PURE, reads M0, writes M0;
    LoadSubgroupSize "load_subgroup_size" () -> fixed(1, 32), [], PURE, reads M0, writes M0;
    // The bits of the invocations whose index is equal to, greater than or equal to, greater
    // than, less than or equal to, less than the invocation's own (of the subgroup's size).
    LoadSubgroupEqMask "load_subgroup_eq_mask" () -> fixed(4, 32), [], PURE, reads M0, writes M0;
    LoadSubgroupGeMask "load_subgroup_ge_mask" () -> fixed(4, 32), [], PURE, reads M0, writes M0;
    LoadSubgroupGtMask "load_subgroup_gt_mask" () -> fixed(4, 32), [], PURE, reads M0, writes M0;
    LoadSubgroupLeMask "load_subgroup_le_mask" () -> fixed(4, 32), [], PURE, reads M0, writes M0;
    LoadSubgroupLtMask "load_subgroup_lt_mask" () -> fixed(4, 32), [], PURE, reads M0, writes M0;
}

impl Intrinsic {
    pub fn all() -> impl Iterator<Item = Intrinsic> {
        INTRINSICS.iter().map(|info| info.intrinsic)
    }

    /// A subgroup operation (see [`CROSS_INVOCATION`]) or a system value of the invocation's
    /// place in its subgroup (its index, the size, the masks): what only runs with the
    /// invocation's subgroup defined.
    pub fn is_subgroup(self) -> bool {
        use Intrinsic::*;
        self.info().is_cross_invocation()
            || matches!(
                self,
                LoadSubgroupInvocation
                    | LoadSubgroupSize
                    | LoadSubgroupEqMask
                    | LoadSubgroupGeMask
                    | LoadSubgroupGtMask
                    | LoadSubgroupLeMask
                    | LoadSubgroupLtMask
            )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn access_bits_name_their_flags() {
        assert_eq!(
            ACCESS_FLAGS[ACCESS_VOLATILE.trailing_zeros() as usize],
            "volatile"
        );
        assert_eq!(
            ACCESS_FLAGS[ACCESS_COHERENT.trailing_zeros() as usize],
            "coherent"
        );
        assert_eq!(
            ACCESS_FLAGS[ACCESS_RESTRICT.trailing_zeros() as usize],
            "restrict"
        );
    }

    #[test]
    fn names_are_unique_and_round_trip() {
        for info in INTRINSICS {
            assert_eq!(Intrinsic::from_name(info.name), Some(info.intrinsic));
            assert_eq!(info.intrinsic.info().name, info.name);
        }
    }

    #[test]
    fn index_values_round_trip() {
        for kind in IndexKind::ALL {
            assert_eq!(IndexKind::from_name(kind.name()), Some(*kind));
            for v in [0u32, 1, 3, 5] {
                assert_eq!(
                    kind.parse_value(&kind.format_value(v)),
                    Some(v),
                    "{kind:?} {v}"
                );
            }
        }
        assert_eq!(IndexKind::AtomicOp.format_value(9), "cmpxchg");
        assert_eq!(IndexKind::Access.format_value(5), "coherent|restrict");
        assert_eq!(IndexKind::WriteMask.format_value(0b1011), "xyw");
        assert_eq!(IndexKind::MemoryModes.parse_value("ssbo|shared"), Some(5));
        assert_eq!(IndexKind::AtomicOp.parse_value("bogus"), None);
    }

    #[test]
    fn flags_are_coherent() {
        for info in INTRINSICS {
            // Something that writes memory or changes control can never be deleted.
            if !info.writes.is_empty() || info.is_control() || info.is_barrier() {
                assert!(!info.can_eliminate(), "{}", info.name);
            }
            if info.is_cross_invocation() {
                assert!(!info.can_reorder(), "{}", info.name);
            }
            if info.can_reorder() {
                assert!(
                    info.can_eliminate() && info.reads.is_empty(),
                    "{}",
                    info.name
                );
            }
        }
    }
}
