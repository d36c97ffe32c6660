//! Helpers shared by the integration tests: hashes with chosen fingerprints and an exact model.
#![allow(dead_code)]

use std::collections::BTreeSet;

use conqf::Fingerprint;
use proptest::prelude::*;

/// A hash whose top `q + r` bits are `(quotient, remainder)`; `noise` fills the bits below.
pub(crate) fn hash_of(quotient: u64, remainder: u64, q: u32, r: u32, noise: u64) -> u64 {
    let fingerprint = (quotient << r) | remainder;
    let low = 64 - q - r;
    let noise = if low == 0 {
        0
    } else {
        noise & ((1u64 << low) - 1)
    };
    if q + r == 64 {
        fingerprint
    } else {
        (fingerprint << low) | noise
    }
}

/// One operation of a model-checked sequence.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Op {
    Insert(u64),
    Remove(u64),
    Contains(u64),
}

/// Operations on hashes from a small fingerprint space: `quotients` canonical slots (drawn from
/// the top end too, to reach the overflow tail) and `remainders` values, so runs and clusters
/// get long, collide and overflow.
pub(crate) fn ops(
    q: u32,
    r: u32,
    quotients: u64,
    remainders: u64,
    len: usize,
) -> impl Strategy<Value = Vec<Op>> {
    let slots = 1u64 << q;
    let quotient = prop_oneof![
        0..quotients.min(slots),
        (slots - quotients.min(slots))..slots
    ];
    let hash = (quotient, 0..remainders.min(1 << r), any::<u64>())
        .prop_map(move |(qu, re, noise)| hash_of(qu, re, q, r, noise));
    let op = prop_oneof![
        4 => hash.clone().prop_map(Op::Insert),
        2 => hash.clone().prop_map(Op::Remove),
        2 => hash.prop_map(Op::Contains),
    ];
    proptest::collection::vec(op, 1..len)
}

/// The exact model: the set of stored fingerprints.
#[derive(Default, Debug, Clone)]
pub(crate) struct Model {
    pub(crate) set: BTreeSet<Fingerprint>,
}

impl Model {
    pub(crate) fn fingerprint(hash: u64, q: u32, r: u32) -> Fingerprint {
        Fingerprint::split(hash, q, r)
    }
}
