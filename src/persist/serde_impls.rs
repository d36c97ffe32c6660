//! `serde` support (feature `serde`): a filter serialises as one byte string holding exactly
//! the bytes of its `to_bytes`, and deserialises through `from_bytes`, so every check of
//! [`persist`](super) applies to serde input too.
//!
//! `LocallyLockedQf` deserialises but does not implement `Serialize`: its snapshot needs
//! `&mut self` (see [`LocallyLockedQf::to_bytes`]), which `Serialize` cannot take; serialise
//! `filter.to_bytes()` (or `filter.snapshot()?`, a `SequentialQf`) instead; the same holds for
//! `GrowableQf`, `ExpandableQf`, `TwoBitQf` and `LockFreeCuckooFilter`, whose `snapshot()?` is
//! a filter of their own type. [`SequentialQfRef`]
//! and [`CountingQfRef`] deserialise zero-copy from formats that lend their bytes.

use std::fmt;

use serde::de::{Deserialize, Deserializer, Error as _, SeqAccess, Visitor};
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
    (@serialize no $filter:ty) => {};
}

serde_via_bytes!(
    SequentialQf: yes,
    LocallyLockedQf: no,
    ExternallyLockedQf: yes,
    LinearProbingQf: yes,
    AtomicBloomFilter: yes,
    LockFreeCuckooFilter: no,
    LockedCuckooFilter: yes,
    TwoBitQf: no,
    CountingQf: yes,
    GrowableQf: no,
    ExpandableQf: no,
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
