//! Fallible allocation of tables: a failed allocation is an [`Error`], never an abort.

use crate::filter::Error;

/// Reserves room for exactly `count` more elements, or reports [`Error::InvalidParameters`]
/// instead of aborting when the memory cannot be had (issue 10): every table allocation whose
/// size comes from the user or from bytes read goes through here.
pub(crate) fn try_reserve<T>(vec: &mut Vec<T>, count: usize) -> Result<(), Error> {
    vec.try_reserve_exact(count).map_err(|_| {
        Error::InvalidParameters(format!(
            "cannot allocate {} bytes",
            count.saturating_mul(std::mem::size_of::<T>())
        ))
    })
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

/// Aborts the process as a `std` collection does when `bytes` bytes cannot be had (through
/// [`std::alloc::handle_alloc_error`]): for the copies whose signature leaves no room for an
/// error (`Clone`, and conversions documented to abort like it).
pub(crate) fn abort_for_bytes(bytes: usize) -> ! {
    let layout =
        std::alloc::Layout::from_size_align(bytes, 8).unwrap_or(std::alloc::Layout::new::<u64>());
    std::alloc::handle_alloc_error(layout)
}
