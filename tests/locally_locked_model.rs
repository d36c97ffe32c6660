//! `LocallyLockedQf` from one thread against the exact model (the same proptest model as
//! `SequentialQf`): every fast path and locked path must leave the sequential table.

mod common;

use common::{ops, ops_at_every_width, run_model};
use conqf::LocallyLockedQf;
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn dense_small_table_matches_the_model(sequence in ops(4, 3, 16, 8, 120)) {
        run_model::<LocallyLockedQf>(4, 3, &sequence)?;
    }

    #[test]
    fn few_canonical_slots_make_long_clusters(sequence in ops(6, 5, 6, 32, 200)) {
        run_model::<LocallyLockedQf>(6, 5, &sequence)?;
    }

    #[test]
    fn wide_remainders_across_group_boundaries(sequence in ops(5, 20, 12, 1 << 20, 150)) {
        run_model::<LocallyLockedQf>(5, 20, &sequence)?;
    }

    #[test]
    fn one_slot_per_group(sequence in ops(3, 40, 8, 4, 100)) {
        run_model::<LocallyLockedQf>(3, 40, &sequence)?;
    }

    #[test]
    fn every_slot_width_matches_the_model((r, sequence) in ops_at_every_width(5, 12, 16, 120)) {
        run_model::<LocallyLockedQf>(5, r, &sequence)?;
    }

    #[test]
    fn widths_walked_by_compiled_walks_match_the_model(sequence in ops(5, 10, 12, 8, 200)) {
        // 13-bit slots (4 per group), a width `with_fixed_width!` compiles the walks, the lookups
        // and the one-group inserts for; 12 quotients of 32 make clusters span groups.
        run_model::<LocallyLockedQf>(5, 10, &sequence)?;
    }

    #[test]
    fn converts_to_and_from_sequential(sequence in ops(5, 6, 20, 64, 100)) {
        let (filter, model) = run_model::<LocallyLockedQf>(5, 6, &sequence)?;
        let sequential = filter.into_sequential();
        sequential.check_invariants().map_err(TestCaseError::fail)?;
        prop_assert_eq!(sequential.fingerprints().collect::<Vec<_>>(),
            model.set.iter().copied().collect::<Vec<_>>());
        let back = LocallyLockedQf::from_sequential(sequential);
        back.check_invariants().map_err(TestCaseError::fail)?;
    }
}
