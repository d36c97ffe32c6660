//! Replays the committed fuzz corpus (`fuzz/corpus/<target>/`, see `fuzz/README.md`) through
//! the check each fuzz target runs, so every `cargo test` on stable Rust repeats what the fuzzers
//! found; and keeps the generated seeds in the corpus (`CONQF_BLESS_CORPUS=1` writes them).

mod fuzz_check;

use std::path::PathBuf;

fn corpus_dir(target: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target)
}

#[test]
fn the_seeds_are_in_the_corpus() {
    let bless = std::env::var_os("CONQF_BLESS_CORPUS").is_some();
    for target in fuzz_check::TARGETS {
        let dir = corpus_dir(target);
        for (name, bytes) in fuzz_check::seeds(target) {
            let path = dir.join(format!("seed-{name}"));
            if bless {
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(&path, &bytes).unwrap();
            }
            let stored = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert!(
                stored == bytes,
                "{}: regenerate with CONQF_BLESS_CORPUS=1",
                path.display()
            );
        }
    }
}

#[test]
fn every_corpus_file_passes_its_target_check() {
    let mut files = 0;
    for target in fuzz_check::TARGETS {
        let dir = corpus_dir(target);
        let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for entry in entries {
            let path = entry.unwrap().path();
            let bytes = std::fs::read(&path).unwrap();
            let outcome = std::panic::catch_unwind(|| fuzz_check::check(target, &bytes));
            assert!(
                outcome.is_ok(),
                "{} fails the {target} check",
                path.display()
            );
            files += 1;
        }
    }
    assert!(files >= fuzz_check::TARGETS.len() * 3);
}
