//! The few data-parallel primitives the batch algorithms of paper 004 need, on rayon's pool with
//! the `parallel` feature and as plain loops without it (and under loom, whose atomics only
//! loom's own threads may touch). The algorithms are written against these
//! so they read the same either way (and a GPU backend could follow them kernel by kernel).

/// Below this many items a parallel step costs more in scheduling than it saves.
pub(crate) const MIN_PARALLEL: usize = 1 << 14;

/// Splits `0..len` into about one chunk per thread (never smaller than `min` items) and maps
/// each chunk; the results come back in chunk order.
pub(crate) fn map_chunks<R: Send>(
    len: usize,
    min: usize,
    map: impl Fn(std::ops::Range<usize>) -> R + Sync,
) -> Vec<R> {
    let chunk = chunk_len(len, min);
    let ranges = (0..len.div_ceil(chunk)).map(|c| c * chunk..((c + 1) * chunk).min(len));
    #[cfg(all(feature = "parallel", not(loom)))]
    {
        use rayon::prelude::*;
        let ranges: Vec<_> = ranges.collect();
        ranges.into_par_iter().map(&map).collect()
    }
    #[cfg(not(all(feature = "parallel", not(loom))))]
    ranges.map(map).collect()
}

/// Maps every element of `items`, keeping the order: for a few heavy items (such as one range
/// per thread), so it is parallel from two items on.
pub(crate) fn map<T: Sync, R: Send>(items: &[T], map: impl Fn(&T) -> R + Sync + Send) -> Vec<R> {
    #[cfg(all(feature = "parallel", not(loom)))]
    if items.len() > 1 {
        use rayon::prelude::*;
        return items.par_iter().map(map).collect();
    }
    items.iter().map(map).collect()
}

/// Runs `each` on every element, in parallel where it pays.
pub(crate) fn for_each<T: Send>(items: Vec<T>, each: impl Fn(T) + Sync + Send) {
    #[cfg(all(feature = "parallel", not(loom)))]
    if items.len() > 1 {
        use rayon::prelude::*;
        items.into_par_iter().for_each(each);
        return;
    }
    items.into_iter().for_each(each);
}

/// Runs `each` on consecutive chunks of `chunk` elements of `items` (the last may be shorter).
pub(crate) fn for_each_chunk_mut<T: Send>(
    items: &mut [T],
    chunk: usize,
    each: impl Fn(&mut [T]) + Sync + Send,
) {
    #[cfg(all(feature = "parallel", not(loom)))]
    if items.len() >= MIN_PARALLEL {
        use rayon::prelude::*;
        items.par_chunks_mut(chunk).for_each(each);
        return;
    }
    items.chunks_mut(chunk).for_each(each);
}

/// Maps every element of `items` to an optional result, keeping the order.
pub(crate) fn filter_map<T: Sync, R: Send>(
    items: &[T],
    map: impl Fn(&T) -> Option<R> + Sync + Send,
) -> Vec<R> {
    #[cfg(all(feature = "parallel", not(loom)))]
    if items.len() >= MIN_PARALLEL / 4 {
        use rayon::prelude::*;
        return items.par_iter().filter_map(map).collect();
    }
    items.iter().filter_map(map).collect()
}

/// The chunk length that splits `len` items into one chunk per thread, at least `min` long.
pub(crate) fn chunk_len(len: usize, min: usize) -> usize {
    len.div_ceil(threads()).max(min).max(1)
}

/// The number of worker threads the parallel steps use.
pub(crate) fn threads() -> usize {
    #[cfg(all(feature = "parallel", not(loom)))]
    return rayon::current_num_threads();
    #[cfg(not(all(feature = "parallel", not(loom))))]
    1
}
