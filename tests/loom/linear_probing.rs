//! Loom models of `LinearProbingQf` (to be written).
