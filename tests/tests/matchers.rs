//! Every rule of the library and of the backends' sets fires on an instance of its own search: the generated dispatchers'
//! shared checks and the rule functions accept it in every operand order of its commutative
//! ops (see `shrew_engine::rewrite::instance`).

use shrew_engine::rewrite::instance::check_matches;

#[test]
fn every_library_rule_matches_its_own_search_in_every_operand_order() {
    let mut failures = Vec::new();
    let (mut rules, mut instances) = (0, 0);
    for set in shrew_targets::pipeline::all_rule_sets() {
        for group in set.groups {
            // Equalities have no greedy matcher: the e-graph tests run them.
            for (index, rule) in group.rules.iter().enumerate() {
                if rule.egraph_only {
                    continue;
                }
                rules += 1;
                match check_matches(group, index) {
                    Ok(tried) => instances += tried,
                    Err(why) => {
                        failures.push(format!("{} ({}): {why}", rule.text, rule.location()))
                    }
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {rules} rules do not match their own search:\n{}",
        failures.len(),
        failures.join("\n")
    );
    eprintln!("{rules} rules matched {instances} instances");
}
