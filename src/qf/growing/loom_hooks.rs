//! Entry points for the loom model of one migration block (paper 000 §3.2, "Growing
//! concurrently") racing inserts and removals that started before the migration, in
//! `tests/loom/growing.rs` (compiled only with `--cfg loom`, hidden from the docs).
//!
//! A `GrowableQf` model needs a thread per operation that started before the migration (each
//! of its operations checks for a migration first), and three such threads did not finish in
//! ten minutes. Here the migration is run directly on a `LocallyLockedQf`, and the operations
//! it races are its own `*_or_migrating` calls, which never check: one model thread can run a
//! sequence of them, as several threads that each started before the migration would.

use crate::filter::Full;
use crate::hash::Fingerprint;
use crate::qf::locally_locked::{LocallyLockedQf, Migrating};
use crate::qf::sequential::refine;
use crate::qf::table::QfTable;
use crate::sync::Ordering;

/// A `LocallyLockedQf` and the doubled table one migration block copies it into.
pub struct BlockMigration {
    old: LocallyLockedQf,
    target: QfTable,
}

impl BlockMigration {
    /// Prepares the migration of `old` (the whole table as one block) into a zeroed doubled
    /// table.
    ///
    /// # Panics
    /// If `old` cannot double (one remainder bit left).
    pub fn new(old: LocallyLockedQf) -> Self {
        let target = old.table.doubled().expect("the model's table can double");
        Self { old, target }
    }

    /// Inserts into the old table as an insert that started before the migration: `None` if it
    /// met a migration lock and changed nothing.
    ///
    /// # Panics
    /// If the old table is full.
    pub fn insert(&self, hash: u64) -> Option<bool> {
        match self.old.insert_or_migrating(hash) {
            Ok(Ok(inserted)) => Some(inserted),
            Ok(Err(Full)) => panic!("the model's table is full"),
            Err(Migrating) => None,
        }
    }

    /// Removes from the old table as a removal that started before the migration: `None` if it
    /// met a migration lock and changed nothing.
    pub fn remove(&self, hash: u64) -> Option<bool> {
        self.old.remove_or_migrating(hash).ok()
    }

    /// Runs the migration of every old slot as one block. Returns how many fingerprints it
    /// copied.
    pub fn migrate(&self) -> usize {
        let slots = self.old.table.slots.len();
        super::migration::migrate_block(&self.old, &self.target, 0, slots, &mut Vec::new())
    }

    /// Checks, once every thread is joined, that the doubled table is valid and holds exactly
    /// the fingerprints of `hashes` (the keys the old table held when the migration froze it).
    pub fn check_copy(&self, hashes: &[u64]) -> Result<(), String> {
        let (old_r, new_r) = (self.old.table.remainder_bits, self.target.remainder_bits);
        let mut expected: Vec<Fingerprint> = hashes
            .iter()
            .map(|&hash| {
                let (quotient, remainder) = self.old.table.fingerprint(hash);
                let quotient = quotient as u64;
                refine(
                    Fingerprint {
                        quotient,
                        remainder,
                    },
                    old_r,
                    new_r,
                )
            })
            .collect();
        expected.sort_unstable();
        self.target.check(expected.len())?;
        // Acquire, as any reader after the join: the join already ordered the writes.
        let copied: Vec<Fingerprint> = self.target.fingerprints(Ordering::Acquire).collect();
        if copied != expected {
            return Err(format!("copied {copied:?}, expected {expected:?}"));
        }
        Ok(())
    }
}
