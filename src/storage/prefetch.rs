//! Cache-line prefetch hints: every prefetch of the crate goes through here.

use crate::sync::AtomicU64;

/// 64-bit words (a group each, in a [`SlotArray`](super::SlotArray)) per 64-byte cache line: how
/// far apart the prefetches of neighbouring lines are.
pub(crate) const WORDS_PER_LINE: usize = 64 / std::mem::size_of::<AtomicU64>();

/// Asks the CPU to start loading the cache line of `word`, so an access issued a little later
/// finds it there. A hint only: a no-op where there is no prefetch instruction (and under loom).
/// Every prefetch of the crate goes through this or [`prefetch_index`]: batch lookups, writers
/// that overlap a miss with taking a lock, and walks that load the canonical slot's
/// neighbouring lines.
#[inline]
pub(crate) fn prefetch_word(word: &AtomicU64) {
    prefetch_address(std::ptr::from_ref(word));
}

/// [`prefetch_word`] of `words[index]`, without a bounds check: an index past the end names
/// some other address, and a prefetch of any address is harmless (it never faults), so a hot
/// path whose index is in bounds by construction does not pay for checking it.
#[inline]
pub(crate) fn prefetch_index(words: &[AtomicU64], index: usize) {
    prefetch_address(words.as_ptr().wrapping_add(index));
}

/// The prefetch instruction itself, for any address.
#[inline(always)]
fn prefetch_address(address: *const AtomicU64) {
    #[cfg(all(target_arch = "x86_64", not(loom)))]
    {
        // SAFETY: `_mm_prefetch` never faults and reads nothing architecturally, whatever the
        // address; SSE is part of the x86_64 baseline.
        unsafe {
            core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
                address.cast::<i8>(),
            )
        };
    }
    #[cfg(not(all(target_arch = "x86_64", not(loom))))]
    let _ = address;
}
