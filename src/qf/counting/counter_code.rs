//! The counter encoding of the counting quotient filter (Pandey et al., as paper 000 §2.2
//! describes it): a remainder inserted many times is stored once, followed by a counter in the
//! next slots. Inside a run the remainders are strictly increasing, so a counter is recognised
//! because it breaks that order.
//!
//! An *entry* is the slots of one remainder `x` with count `c >= 1` (`M = 2^r` values per slot):
//!
//! | count | `x > 0` | `x = 0` |
//! | --- | --- | --- |
//! | 1 | `x` | `0` |
//! | 2 | `x x` | `0 0` |
//! | `c >= 3` | `x d.. x`: `c - 3` in base `M - 1`, digits skip the value `x`, and a leading digit `0` is added when the first one is not below `x` | `0 0 0 d.. 0`: `c - 3` in base `M - 1` with digits `1..M` (none for `c = 3`) |
//!
//! Decoding the entry that starts at a slot holding `x`:
//! * `x > 0`: the next slot of the run is below `x`: a counter, up to the next `x`; equal to
//!   `x`: count 2; above `x` or the run ends: count 1.
//! * `x = 0`: the next slot is not 0 (or the run ends): count 1; the slot after that is not 0:
//!   count 2; otherwise a counter follows, up to the next 0.
//!
//! Pandey et al. encode `x = 0` with the terminator at the end (`0 d.. 0 0`); that form is
//! ambiguous when the next entry's counter has two zero digits in a row, which the leading
//! `0 0 0` here rules out (a later entry's slots are never all three zero: it starts above 0).
//! A count of `2^64 - 1` takes at most [`MAX_ENTRY_SLOTS`] slots (`r >= 2`).

use std::num::NonZeroU64;

/// The most slots one entry takes: 4 fixed slots and 41 base-3 digits for `r = 2`.
pub(crate) const MAX_ENTRY_SLOTS: usize = 48;

/// The smallest remainder width the encoding supports (base `2^r - 1 >= 3`).
pub(crate) const MIN_REMAINDER_BITS: u32 = 2;

/// One entry's slots, most significant first.
#[derive(Clone, Copy)]
pub(crate) struct Encoded {
    slots: [u64; MAX_ENTRY_SLOTS],
    len: usize,
}

impl Encoded {
    /// The slots of the entry.
    #[inline]
    pub(crate) fn slots(&self) -> &[u64] {
        &self.slots[..self.len]
    }

    /// How many slots the entry takes.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    fn push(&mut self, value: u64) {
        self.slots[self.len] = value;
        self.len += 1;
    }
}

/// The entry of remainder `x` with count `count >= 1` for `r`-bit slots; `count = 0` is the empty
/// entry (zero slots).
pub(crate) fn encode(x: u64, count: u64, remainder_bits: u32) -> Encoded {
    let mut out = Encoded {
        slots: [0; MAX_ENTRY_SLOTS],
        len: 0,
    };
    match count {
        0 => {}
        1 => out.push(x),
        2 => {
            out.push(x);
            out.push(x);
        }
        _ => {
            let base = (1u64 << remainder_bits) - 1;
            let mut digits = [0u64; MAX_ENTRY_SLOTS];
            let mut n = 0;
            let mut value = count - 3;
            loop {
                digits[n] = value % base;
                n += 1;
                value /= base;
                if value == 0 {
                    break;
                }
            }
            out.push(x);
            if x == 0 {
                out.push(0);
                out.push(0);
                if count > 3 {
                    for &digit in digits[..n].iter().rev() {
                        out.push(digit + 1);
                    }
                }
                out.push(0);
            } else {
                let skip = |digit: u64| if digit < x { digit } else { digit + 1 };
                if skip(digits[n - 1]) > x {
                    out.push(0);
                }
                for &digit in digits[..n].iter().rev() {
                    out.push(skip(digit));
                }
                out.push(x);
            }
        }
    }
    out
}

/// How many slots the entry of `x` with count `count` takes (0 for count 0).
#[inline]
pub(crate) fn entry_len(x: u64, count: u64, remainder_bits: u32) -> usize {
    if count <= 2 {
        count as usize
    } else {
        encode(x, count, remainder_bits).len()
    }
}

/// The entry starting at slot `start` of a run ending at slot `run_end` (inclusive), reading
/// slots with `slot`: `(remainder, count, slots it takes)`. `None` if the slots are not a valid
/// entry (only possible for a table read while another thread changes it).
///
/// Counts 1 and 2, nearly every entry, are told from the first two or three slots here, inlined
/// into the walk; a counter is read by [`decode_counter`], out of line.
#[inline(always)]
pub(crate) fn decode(
    start: usize,
    run_end: usize,
    remainder_bits: u32,
    mut slot: impl FnMut(usize) -> u64,
) -> Option<(u64, u64, usize)> {
    let x = slot(start);
    if start == run_end {
        return Some((x, 1, 1));
    }
    let next = slot(start + 1);
    if x != 0 {
        if next > x {
            return Some((x, 1, 1));
        }
        if next == x {
            return Some((x, 2, 2));
        }
        counted(
            x,
            decode_counter(x, start, start + 1, run_end, remainder_bits, slot),
        )
    } else {
        if next != 0 {
            return Some((0, 1, 1));
        }
        if start + 2 > run_end || slot(start + 2) != 0 {
            return Some((0, 2, 2));
        }
        counted(
            0,
            decode_counter(0, start, start + 3, run_end, remainder_bits, slot),
        )
    }
}

/// [`decode`]'s answer for an entry of remainder `x` whose counter [`decode_counter`] read.
#[inline(always)]
fn counted(x: u64, counter: Option<(NonZeroU64, usize)>) -> Option<(u64, u64, usize)> {
    counter.map(|(count, len)| (x, count.get(), len))
}

/// The count of the entry of remainder `x` that starts at slot `start` and whose counter's
/// digits start at slot `digits` and end before the next slot holding `x` (see the module doc):
/// `(count, slots it takes)`, or `None` if the slots are not a valid entry. (Two words, returned
/// in registers: the lookup's walk around the call keeps its state out of memory.)
#[inline(never)]
fn decode_counter(
    x: u64,
    start: usize,
    digits: usize,
    run_end: usize,
    remainder_bits: u32,
    mut slot: impl FnMut(usize) -> u64,
) -> Option<(NonZeroU64, usize)> {
    let base = (1u64 << remainder_bits) - 1;
    let mut value = 0u64;
    let mut at = digits;
    loop {
        if at > run_end {
            return None;
        }
        let digit = slot(at);
        if digit == x {
            break;
        }
        // Digits skip the value `x` (for `x = 0` they run `1..M`, so every one is above it).
        let digit = if digit < x { digit } else { digit - 1 };
        value = value.checked_mul(base)?.checked_add(digit)?;
        at += 1;
    }
    Some((NonZeroU64::new(value.checked_add(3)?)?, at - start + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Encodes a run of `(remainder, count)` entries and decodes it back.
    fn round_trip(entries: &[(u64, u64)], r: u32) {
        let mut run = Vec::new();
        for &(x, c) in entries {
            run.extend_from_slice(encode(x, c, r).slots());
        }
        let mut at = 0;
        let mut decoded = Vec::new();
        while at < run.len() {
            let (x, c, len) = decode(at, run.len() - 1, r, |i| run[i]).unwrap();
            decoded.push((x, c));
            at += len;
        }
        assert_eq!(decoded, entries, "run {run:?}");
    }

    #[test]
    fn small_and_large_counts_round_trip_next_to_their_neighbours() {
        let counts = [
            1,
            2,
            3,
            4,
            5,
            6,
            7,
            8,
            9,
            10,
            100,
            1_000_000,
            u64::MAX - 1,
            u64::MAX,
        ];
        for r in [2, 3, 4, 8] {
            let top = (1u64 << r) - 1;
            for &c0 in &counts {
                for &c1 in &counts {
                    for (x, y) in [(0, 1), (0, top), (1, 2), (1, top), (top - 1, top)] {
                        round_trip(&[(x, c0), (y, c1)], r);
                    }
                }
            }
        }
    }

    #[test]
    fn zero_digits_after_a_zero_remainder_are_not_mistaken_for_its_counter() {
        // 1 with count 3 + 3*9 = 30: digits "1 0 0" in base 3, next to a zero with count 1 and 2.
        for c0 in [1, 2, 3, 4] {
            round_trip(&[(0, c0), (1, 30), (2, 30), (3, 9 + 3)], 2);
        }
    }

    #[test]
    fn a_million_copies_take_a_few_slots() {
        assert!(encode(200, 1_000_000, 8).len() <= 5);
        assert!(encode(0, 1_000_000, 8).len() <= 7);
        assert!(encode(1, u64::MAX, 2).len() <= MAX_ENTRY_SLOTS);
        assert!(encode(0, u64::MAX, 2).len() <= MAX_ENTRY_SLOTS);
    }

    /// Count 3 of remainder 0 is `0 0 0 0`, four slots and no digit (the module docs' table),
    /// the one run of four equal slots the short-run lookup knows; count 4 adds one digit, the
    /// value 1 written as 2 (digits of remainder 0 run `1..M`).
    #[test]
    fn three_copies_of_remainder_zero_take_four_slots() {
        for r in [2, 3, 8, 20] {
            assert_eq!(encode(0, 3, r).slots(), &[0, 0, 0, 0], "r = {r}");
            assert_eq!(entry_len(0, 3, r), 4, "r = {r}");
            assert_eq!(encode(0, 4, r).slots(), &[0, 0, 0, 2, 0], "r = {r}");
        }
    }
}
