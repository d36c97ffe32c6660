//! Cuckoo filters (paper 001): [`LockFreeCuckooFilter`](lock_free::LockFreeCuckooFilter) and
//! the striped-lock baseline [`LockedCuckooFilter`](locked::LockedCuckooFilter), over one shared
//! bucketed table ([`table`]: packing, hashing, the same-index rule and relocation chains).

pub(crate) mod lock_free;
pub(crate) mod locked;
pub(crate) mod table;
