//! Tests of the packed-slot storage: layouts, cursors, rewriters and shifts against slot-by-slot
//! models.

use super::*;
use crate::filter::Error;
use crate::hash::low_mask;
use crate::sync::Ordering;
use proptest::prelude::*;

#[test]
fn neighbour_line_prefetches_do_not_panic_near_either_end() {
    // Arrays of one group up to a few lines, at every slot: the prefetches name addresses
    // past either end there, which must neither be indexed (a panic) nor overflow.
    for (bits, slots) in [(13, 1), (13, 4), (13, 33), (13, 200), (64, 9), (3, 1000)] {
        let array = SlotArray::new(bits, slots).unwrap();
        for index in 0..slots {
            array.prefetch_neighbour_lines(index);
        }
    }
}

#[test]
fn a_prefetching_cursor_reads_what_a_plain_cursor_reads() {
    for (bits, slots) in [(13, 1), (13, 4), (13, 33), (13, 200), (64, 9), (3, 1000)] {
        let mut array = SlotArray::new(bits, slots).unwrap();
        let mask = low_mask(bits);
        for index in 0..slots {
            array.set_exclusive(
                index,
                (index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) & mask,
            );
        }
        for index in 0..slots {
            let plain = array.cursor(index, Ordering::Relaxed);
            let prefetching = Cursor::over_prefetching(&array, index, Ordering::Relaxed);
            assert_eq!(
                (prefetching.index(), prefetching.group(), prefetching.slot()),
                (plain.index(), plain.group(), plain.slot()),
                "bits {bits}, slot {index} of {slots}"
            );
        }
    }
}

#[test]
fn the_lane_of_a_bit_matches_division_for_every_width() {
    for bits in 1..=64 {
        let layout = SlotLayout::new(bits);
        for bit in 0..64 {
            assert_eq!(
                layout.lane_of_bit(bit),
                bit / bits,
                "bit {bit} of {bits}-bit lanes"
            );
        }
    }
}

/// [`with_fixed_width!`] views exactly the widths it lists through [`FixedWidth`], and
/// always at the array's own width (a wrong arm would also trip the debug assertion in
/// `FixedWidth::layout`).
#[test]
fn with_fixed_width_views_the_listed_widths_at_their_own_width() {
    for bits in 1..=64 {
        let array = SlotArray::new(bits, 100).unwrap();
        let source = &array;
        let (layout, fixed) = with_fixed_width!(source => (
            *GroupSource::layout(&source),
            std::any::type_name_of_val(&source).contains("FixedWidth"),
        ));
        assert_eq!(layout, *array.layout(), "width {bits}");
        assert_eq!(fixed, (10..=21).contains(&bits), "width {bits}");
    }
}

#[test]
fn locate_matches_division_for_every_width() {
    for bits in 1..=64 {
        let layout = SlotLayout::new(bits);
        let d = layout.per_group() as usize;
        for index in (0..5000).chain([MAX_SLOTS - 1, MAX_SLOTS - 2, (1 << 40) + 12345]) {
            assert_eq!(
                layout.locate(index),
                (index / d, (index % d) as u32),
                "bits {bits}"
            );
        }
    }
}

proptest! {
    /// `LaneFields::equal` flags exactly the lanes whose field equals the value, whatever
    /// the bits below the field and the unused bits above the lanes, for every slot width
    /// and field position.
    #[test]
    fn lane_fields_flag_exactly_the_equal_lanes(
        bits in 1u32..=64,
        shift_seed in any::<u32>(),
        word in any::<u64>(),
        value_seed in any::<u64>(),
        copy_into in any::<u64>(),
    ) {
        let layout = SlotLayout::new(bits);
        let field_shift = shift_seed % bits;
        let fields = LaneFields::new(&layout, field_shift);
        let value = value_seed & low_mask(bits - field_shift);
        // Plant the value (over whatever low bits the lane had) in some lanes.
        let mut word = word;
        for lane in 0..layout.per_group() {
            if copy_into >> lane & 1 == 1 {
                let low = layout.get(word, lane) & low_mask(field_shift);
                word = layout.set(word, lane, (value << field_shift) | low);
            }
        }
        let flags = fields.equal(word, fields.pattern(value, field_shift));
        for lane in 0..layout.per_group() {
            let equal = layout.get(word, lane) >> field_shift == value;
            let flag = layout.place(lane, 1 << (bits - 1));
            prop_assert_eq!(flags & flag != 0, equal, "lane {}", lane);
        }
        prop_assert_eq!(flags & !fields.flags(), 0);
    }

    /// `lanes` (a multiplication) is the pattern placed in every lane one by one, and
    /// `lane_lsb` is `lanes(1)`, for every width.
    #[test]
    fn lanes_copies_the_pattern_into_every_lane(bits in 1u32..=64, seed in any::<u64>()) {
        let layout = SlotLayout::new(bits);
        let pattern = seed & layout.slot_mask();
        let one_by_one = (0..layout.per_group()).fold(0, |word, lane| word | layout.place(lane, pattern));
        prop_assert_eq!(layout.lanes(pattern), one_by_one);
        prop_assert_eq!(layout.lane_lsb, (0..layout.per_group()).fold(0, |word, lane| word | layout.place(lane, 1)));
    }

    #[test]
    fn locate_is_exact_on_random_indices(bits in 1u32..=64, index in 0usize..MAX_SLOTS) {
        let layout = SlotLayout::new(bits);
        let d = layout.per_group() as usize;
        prop_assert_eq!(layout.locate(index), (index / d, (index % d) as u32));
    }

    #[test]
    fn groups_inside_hold_only_slots_of_the_range(
        bits in 1u32..=64, len in 1usize..300, a in 0usize..320, b in 0usize..320,
    ) {
        let layout = SlotLayout::new(bits);
        let slots = a.min(b)..a.max(b);
        let inside = layout.groups_inside(slots.clone(), len);
        for group in 0..layout.groups_for(len) {
            let first = group * layout.per_group() as usize;
            let group_slots = first..(first + layout.per_group() as usize).min(len);
            let all_in = group_slots.clone().all(|slot| slots.contains(&slot));
            prop_assert_eq!(inside.contains(&group), all_in, "group {} of {:?}", group, group_slots);
        }
    }

    #[test]
    fn set_then_get_round_trips_and_leaves_neighbours(
        bits in 1u32..=64, word: u64, offset_seed: u32, value: u64,
    ) {
        let layout = SlotLayout::new(bits);
        let offset = offset_seed % layout.per_group();
        let value = value & layout.slot_mask();
        let new = layout.set(word, offset, value);
        prop_assert_eq!(layout.get(new, offset), value);
        for other in (0..layout.per_group()).filter(|&o| o != offset) {
            prop_assert_eq!(layout.get(new, other), layout.get(word, other));
        }
        let used = layout.range_mask(0, layout.per_group());
        prop_assert_eq!(new & !used, word & !used);
    }
}

#[test]
fn cursor_walks_across_groups_both_ways() {
    let mut array = SlotArray::new(13, 50).unwrap();
    for i in 0..50 {
        array.set_exclusive(i, i as u64 * 3);
    }
    let mut cursor = array.cursor(0, Ordering::Relaxed);
    for i in 0..50 {
        assert_eq!((cursor.index(), cursor.slot()), (i, i as u64 * 3));
        assert_eq!(cursor.advance(), i < 49);
    }
    // Back a group at a time, onto the last slot of the group before.
    let per_group = array.layout().per_group() as usize;
    let mut last = 49;
    while cursor.enter_previous_group() {
        last = last / per_group * per_group - 1;
        assert_eq!((cursor.index(), cursor.slot()), (last, last as u64 * 3));
    }
    assert_eq!((cursor.group(), last), (0, per_group - 1));
}

proptest! {
    #[test]
    fn le_words_walk_like_the_array_they_were_written_from(
        bits in 1u32..=64, slots in 1usize..200, seed: u64,
    ) {
        let mut array = SlotArray::new(bits, slots).unwrap();
        let mask = SlotLayout::new(bits).slot_mask();
        for i in 0..slots {
            let value = seed.rotate_left(i as u32).wrapping_mul(0x9e37_79b9_7f4a_7c15) & mask;
            array.set_exclusive(i, value);
        }
        let groups = array.layout().groups_for(slots);
        let bytes: Vec<u8> = (0..groups)
            .flat_map(|g| array.load_group(g, Ordering::Relaxed).to_le_bytes())
            .collect();
        prop_assert!(LeWords::new(&bytes[1..], bits, slots).is_none());
        prop_assert!(LeWords::new(&bytes, bits, 0).is_none());
        let words = LeWords::new(&bytes, bits, slots).unwrap();
        prop_assert_eq!(words.group_count(), groups);
        let mut from_bytes = Cursor::over(&words, 0, Ordering::Relaxed);
        let mut from_array = array.cursor(0, Ordering::Relaxed);
        loop {
            prop_assert_eq!(from_bytes.index(), from_array.index());
            prop_assert_eq!(from_bytes.slot(), from_array.slot());
            let moved = from_bytes.advance();
            prop_assert_eq!(moved, from_array.advance());
            if !moved {
                break;
            }
        }
        prop_assert_eq!(from_bytes.index(), slots - 1);
    }
}

#[test]
fn bounded_cursor_stays_in_its_group() {
    let array = SlotArray::new(16, 12).unwrap();
    let word = 0x0004_0003_0002_0001;
    let mut cursor = array.cursor_in_group(5, word);
    assert_eq!(cursor.slot(), 2);
    assert!(cursor.advance() && cursor.advance());
    assert_eq!(cursor.slot(), 4);
    assert!(!cursor.advance());
    assert!(!cursor.enter_previous_group() && !cursor.enter_next_group());
    assert_eq!((cursor.index(), cursor.slot()), (7, 4));
}

#[test]
fn rewriter_writes_each_slot_and_keeps_the_kept_bits() {
    let mut array = SlotArray::new(5, 40).unwrap();
    for i in 0..40 {
        array.set_exclusive(i, (i as u64 % 2) | 0b10100);
    }
    let mut rewriter = Rewriter::new(&array, Exclusive, 0b00001);
    for i in 9..31 {
        rewriter.put(i, 0b11110);
    }
    rewriter.finish();
    for i in 0..40 {
        let expect = if (9..31).contains(&i) {
            0b11110
        } else {
            0b10100
        } | (i as u64 % 2);
        assert_eq!(array.get(i, Ordering::Relaxed), expect, "slot {i}");
    }
}

#[test]
fn update_slot_changes_one_lane_or_gives_up() {
    let array = SlotArray::new(16, 8).unwrap();
    assert!(array.update_slot(5, |now| (now == 0).then_some(7)));
    assert!(!array.update_slot(5, |now| (now == 0).then_some(9)));
    assert_eq!(array.get(5, Ordering::Relaxed), 7);
    assert_eq!(array.get(4, Ordering::Relaxed), 0);
    assert_eq!(array.get(6, Ordering::Relaxed), 0);
}

#[test]
fn guarded_rewrites_keep_other_lanes_as_they_are_at_commit_time() {
    let array = SlotArray::new(16, 8).unwrap();
    let mut rewriter = Rewriter::new(&array, Guarded, 0b1);
    rewriter.put(1, 0b1110);
    // Another thread changes a lane of the same group before the commit.
    assert!(array.update_slot(3, |_| Some(0x55)));
    rewriter.put(4, 0b1010);
    rewriter.finish();
    assert_eq!(array.get(1, Ordering::Relaxed), 0b1110);
    assert_eq!(array.get(3, Ordering::Relaxed), 0x55);
    assert_eq!(array.get(4, Ordering::Relaxed), 0b1010);
}

#[test]
fn bad_sizes_are_errors() {
    assert!(matches!(
        SlotArray::new(0, 10),
        Err(Error::InvalidParameters(_))
    ));
    assert!(matches!(
        SlotArray::new(65, 10),
        Err(Error::InvalidParameters(_))
    ));
    assert!(matches!(
        SlotArray::new(8, 0),
        Err(Error::InvalidParameters(_))
    ));
    assert!(matches!(
        SlotArray::new(8, MAX_SLOTS + 1),
        Err(Error::InvalidParameters(_))
    ));
}

#[test]
fn a_cursor_jumps_to_the_lane_of_the_nth_set_bit() {
    let array = SlotArray::new(13, 8).unwrap();
    let mut cursor = Cursor::over(&array, 5, Ordering::Relaxed);
    // Bits in lanes 0, 1 and 3 of group 1 (slots 4-7), one at a lane's top bit.
    let bits = 1 | 1 << 25 | 1 << 39;
    for (n, slot) in [(1, 4), (2, 5), (3, 7)] {
        cursor.jump_to_nth_bit(bits, n);
        assert_eq!(cursor.index(), slot, "bit {n}");
    }
}

/// A 13-bit array of `groups` groups, every group holding its own index.
fn recorded_array(groups: usize) -> SlotArray {
    let array = SlotArray::new(13, groups * 4).unwrap();
    for group in 0..groups {
        array.store_group(group, group as u64, Ordering::Relaxed);
    }
    array
}

#[test]
fn a_recorder_confirms_unchanged_groups_apart_from_the_ignored_bits() {
    let array = recorded_array(4);
    let recorder = Recorder::new(&array);
    let mut cursor = Cursor::over(&recorder, 5, Ordering::Relaxed);
    assert!(cursor.enter_next_group());
    assert!(recorder.unchanged(0, 0, Ordering::Relaxed));
    // A change outside the recorded groups does not matter; inside, only in ignored bits.
    array.store_group(3, 99, Ordering::Relaxed);
    assert!(recorder.unchanged(0, 0, Ordering::Relaxed));
    array.store_group(2, 2 | 0b100, Ordering::Relaxed);
    assert!(!recorder.unchanged(1, 0b100, Ordering::Relaxed));
    assert!(recorder.unchanged(2, 0b100, Ordering::Relaxed));
}

#[test]
fn a_recorder_refuses_a_walk_over_more_groups_than_it_remembers() {
    let groups = Recorder::GROUPS + 1;
    let array = recorded_array(groups);
    let recorder = Recorder::new(&array);
    let mut cursor = Cursor::over(&recorder, 0, Ordering::Relaxed);
    for _ in 1..Recorder::GROUPS {
        assert!(cursor.enter_next_group());
    }
    assert!(recorder.unchanged(usize::MAX, 0, Ordering::Relaxed));
    assert!(cursor.enter_next_group());
    assert!(!recorder.unchanged(usize::MAX, 0, Ordering::Relaxed));
}

#[test]
fn a_recorder_confirms_a_walk_that_stayed_in_one_group() {
    let array = recorded_array(4);
    let recorder = Recorder::new(&array);
    // Slot 5 lies in group 1; the cursor loads that group only.
    let _cursor = Cursor::over(&recorder, 5, Ordering::Relaxed);
    assert!(recorder.unchanged(usize::MAX, 0, Ordering::Relaxed));
    // A change in ignored bits of the one group still confirms; any other change does not.
    array.store_group(1, 1 | 0b100, Ordering::Relaxed);
    assert!(recorder.unchanged(1, 0b100, Ordering::Relaxed));
    assert!(!recorder.unchanged(usize::MAX, 0, Ordering::Relaxed));
}
