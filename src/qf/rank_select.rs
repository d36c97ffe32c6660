//! Population count, rank and select on one 64-bit word: the bit tricks behind the
//! rank-and-select quotient filter's run lookup (paper 004 §III-B; paper 000 §2.2, "(Counting)
//! Quotient Filter Using Rank-and-Select"). The 3-status-bit and 2-bit walks (`walk`,
//! `two_bit::walk`) count status bits a group at a time with the same [`popcount`]: compiled for
//! the baseline x86-64 CPU, `u64::count_ones` is a dozen-instruction bit-twiddling sequence.
//!
//! `rank` is a masked population count and `select` a BMI2 `pdep` followed by `tzcnt`, when the
//! CPU has `popcnt` and BMI2; otherwise a portable bit count and a broadword byte search. The CPU
//! is asked at run time, once (so one binary runs everywhere; the answer is kept in one byte,
//! so each call costs a load and a predicted branch), and the instructions are issued with
//! inline assembly: a `#[target_feature]` function cannot be inlined into the hot paths, which
//! are compiled for the baseline CPU, and the call would cost more than the instruction. A walk
//! that issues several of them asks once, for a [`Bmi2`] proof whose methods ask no more (and
//! which also packs bits with `pext`, for the counting filter's search for an empty slot).

use crate::hash::low_mask_nonzero;

/// What the CPU has, asked of std once and kept as one byte, so that a walk using `popcnt`,
/// `pdep` and `pext` tests one cached byte (a load and a predicted branch) rather than std's
/// cache once per feature.
#[cfg(all(target_arch = "x86_64", not(miri)))]
mod cpu {
    use core::sync::atomic::{AtomicU8, Ordering};

    /// Set once the other bits are known.
    const KNOWN: u8 = 1;
    /// The CPU has `popcnt`.
    pub(super) const POPCNT: u8 = 2;
    /// The CPU has `popcnt`, BMI1 (`tzcnt`) and BMI2 (`pdep`, `pext`).
    pub(super) const BMI2: u8 = 4;

    /// `KNOWN` and the features, or 0 before the first question.
    static FEATURES: AtomicU8 = AtomicU8::new(0);

    /// Whether the CPU has every feature of `wanted` (one of the bits above). A feature bit is
    /// set only once everything is known, so the common answer is one load and one test.
    #[inline(always)]
    pub(super) fn has(wanted: u8) -> bool {
        // Relaxed: the byte is the only data, and every thread that asks stores the same value.
        let known = FEATURES.load(Ordering::Relaxed);
        known & wanted != 0 || (known & KNOWN == 0 && ask() & wanted != 0)
    }

    #[cold]
    #[inline(never)]
    fn ask() -> u8 {
        let popcnt = std::arch::is_x86_feature_detected!("popcnt");
        let bmi2 = popcnt
            && std::arch::is_x86_feature_detected!("bmi1")
            && std::arch::is_x86_feature_detected!("bmi2");
        let features = KNOWN | if popcnt { POPCNT } else { 0 } | if bmi2 { BMI2 } else { 0 };
        // Relaxed: as in `has`.
        FEATURES.store(features, Ordering::Relaxed);
        features
    }
}

/// Whether the CPU has `popcnt`.
#[cfg(all(target_arch = "x86_64", not(miri), not(target_feature = "popcnt")))]
#[inline(always)]
fn has_popcnt() -> bool {
    cpu::has(cpu::POPCNT)
}

/// The number of set bits of `word`.
#[inline(always)]
pub(crate) fn popcount(word: u64) -> u32 {
    #[cfg(all(target_arch = "x86_64", not(miri), not(target_feature = "popcnt")))]
    if has_popcnt() {
        // SAFETY: the CPU has `popcnt` (checked just above).
        return unsafe { popcnt(word) };
    }
    word.count_ones()
}

/// `word`'s set bits counted by the `popcnt` instruction.
///
/// # Safety
/// The CPU must have `popcnt`.
#[cfg(all(target_arch = "x86_64", not(miri)))]
#[inline(always)]
unsafe fn popcnt(word: u64) -> u32 {
    let count: u64;
    // SAFETY: the caller vouches for `popcnt`; the instruction only reads and writes the two
    // registers named.
    unsafe {
        std::arch::asm!(
            "popcnt {count}, {word}",
            word = in(reg) word,
            count = lateout(reg) count,
            options(pure, nomem, nostack)
        );
    }
    count as u32
}

/// The number of set bits of `word` at positions `0..=position` (`position < 64`).
#[inline(always)]
pub(crate) fn rank(word: u64, position: u32) -> u32 {
    debug_assert!(position < 64);
    popcount(word & low_mask_nonzero(position + 1))
}

/// The position of the set bit of `word` with `k` set bits below it (`k` counts from 0), or 64
/// if `word` has at most `k` set bits.
#[inline(always)]
pub(crate) fn select(word: u64, k: u32) -> u32 {
    match Bmi2::detect() {
        Some(bits) => bits.select(word, k),
        None => select_broadword(word, k),
    }
}

/// Proof that the CPU has BMI1, BMI2 and `popcnt`, asked once by [`Bmi2::detect`]: its methods
/// issue those instructions without asking again, for a walk that uses several of them.
#[derive(Clone, Copy)]
pub(crate) struct Bmi2(());

impl Bmi2 {
    /// The proof, if the CPU has the instructions (a load and a predicted branch once asked).
    #[inline(always)]
    pub(crate) fn detect() -> Option<Bmi2> {
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        if cpu::has(cpu::BMI2) {
            return Some(Bmi2(()));
        }
        None
    }

    /// [`popcount`] with `popcnt`.
    #[inline(always)]
    pub(crate) fn popcount(self, word: u64) -> u32 {
        // SAFETY: the CPU has `popcnt` (`self` proves it).
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        return unsafe { popcnt(word) };
        #[cfg(not(all(target_arch = "x86_64", not(miri))))]
        word.count_ones()
    }

    /// [`select`] with `pdep` and `tzcnt`.
    #[inline(always)]
    pub(crate) fn select(self, word: u64, k: u32) -> u32 {
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        {
            if k >= 64 {
                return 64;
            }
            // `pdep` deposits the single bit `1 << k` into the set bits of `word`, landing it on
            // the `k`-th of them (0 if there are not that many); `tzcnt` of 0 is 64.
            let position: u64;
            // SAFETY: the CPU has BMI1 and BMI2 (`self` proves it); the instructions only read
            // and write the registers named.
            unsafe {
                std::arch::asm!(
                    "pdep {position}, {bit}, {word}",
                    "tzcnt {position}, {position}",
                    bit = in(reg) 1u64 << k,
                    word = in(reg) word,
                    position = out(reg) position,
                    options(pure, nomem, nostack)
                );
            }
            position as u32
        }
        #[cfg(not(all(target_arch = "x86_64", not(miri))))]
        select_broadword(word, k)
    }

    /// The bits of `word` at the set bits of `mask`, packed in order into the low bits (`pext`).
    #[inline(always)]
    pub(crate) fn compress(self, word: u64, mask: u64) -> u64 {
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        {
            let packed: u64;
            // SAFETY: the CPU has BMI2 (`self` proves it); the instruction only reads and writes
            // the registers named.
            unsafe {
                std::arch::asm!(
                    "pext {packed}, {word}, {mask}",
                    word = in(reg) word,
                    mask = in(reg) mask,
                    packed = lateout(reg) packed,
                    options(pure, nomem, nostack)
                );
            }
            packed
        }
        // Not reached (`detect` gives no proof here), but correct all the same.
        #[cfg(not(all(target_arch = "x86_64", not(miri))))]
        compress_portable(word, mask)
    }
}

/// Portable [`Bmi2::compress`]: one step per set bit of `mask`.
#[cfg_attr(all(target_arch = "x86_64", not(miri), not(test)), allow(dead_code))]
fn compress_portable(word: u64, mut mask: u64) -> u64 {
    let (mut packed, mut bit) = (0, 1u64);
    while mask != 0 {
        if word & mask & mask.wrapping_neg() != 0 {
            packed |= bit;
        }
        bit <<= 1;
        mask &= mask - 1;
    }
    packed
}

/// Portable `select`: find the byte holding the `k`-th set bit from per-byte prefix counts, then
/// clear the lower set bits of that byte.
#[inline]
pub(crate) fn select_broadword(word: u64, k: u32) -> u32 {
    if k >= word.count_ones() {
        return 64;
    }
    const ONES: u64 = 0x0101_0101_0101_0101;
    // Per-byte popcounts (the classic SWAR steps), then prefix sums over bytes by multiplication:
    // byte i of `prefix` counts the set bits of bytes 0..=i (at most 64, so no carry across).
    let mut counts = word - ((word >> 1) & 0x5555_5555_5555_5555);
    counts = (counts & 0x3333_3333_3333_3333) + ((counts >> 2) & 0x3333_3333_3333_3333);
    counts = (counts + (counts >> 4)) & 0x0F0F_0F0F_0F0F_0F0F;
    let prefix = counts.wrapping_mul(ONES);
    let mut below = 0u32;
    let mut byte = 0u32;
    while byte < 8 {
        let through = ((prefix >> (8 * byte)) & 0xFF) as u32;
        if through > k {
            break;
        }
        below = through;
        byte += 1;
    }
    let mut bits = (word >> (8 * byte)) & 0xFF;
    for _ in below..k {
        bits &= bits - 1;
    }
    8 * byte + bits.trailing_zeros()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn select_naive(word: u64, k: u32) -> u32 {
        (0..64)
            .filter(|&i| word >> i & 1 == 1)
            .nth(k as usize)
            .unwrap_or(64)
    }

    #[test]
    fn rank_counts_up_to_and_including_the_position() {
        assert_eq!(rank(0b1011, 0), 1);
        assert_eq!(rank(0b1011, 2), 2);
        assert_eq!(rank(0b1011, 3), 3);
        assert_eq!(rank(u64::MAX, 63), 64);
        assert_eq!(rank(1 << 63, 62), 0);
        let mut word = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..1000 {
            assert_eq!(popcount(word), word.count_ones());
            if let Some(bits) = Bmi2::detect() {
                assert_eq!(bits.popcount(word), word.count_ones());
            }
            word = crate::hash::remix(word);
        }
        assert_eq!(popcount(0), 0);
        assert_eq!(popcount(u64::MAX), 64);
    }

    #[test]
    fn select_matches_the_naive_definition() {
        let mut word = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..2000 {
            for k in 0..66 {
                let want = select_naive(word, k);
                assert_eq!(select(word, k), want, "{word:#x} {k}");
                assert_eq!(select_broadword(word, k), want, "{word:#x} {k}");
            }
            word = crate::hash::remix(word) & crate::hash::remix(word ^ 1);
        }
        for k in 0..64 {
            assert_eq!(select(u64::MAX, k), k);
            assert_eq!(select_broadword(1 << 63, k), if k == 0 { 63 } else { 64 });
        }
        assert_eq!(select(0, 0), 64);
    }

    #[test]
    fn compress_packs_the_masked_bits_in_order() {
        let naive = |word: u64, mask: u64| {
            (0..64)
                .filter(|&i| mask >> i & 1 == 1)
                .enumerate()
                .fold(0u64, |packed, (k, i)| packed | (word >> i & 1) << k)
        };
        let mut word = 0x9E37_79B9_7F4A_7C15u64;
        let mut mask = 0x2545_F491_4F6C_DD1Du64;
        for _ in 0..2000 {
            assert_eq!(
                compress_portable(word, mask),
                naive(word, mask),
                "{word:#x} {mask:#x}"
            );
            if let Some(bits) = Bmi2::detect() {
                assert_eq!(
                    bits.compress(word, mask),
                    naive(word, mask),
                    "{word:#x} {mask:#x}"
                );
            }
            word = crate::hash::remix(word);
            mask = crate::hash::remix(mask) & crate::hash::remix(mask ^ 1);
        }
        assert_eq!(compress_portable(0b1010_0110, 0b1111_0010), 0b10101);
        if let Some(bits) = Bmi2::detect() {
            assert_eq!(bits.compress(0b1010_0110, 0b1111_0010), 0b10101);
        }
    }
}
