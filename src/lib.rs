//! Concurrent approximate membership query filters built on quotient filters.
//!
//! ```
//! use conqf::SequentialQf;
//! let mut filter = SequentialQf::new(10_000, 0.001)?;
//! filter.insert("apple")?;
//! assert!(filter.contains("apple"));
//! # Ok::<(), conqf::Error>(())
//! ```

mod bloom;
mod counter;
mod filter;
mod hash;
mod qf;
mod sizing;
mod storage;
mod sync;

pub use bloom::AtomicBloomFilter;
pub use filter::{Count, Error, Filter, Merge, Remove};
pub use hash::{hash_key, Fingerprint};
pub use qf::linear_probing::{LinearProbingBuilder, LinearProbingQf};
pub use qf::locally_locked::LocallyLockedQf;
pub use qf::scan::Fingerprints;
pub use qf::sequential::SequentialQf;
pub use sizing::{linear_probing_fpr, nonzero_qf_fpr, qf_fpr, MAX_QUOTIENT_BITS};
