//! Arbitrary bytes into the `expandable` decoders: `Err` or a working filter that writes back the
//! same bytes (the check in `tests/fuzz_check`, which CI replays over the corpus).
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/fuzz_check/mod.rs"]
mod fuzz_check;

fuzz_target!(|data: &[u8]| fuzz_check::check("expandable", data));
