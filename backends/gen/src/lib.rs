//! Intel Gen7–Gen9 backend: lowering, SIMD-width splitting, register allocation, assembly and emulator arrive with the Gen issue.
