//! The one check every fuzz target runs (`fuzz/fuzz_targets/*.rs`) and `tests/fuzz_corpus.rs`
//! replays over the committed corpus (`fuzz/corpus/<target>/`) in every `cargo test`, and the
//! seeds that corpus is generated from. It depends on the public API only, so the fuzz crate
//! includes this file by path.
//!
//! The check: any bytes given to a decoder give `Ok` or `Err(Error::Corrupt)` (never a panic,
//! never another error for these small inputs); bytes it accepts make a filter whose queries
//! run, whose invariants hold, and which writes back exactly the bytes it was read from.
#![allow(dead_code)]

use conqf::{
    AtomicBloomFilter, Count, CountingQf, CountingQfRef, Error, ExpandableQf, ExternallyLockedQf,
    Filter, GrowableQf, LinearProbingQf, LocallyLockedQf, LockFreeCuckooFilter, LockedCuckooFilter,
    SequentialQf, SequentialQfRef, TwoBitQf,
};

/// One fuzz target per format (variant tag family).
pub(crate) const TARGETS: [&str; 8] = [
    "qf3",
    "two_bit",
    "counting",
    "linear_probing",
    "bloom",
    "cuckoo",
    "growable",
    "expandable",
];

/// Hashes to query an accepted filter with, derived from the input.
fn probes(bytes: &[u8]) -> impl Iterator<Item = u64> + '_ {
    bytes
        .chunks(8)
        .take(16)
        .map(|c| {
            c.iter().fold(0x9E37_79B9_7F4A_7C15u64, |h, &b| {
                (h ^ b as u64).wrapping_mul(0x100_0000_01B3)
            })
        })
        .chain([0, u64::MAX, 1 << 63])
}

/// `Ok` decoded or `Corrupt`; anything else is a bug.
fn accepted<T>(what: &str, result: Result<T, Error>) -> Option<T> {
    match result {
        Ok(filter) => Some(filter),
        Err(Error::Corrupt(_)) => None,
        Err(other) => panic!("{what}: {other:?}"),
    }
}

/// Whether the file's variant tag is `tag` (the readers of a family share files).
fn tag_is(bytes: &[u8], tag: u16) -> bool {
    bytes.len() >= 12 && u16::from_le_bytes([bytes[10], bytes[11]]) == tag
}

/// Feeds `bytes` to every decoder of `target`'s format and checks what they accept.
pub(crate) fn check(target: &str, bytes: &[u8]) {
    match target {
        "qf3" => {
            let sequential = accepted("SequentialQf", SequentialQf::from_bytes(bytes));
            let view = accepted("SequentialQfRef", SequentialQfRef::from_bytes(bytes));
            let locally = accepted("LocallyLockedQf", LocallyLockedQf::from_bytes(bytes));
            let external = accepted("ExternallyLockedQf", ExternallyLockedQf::from_bytes(bytes));
            assert_eq!(sequential.is_some(), view.is_some());
            assert_eq!(sequential.is_some(), locally.is_some());
            assert_eq!(sequential.is_some(), external.is_some());
            if let (Some(s), Some(v), Some(mut l), Some(e)) = (sequential, view, locally, external)
            {
                s.check_invariants().unwrap();
                l.check_invariants().unwrap();
                e.check_invariants().unwrap();
                for h in probes(bytes) {
                    let answer = s.contains_hash(h);
                    assert_eq!(v.contains_hash(h), answer);
                    assert_eq!(l.contains_hash(h), answer);
                    assert_eq!(e.contains_hash(h), answer);
                }
                let regions = tag_is(bytes, 2) || tag_is(bytes, 12);
                let written = if regions {
                    e.to_bytes()
                } else {
                    let written = s.to_bytes();
                    assert_eq!(l.to_bytes(), written);
                    written
                };
                if written[10..12] == bytes[10..12] {
                    assert_eq!(written, bytes);
                } else {
                    // A grown table's file from before tags 11 and 12 stored no slot count:
                    // read with every lane of its groups as a slot, it is written back with
                    // that count, and that file reads back as itself.
                    assert!(tag_is(bytes, 1) || tag_is(bytes, 2));
                    assert!(tag_is(&written, 11) || tag_is(&written, 12));
                    let again = if regions {
                        ExternallyLockedQf::from_bytes(&written).unwrap().to_bytes()
                    } else {
                        SequentialQf::from_bytes(&written).unwrap().to_bytes()
                    };
                    assert_eq!(again, written);
                }
            }
        }
        "two_bit" => {
            if let Some(mut f) = accepted("TwoBitQf", TwoBitQf::from_bytes(bytes)) {
                f.check_invariants().unwrap();
                probes(bytes).for_each(|h| {
                    std::hint::black_box(f.contains_hash(h));
                });
                assert_eq!(f.to_bytes(), bytes);
            }
        }
        "counting" => {
            let owned = accepted("CountingQf", CountingQf::from_bytes(bytes));
            let view = accepted("CountingQfRef", CountingQfRef::from_bytes(bytes));
            assert_eq!(owned.is_some(), view.is_some());
            if let (Some(f), Some(v)) = (owned, view) {
                f.check_invariants().unwrap();
                assert_eq!((v.len(), v.distinct()), (f.len(), f.distinct()));
                for h in probes(bytes) {
                    assert_eq!(v.count_hash(h), f.count_hash(h));
                }
                assert_eq!(f.to_bytes(), bytes);
            }
        }
        "linear_probing" => {
            if let Some(f) = accepted("LinearProbingQf", LinearProbingQf::from_bytes(bytes)) {
                probes(bytes).for_each(|h| {
                    std::hint::black_box(f.contains_hash(h));
                });
                assert_eq!(f.to_bytes(), bytes);
            }
        }
        "bloom" => {
            if let Some(f) = accepted("AtomicBloomFilter", AtomicBloomFilter::from_bytes(bytes)) {
                probes(bytes).for_each(|h| {
                    std::hint::black_box(f.contains_hash(h));
                });
                assert_eq!(f.to_bytes(), bytes);
            }
        }
        "cuckoo" => {
            let lock_free = accepted(
                "LockFreeCuckooFilter",
                LockFreeCuckooFilter::from_bytes(bytes),
            );
            let locked = accepted("LockedCuckooFilter", LockedCuckooFilter::from_bytes(bytes));
            assert_eq!(lock_free.is_some(), locked.is_some());
            if let (Some(mut a), Some(b)) = (lock_free, locked) {
                a.check_invariants().unwrap();
                for h in probes(bytes) {
                    assert_eq!(a.contains_hash(h), b.contains_hash(h));
                }
                assert_eq!(a.to_bytes(), bytes);
                assert_eq!(b.to_bytes(), bytes);
            }
        }
        "growable" => {
            if let Some(mut f) = accepted("GrowableQf", GrowableQf::from_bytes(bytes)) {
                f.check_invariants().unwrap();
                probes(bytes).for_each(|h| {
                    std::hint::black_box(f.contains_hash(h));
                });
                assert_eq!(f.to_bytes(), bytes);
            }
        }
        "expandable" => {
            if let Some(mut f) = accepted("ExpandableQf", ExpandableQf::from_bytes(bytes)) {
                f.check_invariants().unwrap();
                probes(bytes).for_each(|h| {
                    std::hint::black_box(f.contains_hash(h));
                });
                assert_eq!(f.to_bytes(), bytes);
            }
        }
        other => panic!("unknown fuzz target {other}"),
    }
    // The streaming reader agrees with the slice reader on what is corrupt. It consumes one
    // filter and leaves whatever follows in the stream, so the two are compared on exactly the
    // bytes it consumed; the slice reader rejects anything after the filter.
    if target == "qf3" {
        let mut stream = bytes;
        let streamed = SequentialQf::read_from(&mut stream);
        let consumed = bytes.len() - stream.len();
        assert_eq!(
            streamed.is_ok(),
            SequentialQf::from_bytes(&bytes[..consumed]).is_ok()
        );
        if streamed.is_ok() && !stream.is_empty() {
            assert!(SequentialQf::from_bytes(bytes).is_err());
        }
    }
}

/// A small valid file of `target`'s format.
fn valid(target: &str) -> Vec<Vec<u8>> {
    let keys = 0..40u64;
    match target {
        "qf3" => {
            let mut s = SequentialQf::with_bits(5, 6).unwrap();
            keys.clone().for_each(|k| drop(s.insert(&k)));
            let e = ExternallyLockedQf::with_bits_and_region(4, 5, 8).unwrap();
            (0..10u64).for_each(|k| drop(e.insert(&k)));
            let mut grown = SequentialQf::with_bits(3, 9).unwrap();
            (0..5u64).for_each(|k| drop(grown.insert(&k)));
            grown.grow().unwrap();
            // A grown table stores its slot count, with lock regions too (`Qf3RegionsGrown`).
            let grown_regions =
                ExternallyLockedQf::from_sequential_with_region(grown.clone(), 8).unwrap();
            vec![
                s.to_bytes(),
                e.to_bytes(),
                grown.to_bytes(),
                grown_regions.to_bytes(),
            ]
        }
        "two_bit" => {
            let mut f = TwoBitQf::with_bits(5, 5).unwrap();
            keys.clone().for_each(|k| drop(f.insert(&k)));
            vec![f.to_bytes(), TwoBitQf::with_bits(2, 3).unwrap().to_bytes()]
        }
        "counting" => {
            let f = CountingQf::with_bits(5, 4).unwrap();
            for k in keys.clone() {
                f.insert_count(&k, k % 4 + 1).unwrap();
            }
            f.insert_count(&"many", 1 << 40).unwrap();
            vec![
                f.to_bytes(),
                CountingQf::with_bits(2, 2).unwrap().to_bytes(),
            ]
        }
        "linear_probing" => {
            let f = LinearProbingQf::with_bits(5, 7).unwrap();
            keys.clone().for_each(|k| drop(f.insert(&k)));
            vec![f.to_bytes()]
        }
        "bloom" => {
            let f = AtomicBloomFilter::with_memory(32, 3).unwrap();
            keys.clone().for_each(|k| drop(f.insert(&k)));
            vec![f.to_bytes()]
        }
        "cuckoo" => {
            let mut f = LockFreeCuckooFilter::with_bits(3, 8).unwrap();
            (0..20u64).for_each(|k| drop(f.insert(&k)));
            vec![f.to_bytes()]
        }
        "growable" => {
            let mut f = LocallyLockedQf::growable(1, 0.5)
                .max_doublings(3)
                .build_with_bits(2, 8)
                .unwrap();
            (0..6u64).for_each(|k| drop(f.insert(&k)));
            vec![f.to_bytes()]
        }
        "expandable" => {
            let mut f = ExpandableQf::builder(1, 0.5)
                .cascading(true)
                .build()
                .unwrap();
            (0..5u64).for_each(|k| drop(f.insert(&k)));
            vec![f.to_bytes()]
        }
        other => panic!("unknown fuzz target {other}"),
    }
}

/// Rewrites the checksum trailer, as a hostile writer would.
fn rechecksum(bytes: &mut [u8]) {
    if bytes.len() >= 32 {
        let end = bytes.len() - 8;
        let sum = xxhash_rust::xxh3::xxh3_64(&bytes[8..end]);
        bytes[end..].copy_from_slice(&sum.to_le_bytes());
    }
}

/// The seed corpus of `target`: its valid files, and corrupt variants of them (truncated,
/// one bit flipped with the checksum fixed in the header, the parameters and the table, a
/// wrong tag), named by what they are.
pub(crate) fn seeds(target: &str) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for (i, file) in valid(target).into_iter().enumerate() {
        out.push((format!("valid-{i}"), file.clone()));
        out.push((format!("truncated-{i}"), file[..file.len() / 2].to_vec()));
        for (name, at) in [("version", 8), ("tag", 10), ("param", 24), ("table", 48)] {
            if at < file.len() - 8 {
                let mut flipped = file.clone();
                flipped[at] ^= 1;
                rechecksum(&mut flipped);
                out.push((format!("flip-{name}-{i}"), flipped));
            }
        }
        let mut last = file.clone();
        let at = last.len() - 9;
        last[at] ^= 0x80;
        rechecksum(&mut last);
        out.push((format!("flip-last-word-{i}"), last));
    }
    out
}
