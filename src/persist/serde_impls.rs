//! `serde` support (feature `serde`): a filter serialises as one byte string holding exactly
//! the bytes of its `to_bytes` (or of its snapshot's, below), and deserialises through
//! `from_bytes`, so every check of [`persist`](super) applies to serde input too.
//!
//! The filters whose exact copy needs `&mut self` (`LocallyLockedQf`, `TwoBitQf`,
//! `LockFreeCuckooFilter`, `GrowableQf`, `ExpandableQf`) serialise the bytes of their `&self`
//! snapshot, `filter.snapshot()?.to_bytes()` (a `SequentialQf`'s for `LocallyLockedQf`, which
//! reads them back): taken beside other threads, it holds every key stored before the call
//! and not removed during it, and a snapshot that fails (memory, or the rare `Full` of a
//! sweep beside heavy churn) is a serialisation error. [`SequentialQfRef`]
//! and [`CountingQfRef`] deserialise zero-copy from formats that lend their bytes.

use std::fmt;

use serde::de::{Deserialize, Deserializer, Error as _, SeqAccess, Visitor};
use serde::ser::Error as _;
use serde::{Serialize, Serializer};

use crate::bloom::AtomicBloomFilter;
use crate::cuckoo::lock_free::LockFreeCuckooFilter;
use crate::cuckoo::locked::LockedCuckooFilter;
use crate::qf::counting::CountingQf;
use crate::qf::expandable::ExpandableQf;
use crate::qf::externally_locked::ExternallyLockedQf;
use crate::qf::growing::GrowableQf;
use crate::qf::linear_probing::LinearProbingQf;
use crate::qf::locally_locked::LocallyLockedQf;
use crate::qf::sequential::SequentialQf;
use crate::qf::two_bit::TwoBitQf;

use super::counting::CountingQfRef;
use super::qf::SequentialQfRef;

/// Collects a byte string, or a sequence of bytes from formats without byte strings (JSON),
/// growing with the elements that arrive rather than trusting a length hint.
struct ByteString;

impl<'de> Visitor<'de> for ByteString {
    type Value = Vec<u8>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the bytes of a conqf filter")
    }

    fn visit_bytes<E: serde::de::Error>(self, bytes: &[u8]) -> Result<Vec<u8>, E> {
        Ok(bytes.to_vec())
    }

    fn visit_byte_buf<E: serde::de::Error>(self, bytes: Vec<u8>) -> Result<Vec<u8>, E> {
        Ok(bytes)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<u8>, A::Error> {
        let mut bytes = Vec::new();
        while let Some(byte) = seq.next_element::<u8>()? {
            bytes.try_reserve(1).map_err(A::Error::custom)?;
            bytes.push(byte);
        }
        Ok(bytes)
    }
}

macro_rules! serde_via_bytes {
    ($($filter:ty: $serialize:tt),* $(,)?) => {$(
        serde_via_bytes!(@serialize $serialize $filter);

        impl<'de> Deserialize<'de> for $filter {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let bytes = deserializer.deserialize_bytes(ByteString)?;
                <$filter>::from_bytes(&bytes).map_err(D::Error::custom)
            }
        }
    )*};
    (@serialize yes $filter:ty) => {
        impl Serialize for $filter {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_bytes(&self.to_bytes())
            }
        }
    };
    (@serialize snapshot $filter:ty) => {
        impl Serialize for $filter {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let copy = self.snapshot().map_err(S::Error::custom)?;
                serializer.serialize_bytes(&{ copy }.to_bytes())
            }
        }
    };
}

serde_via_bytes!(
    SequentialQf: yes,
    LocallyLockedQf: snapshot,
    ExternallyLockedQf: yes,
    LinearProbingQf: yes,
    AtomicBloomFilter: yes,
    LockFreeCuckooFilter: snapshot,
    LockedCuckooFilter: yes,
    TwoBitQf: snapshot,
    CountingQf: yes,
    GrowableQf: snapshot,
    ExpandableQf: snapshot,
);

/// Lends the deserialiser's bytes; only formats that hand out borrowed byte strings (e.g.
/// bincode, postcard) can produce it.
struct BorrowedBytes;

impl<'de> Visitor<'de> for BorrowedBytes {
    type Value = &'de [u8];

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("borrowed bytes of a conqf filter")
    }

    fn visit_borrowed_bytes<E: serde::de::Error>(self, bytes: &'de [u8]) -> Result<&'de [u8], E> {
        Ok(bytes)
    }
}

macro_rules! serde_view {
    ($($view:ident),*) => {$(
        impl<'de: 'a, 'a> Deserialize<'de> for $view<'a> {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let bytes = deserializer.deserialize_bytes(BorrowedBytes)?;
                $view::from_bytes(bytes).map_err(D::Error::custom)
            }
        }

        impl Serialize for $view<'_> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_bytes(self.bytes())
            }
        }
    )*};
}

serde_view!(SequentialQfRef, CountingQfRef);
