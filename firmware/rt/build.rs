//! Puts the machines' linker scripts on the linker's search path (for every image that
//! depends on this crate); `.cargo/config.toml` picks the script per target.

fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo");
    println!("cargo::rustc-link-search={dir}/link");
    println!("cargo::rerun-if-changed=link");
    println!("cargo::rerun-if-changed=build.rs");
}
