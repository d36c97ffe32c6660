//! Fingerprint keys: a fingerprint as one number, `quotient << r | remainder`, i.e. the top
//! `q + r` bits of the hash. Sorting keys sorts fingerprints by `(quotient, remainder)`, and a
//! key does not change when bits move between quotient and remainder, so merging and growing
//! (paper 000 §2.1, paper 004 §IV-E) work on keys without re-splitting them.

use crate::qf::table::QfTable;
use crate::sync::Ordering;

use super::par;

/// The sorted, distinct fingerprint keys of `hashes` for fingerprints of `fingerprint_bits`
/// (`2..=64`) bits: hash, sort, deduplicate (paper 004 §IV-C's preprocessing).
pub(crate) fn sorted_keys(hashes: &[u64], fingerprint_bits: u32) -> Vec<u64> {
    debug_assert!((2..=64).contains(&fingerprint_bits));
    let shift = 64 - fingerprint_bits;
    let mut keys: Vec<u64> = hashes.iter().map(|&hash| hash >> shift).collect();
    par::sort(&mut keys);
    keys.dedup();
    keys
}

/// The keys a table stores, in increasing order (the extraction step of paper 004 §IV-E).
pub(crate) fn table_keys(table: &QfTable, order: Ordering) -> Vec<u64> {
    let r = table.remainder_bits;
    table
        .fingerprints(order)
        .map(|f| (f.quotient << r) | f.remainder)
        .collect()
}

/// The union of two increasing sequences, each value once.
pub(crate) fn merge_sorted(a: &[u64], b: &[u64]) -> Vec<u64> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        let next = a[i].min(b[j]);
        out.push(next);
        i += (a[i] == next) as usize;
        j += (b[j] == next) as usize;
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_keeps_each_value_once_in_order() {
        assert_eq!(
            merge_sorted(&[1, 3, 5, 9], &[2, 3, 9, 10, 11]),
            vec![1, 2, 3, 5, 9, 10, 11]
        );
        assert_eq!(merge_sorted(&[], &[4]), vec![4]);
    }

    #[test]
    fn keys_are_the_top_bits_sorted_and_distinct() {
        let hashes = [u64::MAX, 0, 1 << 63, (1 << 63) | 1, 5 << 60];
        assert_eq!(sorted_keys(&hashes, 4), vec![0, 5, 8, 15]);
    }
}
