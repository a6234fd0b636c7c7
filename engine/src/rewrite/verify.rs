//! Placeholder: replaced by the rule verifier.

use super::RuleInfo;

pub fn assert_rule(rule: &RuleInfo) {
    let _ = rule;
}
