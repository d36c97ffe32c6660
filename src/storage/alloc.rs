//! Fallible allocation of tables: a failed allocation is an [`Error`], never an abort.

use crate::filter::Error;
use crate::sync::AtomicU64;

/// The error for `count` values of `T` that cannot be allocated.
fn cannot_allocate<T>(count: usize) -> Error {
    Error::OutOfMemory(count.saturating_mul(std::mem::size_of::<T>()))
}

/// Reserves room for exactly `count` more elements, or reports [`Error::OutOfMemory`]
/// instead of aborting when the memory cannot be had (issue 10): every table allocation whose
/// size comes from the user or from bytes read goes through here.
pub(crate) fn try_reserve<T>(vec: &mut Vec<T>, count: usize) -> Result<(), Error> {
    vec.try_reserve_exact(count)
        .map_err(|_| cannot_allocate::<T>(count))
}

/// `count` values made by `make`, in a boxed slice whose allocation failure is an error
/// rather than an abort: how every table, lock array and counter array of the crate is made.
///
/// # Errors
/// [`Error::InvalidParameters`] if the memory cannot be allocated.
pub(crate) fn try_boxed<T>(count: usize, mut make: impl FnMut() -> T) -> Result<Box<[T]>, Error> {
    let mut values = Vec::new();
    try_reserve(&mut values, count)?;
    values.extend((0..count).map(|_| make()));
    Ok(values.into_boxed_slice())
}

/// `count` atomic words, all 0, as [`try_boxed`] makes them but from memory the allocator
/// zeroed: a large table is fresh pages from the kernel, which cost nothing until first
/// touched, where writing `count` zeros touches every page at once (0.4 s for 1 GiB here).
///
/// # Errors
/// [`Error::OutOfMemory`] if the memory cannot be allocated.
#[cfg(not(loom))]
pub(crate) fn try_zeroed_words(count: usize) -> Result<Box<[AtomicU64]>, Error> {
    bytemuck::allocation::try_zeroed_slice_box(count).map_err(|()| cannot_allocate::<u64>(count))
}

/// [`try_zeroed_words`] under loom, whose atomics are not plain memory: made one by one.
#[cfg(loom)]
pub(crate) fn try_zeroed_words(count: usize) -> Result<Box<[AtomicU64]>, Error> {
    try_boxed(count, || AtomicU64::new(0))
}

/// Aborts the process as a `std` collection does when `bytes` bytes cannot be had (through
/// [`std::alloc::handle_alloc_error`]): for the copies whose signature leaves no room for an
/// error (`Clone`, and conversions documented to abort like it).
pub(crate) fn abort_for_bytes(bytes: usize) -> ! {
    let layout =
        std::alloc::Layout::from_size_align(bytes, 8).unwrap_or(std::alloc::Layout::new::<u64>());
    std::alloc::handle_alloc_error(layout)
}
