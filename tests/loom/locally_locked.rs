//! Loom models of `LocallyLockedQf` (to be written).
