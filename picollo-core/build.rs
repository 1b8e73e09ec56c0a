//! Decides whether read-modify-write atomics are available, and says so with the
//! `picollo_rmw` cfg.
//!
//! The plain histogram needs no atomics and builds everywhere. The atomic and approximate
//! histograms and the scalable counter need read-modify-write operations (`fetch_add`,
//! compare-and-swap). They exist natively where the target has compare-and-swap
//! (`target_has_atomic`), and `portable-atomic` provides them on targets without it
//! (`thumbv6m-none-eabi`, `riscv32imc-unknown-none-elf`) when the firmware says how: the
//! `portable_atomic_unsafe_assume_single_core` cfg, or this crate's `critical-section` or
//! `unsafe-assume-single-core` feature (forwarded to `portable-atomic`). Without any of them
//! the RMW kinds still compile, but using one is a compile error naming these options
//! (`picollo_core::cell::RmwAtomic`).

use std::env;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(picollo_rmw)");
    println!("cargo::rustc-check-cfg=cfg(portable_atomic_unsafe_assume_single_core)");
    println!("cargo::rustc-check-cfg=cfg(picollo_no_clz)");
    println!("cargo::rerun-if-changed=build.rs");
    let has_cas = env::var("CARGO_CFG_TARGET_HAS_ATOMIC")
        .map(|widths| widths.split(',').any(|w| w == "32" || w == "ptr"))
        .unwrap_or(false);
    let single_core_cfg =
        env::var_os("CARGO_CFG_PORTABLE_ATOMIC_UNSAFE_ASSUME_SINGLE_CORE").is_some();
    let critical_section = env::var_os("CARGO_FEATURE_CRITICAL_SECTION").is_some();
    let single_core_feature = env::var_os("CARGO_FEATURE_UNSAFE_ASSUME_SINGLE_CORE").is_some();
    if has_cas || single_core_cfg || critical_section || single_core_feature {
        println!("cargo::rustc-cfg=picollo_rmw");
    }
    if !has_clz() {
        println!("cargo::rustc-cfg=picollo_no_clz");
    }
}

/// Whether the target has a count-leading-zeros instruction. Without one, `leading_zeros` is a
/// call to the `__clzsi2` helper, which the record path avoids. Arm target features are not
/// visible to `cfg` on stable Rust, so the Arm architecture comes from the target name:
/// ARMv6-M and ARMv8-M Baseline lack `CLZ`. RISC-V has it with the Zbb extension.
fn has_clz() -> bool {
    let target = env::var("TARGET").unwrap_or_default();
    let arch = env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let features = env::var("CARGO_CFG_TARGET_FEATURE").unwrap_or_default();
    match arch.as_str() {
        "arm" => !(target.starts_with("thumbv6m") || target.starts_with("thumbv8m.base")),
        "riscv32" | "riscv64" => features.split(',').any(|f| f == "zbb"),
        _ => true,
    }
}
