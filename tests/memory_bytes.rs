//! `Filter::memory_bytes` against the heap memory a filter really takes: a counting global
//! allocator measures what each constructor allocates, and the two agree but for a few hundred
//! bytes of bookkeeping (the boxes of a growing filter's generation or levels), for small
//! tables, where parts of fixed size weigh most (the striped counts were once left out: 3,072
//! bytes beside a table of 2,648), and larger ones. It also tracks the peak, to check what
//! `GrowableQf`'s doc says a doubling holds at once, and can refuse large allocations, to see a
//! doubling fail for want of memory.
//!
//! One test function only: the allocator counts every thread's allocations, so no other test
//! may run beside it in this binary.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use conqf::{
    AtomicBloomFilter, CountingQf, Error, ExpandableQf, ExternallyLockedQf, Filter,
    LinearProbingQf, LocallyLockedQf, LockFreeCuckooFilter, LockedCuckooFilter, SequentialQf,
    TwoBitQf,
};

/// The system allocator, counting the bytes live.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
/// The most bytes live at once since the last reset (`LIVE` stored into it).
static PEAK: AtomicUsize = AtomicUsize::new(0);
/// If not 0, allocations of more bytes than this fail (return null), as when memory runs out.
static REFUSE_OVER: AtomicUsize = AtomicUsize::new(0);

/// Whether an allocation of `size` bytes is refused now.
fn refused(size: usize) -> bool {
    let limit = REFUSE_OVER.load(Ordering::SeqCst);
    limit != 0 && size > limit
}

/// Counts `bytes` more live bytes.
fn allocated(bytes: usize) {
    let live = LIVE.fetch_add(bytes, Ordering::SeqCst) + bytes;
    PEAK.fetch_max(live, Ordering::SeqCst);
}

// SAFETY: every call is forwarded to `System` unchanged; the counter only observes it.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if refused(layout.size()) {
            return std::ptr::null_mut();
        }
        // SAFETY: the caller's contract for `alloc` is passed on as it is.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            allocated(layout.size());
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if refused(layout.size()) {
            return std::ptr::null_mut();
        }
        // SAFETY: as for `alloc`.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            allocated(layout.size());
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as for `alloc`.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::SeqCst);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // A growing `Vec` (a stream read in chunks) asks here.
        if refused(new_size) {
            return std::ptr::null_mut();
        }
        // SAFETY: as for `alloc`.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            LIVE.fetch_sub(layout.size(), Ordering::SeqCst);
            allocated(new_size);
        }
        new
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Checks that `make` allocates what the filter it returns reports as its `memory_bytes`:
/// exactly, but for the boxes of a growing filter's generation and levels (a few hundred bytes).
macro_rules! check {
    ($name:expr, $make:expr) => {{
        let before = LIVE.load(Ordering::SeqCst);
        let filter = $make;
        let allocated = LIVE.load(Ordering::SeqCst) - before;
        let reported = filter.memory_bytes();
        drop(filter);
        let name = $name;
        println!("{name}: allocated {allocated}, reported {reported}");
        assert!(
            allocated.abs_diff(reported) <= 256,
            "{name}: allocated {allocated} bytes, memory_bytes() says {reported}"
        );
    }};
}

/// Calls the macro `$each` with every filter type that has `new(capacity, fpr)`, `to_bytes` and
/// `from_bytes`.
macro_rules! with_every_filter_type {
    ($each:ident) => {
        $each!(
            SequentialQf,
            LocallyLockedQf,
            ExternallyLockedQf,
            TwoBitQf,
            CountingQf,
            LinearProbingQf,
            AtomicBloomFilter,
            LockFreeCuckooFilter,
            LockedCuckooFilter,
            ExpandableQf
        )
    };
}

#[test]
fn memory_bytes_is_what_the_constructors_allocate() {
    for c in [1000usize, 100_000] {
        macro_rules! check_new {
            ($($filter:ident),*) => {
                $(check!(format!("{} ({c})", stringify!($filter)), $filter::new(c, 0.01).unwrap());)*
            };
        }
        with_every_filter_type!(check_new);
        check!(
            format!("GrowableQf ({c})"),
            LocallyLockedQf::growable(c, 0.01).build().unwrap()
        );
    }
    doublings_hold_both_tables_at_their_peak();
    a_refused_table_is_out_of_memory();
    a_failed_doubling_is_tried_again_after_clear();
}

/// A table the allocator refuses is `Error::OutOfMemory` with the bytes asked for (more than
/// the limit, no more than the whole filter takes), from the constructor and from `from_bytes`
/// of the same filter's valid bytes (not `Corrupt`, not `InvalidParameters`, not an abort);
/// `read_from` of those bytes reports the file's length.
fn a_refused_table_is_out_of_memory() {
    macro_rules! refused {
        ($($filter:ident),*) => {$({
            let name = stringify!($filter);
            #[allow(unused_mut)] // `to_bytes` takes `&mut self` in the filters with locks
            let mut filter = $filter::new(100_000, 0.01).unwrap();
            let (whole, bytes) = (filter.memory_bytes(), filter.to_bytes());
            REFUSE_OVER.store(4096, Ordering::SeqCst);
            let made = $filter::new(100_000, 0.01).map(drop);
            let read = $filter::from_bytes(&bytes).map(drop);
            let streamed = $filter::read_from(&bytes[..]).map(drop);
            REFUSE_OVER.store(0, Ordering::SeqCst);
            // A stream is read in chunks larger than the limit: the error names the file's
            // length, what the reader set out to hold.
            match streamed {
                Err(Error::OutOfMemory(asked)) if asked == bytes.len() => {}
                other => panic!("{name}::read_from under a 4 KiB limit: {other:?}"),
            }
            for (how, result) in [("new", made), ("from_bytes", read)] {
                match result {
                    Err(Error::OutOfMemory(asked)) if asked > 4096 && asked <= whole => {}
                    other => panic!("{name}::{how} under a 4 KiB limit: {other:?} ({whole} bytes)"),
                }
            }
        })*};
    }
    with_every_filter_type!(refused);
}

/// A doubling that cannot allocate its table stops the filter growing (`doublings_possible()`
/// 0, `Full` at the current table's cap); `clear` lets it try again, as a new filter of its
/// shape would.
fn a_failed_doubling_is_tried_again_after_clear() {
    let mut filter = LocallyLockedQf::growable(1000, 0.01).build().unwrap();
    let possible = filter.doublings_possible();
    assert!(possible > 0);
    // The first doubling's table takes more than 4 KiB (the assertions below see it refused),
    // the inserts' own allocations less.
    REFUSE_OVER.store(4096, Ordering::SeqCst);
    let stored = (0..1u64 << 20)
        .take_while(|k| filter.insert(k).is_ok())
        .count();
    REFUSE_OVER.store(0, Ordering::SeqCst);
    assert_eq!((filter.doublings(), filter.doublings_possible()), (0, 0));
    filter.clear();
    assert_eq!(filter.doublings_possible(), possible);
    let again = (0..1u64 << 20)
        .take_while(|k| filter.insert(k).is_ok())
        .count();
    assert!(again > stored, "{again} keys after clear, {stored} before");
    assert_eq!(filter.doublings(), possible);
}

/// What `GrowableQf`'s doc says of a doubling: the old table stays while the new one fills, so
/// the heap peaks at `memory_bytes` before the doubling plus after it, no more (a migration
/// that copied through a third table, or kept every older one, would pass it) and no less (one
/// that freed the old table before allocating the new could not have migrated from it); and the
/// old table is freed once no reader holds it.
fn doublings_hold_both_tables_at_their_peak() {
    // Bookkeeping beside the tables: the reclaimer's bags and the like, a few KB.
    let slack = 64 << 10;
    let base = LIVE.load(Ordering::SeqCst);
    let filter = LocallyLockedQf::growable(100_000, 0.01)
        .max_doublings(3)
        .build()
        .unwrap();
    let mut key = 0u64;
    while filter.doublings() < 3 {
        let doublings = filter.doublings();
        let before = filter.memory_bytes();
        // The table the last doubling replaced goes once the reclaimer's epoch moves on, which
        // queries (each pins it) let it do; then only the current table is live.
        let freed = (0..1_000_000u64).any(|probe| {
            filter.contains(&probe);
            LIVE.load(Ordering::SeqCst) - base <= before + slack
        });
        assert!(freed, "a replaced table outlived a million queries");
        PEAK.store(LIVE.load(Ordering::SeqCst), Ordering::SeqCst);
        // One thread migrates the whole table in the insert that starts the doubling, and
        // `doublings()` counts it once the new table has replaced the old one.
        while filter.doublings() == doublings {
            filter.insert(&key).unwrap();
            key += 1;
        }
        let after = filter.memory_bytes();
        let peak = PEAK.load(Ordering::SeqCst) - base;
        println!(
            "doubling {}: {before} -> {after} bytes, peak {peak}",
            doublings + 1
        );
        assert!(
            peak + slack >= before + after && peak <= before + after + slack,
            "doubling {}: peak {peak}, tables {before} and {after}",
            doublings + 1
        );
    }
}
