//! Optimization passes, one file each. The pass manager that runs them by name from a pipeline
//! string arrives with the mid-end issue.

pub mod algebraic;
