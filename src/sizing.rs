//! From a user's `(capacity, fpr)` to table parameters `(q, r)`, and the expected
//! false-positive rate formulas of the papers.
//!
//! * Quotient filters with status bits (paper 000 §2.1): a query compares against the stored
//!   fingerprints of one run, so `p+ ≈ n / 2^(q + r) = δ · 2^-r` at fill `δ = n / 2^q`.
//! * Non-zero remainders (2-status-bit QF, paper 000 §2.2): `p+ ≈ δ / (2^r - 1)`.
//! * Linear probing QF (paper 000 Corollary 1): `p+ <= ½ (1 + 1/(1-δ)²) / (2^r - 1)`, where `r`
//!   is the stored remainder (the paper's `r + 3`); a bound, since Knuth's probe count includes
//!   the empty slot that ends the search, which no remainder matches.
//!
//! Also the shape of a merge's union (paper 004 §IV-E), shared by the quotient filters' merges.

use crate::filter::Error;

/// The largest quotient the constructors accept: `2^40` slots is far beyond any machine's memory
/// at these slot widths, and keeps every slot index within the exact range of the packed-slot
/// index arithmetic.
pub const MAX_QUOTIENT_BITS: u32 = 40;

/// Checks the `(capacity, fpr)` pair every `new` constructor takes.
pub(crate) fn check_capacity_and_fpr(capacity: usize, fpr: f64) -> Result<(), Error> {
    if capacity == 0 {
        return Err(Error::InvalidParameters(
            "capacity must be at least 1".into(),
        ));
    }
    if !(fpr > 0.0 && fpr < 1.0) {
        return Err(Error::InvalidParameters(format!(
            "false-positive rate {fpr:e} is not in the open interval (0, 1)"
        )));
    }
    Ok(())
}

/// Checks explicit `(quotient_bits, remainder_bits)` for a slot with `status_bits` status bits.
pub(crate) fn check_bits(
    quotient_bits: u32,
    remainder_bits: u32,
    status_bits: u32,
    min_remainder_bits: u32,
) -> Result<(), Error> {
    if quotient_bits == 0 || quotient_bits > MAX_QUOTIENT_BITS {
        return Err(Error::InvalidParameters(format!(
            "quotient_bits {quotient_bits} is not in 1..={MAX_QUOTIENT_BITS}"
        )));
    }
    if remainder_bits < min_remainder_bits {
        return Err(Error::InvalidParameters(format!(
            "remainder_bits {remainder_bits} is below the minimum of {min_remainder_bits}"
        )));
    }
    // Summed in 64 bits: a `u32` sum wraps for remainder bit counts near `u32::MAX` (and then
    // passed, found in review).
    if u64::from(quotient_bits) + u64::from(remainder_bits) > 64 {
        return Err(Error::InvalidParameters(format!(
            "a fingerprint of {quotient_bits} + {remainder_bits} bits does not fit a 64-bit hash"
        )));
    }
    if u64::from(remainder_bits) + u64::from(status_bits) > 64 {
        return Err(Error::InvalidParameters(format!(
            "a slot of {remainder_bits} remainder bits and {status_bits} status bits exceeds 64 bits"
        )));
    }
    Ok(())
}

/// The smallest `q` such that `capacity` items fit into `2^q` slots at fill `max_load`.
pub(crate) fn quotient_bits_for(capacity: usize, max_load: f64) -> Result<u32, Error> {
    let too_large = || {
        Error::InvalidParameters(format!(
            "capacity {capacity} at a fill of {max_load:?} needs more than 2^{MAX_QUOTIENT_BITS} \
             slots"
        ))
    };
    let needed = capacity as f64 / max_load;
    let q = needed.log2().ceil().max(1.0);
    if !q.is_finite() || q > MAX_QUOTIENT_BITS as f64 {
        return Err(too_large());
    }
    let mut q = q as u32;
    // Guard against rounding in log2: make sure the table really holds `capacity` items.
    while ((1u64 << q) as f64) * max_load < capacity as f64 {
        q += 1;
    }
    if q > MAX_QUOTIENT_BITS {
        return Err(too_large());
    }
    Ok(q)
}

/// The smallest `r >= min_r` for which `fpr_at(r) <= target`, or an error past `max_r` that
/// names the bits as `what` ("remainder", "fingerprint").
pub(crate) fn smallest_bits(
    target: f64,
    (min_r, max_r): (u32, u32),
    what: &str,
    fpr_at: impl Fn(u32) -> f64,
) -> Result<u32, Error> {
    (min_r..=max_r)
        .find(|&r| fpr_at(r) <= target)
        .ok_or_else(|| {
            Error::InvalidParameters(format!(
                "false-positive rate {target:e} needs more than {max_r} {what} bits"
            ))
        })
}

/// A fill for the FPR formulas of tables that never hold more keys than places (linear probing,
/// cuckoo): clamped to `[0, 1]`, and a NaN counted as a full table, so a formula never answers
/// a rate lower than some fill would give.
#[inline]
pub(crate) fn formula_load(load: f64) -> f64 {
    if load.is_nan() {
        1.0
    } else {
        load.clamp(0.0, 1.0)
    }
}

/// A quotient filter's fill `n / 2^q` for its FPR formulas: at least 0, and a NaN counted as a
/// full table, but not capped at 1. Its overflow tail can hold more keys than canonical slots
/// (the tables too small for a load cap take keys until they are full), and each key is one
/// more fingerprint a query may match: 25 keys in a table of 8 canonical slots with 2-bit
/// remainders match 25/32 of the queries, not 8/32.
#[inline]
fn quotient_filter_load(load: f64) -> f64 {
    if load.is_nan() {
        1.0
    } else {
        load.max(0.0)
    }
}

/// Expected FPR of a QF with status bits at fill `load = n / 2^q` (at least 0, NaN counted as 1,
/// above 1 when the overflow tail holds keys) and `r` remainder bits: `δ · 2^-r`, at most 1.
///
/// ```
/// // Half full with 10-bit remainders; remainders that are never 0 leave one value fewer.
/// assert_eq!(conqf::qf_fpr(0.5, 10), 0.5 / 1024.0);
/// assert_eq!(conqf::nonzero_qf_fpr(0.5, 10), 0.5 / 1023.0);
/// ```
#[inline]
pub fn qf_fpr(load: f64, remainder_bits: u32) -> f64 {
    (quotient_filter_load(load) * (-(remainder_bits as f64)).exp2()).min(1.0)
}

/// Expected FPR of a QF whose remainders are never zero (`r >= 1`), at fill `load = n / 2^q`
/// (as for [`qf_fpr`]): `δ / (2^r - 1)`, at most 1.
#[inline]
pub fn nonzero_qf_fpr(load: f64, remainder_bits: u32) -> f64 {
    (quotient_filter_load(load) / ((remainder_bits as f64).exp2() - 1.0)).min(1.0)
}

/// The false-positive rate of the linear probing QF by paper 000's Corollary 1, with `r` stored
/// remainder bits, at fill `load` (clamped to `[0, 0.999999]`, NaN counted as full).
///
/// The paper calls it a bound: the corollary counts Knuth's expected probes of an unsuccessful
/// search, `½ (1 + 1/(1-δ)²)`, which include the empty slot that ends it, and an empty slot
/// never matches (remainders are not 0). Up to the default load cap the measured rate is about
/// one comparison lower, `(½ (1 + 1/(1-δ)²) - 1) / (2^r - 1)`: a twentieth of this value at 5%
/// fill, about 0.8 of it at 70% (`r = 8`, 2M absent keys). Past the cap the two meet: at 90-95%
/// fill (`max_load` raised) tables of `2^16` slots measured 0.93-1.02 of it on average. The
/// filter sizes itself and reports its rate by this value, as the paper states it. Like every
/// rate here it is an expectation over tables: one table's own rate varies around it, the more
/// the smaller the table (of 200 tables of `2^10` slots filled to 70% for a target of 0.006,
/// which this value meets, 12 measured above 0.006 and one 8.0e-3, while their average was 0.77
/// of the target).
///
/// ```
/// // At 50% fill with 13-bit remainders: 2.5 probes, 1.5 of them comparisons.
/// let bound = conqf::linear_probing_fpr(0.5, 13);
/// assert!((bound - 2.5 / 8191.0).abs() < 1e-15);
/// ```
#[inline]
pub fn linear_probing_fpr(load: f64, remainder_bits: u32) -> f64 {
    let load = formula_load(load).min(0.999_999);
    let comparisons = 0.5 * (1.0 + 1.0 / ((1.0 - load) * (1.0 - load)));
    (comparisons / ((remainder_bits as f64).exp2() - 1.0)).min(1.0)
}

/// Parameters of a 3-status-bit QF holding `capacity` items at `max_load` with FPR `<= fpr`.
pub(crate) fn qf_parameters(capacity: usize, fpr: f64, max_load: f64) -> Result<(u32, u32), Error> {
    check_capacity_and_fpr(capacity, fpr)?;
    let q = quotient_bits_for(capacity, max_load)?;
    Ok((q, qf_remainder_bits(capacity, fpr, q)?))
}

/// The fewest remainder bits that keep a 3-status-bit QF of `2^quotient_bits` slots holding
/// `capacity` items at an FPR `<= fpr`.
pub(crate) fn qf_remainder_bits(
    capacity: usize,
    fpr: f64,
    quotient_bits: u32,
) -> Result<u32, Error> {
    let load = capacity as f64 / (1u64 << quotient_bits) as f64;
    smallest_bits(fpr, (1, 61.min(64 - quotient_bits)), "remainder", |r| {
        qf_fpr(load, r)
    })
}

/// The fingerprint length `q + r` two quotient filters share, for a merge: the union keeps it
/// (only the split between quotient and remainder may change).
///
/// # Errors
/// [`Error::Incompatible`] if the lengths differ.
pub(crate) fn merged_fingerprint_bits(a: (u32, u32), b: (u32, u32)) -> Result<u32, Error> {
    let (a_bits, b_bits) = (a.0 + a.1, b.0 + b.1);
    if a_bits != b_bits {
        return Err(Error::Incompatible(format!(
            "fingerprints of {a_bits} and {b_bits} bits"
        )));
    }
    Ok(a_bits)
}

/// The quotient bits of a merge's union of `total` fingerprints of `bits` bits from inputs of
/// `a_quotient` and `b_quotient` bits: the larger one, plus one (a remainder bit moving into
/// the quotient, as in growing) for each time `total` would pass `max_load` of the slots, while
/// a remainder bit is left and the quotient within [`MAX_QUOTIENT_BITS`].
pub(crate) fn union_quotient_bits(
    (a_quotient, b_quotient): (u32, u32),
    bits: u32,
    total: usize,
    max_load: f64,
) -> u32 {
    let mut q = a_quotient.max(b_quotient);
    while ((1u64 << q) as f64) * max_load < total as f64 && bits - q > 1 && q < MAX_QUOTIENT_BITS {
        q += 1;
    }
    q
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_counts_whose_sum_would_wrap_are_rejected() {
        for (q, r) in [
            (1, u32::MAX),
            (40, u32::MAX - 39),
            (2, u32::MAX - 1),
            (5, u32::MAX - 2),
        ] {
            assert!(check_bits(q, r, 3, 1).is_err(), "({q}, {r})");
            assert!(
                check_bits(q, r, 0, 1).is_err(),
                "({q}, {r}) without status bits"
            );
        }
        assert!(check_bits(1, 61, 3, 1).is_ok());
        assert!(check_bits(1, 62, 3, 1).is_err());
    }

    #[test]
    fn quotient_holds_the_capacity() {
        assert_eq!(quotient_bits_for(1, 0.9).unwrap(), 1);
        assert_eq!(quotient_bits_for(900, 0.9).unwrap(), 10);
        assert_eq!(quotient_bits_for(922, 0.9).unwrap(), 11);
        assert!(quotient_bits_for(usize::MAX, 0.9).is_err());
    }

    #[test]
    fn qf_parameters_meet_the_target() {
        for &(capacity, fpr) in &[(1000usize, 0.01), (1_000_000, 0.001), (10, 0.5), (7, 1e-9)] {
            let (q, r) = qf_parameters(capacity, fpr, 0.9).unwrap();
            let load = capacity as f64 / (1u64 << q) as f64;
            assert!(load <= 0.9);
            assert!(qf_fpr(load, r) <= fpr);
            // and r is the smallest such
            assert!(r == 1 || qf_fpr(load, r - 1) > fpr);
        }
    }

    #[test]
    fn bad_inputs_are_errors() {
        for fpr in [0.0, 1.0, -0.5, f64::NAN, f64::INFINITY] {
            assert!(qf_parameters(100, fpr, 0.9).is_err(), "fpr {fpr}");
        }
        assert!(qf_parameters(0, 0.01, 0.9).is_err());
        assert!(qf_parameters(100, 1e-300, 0.9).is_err());
        assert!(check_bits(0, 8, 3, 1).is_err());
        assert!(check_bits(41, 8, 3, 1).is_err());
        assert!(check_bits(20, 0, 3, 1).is_err());
        assert!(check_bits(20, 45, 3, 1).is_err());
        assert!(check_bits(4, 62, 3, 1).is_err());
        assert!(check_bits(20, 10, 3, 1).is_ok());
    }

    /// A NaN fill is a full table, not a rate of 1 or 0: every formula answers what it answers
    /// at fill 1 (at 0.999999 for linear probing, its cap).
    #[test]
    fn a_nan_load_counts_as_a_full_table() {
        assert_eq!(qf_fpr(f64::NAN, 10), qf_fpr(1.0, 10));
        assert_eq!(nonzero_qf_fpr(f64::NAN, 10), nonzero_qf_fpr(1.0, 10));
        assert_eq!(
            linear_probing_fpr(f64::NAN, 13),
            linear_probing_fpr(1.0, 13)
        );
        assert_eq!(qf_fpr(f64::NAN, 10), 1.0 / 1024.0);
        assert_eq!(qf_fpr(-3.0, 10), 0.0);
        assert_eq!(qf_fpr(f64::INFINITY, 10), 1.0);
    }

    /// A quotient filter's overflow tail may hold more keys than canonical slots: the rate
    /// grows on with the fill past 1 (it was held at the rate of fill 1), up to 1.
    #[test]
    fn a_quotient_filter_fill_past_one_raises_the_rate() {
        assert_eq!(qf_fpr(25.0 / 8.0, 2), 25.0 / 32.0);
        assert_eq!(nonzero_qf_fpr(2.0, 3), 2.0 / 7.0);
        assert_eq!(qf_fpr(5.0, 2), 1.0);
        assert_eq!(
            linear_probing_fpr(3.0, 13),
            linear_probing_fpr(1.0, 13),
            "a linear-probing table never holds more keys than slots"
        );
    }

    #[test]
    fn linear_probing_formula_matches_corollary_1() {
        // δ = 0.5: ½(1 + 4) = 2.5 comparisons over 2^13 - 1 values.
        assert!((linear_probing_fpr(0.5, 13) - 2.5 / 8191.0).abs() < 1e-15);
    }

    #[test]
    fn quotient_bits_at_an_exact_fill_take_the_smaller_table() {
        // `capacity / max_load` exactly a power of two: the table of that size holds the
        // capacity at exactly `max_load`, so no larger one is needed.
        assert_eq!(quotient_bits_for(512, 0.5).unwrap(), 10);
        assert_eq!(quotient_bits_for(96, 0.75).unwrap(), 7);
        assert_eq!(quotient_bits_for(1 << 20, 0.25).unwrap(), 22);
    }
}
