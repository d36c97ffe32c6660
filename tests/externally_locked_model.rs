//! `ExternallyLockedQf` from one thread against the exact model (the same proptest model as
//! `SequentialQf`), with the default regions (one region for these small tables) and with tiny
//! regions, so clusters span two and three regions and the walks extend their locks left and
//! right.

mod common;

use common::{ops, ops_at_every_width, run_model, UnderTest};
use conqf::{ExternallyLockedQf, Filter, Fingerprint, Remove};
use proptest::prelude::*;

/// `ExternallyLockedQf` with regions of `SLOTS` slots (rounded up to whole groups).
struct Regions<const SLOTS: usize>(ExternallyLockedQf);

impl<const SLOTS: usize> UnderTest for Regions<SLOTS> {
    fn with_bits(q: u32, r: u32) -> Self {
        Regions(ExternallyLockedQf::with_bits_and_region(q, r, SLOTS).unwrap())
    }
    fn insert(&mut self, hash: u64) -> Result<bool, conqf::Error> {
        Filter::insert_hash(&self.0, hash)
    }
    fn remove(&mut self, hash: u64) -> Result<bool, conqf::Error> {
        Remove::remove_hash(&self.0, hash)
    }
    fn contains(&self, hash: u64) -> bool {
        Filter::contains_hash(&self.0, hash)
    }
    fn check(&self) -> Result<(), String> {
        self.0.check_invariants()
    }
    fn len(&self) -> usize {
        Filter::len(&self.0)
    }
    fn fingerprints(&self) -> Vec<Fingerprint> {
        self.0.fingerprints().collect()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn every_slot_width_matches_the_model((r, sequence) in ops_at_every_width(5, 12, 16, 120)) {
        run_model::<ExternallyLockedQf>(5, r, &sequence)?;
    }

    #[test]
    fn dense_small_table_matches_the_model(sequence in ops(4, 3, 16, 8, 120)) {
        run_model::<ExternallyLockedQf>(4, 3, &sequence)?;
    }

    #[test]
    fn regions_of_eight_slots(sequence in ops(5, 13, 32, 16, 150)) {
        // 16-bit slots, 4 per group: regions of exactly 8 slots over a 32 + 34 slot table;
        // clusters of 10-20 elements span two and three regions.
        let (filter, _) = run_model::<Regions<8>>(5, 13, &sequence)?;
        prop_assert_eq!(filter.0.region_slots(), 8);
    }

    #[test]
    fn one_group_per_region_and_long_clusters(sequence in ops(6, 5, 6, 32, 200)) {
        // 8-bit slots, 8 per group: every group is its own region.
        let (filter, _) = run_model::<Regions<1>>(6, 5, &sequence)?;
        prop_assert_eq!(filter.0.region_slots(), 8);
    }

    #[test]
    fn regions_rounded_to_whole_groups(sequence in ops(5, 8, 12, 64, 150)) {
        // 11-bit slots, 5 per group: 8 slots round up to 2 groups, 10 slots.
        let (filter, _) = run_model::<Regions<8>>(5, 8, &sequence)?;
        prop_assert_eq!(filter.0.region_slots(), 10);
    }

    #[test]
    fn one_slot_per_group(sequence in ops(3, 40, 8, 4, 100)) {
        run_model::<Regions<2>>(3, 40, &sequence)?;
    }

    #[test]
    fn converts_to_and_from_sequential(sequence in ops(5, 6, 20, 64, 100)) {
        let (filter, model) = run_model::<Regions<4>>(5, 6, &sequence)?;
        let sequential = filter.0.into_sequential();
        sequential.check_invariants().map_err(TestCaseError::fail)?;
        prop_assert_eq!(sequential.fingerprints().collect::<Vec<_>>(),
            model.set.iter().copied().collect::<Vec<_>>());
        let back = ExternallyLockedQf::from_sequential_with_region(sequential, 4).unwrap();
        back.check_invariants().map_err(TestCaseError::fail)?;
        prop_assert_eq!(back.fingerprints().collect::<Vec<_>>(),
            model.set.iter().copied().collect::<Vec<_>>());
    }
}
