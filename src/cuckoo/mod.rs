//! Cuckoo filters (paper 001): [`LockFreeCuckooFilter`](lock_free::LockFreeCuckooFilter) and
//! the striped-lock baseline [`LockedCuckooFilter`](locked::LockedCuckooFilter), over one shared
//! bucketed table ([`table`]: packing, hashing, the same-index rule and relocation chains), and
//! the pause of the lock-free filter's relocations that its `&self` snapshot takes ([`pause`]),
//! the merge of two filters of one shape ([`merge`]), and their [`Count`](crate::Count)
//! ([`count`]).

mod count;
pub(crate) mod lock_free;
pub(crate) mod locked;
mod merge;
mod pause;
pub(crate) mod table;
