use super::*;

fn lighting() -> Candidate {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/lighting.shrew");
    let text = std::fs::read_to_string(path).expect("the example exists");
    let shader = shrew_engine::text::parse(&text, path).expect("the example parses");
    Candidate {
        name: "lighting".into(),
        shader,
        piglit_test: None,
    }
}

fn evaluator(target: &str, objective: &str) -> Evaluator {
    let target = shrew_targets::lookup(target).unwrap();
    let objective = Objective::parse(objective).unwrap();
    let (evaluator, left_out) = Evaluator::new(target, objective, true, vec![lighting()]).unwrap();
    assert!(left_out.is_empty(), "{left_out:?}");
    assert_eq!(evaluator.shaders[0].check, Check::RandomInputs);
    evaluator
}

#[test]
fn objectives_are_weighted_sums_of_statistics() {
    let objective = Objective::parse("instructions + 4*spills").unwrap();
    assert_eq!(objective.to_string(), "instructions+4*spills");
    let figures = [("instructions", 10), ("spills", 2), ("cycles", 99)];
    assert_eq!(objective.cost(&figures), Ok(18.0));
    let missing = Objective::parse("alu_groups")
        .unwrap()
        .cost(&figures)
        .unwrap_err();
    assert!(missing.contains("no statistic `alu_groups`"), "{missing}");
    for bad in ["", "x*cycles", "-1*cycles", "2*"] {
        assert!(Objective::parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn compile_time_is_an_objective_of_its_own() {
    let evaluator = evaluator("gen9", "instructions+0.001*compile_us");
    assert!(evaluator.objective.uses(COMPILE_TIME));
    let scores = evaluator.score(&[0], &["none".to_string()]);
    assert!(scores[0].is_some(), "{scores:?}");
    let record = &evaluator.records(0)[0];
    match &record.outcome {
        Outcome::Cost { figures, .. } => {
            assert!(
                figures.iter().any(|&(n, us)| n == COMPILE_TIME && us > 0),
                "{figures:?}"
            )
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_space_renders_pipelines_between_its_prefix_and_suffix() {
    let mut space = Space::of(shrew_targets::lookup("gen9").unwrap());
    let [dce, cse] = ["dce", "cse"].map(|n| space.passes.iter().position(|p| p == n).unwrap());
    assert_eq!(space.render(&[]), "none");
    let genes = [Gene::Pass(dce), Gene::Group(vec![cse, dce])];
    assert_eq!(space.render(&genes), "dce,(cse,dce)*");
    assert_eq!(space.genes("dce,(cse,dce)*"), Some(genes.to_vec()));
    assert_eq!(space.genes("dce,nonsense"), None);
    // The default pipeline is in the space: the evolutionary search starts from it.
    let registry = shrew_targets::lookup("gen9").unwrap().registry();
    assert_eq!(space.render(&space.start), registry.default_pipeline());
    space.prefix = "vars-to-ssa".into();
    space.suffix = "dce".into();
    assert_eq!(space.render(&genes), "vars-to-ssa,dce,(cse,dce)*,dce");
}

#[test]
fn the_default_pipeline_scores_one_and_every_evaluation_is_logged_once() {
    let evaluator = evaluator("gen9", "instructions");
    let pipelines = vec![DEFAULT.to_string(), "none".into(), DEFAULT.into()];
    let scores = evaluator.score(&[0], &pipelines);
    assert_eq!(scores[0], Some(1.0));
    assert_eq!(scores[0], scores[2]);
    // Unoptimized, the kernel is larger.
    assert!(scores[1].unwrap() > 1.0, "{scores:?}");
    let records = evaluator.records(0);
    let logged: Vec<&str> = records.iter().map(|r| r.pipeline.as_str()).collect();
    assert_eq!(
        logged,
        ["none"],
        "the default is evaluated when the evaluator is made"
    );
    assert_eq!(records[0].json()["status"], "ok");
}

#[test]
fn a_search_with_a_fixed_seed_finds_the_same_pipeline_twice() {
    let space = Space {
        max_length: 4,
        ..Space::of(shrew_targets::lookup("evergreen").unwrap())
    };
    let budget = Budget {
        evaluations: 20,
        seconds: None,
    };
    for strategy in ["random", "greedy", "beam:2", "evolution:6"] {
        let strategy = Strategy::parse(strategy).unwrap();
        let run = || {
            let evaluator = evaluator("evergreen", "alu_groups");
            let found = per_shader(&evaluator, &[0], &space, &strategy, budget, 7);
            let log: Vec<String> = evaluator
                .records(0)
                .iter()
                .map(|r| r.pipeline.clone())
                .collect();
            (found, log)
        };
        let (first, first_log) = run();
        let (second, second_log) = run();
        assert_eq!(first, second, "{strategy}");
        assert_eq!(first_log, second_log, "{strategy}");
        let found = &first[0].1;
        assert!(
            found.evaluated <= 20 && found.score <= 1.0,
            "{strategy}: {found:?}"
        );
        // The curve only goes down.
        assert!(found.curve.windows(2).all(|w| w[1].1 < w[0].1), "{found:?}");
    }
}

#[test]
fn splits_depend_on_the_names_and_the_seed_only() {
    let names: Vec<String> = (0..200).map(|i| format!("shader{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let (train, test) = split(&refs, 0.25, 1);
    assert_eq!(train.len() + test.len(), 200);
    assert!((30..70).contains(&test.len()), "{}", test.len());
    assert_eq!(split(&refs, 0.25, 1), (train.clone(), test.clone()));
    // A shader more leaves the others where they were.
    let (_, more_test) = split(&[&refs[..], &["another"]].concat(), 0.25, 1);
    assert!(test.iter().all(|i| more_test.contains(i)));
    assert_ne!(split(&refs, 0.25, 2).1, test);
}

/// A shader indexing an array out of bounds has an undefined result: random inputs cannot judge
/// its kernels (the interpreter reads zero where a target reads a neighbour), so the search
/// leaves it unchecked rather than reporting every pipeline that keeps the access as a bug.
#[test]
fn random_inputs_do_not_judge_a_shader_with_undefined_results() {
    const OUT_OF_BOUNDS: &str = "shader fragment
var shader_out f32x4 @color (location=0)
var function_temp f32x4 @v

entry fn main() {
b0:
    32 %0 = deref_var @v
    32x4 %1 = load_const (1.0, 2.0, 3.0, 4.0)
    store_deref %0, %1 (write_mask=xyzw)
    32 %2 = load_const (0x7fffffff)
    32 %3 = deref_array %0[%2]
    32 %4 = load_deref %3
    32x4 %5 = vec4 %4, %4, %4, %4
    32 %6 = deref_var @color
    store_deref %6, %5 (write_mask=xyzw)
    return
}
";
    let shader = shrew_engine::text::parse(OUT_OF_BOUNDS, "out of bounds").unwrap();
    let target = shrew_targets::lookup("gen9").unwrap();
    let candidate = Candidate {
        name: "out-of-bounds".into(),
        shader,
        piglit_test: None,
    };
    let objective = Objective::parse("instructions").unwrap();
    let (evaluator, _) = Evaluator::new(target, objective, true, vec![candidate]).unwrap();
    assert_eq!(evaluator.shaders[0].check, Check::Unchecked);
}
