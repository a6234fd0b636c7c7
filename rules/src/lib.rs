//! Algebraic rule sets. The rule DSL and the first rule sets arrive with the rules issue.
