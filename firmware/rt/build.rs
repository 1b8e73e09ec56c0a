//! Puts the machines' linker scripts on the linker's search path (for every image that
//! depends on this crate); `.cargo/config.toml` picks the script per target.
//!
//! The scripts are copied into `OUT_DIR` and searched there, not in the source folder: CI
//! runs in a fresh copy of the repository with the build folders linked from the checkout
//! (`.ci/run`), so a search path into one copy's source folder, kept by cargo's cache of
//! this script's output, would dangle once that copy is gone.

use std::path::PathBuf;

fn main() {
    let src =
        PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo")).join("link");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("set by cargo")).join("link");
    std::fs::create_dir_all(&out).expect("create OUT_DIR/link");
    for entry in std::fs::read_dir(&src).expect("read link/") {
        let path = entry.expect("read link/").path();
        if path.extension().is_some_and(|e| e == "ld") {
            let name = path.file_name().expect("a file name");
            std::fs::copy(&path, out.join(name)).expect("copy a linker script");
            println!("cargo::rerun-if-changed={}", path.display());
        }
    }
    println!("cargo::rustc-link-search={}", out.display());
    println!("cargo::rerun-if-changed=link");
    println!("cargo::rerun-if-changed=build.rs");
}
