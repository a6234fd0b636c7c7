//! Random structured programs for tests: a function over a few 32-bit variables (an SSA value
//! each at any point) with assignments, ifs with or without else, while and do-while loops
//! bounded by a counter, conditional breaks and continues, and loop-carried variables permuted
//! at the end of every iteration, which makes header phis read each other in swaps and
//! rotations. A seed gives the same program on every machine.

use crate::ir::{
    BlockId, Builder, Cursor, FuncId, InstKind, Mode, Scalar, Shader, Stage, Type, ValType, Value,
    Variable,
};
use crate::ops::AluOp;
use crate::rng::Rng;

/// How many variables random programs carry.
const VARS: usize = 4;

const U32: ValType = ValType::scalar(32);

/// A loop being generated: where its exits and continues go and the values they carry.
struct Loop {
    merge: BlockId,
    cont: BlockId,
    breaks: Vec<(BlockId, Vec<Value>)>,
    continues: Vec<(BlockId, Vec<Value>)>,
}

/// A random structured program over [`VARS`] 32-bit variables (an SSA value each at any point):
/// assignments, if with or without else, while and do-while loops (bounded by a counter) with
/// conditional breaks and continues from inside, and the loop-carried variables permuted at the
/// end of every iteration, which makes header phis read each other in swaps and rotations.
struct Generator<'s> {
    b: Builder<'s>,
    rng: Rng,
    depth: usize,
    statements: usize,
}

impl Generator<'_> {
    fn statements(&mut self, env: &mut [Value], mut lp: Option<&mut Loop>) {
        for _ in 0..1 + self.rng.below(3) {
            if self.statements == 0 {
                return;
            }
            self.statements -= 1;
            let nested = self.depth < 3;
            match self.rng.below(10) {
                0..=2 if nested => self.if_else(env, lp.as_deref_mut()),
                3 | 4 if nested => self.loop_statement(env),
                5 | 6 if lp.is_some() => self.exit(env, lp.as_deref_mut().unwrap()),
                _ => self.assign(env),
            }
        }
    }

    fn operand(&mut self, env: &[Value]) -> Value {
        if self.rng.below(3) == 0 {
            let c = self.rng.pick(&[0, 1, 3, 31, 0xff, 0x8000_0000]);
            self.b.imm_u32(c)
        } else {
            env[self.rng.below(VARS)]
        }
    }

    fn assign(&mut self, env: &mut [Value]) {
        let x = env[self.rng.below(VARS)];
        let y = self.operand(env);
        let op = self.rng.pick(&[
            AluOp::Iadd,
            AluOp::Isub,
            AluOp::Imul,
            AluOp::Ixor,
            AluOp::Ior,
            AluOp::Ishl,
            AluOp::Ushr,
            AluOp::Umin,
            AluOp::Umax,
        ]);
        env[self.rng.below(VARS)] = self.b.alu(op, &[x, y]);
    }

    fn condition(&mut self, env: &[Value]) -> Value {
        let x = env[self.rng.below(VARS)];
        let y = self.operand(env);
        let op = self
            .rng
            .pick(&[AluOp::Ult, AluOp::Ilt, AluOp::Ieq, AluOp::Ine]);
        self.b.alu(op, &[x, y])
    }

    /// The variables where control flow from `preds` meets at the cursor's block: a phi for
    /// each variable the predecessors disagree on.
    fn join(&mut self, preds: &[(BlockId, Vec<Value>)]) -> Vec<Value> {
        (0..VARS)
            .map(|i| {
                let first = preds[0].1[i];
                if preds.iter().all(|(_, env)| env[i] == first) {
                    first
                } else {
                    let srcs = preds.iter().map(|(b, env)| (*b, env[i])).collect();
                    self.b.phi(U32, srcs)
                }
            })
            .collect()
    }

    fn if_else(&mut self, env: &mut [Value], mut lp: Option<&mut Loop>) {
        let cond = self.condition(env);
        let header = self.b.cursor.block;
        let mut nif = self.b.push_if(cond);
        self.depth += 1;
        let mut then_env = env.to_vec();
        self.statements(&mut then_env, lp.as_deref_mut());
        let mut arms = vec![(self.b.cursor.block, then_env)];
        if self.rng.below(2) == 0 {
            self.b.push_else(&mut nif);
            let mut else_env = env.to_vec();
            self.statements(&mut else_env, lp);
            arms.push((self.b.cursor.block, else_env));
        } else {
            arms.push((header, env.to_vec()));
        }
        self.depth -= 1;
        self.b.pop_if(nif);
        env.copy_from_slice(&self.join(&arms));
    }

    fn loop_statement(&mut self, env: &mut [Value]) {
        let trips = self.rng.below(4) as u32;
        let trips = self.b.imm_u32(trips);
        let zero = self.b.imm_u32(0);
        let one = self.b.imm_u32(1);
        let pre = self.b.cursor.block;
        let lp = self.b.push_loop();
        let body = self.b.cursor.block;
        // The header and the continue block get instructions, then their terminators again.
        for block in [lp.header, lp.cont] {
            self.b.function_mut().cfg[block].terminator = None;
        }
        self.b.cursor = Cursor::at_end(lp.header);
        let counter = self.b.phi(U32, vec![(pre, zero)]);
        let carried: Vec<Value> = env
            .iter()
            .map(|&x| self.b.phi(U32, vec![(pre, x)]))
            .collect();
        let mut exits = Loop {
            merge: lp.merge,
            cont: lp.cont,
            breaks: Vec::new(),
            continues: Vec::new(),
        };
        let do_while = self.rng.below(2) == 0;
        if do_while {
            self.b.function_mut().set_jump(lp.header, body);
        } else {
            let more = self.b.alu(AluOp::Ult, &[counter, trips]);
            let f = self.b.function_mut();
            f.set_branch(lp.header, more, body, lp.merge);
            exits.breaks.push((lp.header, carried.clone()));
        }

        self.b.cursor = Cursor::at_end(body);
        let mut body_env = carried.clone();
        self.depth += 1;
        self.statements(&mut body_env, Some(&mut exits));
        self.depth -= 1;
        let end = self.b.cursor.block;
        self.b.function_mut().set_jump(end, lp.cont);
        exits.continues.push((end, body_env));

        self.b.cursor = Cursor::at_end(lp.cont);
        let mut next_env = self.join(&exits.continues);
        let next = self.b.alu(AluOp::Iadd, &[counter, one]);
        for i in (1..VARS).rev() {
            next_env.swap(i, self.rng.below(i + 1));
        }
        if do_while {
            let again = self.b.alu(AluOp::Ult, &[next, trips]);
            let f = self.b.function_mut();
            f.set_branch(lp.cont, again, lp.header, lp.merge);
            exits.breaks.push((lp.cont, next_env.clone()));
        } else {
            self.b.function_mut().set_jump(lp.cont, lp.header);
        }
        let f = self.b.function_mut();
        for (phi, src) in carried.into_iter().zip(next_env).chain([(counter, next)]) {
            if let InstKind::Phi(srcs) = &mut f.inst_mut(phi).kind {
                srcs.push((lp.cont, src));
            }
        }

        self.b.cursor = Cursor::at_end(lp.merge);
        env.copy_from_slice(&self.join(&exits.breaks));
    }

    /// A conditional break or continue: a branch from a block that is no header.
    fn exit(&mut self, env: &[Value], lp: &mut Loop) {
        let cond = self.condition(env);
        let here = self.b.cursor.block;
        let f = self.b.function_mut();
        let next = f.add_block();
        let (target, carried) = if self.rng.below(2) == 0 {
            (lp.merge, &mut lp.breaks)
        } else {
            (lp.cont, &mut lp.continues)
        };
        if self.rng.below(2) == 0 {
            f.set_branch(here, cond, target, next);
        } else {
            f.set_branch(here, cond, next, target);
        }
        carried.push((here, env.to_vec()));
        self.b.cursor = Cursor::at_end(next);
    }
}

/// A random program: reads `v`, runs `statements` statements (counting those nested in ifs and
/// loops), writes the variables to `o`.
pub fn random_program(seed: u64, statements: usize) -> Shader {
    let mut shader = Shader::new(Stage::Vertex);
    let [input, output] = [("v", Mode::ShaderIn), ("o", Mode::ShaderOut)].map(|(name, mode)| {
        let mut var = Variable::new(name, mode, Type::Vector(Scalar::U32, 4));
        var.location = Some(0);
        shader.add_variable(var)
    });
    let mut b = Builder::new(&mut shader, FuncId(0));
    let deref = b.deref_var(input);
    let v = b.load_deref(deref);
    let mut env: Vec<Value> = (0..VARS as u8).map(|c| b.channel(v, c)).collect();
    let mut generator = Generator {
        b,
        rng: Rng::new(seed),
        depth: 0,
        statements,
    };
    while generator.statements > 0 {
        generator.statements(&mut env, None);
    }
    let mut b = generator.b;
    let result = b.vec(&env);
    let out = b.deref_var(output);
    b.store_deref_all(out, result);
    b.ret(None);
    shader
}

/// Runs the engine's simplifying passes over `shader` to a fixed point (constant folding,
/// dead-cf, copy propagation, phi simplification, cse, dce): copy propagation makes phis read
/// other phis and values live on across copies, and folding with dead-cf removes edges, so the
/// program's phis and parallel copies take more shapes.
pub fn simplify(shader: &mut Shader) -> Result<(), String> {
    use crate::passes::{self, manager};
    let registry = manager::Registry::new(
        passes::standard(&crate::rewrite::TargetOptions::default()),
        "none",
    );
    let pipeline = manager::Pipeline::parse(
        "(constant-fold,dead-cf,copy-prop,phi-simplify,cse,dce)*",
        &registry,
    )
    .map_err(|e| e.to_string())?;
    manager::run(
        &pipeline,
        &registry,
        shader,
        &manager::RunOptions::default(),
    )
    .map(drop)
    .map_err(|e| e.to_string())
}
