//! AMD R600–Cayman backend: VLIW packing, clauses, register allocation, assembly and emulator arrive with the R600 issue.
