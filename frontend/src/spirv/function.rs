//! The translation proper: global variables, functions, blocks and calls. ALU instructions are
//! in [`super::alu`], extended instructions in [`super::glsl450`], images and textures in
//! [`super::image`], memory access in [`super::memory`].

use super::memory::Ptr;
use super::module::{FunctionDef, Konst, Module, id, result_id, result_type};
use super::types::{SpvType, TypeMap};
use super::{Inst, Options, Result, SpirvError, UniqueNames};
use rspirv::dr::Operand;
use rspirv::spirv::{BuiltIn, Decoration, ExecutionMode, ExecutionModel, Op, StorageClass, Word};
use shrew_engine::interp::memory::{Layout, LayoutRule, SLOT_BYTES};
use shrew_engine::ir::{
    BlockId, Builder, Builtin, Cursor, Deref, FuncId, InstKind, Interp, Member, Mode, Shader,
    Stage, Structure, Terminator, Type, ValType, Value, VarId, Variable,
};
use shrew_engine::ops::{IndexKind, Intrinsic};
use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};

/// Most instructions one translated function may have: inputs that unroll into more (huge
/// arrays copied by value) are rejected rather than exhausting memory.
const MAX_FUNCTION_INSTS: usize = 1 << 20;

/// A SPIR-V value in the IR.
#[derive(Clone, Debug)]
pub enum Val {
    /// A scalar or vector.
    Ssa(Value),
    /// A struct, array or matrix (columns): one entry per member, element or column.
    Composite(Vec<Val>),
    Ptr(Ptr),
    /// A texture, storage image or sampler: the deref of its variable.
    Handle(Value),
    /// A combined image and sampler (`OpSampledImage`, or a loaded combined sampler).
    Sampled {
        texture: Value,
        sampler: Option<Value>,
    },
    /// A pointer to one texel of a storage image (`OpImageTexelPointer`).
    Texel {
        image: Value,
        coord: Value,
        sample: Value,
    },
}

/// How a global SPIR-V variable exists in the IR.
#[derive(Clone, Debug)]
enum Global {
    Var(VarId),
    BuiltinInput(BuiltIn),
    Split(Vec<VarId>),
    /// An atomic counter: member 0 of the SSBO variable standing for its buffer.
    AtomicCounter(VarId),
}

/// How a parameter is passed.
#[derive(Clone, Debug)]
enum Param {
    /// As an IR parameter (`load_param` index).
    Value(u32),
    /// Through a variable: copied in before the call, and out after it when `copy_out`.
    Var { var: VarId, copy_out: bool },
    /// A pointer to an image or sampler: fixed per specialization of the function, the
    /// index into [`FuncInfo::opaque`].
    Opaque(usize),
}

/// What an image or sampler pointer passed to a function names: a global variable and the
/// constant array indices into it.
type OpaqueArg = (VarId, Vec<u32>);

#[derive(Clone, Debug)]
enum Ret {
    None,
    Value,
    Var(VarId),
}

#[derive(Clone, Debug)]
struct FuncInfo {
    id: FuncId,
    params: Vec<Param>,
    ret: Ret,
    /// The images and samplers this specialization's opaque parameters point to.
    opaque: Vec<OpaqueArg>,
}

/// A phi waiting for its sources, which may be defined after it.
struct PendingPhi {
    /// One IR phi per leaf of the value.
    leaves: Vec<Value>,
    /// (value, parent label) pairs.
    srcs: Vec<(Word, Word)>,
    label: Word,
    inst: usize,
}

/// The translation's state within the function being translated.
struct FunctionState {
    func: FuncId,
    values: HashMap<Word, Val>,
    blocks: HashMap<Word, BlockId>,
    /// The block constants and variable derefs are materialised in.
    consts: BlockId,
    /// The block instructions are added to.
    block: BlockId,
    /// IR predecessor of a SPIR-V edge, where it is not the source's own block (switches).
    edges: HashMap<(Word, Word), BlockId>,
    phis: Vec<PendingPhi>,
    /// The switches read so far, lowered once every block is read.
    switches: Vec<super::switch::Switch>,
}

/// Translates a SPIR-V module into a shader: what it knows of the module, the shader it builds,
/// and the function being translated.
pub(super) struct Translator<'m> {
    pub module: &'m Module,
    insts: &'m [Inst],
    pub shader: Shader,
    types: TypeMap,
    globals: HashMap<Word, Global>,
    funcs: HashMap<Word, FuncInfo>,
    /// Functions taking image or sampler pointers: IR parameters cannot be derefs, so each
    /// distinct set of opaque arguments gets its own copy of the function.
    specializations: HashMap<(Word, Vec<OpaqueArg>), FuncInfo>,
    /// Specializations declared by calls and not translated yet.
    pending: Vec<(Word, FuncInfo)>,
    /// The function being translated, if any.
    state: Option<FunctionState>,
    variable_names: UniqueNames,
    /// The names of the functions declared so far (the entry point's among them).
    function_names: UniqueNames,
}

/// Translates the module's chosen entry point and everything it calls.
pub fn translate_module(m: &Module, insts: &[Inst], options: &Options) -> Result<Shader> {
    let ep = match &options.entry_point {
        Some(name) => m
            .entry_points
            .iter()
            .find(|e| &e.name == name)
            .ok_or_else(|| SpirvError::malformed(format!("no entry point named {name}")))?,
        None => m
            .entry_points
            .first()
            .ok_or_else(|| SpirvError::malformed("the module has no entry point"))?,
    };
    let stage = match ep.model {
        ExecutionModel::Vertex => Stage::Vertex,
        ExecutionModel::Fragment => Stage::Fragment,
        ExecutionModel::GLCompute => Stage::Compute,
        other => {
            return Err(SpirvError::unsupported(format!(
                "{other:?} shaders (the IR has no model of their inputs and outputs yet)"
            )));
        }
    };
    let mut shader = Shader::new(stage);
    for (mode, args) in &ep.modes {
        if *mode == ExecutionMode::LocalSize && args.len() == 3 {
            shader.workgroup_size = [args[0], args[1], args[2]];
        }
    }
    let mut translator = Translator {
        module: m,
        insts,
        shader,
        types: TypeMap::default(),
        globals: HashMap::new(),
        funcs: HashMap::new(),
        specializations: HashMap::new(),
        pending: Vec::new(),
        state: None,
        variable_names: UniqueNames::default(),
        function_names: UniqueNames::default(),
    };
    translator.workgroup_size_builtin()?;
    // Buffer blocks' names are part of the program's interface (GL names their members
    // `Block.member`), so their struct types claim their names before any other struct that
    // shares them (an input or output block of the same name) does.
    for &var in &m.global_order {
        let g = &m.globals[&var];
        if matches!(
            g.storage,
            StorageClass::Uniform | StorageClass::StorageBuffer
        ) {
            translator
                .types
                .ir_type(m, &mut translator.shader, g.ty)
                .map_err(|e| translator.at_def(e, var))?;
        }
    }
    for &var in &m.global_order {
        translator
            .declare_global(var)
            .map_err(|e| translator.at_def(e, var))?;
    }
    let order = translator.reachable_functions(ep.function)?;
    for (i, &fid) in order.iter().enumerate() {
        if let Some(info) = translator.declare_function(fid, i == 0, &ep.name, None)? {
            translator.funcs.insert(fid, info);
        }
    }
    for &fid in &order {
        if let Some(info) = translator.funcs.get(&fid).cloned() {
            translator.translate_function(fid, info)?;
        }
    }
    while let Some((fid, info)) = translator.pending.pop() {
        translator.translate_function(fid, info)?;
    }
    Ok(translator.shader)
}

impl<'m> Translator<'m> {
    /// Attaches the instruction defining `id` to an error.
    fn at_def(&self, e: SpirvError, id: Word) -> SpirvError {
        match self.module.defs.get(&id) {
            Some(&i) => e.at(&self.insts[i]),
            None => e,
        }
    }

    /// A constant decorated `BuiltIn WorkgroupSize` sets the workgroup size.
    fn workgroup_size_builtin(&mut self) -> Result<()> {
        for (&id, k) in &self.module.constants {
            if self.module.builtin(id, None) == Some(BuiltIn::WorkgroupSize)
                && let Konst::Vector(v) = k
                && v.len() == 3
            {
                self.shader.workgroup_size = [v[0] as u32, v[1] as u32, v[2] as u32];
            }
        }
        Ok(())
    }

    fn add_variable(&mut self, mut var: Variable) -> VarId {
        var.name = self.variable_names.claim(&var.name);
        self.shader.add_variable(var)
    }

    fn declare_global(&mut self, id: Word) -> Result<()> {
        let m = self.module;
        let g = &m.globals[&id];
        let ty = m.ty(g.ty)?;
        if g.storage == StorageClass::Input
            && let Some(b) = m.builtin(id, None)
        {
            self.globals.insert(id, Global::BuiltinInput(b));
            return Ok(());
        }
        if let SpvType::Struct { members } = ty
            && (0..members.len()).any(|i| m.builtin(g.ty, Some(i as u32)).is_some())
        {
            if g.storage != StorageClass::Output {
                return Err(SpirvError::unsupported(
                    "blocks of built-in inputs (gl_in / gl_PerVertex inputs)",
                ));
            }
            let mut vars = Vec::new();
            for (i, &member) in members.iter().enumerate() {
                let name = m
                    .member_names
                    .get(&(g.ty, i as u32))
                    .cloned()
                    .unwrap_or_else(|| format!("builtin{i}"));
                let ir_ty = self.types.ir_type(m, &mut self.shader, member)?;
                let mut var = Variable::new(name, Mode::ShaderOut, ir_ty);
                var.builtin = m.builtin(g.ty, Some(i as u32)).and_then(ir_builtin);
                var.location = m.member_decoration_u32(g.ty, i as u32, Decoration::Location);
                vars.push(self.add_variable(var));
            }
            self.globals.insert(id, Global::Split(vars));
            return Ok(());
        }
        if g.storage == StorageClass::AtomicCounter {
            let var = self.declare_atomic_counter(id)?;
            self.globals.insert(id, Global::AtomicCounter(var));
            return Ok(());
        }
        if let Some(vars) = self.split_interface_block(id)? {
            self.globals.insert(id, Global::Split(vars));
            return Ok(());
        }
        let mode = match g.storage {
            StorageClass::Input => Mode::ShaderIn,
            StorageClass::Output => Mode::ShaderOut,
            StorageClass::Uniform
                if m.has_decoration(block_type(m, g.ty), Decoration::BufferBlock) =>
            {
                Mode::Ssbo
            }
            StorageClass::Uniform => Mode::Ubo,
            StorageClass::UniformConstant => Mode::Uniform,
            StorageClass::StorageBuffer => Mode::Ssbo,
            StorageClass::PushConstant => Mode::PushConst,
            StorageClass::Workgroup => Mode::Shared,
            StorageClass::Private => Mode::ShaderTemp,
            other => {
                return Err(SpirvError::unsupported(format!(
                    "variables in the {other:?} storage class"
                )));
            }
        };
        let block = block_type(m, g.ty);
        let array_of_blocks = matches!(mode, Mode::Ubo | Mode::Ssbo) && block != g.ty;
        let nested = self.nested_block_array(g.ty)?;
        let ir_ty = match nested {
            // One array of all the blocks ([`Translator::access_chain`] flattens the indices).
            Some((dims, block)) if array_of_blocks => Type::Array {
                elem: Box::new(self.types.ir_type(m, &mut self.shader, block)?),
                len: dims
                    .iter()
                    .try_fold(1u32, |n, &d| n.checked_mul(d))
                    .ok_or_else(|| {
                        SpirvError::unsupported("an array of arrays of blocks of 2^32 blocks")
                    })?,
                stride: 0,
            },
            _ if array_of_blocks
                && !matches!(m.ty(g.ty)?, SpvType::Array { elem, .. } if *elem == block) =>
            {
                return Err(SpirvError::unsupported("runtime-sized arrays of blocks"));
            }
            _ => self.types.ir_type(m, &mut self.shader, g.ty)?,
        };
        let name = m
            .name(id)
            .or_else(|| m.name(g.ty))
            .map(str::to_string)
            .unwrap_or_else(|| format!("var{id}"));
        let mut var = Variable::new(name, mode, ir_ty);
        var.array_of_blocks = array_of_blocks;
        // Locations name interface slots of inputs and outputs only; bindings only exist for
        // buffers and opaque uniforms.
        if matches!(mode, Mode::ShaderIn | Mode::ShaderOut) {
            var.location = m.decoration_u32(id, Decoration::Location);
        }
        if matches!(mode, Mode::Uniform | Mode::Ubo | Mode::Ssbo) {
            var.binding = m.decoration_u32(id, Decoration::Binding);
            var.desc_set = m.decoration_u32(id, Decoration::DescriptorSet);
        }
        var.builtin = m.builtin(id, None).and_then(ir_builtin);
        if let Some(interp) = decorated_interp(|d| m.has_decoration(id, d)) {
            var.interp = interp;
        }
        if matches!(mode, Mode::Ubo | Mode::Ssbo) && var.binding.is_none() {
            var.binding = Some(0);
        }
        // glslang's relaxed Vulkan rules make the atomic counters of GL binding `b` a storage
        // block named for it (the block's own binding is one glslang chose).
        let counters = (var.name.strip_prefix("gl_AtomicCounterBlock_"))
            .and_then(|b| b.parse::<u32>().ok())
            .filter(|_| mode == Mode::Ssbo);
        if let Some(binding) = counters {
            var.binding = Some(binding);
            var.atomic_counters = true;
        }
        let var = self.add_variable(var);
        self.globals.insert(id, Global::Var(var));
        Ok(())
    }

    /// An atomic counter (or array of them), as glslang's relaxed rules make Vulkan GLSL's: the
    /// counters of buffer binding `b` are an SSBO at binding `b` named
    /// `gl_AtomicCounterBlock_<b>`, this one at its offset in it (a struct of one member
    /// there), and its operations SSBO atomics.
    fn declare_atomic_counter(&mut self, id: Word) -> Result<VarId> {
        let m = self.module;
        let g = &m.globals[&id];
        let ty = self.types.ir_type(m, &mut self.shader, g.ty)?;
        let binding = m.decoration_u32(id, Decoration::Binding).unwrap_or(0);
        let block = format!("gl_AtomicCounterBlock_{binding}");
        let member = Member {
            name: m.name(id).unwrap_or("counter").to_string(),
            ty,
            offset: Some(m.decoration_u32(id, Decoration::Offset).unwrap_or(0)),
        };
        let buffer = self
            .types
            .declare_struct(&mut self.shader, &block, vec![member]);
        let mut var = Variable::new(block, Mode::Ssbo, Type::Struct(buffer));
        var.binding = Some(binding);
        var.atomic_counters = true;
        Ok(self.add_variable(var))
    }

    /// An input or output block (or array of blocks) with members interpolated their own way:
    /// the IR interpolates per variable, so each member becomes a variable (in an array of
    /// blocks, the array of that member). Member `j` takes the block's locations from the
    /// member's slot offset on, times the block count in an array of blocks (so the members'
    /// arrays lie side by side in the locations the blocks took), unless it has its own.
    fn split_interface_block(&mut self, id: Word) -> Result<Option<Vec<VarId>>> {
        let m = self.module;
        let g = &m.globals[&id];
        let mode = match g.storage {
            StorageClass::Input => Mode::ShaderIn,
            StorageClass::Output => Mode::ShaderOut,
            _ => return Ok(None),
        };
        let block = block_type(m, g.ty);
        let SpvType::Struct { members } = m.ty(block)? else {
            return Ok(None);
        };
        let member_interp =
            |i: usize| decorated_interp(|d| m.member_decoration(block, i as u32, d).is_some());
        if (0..members.len()).all(|i| member_interp(i).is_none()) {
            return Ok(None);
        }
        let mut ty = self.types.ir_type(m, &mut self.shader, g.ty)?;
        let mut dims = Vec::new();
        while let Type::Array { elem, len, stride } = ty {
            dims.push((len, stride));
            ty = *elem;
        }
        let Type::Struct(sid) = ty else {
            return Err(SpirvError::malformed(
                "an interface block of a non-struct type",
            ));
        };
        let layout = Layout::new(&self.shader, LayoutRule::Slots);
        let offsets = layout
            .member_offsets(sid)
            .map_err(SpirvError::unsupported)?;
        let blocks: u32 = dims.iter().map(|&(len, _)| len).product();
        let location = m.decoration_u32(id, Decoration::Location);
        let interp = decorated_interp(|d| m.has_decoration(id, d)).unwrap_or(Interp::Smooth);
        let base = m
            .name(id)
            .or_else(|| m.name(g.ty))
            .unwrap_or("block")
            .to_string();
        let block_members = self.shader.struct_type(sid).members.clone();
        let mut vars = Vec::new();
        for (i, member) in block_members.into_iter().enumerate() {
            let ty = dims
                .iter()
                .rev()
                .fold(member.ty, |elem, &(len, stride)| Type::Array {
                    elem: Box::new(elem),
                    len,
                    stride,
                });
            let mut var = Variable::new(format!("{base}_{}", member.name), mode, ty);
            var.location = m
                .member_decoration_u32(block, i as u32, Decoration::Location)
                .or_else(|| location.map(|l| l + offsets[i] / SLOT_BYTES * blocks));
            var.interp = member_interp(i).unwrap_or(interp);
            vars.push(self.add_variable(var));
        }
        Ok(Some(vars))
    }

    /// The entry function first, then every function it calls, each once.
    fn reachable_functions(&self, entry: Word) -> Result<Vec<Word>> {
        let by_id: HashMap<Word, &FunctionDef> =
            self.module.functions.iter().map(|f| (f.id, f)).collect();
        let mut order = vec![entry];
        let mut seen: HashSet<Word> = order.iter().copied().collect();
        let mut i = 0;
        while i < order.len() {
            let def = by_id
                .get(&order[i])
                .ok_or_else(|| SpirvError::malformed(format!("%{} is not a function", order[i])))?;
            for (_, range) in &def.blocks {
                for inst in &self.insts[range.clone()] {
                    if inst.inst.class.opcode == Op::FunctionCall {
                        let callee = id(inst, 0)?;
                        if seen.insert(callee) {
                            order.push(callee);
                        }
                    }
                }
            }
            i += 1;
        }
        Ok(order)
    }

    fn function_def(&self, fid: Word) -> Result<&'m FunctionDef> {
        self.module
            .function(fid)
            .ok_or_else(|| SpirvError::malformed(format!("%{fid} is not a function")))
    }

    /// Declares a function and how its parameters pass, or `None` for a function with image or
    /// sampler pointer parameters when `opaque` is `None`: those are declared per call, with
    /// the opaque arguments of the call.
    fn declare_function(
        &mut self,
        fid: Word,
        is_entry: bool,
        entry_name: &str,
        opaque: Option<Vec<OpaqueArg>>,
    ) -> Result<Option<FuncInfo>> {
        let def = self.function_def(fid)?;
        let m = self.module;
        let at = |e: SpirvError| e.at(&self.insts[def.start]);
        let points_to_opaque = |translator: &Self, ty: Word| match m.ty(ty) {
            Ok(SpvType::Pointer { pointee, .. }) => translator.contains_opaque(*pointee),
            _ => Ok(false),
        };
        let mut takes_opaque = false;
        for &(_, pty) in &def.params {
            takes_opaque |= points_to_opaque(self, pty).map_err(at)?;
        }
        if takes_opaque && opaque.is_none() {
            return Ok(None);
        }
        let ret_ty = m.ty(def.ret).map_err(at)?;
        let ret_val = match ret_ty {
            SpvType::Void => None,
            t => t.val_type(m).filter(|_| {
                !matches!(
                    t,
                    SpvType::Struct { .. } | SpvType::Array { .. } | SpvType::Matrix { .. }
                )
            }),
        };
        if is_entry {
            if !def.params.is_empty() || !matches!(ret_ty, SpvType::Void) {
                return Err(at(SpirvError::malformed(
                    "the entry point takes parameters or returns a value",
                )));
            }
            let entry = self.shader.entry;
            self.shader.functions[entry.0 as usize].name = self.function_names.claim(entry_name);
            return Ok(Some(FuncInfo {
                id: entry,
                params: Vec::new(),
                ret: Ret::None,
                opaque: Vec::new(),
            }));
        }
        // glslang names overloads `f(vf4;` and `f(i1;`: both become `f`, `f_1`.
        let base = m
            .name(fid)
            .map(|n| n.split('(').next().unwrap_or(n).to_string())
            .unwrap_or_else(|| format!("f{fid}"));
        let fname = self.function_names.claim(&base);
        let mut params = Vec::new();
        let mut ir_params = Vec::new();
        let mut opaque_count = 0;
        for (i, &(pid, pty)) in def.params.iter().enumerate() {
            let t = m.ty(pty).map_err(at)?;
            let pname = m.name(pid).unwrap_or("param");
            let (value_ty, copy_out) = match t {
                SpvType::Pointer { .. } if points_to_opaque(self, pty).map_err(at)? => {
                    params.push(Param::Opaque(opaque_count));
                    opaque_count += 1;
                    continue;
                }
                SpvType::Pointer { pointee, .. } => (*pointee, true),
                t if t.is_opaque() => {
                    return Err(at(SpirvError::unsupported(
                        "image or sampler function parameters",
                    )));
                }
                SpvType::Bool
                | SpvType::Int { .. }
                | SpvType::Float { .. }
                | SpvType::Vector { .. } => {
                    let vt = t
                        .val_type(m)
                        .ok_or_else(|| at(SpirvError::malformed("bad parameter type")))?;
                    params.push(Param::Value(ir_params.len() as u32));
                    ir_params.push(vt);
                    continue;
                }
                _ => (pty, false),
            };
            let ir_ty = self
                .types
                .ir_type(m, &mut self.shader, value_ty)
                .map_err(at)?;
            let var = self.add_variable(Variable::new(
                format!("{fname}.{pname}{i}"),
                Mode::FunctionTemp,
                ir_ty,
            ));
            params.push(Param::Var { var, copy_out });
        }
        let ret = match (ret_ty, ret_val) {
            (SpvType::Void, _) => Ret::None,
            (_, Some(_)) => Ret::Value,
            _ => {
                let ir_ty = self
                    .types
                    .ir_type(m, &mut self.shader, def.ret)
                    .map_err(at)?;
                Ret::Var(self.add_variable(Variable::new(
                    format!("{fname}.result"),
                    Mode::FunctionTemp,
                    ir_ty,
                )))
            }
        };
        let id = self.shader.add_function(&fname, &ir_params, ret_val);
        Ok(Some(FuncInfo {
            id,
            params,
            ret,
            opaque: opaque.unwrap_or_default(),
        }))
    }

    fn contains_opaque(&self, ty: Word) -> Result<bool> {
        Ok(match self.module.ty(ty)? {
            t if t.is_opaque() => true,
            SpvType::Array { elem, .. } | SpvType::RuntimeArray { elem } => {
                self.contains_opaque(*elem)?
            }
            SpvType::Struct { members } => {
                let mut any = false;
                for &mt in members {
                    any |= self.contains_opaque(mt)?;
                }
                any
            }
            _ => false,
        })
    }

    fn translate_function(&mut self, fid: Word, info: FuncInfo) -> Result<()> {
        let def = self.function_def(fid)?;
        let func = &mut self.shader.functions[info.id.0 as usize];
        let consts = func.entry;
        let mut blocks = HashMap::new();
        for (label, _) in &def.blocks {
            blocks.insert(*label, func.add_block());
        }
        self.state = Some(FunctionState {
            func: info.id,
            values: HashMap::new(),
            blocks,
            consts,
            block: consts,
            edges: HashMap::new(),
            phis: Vec::new(),
            switches: Vec::new(),
        });
        // Parameters.
        for (&(pid, _), param) in def.params.iter().zip(&info.params) {
            let v = match param {
                Param::Value(i) => {
                    let ty = self.val_type(self.module.result_types[&pid])?;
                    let v = self.in_consts(|b| {
                        b.intrinsic(
                            Intrinsic::LoadParam,
                            &[],
                            Some(ty),
                            &[(IndexKind::ParamIdx, *i)],
                        )
                    });
                    Val::Ssa(v)
                }
                Param::Var {
                    var,
                    copy_out: true,
                } => Val::Ptr(Ptr::Deref(self.in_consts(|b| b.deref_var(*var)))),
                Param::Var {
                    var,
                    copy_out: false,
                } => {
                    let d = self.in_consts(|b| b.deref_var(*var));
                    self.state_mut().block = self.state().blocks[&def.blocks[0].0];
                    let ty = self.module.result_types[&pid];
                    self.load(&Ptr::Deref(d), ty)?
                }
                Param::Opaque(k) => {
                    let (var, indices) = &info.opaque[*k];
                    let d = self.in_consts(|b| {
                        let mut d = b.deref_var(*var);
                        for &i in indices {
                            let i = b.imm_u32(i);
                            d = b.deref_array(d, i);
                        }
                        d
                    });
                    Val::Ptr(Ptr::Deref(d))
                }
            };
            self.state_mut().values.insert(pid, v);
        }
        let first = def.blocks.first().ok_or_else(|| {
            SpirvError::malformed("a function without blocks").at(&self.insts[def.start])
        })?;
        for (i, (label, range)) in def.blocks.iter().enumerate() {
            let block = self.state().blocks[label];
            self.state_mut().block = block;
            if i == 0 && info.id == self.shader.entry {
                self.initialize_globals()?;
            }
            let mut structure = None;
            for index in range.clone() {
                let inst = &self.insts[index];
                let before = self.func().insts.len();
                self.translate_inst(inst, index, *label, &mut structure, &info)
                    .map_err(|e| e.at(inst))?;
                if let Some(r) = inst.inst.result_id
                    && self.module.has_decoration(r, Decoration::NoContraction)
                {
                    self.mark_exact(before);
                }
                if self.func().insts.len() > MAX_FUNCTION_INSTS {
                    return Err(SpirvError::unsupported(format!(
                        "the function translates to more than {MAX_FUNCTION_INSTS} instructions"
                    ))
                    .at(inst));
                }
            }
            if self.func().cfg[self.state().block].terminator.is_none() {
                return Err(SpirvError::malformed("a block without a terminator")
                    .at(&self.insts[range.end.saturating_sub(1).max(def.start)]));
            }
        }
        self.resolve_phis()?;
        let first_block = self.state().blocks[&first.0];
        let consts = self.state().consts;
        self.func_mut().set_jump(consts, first_block);
        let switches = std::mem::take(&mut self.state_mut().switches);
        super::switch::lower(&mut self.shader, info.id, switches, self.insts)?;
        self.state = None;
        Ok(())
    }

    /// Stores the initializers of global variables (the entry function starts with them).
    fn initialize_globals(&mut self) -> Result<()> {
        for &var in &self.module.global_order {
            let g = &self.module.globals[&var];
            let Some(init) = g.init else { continue };
            let Some(Global::Var(v)) = self.globals.get(&var).cloned() else {
                continue;
            };
            let value = self.val(init)?;
            let d = self.in_consts(|b| b.deref_var(v));
            self.store(&Ptr::Deref(d), g.ty, &value)?;
        }
        Ok(())
    }

    fn mark_exact(&mut self, from: usize) {
        for inst in self.func_mut().insts[from..].iter_mut().flatten() {
            if let InstKind::Alu(alu) = &mut inst.kind {
                alu.exact = true;
            }
        }
    }

    fn state(&self) -> &FunctionState {
        self.state.as_ref().expect("inside a function")
    }

    fn state_mut(&mut self) -> &mut FunctionState {
        self.state.as_mut().expect("inside a function")
    }

    pub fn func(&self) -> &shrew_engine::ir::Function {
        &self.shader.functions[self.state().func.0 as usize]
    }

    fn func_mut(&mut self) -> &mut shrew_engine::ir::Function {
        let id = self.state().func;
        &mut self.shader.functions[id.0 as usize]
    }

    /// A builder at the end of the current block.
    pub fn builder(&mut self) -> Builder<'_> {
        let (func, cur) = (self.state().func, self.state().block);
        Builder {
            shader: &mut self.shader,
            func,
            cursor: Cursor::at_end(cur),
        }
    }

    /// Runs `f` with a builder in the function's constant block.
    pub fn in_consts<T>(&mut self, f: impl FnOnce(&mut Builder) -> T) -> T {
        let (func, consts) = (self.state().func, self.state().consts);
        let mut b = Builder {
            shader: &mut self.shader,
            func,
            cursor: Cursor::at_end(consts),
        };
        f(&mut b)
    }

    /// The IR value shape of a scalar or vector type.
    pub fn val_type(&self, ty: Word) -> Result<ValType> {
        let t = self.module.ty(ty)?;
        match t {
            SpvType::Bool
            | SpvType::Int { .. }
            | SpvType::Float { .. }
            | SpvType::Vector { .. } => t
                .val_type(self.module)
                .ok_or_else(|| SpirvError::malformed("a vector of non-scalars")),
            other => Err(SpirvError::malformed(format!(
                "expected a scalar or vector type, found {other:?}"
            ))),
        }
    }

    /// The type of a result or constant.
    pub fn type_of(&self, id: Word) -> Result<Word> {
        self.module
            .result_types
            .get(&id)
            .copied()
            .ok_or_else(|| SpirvError::malformed(format!("%{id} has no type")))
    }

    /// The value of an id: a result of this function, a constant or a global variable.
    pub fn val(&mut self, id: Word) -> Result<Val> {
        if let Some(v) = self.state().values.get(&id) {
            return Ok(v.clone());
        }
        let v = if let Some(k) = self.module.constants.get(&id) {
            let ty = self.type_of(id)?;
            let k = k.clone();
            self.materialize(&k, ty)?
        } else if let Some(g) = self.globals.get(&id).cloned() {
            match g {
                Global::Var(var) => Val::Ptr(Ptr::Deref(self.in_consts(|b| b.deref_var(var)))),
                Global::AtomicCounter(var) => Val::Ptr(Ptr::Deref(self.in_consts(|b| {
                    let buffer = b.deref_var(var);
                    b.deref_struct(buffer, 0)
                }))),
                Global::BuiltinInput(builtin) => Val::Ptr(Ptr::Builtin {
                    builtin,
                    path: Vec::new(),
                }),
                Global::Split(vars) => Val::Ptr(Ptr::Split {
                    vars,
                    indices: Vec::new(),
                }),
            }
        } else {
            return Err(SpirvError::malformed(format!(
                "%{id} is used before it is defined (or is not a value)"
            )));
        };
        self.state_mut().values.insert(id, v.clone());
        Ok(v)
    }

    /// A scalar or vector operand.
    pub fn ssa(&mut self, id: Word) -> Result<Value> {
        match self.val(id)? {
            Val::Ssa(v) => Ok(v),
            other => Err(SpirvError::malformed(format!(
                "%{id} should be a scalar or vector, found {}",
                describe(&other)
            ))),
        }
    }

    pub fn ptr(&mut self, id: Word) -> Result<Ptr> {
        match self.val(id)? {
            Val::Ptr(p) => Ok(p),
            other => Err(SpirvError::malformed(format!(
                "%{id} should be a pointer, found {}",
                describe(&other)
            ))),
        }
    }

    /// A constant of a type, placed in the constant block.
    fn materialize(&mut self, k: &Konst, ty: Word) -> Result<Val> {
        let t = self.module.ty(ty)?.clone();
        match (k, &t) {
            (Konst::Undef, _) => self.undef(ty),
            (Konst::Vector(comps), _) => {
                let vt = self.val_type(ty)?;
                if comps.len() != vt.comps as usize {
                    return Err(SpirvError::malformed(
                        "a constant with the wrong component count",
                    ));
                }
                Ok(Val::Ssa(self.in_consts(|b| b.imm(vt.bits, comps))))
            }
            (Konst::Composite(parts), _) => {
                let elem_types = self.member_types(ty)?;
                if elem_types.len() != parts.len() {
                    return Err(SpirvError::malformed(
                        "a composite constant with the wrong member count",
                    ));
                }
                let mut out = Vec::new();
                for (p, et) in parts.iter().zip(elem_types) {
                    out.push(self.materialize(p, et)?);
                }
                Ok(Val::Composite(out))
            }
        }
    }

    /// An undefined value of a type.
    pub fn undef(&mut self, ty: Word) -> Result<Val> {
        match self.module.ty(ty)? {
            SpvType::Matrix { .. } | SpvType::Array { .. } | SpvType::Struct { .. } => {
                let mut out = Vec::new();
                for et in self.member_types(ty)? {
                    out.push(self.undef(et)?);
                }
                Ok(Val::Composite(out))
            }
            _ => {
                let vt = self.val_type(ty)?;
                Ok(Val::Ssa(self.in_consts(|b| b.undef(vt))))
            }
        }
    }

    /// The types of a composite type's members, elements or columns, in order.
    pub fn member_types(&self, ty: Word) -> Result<Vec<Word>> {
        Ok(match self.module.ty(ty)? {
            SpvType::Matrix { col, cols } => vec![*col; *cols as usize],
            SpvType::Array { elem, len } => {
                let n = self.module.array_len(*len)?;
                if n > 1 << 16 {
                    return Err(SpirvError::unsupported(format!(
                        "an array value of {n} elements (arrays are handled element by element)"
                    )));
                }
                vec![*elem; n as usize]
            }
            SpvType::Struct { members } => members.clone(),
            other => {
                return Err(SpirvError::malformed(format!(
                    "{other:?} is not a composite type"
                )));
            }
        })
    }

    /// The type of element `index` of a composite or vector type.
    pub fn element_type(&self, ty: Word, index: u32) -> Result<Word> {
        Ok(match self.module.ty(ty)? {
            SpvType::Vector { elem, .. } => *elem,
            SpvType::Matrix { col, .. } => *col,
            SpvType::Array { elem, .. } | SpvType::RuntimeArray { elem } => *elem,
            SpvType::Struct { members } => *members
                .get(index as usize)
                .ok_or_else(|| SpirvError::malformed(format!("no struct member {index}")))?,
            other => {
                return Err(SpirvError::malformed(format!(
                    "cannot index into {other:?}"
                )));
            }
        })
    }

    /// The value of a constant scalar integer id.
    pub fn const_u32(&self, id: Word) -> Result<u32> {
        match self.module.constants.get(&id) {
            Some(Konst::Vector(v)) if v.len() == 1 => Ok(v[0] as u32),
            _ => Err(SpirvError::malformed(format!(
                "%{id} should be a constant integer"
            ))),
        }
    }

    /// An index operand as a 32-bit IR value.
    pub fn index32(&mut self, id: Word) -> Result<Value> {
        let v = self.ssa(id)?;
        let t = self.module.ty(self.type_of(id)?)?.clone();
        Ok(match t {
            SpvType::Int { bits: 32, .. } => v,
            SpvType::Int { signed, .. } => {
                let op = if signed {
                    shrew_engine::ops::AluOp::I2i32
                } else {
                    shrew_engine::ops::AluOp::U2u32
                };
                self.builder().alu(op, &[v])
            }
            _ => return Err(SpirvError::malformed("an index that is not an integer")),
        })
    }

    fn translate_inst(
        &mut self,
        inst: &Inst,
        index: usize,
        label: Word,
        structure: &mut Option<(Word, Option<Word>)>,
        info: &FuncInfo,
    ) -> Result<()> {
        let op = inst.inst.class.opcode;
        match op {
            Op::Line | Op::NoLine | Op::Nop | Op::Name | Op::Source | Op::ModuleProcessed => {}
            Op::SelectionMerge => *structure = Some((id(inst, 0)?, None)),
            Op::LoopMerge => *structure = Some((id(inst, 0)?, Some(id(inst, 1)?))),
            Op::Variable => self.local_variable(inst)?,
            Op::Phi => self.phi(inst, index, label)?,
            Op::Branch => {
                let target = self.block_of(id(inst, 0)?)?;
                self.builder().jump(target);
                self.set_structure(*structure)?;
            }
            Op::BranchConditional => {
                let cond = self.ssa(id(inst, 0)?)?;
                let (t, f) = (self.block_of(id(inst, 1)?)?, self.block_of(id(inst, 2)?)?);
                let cur = self.state().block;
                if t == f {
                    self.func_mut().set_jump(cur, t);
                    if matches!(structure, Some((_, None))) {
                        *structure = None;
                    }
                } else {
                    self.func_mut().set_branch(cur, cond, t, f);
                }
                self.set_structure(*structure)?;
            }
            Op::Switch => self.switch(inst, index, label, structure.map(|s| s.0))?,
            Op::Return => {
                self.builder().ret(None);
            }
            Op::ReturnValue => {
                let v = self.val(id(inst, 0)?)?;
                match &info.ret {
                    Ret::Value => {
                        let Val::Ssa(v) = v else {
                            return Err(SpirvError::malformed("returning a non-scalar"));
                        };
                        self.builder().ret(Some(v));
                    }
                    Ret::Var(var) => {
                        let ty = self.type_of(id(inst, 0)?)?;
                        let d = self.in_consts(|b| b.deref_var(*var));
                        self.store(&Ptr::Deref(d), ty, &v)?;
                        self.builder().ret(None);
                    }
                    Ret::None => {
                        return Err(SpirvError::malformed("a void function returns a value"));
                    }
                }
            }
            Op::Kill | Op::TerminateInvocation => {
                self.require_fragment(op)?;
                let which = if op == Op::Kill {
                    Intrinsic::Discard
                } else {
                    Intrinsic::Terminate
                };
                self.builder().intrinsic(which, &[], None, &[]);
                let cur = self.state().block;
                self.func_mut().set_exit(cur, Terminator::Unreachable);
            }
            Op::DemoteToHelperInvocation => {
                self.require_fragment(op)?;
                self.builder().intrinsic(Intrinsic::Demote, &[], None, &[]);
            }
            Op::IsHelperInvocationEXT => {
                let v = self
                    .builder()
                    .intrinsic(Intrinsic::IsHelperInvocation, &[], None, &[]);
                self.set(inst, Val::Ssa(v))?;
            }
            Op::Unreachable => {
                let cur = self.state().block;
                self.func_mut().set_exit(cur, Terminator::Unreachable);
            }
            Op::Load => {
                let ptr = self.ptr(id(inst, 0)?)?;
                let v = self.load(&ptr, result_type(inst)?)?;
                self.set(inst, v)?;
            }
            Op::Store => {
                let ptr = self.ptr(id(inst, 0)?)?;
                let v = self.val(id(inst, 1)?)?;
                let ty = self.type_of(id(inst, 1)?)?;
                self.store(&ptr, ty, &v)?;
            }
            Op::CopyMemory => {
                let dst = self.ptr(id(inst, 0)?)?;
                let src = self.ptr(id(inst, 1)?)?;
                let ty = self.pointee(self.type_of(id(inst, 1)?)?)?;
                let v = self.load(&src, ty)?;
                self.store(&dst, ty, &v)?;
            }
            Op::AccessChain | Op::InBoundsAccessChain => {
                let base = self.ptr(id(inst, 0)?)?;
                let base_ty = self.pointee(self.type_of(id(inst, 0)?)?)?;
                let indices: Vec<Word> = (1..inst.inst.operands.len())
                    .map(|i| id(inst, i))
                    .collect::<Result<_>>()?;
                let p = self.access_chain(base, base_ty, &indices)?;
                self.set(inst, Val::Ptr(p))?;
            }
            Op::FunctionCall => self.call(inst)?,
            Op::ControlBarrier | Op::MemoryBarrier => self.barrier(inst)?,
            Op::ExtInst => self.ext_inst(inst)?,
            _ => {
                if !self.alu_inst(inst)?
                    && !self.image_inst(inst)?
                    && !self.atomic(inst)?
                    && !self.subgroup_inst(inst)?
                {
                    return Err(SpirvError::unsupported(format!(
                        "the instruction Op{}",
                        inst.inst.class.opname
                    )));
                }
            }
        }
        Ok(())
    }

    fn require_fragment(&self, op: Op) -> Result<()> {
        if self.shader.stage != Stage::Fragment {
            return Err(SpirvError::malformed(format!(
                "Op{op:?} outside a fragment shader"
            )));
        }
        Ok(())
    }

    /// Records the result of an instruction.
    pub fn set(&mut self, inst: &Inst, v: Val) -> Result<()> {
        let r = result_id(inst)?;
        self.state_mut().values.insert(r, v);
        Ok(())
    }

    fn block_of(&self, label: Word) -> Result<BlockId> {
        self.state().blocks.get(&label).copied().ok_or_else(|| {
            SpirvError::malformed(format!("%{label} is not a block of this function"))
        })
    }

    /// Puts the pending merge annotation on the block just terminated.
    fn set_structure(&mut self, structure: Option<(Word, Option<Word>)>) -> Result<()> {
        let Some((merge, cont)) = structure else {
            return Ok(());
        };
        let merge = self.block_of(merge)?;
        let s = match cont {
            Some(c) => Structure::Loop {
                merge,
                cont: self.block_of(c)?,
            },
            None => {
                let cur = self.state().block;
                if !matches!(
                    self.func().cfg[cur].terminator,
                    Some(Terminator::Branch { .. })
                ) {
                    return Ok(());
                }
                Structure::Selection { merge }
            }
        };
        let cur = self.state().block;
        self.func_mut().cfg[cur].structure = Some(s);
        Ok(())
    }

    /// `OpSwitch`: a sequence of tests, lowered once the function is read (see
    /// [`super::switch`]).
    fn switch(
        &mut self,
        inst: &Inst,
        index: usize,
        label: Word,
        merge: Option<Word>,
    ) -> Result<()> {
        let sel = self.ssa(id(inst, 0)?)?;
        let bits = self.val_type(self.type_of(id(inst, 0)?)?)?.bits;
        let default = id(inst, 1)?;
        let mut targets: Vec<(Word, Vec<u64>)> = Vec::new();
        // Each target's place in `targets`: a switch may have thousands of cases.
        let mut place: HashMap<Word, usize> = HashMap::new();
        for pair in inst.inst.operands[2..].chunks(2) {
            let (lit, target) = match pair {
                [Operand::LiteralBit32(l), Operand::IdRef(t)] => (*l as u64, *t),
                [Operand::LiteralBit64(l), Operand::IdRef(t)] => (*l, *t),
                _ => {
                    return Err(SpirvError::malformed(
                        "a switch case that is not (literal, label)",
                    ));
                }
            };
            if target == default {
                continue;
            }
            match place.entry(target) {
                Entry::Occupied(at) => targets[*at.get()].1.push(lit),
                Entry::Vacant(at) => {
                    at.insert(targets.len());
                    targets.push((target, vec![lit]));
                }
            }
        }
        let Some(merge) = merge else {
            return Err(SpirvError::malformed(
                "an OpSwitch without OpSelectionMerge",
            ));
        };
        let header = self.state().block;
        let merge_block = self.block_of(merge)?;
        let default_block = self.block_of(default)?;
        if default_block == merge_block && targets.iter().all(|&(t, _)| t == merge) {
            self.builder().jump(merge_block);
            return Ok(());
        }
        let mut blocks = Vec::new();
        for (target, lits) in targets {
            blocks.push((self.block_of(target)?, lits));
        }
        let func = self.state().func;
        let sw = super::switch::begin(
            &mut self.shader,
            func,
            index,
            header,
            sel,
            bits,
            default_block,
            blocks,
            merge_block,
        );
        let mut labels: Vec<Word> = vec![default, merge];
        labels.extend(inst.inst.operands[2..].chunks(2).filter_map(|p| match p {
            [_, Operand::IdRef(t)] => Some(*t),
            _ => None,
        }));
        for target in labels {
            let pred = sw.entry_of(self.block_of(target)?);
            self.state_mut().edges.insert((label, target), pred);
        }
        self.state_mut().switches.push(sw);
        Ok(())
    }

    fn phi(&mut self, inst: &Inst, index: usize, label: Word) -> Result<()> {
        let ty = result_type(inst)?;
        let v = self.phi_leaves(ty)?;
        let mut leaves = Vec::new();
        flatten(&v, &mut leaves);
        let mut srcs = Vec::new();
        for pair in inst.inst.operands.chunks(2) {
            match pair {
                [Operand::IdRef(v), Operand::IdRef(parent)] => srcs.push((*v, *parent)),
                _ => {
                    return Err(SpirvError::malformed(
                        "a phi operand that is not (value, block)",
                    ));
                }
            }
        }
        self.state_mut().phis.push(PendingPhi {
            leaves,
            srcs,
            label,
            inst: index,
        });
        self.set(inst, v)
    }

    /// Empty phis shaped like a value of the type.
    fn phi_leaves(&mut self, ty: Word) -> Result<Val> {
        match self.module.ty(ty)? {
            SpvType::Matrix { .. } | SpvType::Array { .. } | SpvType::Struct { .. } => {
                let mut out = Vec::new();
                for et in self.member_types(ty)? {
                    out.push(self.phi_leaves(et)?);
                }
                Ok(Val::Composite(out))
            }
            SpvType::Pointer { .. } => Err(SpirvError::unsupported("phis of pointers")),
            _ => {
                let vt = self.val_type(ty)?;
                Ok(Val::Ssa(self.builder().phi(vt, Vec::new())))
            }
        }
    }

    fn resolve_phis(&mut self) -> Result<()> {
        let phis = std::mem::take(&mut self.state_mut().phis);
        for phi in phis {
            let inst = &self.insts[phi.inst];
            for (value, parent) in &phi.srcs {
                let pred = match self.state().edges.get(&(*parent, phi.label)) {
                    Some(b) => *b,
                    None => self.block_of(*parent).map_err(|e| e.at(inst))?,
                };
                let v = self.val(*value).map_err(|e| e.at(inst))?;
                let mut leaves = Vec::new();
                flatten(&v, &mut leaves);
                if leaves.len() != phi.leaves.len() {
                    return Err(SpirvError::malformed("a phi source of another shape").at(inst));
                }
                for (&p, &l) in phi.leaves.iter().zip(&leaves) {
                    if let InstKind::Phi(srcs) = &mut self.func_mut().inst_mut(p).kind {
                        srcs.push((pred, l));
                    }
                }
            }
        }
        Ok(())
    }

    fn local_variable(&mut self, inst: &Inst) -> Result<()> {
        let ptr_ty = result_type(inst)?;
        let pointee = self.pointee(ptr_ty)?;
        let ir_ty = self.types.ir_type(self.module, &mut self.shader, pointee)?;
        let r = result_id(inst)?;
        let fname = self.func().name.clone();
        let vname = self.module.name(r).unwrap_or("tmp");
        let var = self.add_variable(Variable::new(
            format!("{fname}.{vname}"),
            Mode::FunctionTemp,
            ir_ty,
        ));
        let d = self.in_consts(|b| b.deref_var(var));
        if inst.inst.operands.len() > 1 {
            let init = self.val(id(inst, 1)?)?;
            self.store(&Ptr::Deref(d), pointee, &init)?;
        }
        self.set(inst, Val::Ptr(Ptr::Deref(d)))
    }

    /// The pointee of a pointer type.
    pub fn pointee(&self, ptr_ty: Word) -> Result<Word> {
        match self.module.ty(ptr_ty)? {
            SpvType::Pointer { pointee, .. } => Ok(*pointee),
            other => Err(SpirvError::malformed(format!(
                "{other:?} is not a pointer type"
            ))),
        }
    }

    /// Component `index` (a 32-bit value) of a vector, as a select ladder.
    pub fn extract_dynamic(&mut self, v: Value, index: Value) -> Value {
        use shrew_engine::ops::AluOp;
        let comps = self.builder().value_type(v).comps;
        let mut out = self.builder().channel(v, 0);
        for c in 1..comps {
            let k = self.builder().imm_u32(c as u32);
            let is_c = self.builder().alu(AluOp::Ieq, &[index, k]);
            let comp = self.builder().channel(v, c);
            out = self.builder().alu(AluOp::Bcsel, &[is_c, comp, out]);
        }
        out
    }

    fn call(&mut self, inst: &Inst) -> Result<()> {
        let callee = id(inst, 0)?;
        let def = self.function_def(callee)?;
        if def.params.len() != inst.inst.operands.len() - 1 {
            return Err(SpirvError::malformed(
                "a call with the wrong number of arguments",
            ));
        }
        let info = match self.funcs.get(&callee) {
            Some(info) => info.clone(),
            None => self.specialization(inst, callee)?,
        };
        let mut args = Vec::new();
        let mut copy_back = Vec::new();
        for (i, (param, &(_, pty))) in info.params.iter().zip(&def.params).enumerate() {
            let arg = id(inst, i + 1)?;
            match param {
                Param::Opaque(_) => {}
                Param::Value(_) => args.push(self.ssa(arg)?),
                Param::Var { var, copy_out } => {
                    let d = self.in_consts(|b| b.deref_var(*var));
                    if *copy_out {
                        let ty = self.pointee(pty)?;
                        let p = self.ptr(arg)?;
                        let v = self.load(&p, ty)?;
                        self.store(&Ptr::Deref(d), ty, &v)?;
                        copy_back.push((p, d, ty));
                    } else {
                        let v = self.val(arg)?;
                        self.store(&Ptr::Deref(d), pty, &v)?;
                    }
                }
            }
        }
        let result = self.builder().call(info.id, &args);
        for (p, d, ty) in copy_back {
            if self.is_writable(&p) {
                let v = self.load(&Ptr::Deref(d), ty)?;
                self.store(&p, ty, &v)?;
            }
        }
        match (&info.ret, result) {
            (Ret::Value, Some(v)) => self.set(inst, Val::Ssa(v)),
            (Ret::Var(var), _) => {
                let d = self.in_consts(|b| b.deref_var(*var));
                let v = self.load(&Ptr::Deref(d), result_type(inst)?)?;
                self.set(inst, v)
            }
            _ => Ok(()),
        }
    }

    /// The copy of a function with image or sampler parameters for the opaque arguments of a
    /// call, declared (and queued for translation) on first use.
    fn specialization(&mut self, inst: &Inst, callee: Word) -> Result<FuncInfo> {
        let def = self.function_def(callee)?;
        let mut opaque = Vec::new();
        for (i, &(_, pty)) in def.params.iter().enumerate() {
            if let SpvType::Pointer { pointee, .. } = self.module.ty(pty)?
                && self.contains_opaque(*pointee)?
            {
                let Ptr::Deref(d) = self.ptr(id(inst, i + 1)?)? else {
                    return Err(SpirvError::malformed(
                        "an image or sampler pointer expected",
                    ));
                };
                opaque.push(self.opaque_arg(d)?);
            }
        }
        let key = (callee, opaque);
        if let Some(info) = self.specializations.get(&key) {
            return Ok(info.clone());
        }
        let info = self
            .declare_function(callee, false, "", Some(key.1.clone()))?
            .ok_or_else(|| SpirvError::malformed(format!("%{callee} is not a function")))?;
        self.specializations.insert(key, info.clone());
        self.pending.push((callee, info.clone()));
        Ok(info)
    }

    /// The variable and constant array indices a deref of an image or sampler names.
    fn opaque_arg(&self, d: Value) -> Result<OpaqueArg> {
        let mut indices = Vec::new();
        let mut cur = d;
        loop {
            match self.func().get_inst(cur).map(|i| &i.kind) {
                Some(InstKind::Deref(Deref::Var(var))) => {
                    indices.reverse();
                    return Ok((*var, indices));
                }
                Some(InstKind::Deref(Deref::Array { parent, index })) => {
                    match self.func().get_inst(*index).map(|i| &i.kind) {
                        Some(InstKind::Const(values)) => indices.push(values[0] as u32),
                        _ => {
                            return Err(SpirvError::unsupported(
                                "an image or sampler argument indexed dynamically",
                            ));
                        }
                    }
                    cur = *parent;
                }
                _ => {
                    return Err(SpirvError::unsupported(
                        "an image or sampler argument inside a struct",
                    ));
                }
            }
        }
    }

    /// The dimension and arrayness of the image a deref points to.
    pub fn image_dim(&self, d: Value) -> Result<(shrew_engine::ir::Dim, bool)> {
        match self.shader.deref_target(self.func(), d) {
            Some((_, Type::Image { dim, arrayed, .. } | Type::Texture { dim, arrayed, .. })) => {
                Ok((dim, arrayed))
            }
            _ => Err(SpirvError::malformed(
                "an image operand that is not an image",
            )),
        }
    }
}

/// The IR built-in of a SPIR-V output built-in.
fn ir_builtin(b: BuiltIn) -> Option<Builtin> {
    Some(match b {
        BuiltIn::Position => Builtin::Position,
        BuiltIn::PointSize => Builtin::PointSize,
        BuiltIn::ClipDistance => Builtin::ClipDistance,
        BuiltIn::CullDistance => Builtin::CullDistance,
        BuiltIn::FragDepth => Builtin::FragDepth,
        BuiltIn::SampleMask => Builtin::SampleMask,
        BuiltIn::Layer => Builtin::Layer,
        BuiltIn::ViewportIndex => Builtin::ViewportIndex,
        BuiltIn::TessLevelOuter => Builtin::TessLevelOuter,
        BuiltIn::TessLevelInner => Builtin::TessLevelInner,
        _ => return None,
    })
}

/// The scalar and vector leaves of a value, in order.
pub fn flatten(v: &Val, out: &mut Vec<Value>) {
    match v {
        Val::Ssa(x) => out.push(*x),
        Val::Composite(parts) => parts.iter().for_each(|p| flatten(p, out)),
        _ => {}
    }
}

pub fn describe(v: &Val) -> &'static str {
    match v {
        Val::Ssa(_) => "a scalar or vector",
        Val::Composite(_) => "a composite",
        Val::Ptr(_) => "a pointer",
        Val::Handle(_) => "an image or sampler",
        Val::Sampled { .. } => "a sampled image",
        Val::Texel { .. } => "an image texel pointer",
    }
}

/// The block of a variable that may be an array of blocks.
/// The interpolation the decorations `has` name, if any (`Flat`, `NoPerspective`).
fn decorated_interp(has: impl Fn(Decoration) -> bool) -> Option<Interp> {
    if has(Decoration::Flat) {
        Some(Interp::Flat)
    } else if has(Decoration::NoPerspective) {
        Some(Interp::NoPerspective)
    } else {
        None
    }
}

fn block_type(m: &Module, mut ty: Word) -> Word {
    while let Ok(SpvType::Array { elem, .. } | SpvType::RuntimeArray { elem }) = m.ty(ty) {
        ty = *elem;
    }
    ty
}

/// The value of a scalar or vector.
pub fn expect_ssa(v: &Val) -> Result<Value> {
    match v {
        Val::Ssa(x) => Ok(*x),
        other => Err(SpirvError::malformed(format!(
            "expected a scalar or vector, found {}",
            describe(other)
        ))),
    }
}
