//! The README's quick start, kept compiling by `cargo test` and run by CI
//! (`cargo run --example quickstart`). It reproduces no paper figure.

use conqf::SequentialQf;

fn main() -> Result<(), conqf::Error> {
    // Room for 1M keys at a false-positive rate of at most 0.1%.
    let mut filter = SequentialQf::new(1_000_000, 0.001)?;

    assert!(filter.insert("apple")?); // stored
    assert!(!filter.insert("apple")?); // that fingerprint was already there
    assert!(filter.contains("apple")); // never a false negative
    println!(
        "{} bytes; expected false-positive rate with one key stored: {:.1e}",
        filter.memory_bytes(),
        filter.false_positive_rate()
    );

    assert!(filter.remove("apple")?); // one stored copy removed
    assert!(!filter.contains("apple"));
    Ok(())
}
