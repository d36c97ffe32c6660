//! Concurrent approximate membership query (AMQ) filters built on quotient filters.
//!
//! An AMQ filter answers "may this key have been inserted?" in a few bits per key: never a false
//! negative, and a false positive with a small probability you choose. This crate implements the
//! concurrent quotient filters of Maier, Sanders and Williger (*Concurrent Expandable AMQs on the
//! Basis of Quotient Filters*), with the baselines their paper measures against.
//!
//! | type | concurrency | remove |
//! | --- | --- | --- |
//! | [`SequentialQf`] | one thread (`&mut self` writes); the baseline | yes |
//! | [`LocallyLockedQf`] | locks in the table's own status bits; lock-free when an operation stays in one 64-bit group | yes |
//! | [`GrowableQf`] | a `LocallyLockedQf` that doubles at 75% fill (by default), migrated by all writing threads ([`GrowableQf::new`], [`LocallyLockedQf::growable`]) | yes |
//! | [`ExpandableQf`] | levels of growable filters, unbounded at a bounded false-positive rate | yes |
//! | [`ExternallyLockedQf`] | one spin lock per region of about 4096 slots in a separate array (the paper's baseline) | yes |
//! | [`LinearProbingQf`] | lock-free, one CAS per insert | no |
//! | [`TwoBitQf`] | 2 status bits; locks in the empty slots around a supercluster; grows | yes |
//! | [`CountingQf`] | region locks for writes, optimistic reads; counts repeated keys | yes |
//! | [`AtomicBloomFilter`] | lock-free `fetch_or` | no |
//! | [`LockFreeCuckooFilter`] | lock-free cuckoo filter (paper 001): relocation counters and a two-round find | yes |
//! | [`LockedCuckooFilter`] | cuckoo filter behind striped, writer-fair reader/writer locks | yes |
//!
//! Concurrent filters implement [`Filter`] (and [`Remove`] where they can delete) with `&self`
//! methods: share one in an [`Arc`](std::sync::Arc). Keys are hashed once with xxh3
//! ([`hash_key`]), identically on every platform (but for slices of integers wider than a byte,
//! see [`hash_key`]); the `*_hash` methods take a hash you already have, e.g. one of
//! [`hash_key_with_seed`] with a secret seed where an adversary chooses the keys.
//!
//! ```
//! use conqf::{Filter, LocallyLockedQf, Remove};
//! use std::sync::Arc;
//!
//! let filter = Arc::new(LocallyLockedQf::new(1_000_000, 0.001)?); // capacity, target FPR
//! assert_eq!(filter.insert(&"apple")?, true); // stored
//! assert_eq!(filter.insert(&"apple")?, false); // that fingerprint was already there
//! assert!(filter.contains(&"apple")); // never a false negative
//! assert_eq!(filter.remove(&"apple")?, true); // one stored copy removed
//! # Ok::<(), conqf::Error>(())
//! ```
//!
//! # Errors, never panics
//!
//! Constructors validate their arguments and return [`Error::InvalidParameters`] (and
//! [`Error::OutOfMemory`] if the table cannot be allocated, never an abort); an insert into
//! a full table returns [`Error::Full`] and leaves the filter unchanged and usable. "Full" comes
//! before the last slot in the quotient filters that shift: `SequentialQf`, `LocallyLockedQf`,
//! `ExternallyLockedQf`, `TwoBitQf`, `CountingQf` (and `GrowableQf` once it cannot double) stop
//! at a load cap of 31/32 of their slots (tables of `2^10` slots or more), before the last few
//! percent where their operations slow down most ([`Filter::capacity`]); `LinearProbingQf`
//! stops at its own cap, 70% by default.
//!
//! # Consistency
//!
//! What a concurrent filter guarantees while threads race, for a key `k` (more precisely, for
//! `k`'s fingerprint):
//!
//! * **No false negatives.** Once `insert(k)` has returned `Ok`, every `contains(k)` that starts
//!   after it (after in the sense of Rust's memory model: the inserting thread's return happens
//!   before the query's start, e.g. through a join, a channel, a mutex or any Release/Acquire
//!   pair) returns `true`, until `k` is removed. Concurrent inserts, removes of other keys, and
//!   the shifting of runs they cause never hide `k`: a query answers `false` only from what it
//!   read consistently: one atomically loaded 64-bit group, a cluster it locked, or a
//!   read that a version check confirmed ([`CountingQf`]'s blocks, [`ExpandableQf`]'s sealed
//!   lower levels, a [`LocallyLockedQf`] or [`TwoBitQf`] walk that no locked shift of its
//!   region overlapped).
//! * **Misread hits while runs shift.** A [`LocallyLockedQf`] or [`TwoBitQf`] query (and so a
//!   [`GrowableQf`] or [`ExpandableQf`] one) first walks without locks and keeps a hit at once, so
//!   a successful query writes nothing. A walk that overlaps a shift through its cluster (by a
//!   writer of that cluster or of one further left in the same supercluster; for `TwoBitQf`, which
//!   walks from the supercluster's start, by any locked writer of the supercluster) may take a
//!   stale copy of a neighbouring run's element for its own and answer `true` for a key that is not
//!   stored: never inserted, or already removed. Such a `true` is a false positive, about as likely
//!   as a fingerprint collision in that run, and possible only while such a shift is in progress.
//!   `false` is never a misread. [`LocallyLockedQf::contains_locked`],
//!   [`TwoBitQf::contains_locked`], [`GrowableQf::contains_locked`] and
//!   [`ExpandableQf::contains_locked`] never misread a hit: they trust a hit only from one group, a
//!   walk under a lock, a walk that no locked shift of its region overlapped (`LocallyLockedQf`'s
//!   and `TwoBitQf`'s tables) or a lock-free read of a sealed level.
//! * **Racing with the insert or remove of `k` itself**, `contains(k)` may return either answer:
//!   the operations are linearizable per key, so the answer is the one before or the one after
//!   (apart from the misread hits above, which can also answer `true` after a remove).
//! * **Set semantics** (the quotient filters). Of several threads inserting the same
//!   fingerprint at once, exactly one gets `Ok(true)`; the others get `Ok(false)`. The
//!   exception is [`ExpandableQf`]: two racing inserts of a new key may both store it, one on
//!   each of two levels, while the next level opens or (with cascading inserts) while a removal
//!   empties the key's slot on a lower level (see its docs). A `remove` deletes one stored copy;
//!   removing a key that was never inserted but shares a fingerprint with one that was removes
//!   that one, and removing a key whose fingerprint another inserted key shares (that key's
//!   insert returned `Ok(false)`) removes it for both ([`Remove`], "Shared fingerprints").
//!   Among the set filters a bulk build without deduplication ([`Dedupe::Off`]) is the one way
//!   to hold several copies of a fingerprint: each remove then takes one copy.
//!   The others are multisets or have no copies: [`CountingQf`] counts copies (`Ok(true)` for
//!   the first, to exactly one of racing inserts of a new key), both cuckoo filters store a copy
//!   per insert (every insert that stores one returns `Ok(true)`, as in paper 001 §1.1; eight
//!   copies of one fingerprint fill its two buckets, and the ninth insert is `Full`; their
//!   [`Count::count`] never misses a copy stored throughout the call, and the lock-free one's
//!   may count twice a copy a relocation is moving meanwhile). [`Count::insert_if_absent`]
//!   is their set insert: exactly one of racing calls for a new key stores it (in
//!   `LockFreeCuckooFilter` under a lock that no other operation takes); so do racing
//!   [`CountingQf::insert_batch_if_absent`] calls, with each other and with single ones.
//!   [`AtomicBloomFilter`]'s `Ok(true)` means the insert set a bit that was clear, which two
//!   racing inserts of one new key can both do (each then counts in `len`).
//! * **Merges beside writers** ([`Merge`]) hold every fingerprint stored in an input before
//!   the merge began and not removed during it. [`ExternallyLockedQf`] and [`CountingQf`] read
//!   each input at one instant (under all its locks); [`LocallyLockedQf`] reads one cluster at a
//!   time under its read lock ([`GrowableQf`] its current table so, beside a doubling), and
//!   [`TwoBitQf`] one supercluster at a time under its left lock, so a fingerprint inserted or
//!   removed during the merge may or may not be in the result; [`AtomicBloomFilter`] ORs the
//!   two tables word by word without locks, so the same holds for keys inserted during its
//!   merge. [`LockedCuckooFilter`] reads each input under every stripe's read lock,
//!   [`LockFreeCuckooFilter`] in one pass while its relocations wait. The `&self` snapshots of
//!   [`LocallyLockedQf`], [`GrowableQf`], [`ExpandableQf`] and [`TwoBitQf`] (their `snapshot`
//!   methods) read the same way (`TwoBitQf` a supercluster at a time under its left lock), and
//!   so promise the same;
//!   so does [`LockFreeCuckooFilter::snapshot`], which copies the table in one pass while
//!   relocations wait (relocating inserts are the one kind of its inserts that can wait, and
//!   only then). A `clone` reads its filter as that filter's merge does ([`LinearProbingQf`],
//!   which does not merge, as its `write_to` does), and promises the same.
//! * **`len`, `false_positive_rate`** are statistics: with concurrent writers they may lag
//!   operations that have not returned yet. Iteration ([`LocallyLockedQf::fingerprints`]) and
//!   [`LocallyLockedQf::contains_hash_unsynchronized`] are exact only while no thread writes.
//!
//! # Persistence
//!
//! Every filter has `to_bytes`/`write_to` and `from_bytes`/`read_from` in one versioned,
//! checksummed, little-endian format that reads back identically on every platform and rejects
//! corrupt or hostile bytes with [`Error::Corrupt`]; [`SequentialQfRef`] and [`CountingQfRef`]
//! query serialised bytes in place. A concurrent filter's snapshot is documented on its
//! `write_to`; the filters whose `write_to` needs `&mut self` also have a `snapshot()` that
//! copies them beside other threads ([`LocallyLockedQf::snapshot`]).
//!
//! The filters whose copy can fail only for want of memory are `Clone`, beside other threads:
//! [`AtomicBloomFilter`] and [`LinearProbingQf`] by their `write_to` snapshot,
//! [`ExternallyLockedQf`], [`CountingQf`] and [`LockedCuckooFilter`] under every lock,
//! [`LockFreeCuckooFilter`] by its `snapshot`, and [`SequentialQf`]. Those whose `snapshot`
//! sweeps the table a cluster at a time ([`LocallyLockedQf`], [`TwoBitQf`], [`GrowableQf`],
//! [`ExpandableQf`]) are not: under heavy churn near a full table it can return `Full`.
//!
//! # Cargo features and testing
//!
//! `parallel` (on by default): the batch operations (bulk builds, batch inserts, removals and
//! lookups, merges) split their work over threads with `rayon`; without it they run on the
//! calling thread, with the same results.
//!
//! `serde`: `Serialize` and `Deserialize` for every filter, as the bytes of `to_bytes` (of
//! `snapshot()?.to_bytes()` for the filters whose exact `to_bytes` needs `&mut self`).
//!
//! The locking protocols are model-checked with [loom](https://docs.rs/loom):
//! `RUSTFLAGS="--cfg loom" cargo test --test loom`.
//!
//! # References
//!
//! The docs cite the papers by number:
//!
//! * paper 000: Maier, Sanders, Williger, *Concurrent Expandable AMQs on the Basis of Quotient
//!   Filters* (the README's "MSW");
//! * paper 001: *Lock-free Cuckoo Filter* (a course report), which builds on Fan et al.'s cuckoo
//!   filter;
//! * paper 002: a blog post on the quotient filter and a small C implementation (run and cluster
//!   search, insert shifting);
//! * paper 003: the Wikipedia article *Quotient filter* (the 3-status-bit encoding, its lookup
//!   and insert walk-throughs, merging and resizing without rehashing);
//! * paper 004: Geil, Farach-Colton, Owens, *Quotient Filters: Approximate Membership Queries on
//!   the GPU* (the README's "GFO").

#![cfg_attr(docsrs, feature(doc_cfg))]

mod batch;
mod bloom;
mod budget;
mod counter;
mod cuckoo;
mod filter;
mod hash;
mod persist;
mod qf;
mod sizing;
mod storage;
mod sync;

/// Entry points for the loom models of the batch operations (`--cfg loom` only).
#[cfg(loom)]
#[doc(hidden)]
pub use batch::loom_hooks as batch_loom;
pub use batch::{BatchInsert, BatchLookup, BuildMethod, Dedupe};
pub use bloom::AtomicBloomFilter;
/// Entry points for the loom model of the `len` counter's stripe hand-over (`--cfg loom` only).
#[cfg(loom)]
#[doc(hidden)]
pub use counter::loom_hooks as counter_loom;
pub use cuckoo::lock_free::LockFreeCuckooFilter;
pub use cuckoo::locked::LockedCuckooFilter;
pub use cuckoo::table::cuckoo_fpr;
pub use filter::{Count, Error, Filter, Merge, Remove};
pub use hash::{hash_key, hash_key_with_seed, Fingerprint};
pub use persist::counting::CountingQfRef;
pub use persist::qf::SequentialQfRef;
pub use qf::counting::{CountingQf, Counts};
pub use qf::expandable::{ExpandableBuilder, ExpandableQf};
pub use qf::externally_locked::ExternallyLockedQf;
/// Entry points for the loom model of one migration block racing older operations (`--cfg loom`
/// only).
#[cfg(loom)]
#[doc(hidden)]
pub use qf::growing::loom_hooks as migration_loom;
/// Modelled epoch grace periods for the loom models of the growing filters (`--cfg loom` only).
#[cfg(loom)]
#[doc(hidden)]
pub use qf::growing::{model_grace_periods, GracePeriods};
pub use qf::growing::{GrowableBuilder, GrowableQf};
pub use qf::linear_probing::{LinearProbingBuilder, LinearProbingQf};
pub use qf::locally_locked::LocallyLockedQf;
pub use qf::scan::Fingerprints;
pub use qf::sequential::SequentialQf;
pub use qf::two_bit::TwoBitQf;
pub use sizing::{linear_probing_fpr, nonzero_qf_fpr, qf_fpr, MAX_QUOTIENT_BITS};
/// Whether the loom models read table words as read-modify-writes (`CONQF_LOOM_RMW_LOADS`;
/// `--cfg loom` only).
#[cfg(loom)]
#[doc(hidden)]
pub use sync::loom_loads_as_rmw;

/// The README's code blocks, compiled and run as doctests so the quick start cannot rot.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
