//! Calibrated workloads: code with a known instruction and cycle count, to check counter
//! sources and (later) PMU counters. `CpuUtils.AddChain256` of Picollo for .NET.

/// Adds in one unit of [`add_chain_256`].
pub(crate) const ADDS_PER_UNIT: u64 = 256;

/// Whether [`add_chain_256`] is the calibrated inline-assembly chain on this target.
///
/// `true` on x86, x86_64, aarch64, arm and RISC-V. Elsewhere (and under Miri) the chain is
/// built from `core::hint::black_box`, which the compiler cannot fold either but which adds a
/// load and a store per add, so neither its instruction nor its cycle count is calibrated.
pub const CALIBRATED: bool = cfg!(all(
    not(miri),
    any(
        target_arch = "x86",
        target_arch = "x86_64",
        target_arch = "aarch64",
        target_arch = "arm",
        target_arch = "riscv32",
        target_arch = "riscv64"
    )
));

/// Runs `n` units of 256 dependent register adds that the compiler cannot fold, and returns
/// the number of adds done, `256 * n` (wrapping).
///
/// Where [`CALIBRATED`] (x86, x86_64, aarch64, arm, RISC-V) each unit is, in inline assembly,
/// 256 adds of 1 to one register, each depending on the one before, then a decrement and a
/// branch:
///
/// - **Instructions:** 258 per unit on x86, aarch64 and RISC-V, 259 on arm (the loop branch
///   is split in two, because Thumb-1 conditional branches cannot reach back 256 adds), plus
///   a constant of a few dozen per call. So `instructions ≈ 256·n`, within 1.2%.
/// - **Cycles:** the adds form one dependency chain, so a core with a 1-cycle add latency
///   takes about `256·n` core cycles whatever its width; the loop counter runs beside the
///   chain. In-order cores with a taken-branch penalty (Cortex-M: 1 to 3 cycles) add it once
///   per unit.
///
/// Picollo for .NET measured 260,224 retired instructions for `AddChain256(1000)`: the same shape.
///
/// The function is never inlined, so profilers find it by name (`add_chain_256`) and the
/// 1 KiB of adds is not copied into every caller.
///
/// # Examples
///
/// ```
/// use picollo_core::workload::add_chain_256;
///
/// assert_eq!(add_chain_256(1000), 256_000);
/// assert_eq!(add_chain_256(0), 0);
/// ```
#[inline(never)]
pub fn add_chain_256(n: u64) -> u64 {
    // The chain counts in a `usize`; keep each call to `chain` short enough not to overflow
    // it (this matters on 32-bit targets only).
    const MAX_CHUNK: usize = usize::MAX / ADDS_PER_UNIT as usize;
    let mut left = n;
    let mut adds = 0u64;
    while left > 0 {
        let k = if left > MAX_CHUNK as u64 {
            MAX_CHUNK
        } else {
            left as usize
        };
        left -= k as u64;
        adds = adds.wrapping_add(chain(k) as u64);
    }
    adds
}

// The assembly chains live in their own never-inlined function. LLVM sizes an `asm!` block by
// its statements and counts `.rept 256` as one, so a compiler-generated branch or literal-pool
// load across the block could be placed out of range (Thumb-1 `b<cond>` reaches 256 bytes, the
// block is 512). Alone in a function, nothing spans the block.

/// `k >= 1` units of the chain; returns `256 * k`.
#[cfg(all(not(miri), any(target_arch = "x86", target_arch = "x86_64")))]
#[inline(never)]
fn chain(k: usize) -> usize {
    let mut acc: usize = 0;
    // SAFETY: register arithmetic only: no memory, no stack. `k >= 1`, so the loop ends after
    // `k` units. Flags are clobbered, which `asm!` assumes without `preserves_flags`.
    unsafe {
        core::arch::asm!(
            "2:",
            ".rept 256",
            "add {acc}, 1",
            ".endr",
            "sub {k}, 1",
            "jnz 2b",
            acc = inout(reg) acc,
            k = inout(reg) k => _,
            options(nomem, nostack),
        );
    }
    acc
}

/// `k >= 1` units of the chain; returns `256 * k`.
#[cfg(all(not(miri), target_arch = "aarch64"))]
#[inline(never)]
fn chain(k: usize) -> usize {
    let mut acc: usize = 0;
    // SAFETY: register arithmetic only: no memory, no stack. `k >= 1`, so the loop ends after
    // `k` units. Flags are clobbered, which `asm!` assumes without `preserves_flags`.
    unsafe {
        core::arch::asm!(
            "2:",
            ".rept 256",
            "add {acc}, {acc}, #1",
            ".endr",
            "subs {k}, {k}, #1",
            "b.ne 2b",
            acc = inout(reg) acc,
            k = inout(reg) k => _,
            options(nomem, nostack),
        );
    }
    acc
}

/// `k >= 1` units of the chain; returns `256 * k`.
#[cfg(all(not(miri), target_arch = "arm"))]
#[inline(never)]
fn chain(k: usize) -> usize {
    let mut acc: usize = 0;
    // SAFETY: register arithmetic only: no memory, no stack. `k >= 1`, so the loop ends after
    // `k` units. Flags are clobbered, which `asm!` assumes without `preserves_flags`.
    // `r0`/`r1` are low registers, which the Thumb-1 `adds`/`subs` encodings need. A Thumb-1
    // `bne` reaches only 256 bytes back, so the loop closes with `beq` over an unconditional
    // `b` (2 KiB reach).
    unsafe {
        core::arch::asm!(
            "2:",
            ".rept 256",
            "adds r0, r0, #1",
            ".endr",
            "subs r1, r1, #1",
            "beq 3f",
            "b 2b",
            "3:",
            inout("r0") acc,
            inout("r1") k => _,
            options(nomem, nostack),
        );
    }
    acc
}

/// `k >= 1` units of the chain; returns `256 * k`.
#[cfg(all(not(miri), any(target_arch = "riscv32", target_arch = "riscv64")))]
#[inline(never)]
fn chain(k: usize) -> usize {
    let mut acc: usize = 0;
    // SAFETY: register arithmetic only: no memory, no stack. `k >= 1`, so the loop ends after
    // `k` units. RISC-V has no flags.
    unsafe {
        core::arch::asm!(
            "2:",
            ".rept 256",
            "addi {acc}, {acc}, 1",
            ".endr",
            "addi {k}, {k}, -1",
            "bnez {k}, 2b",
            acc = inout(reg) acc,
            k = inout(reg) k => _,
            options(nomem, nostack, preserves_flags),
        );
    }
    acc
}

/// `k` units of the chain; returns `256 * k`. Uncalibrated fallback (see [`CALIBRATED`]).
#[cfg(any(
    miri,
    not(any(
        target_arch = "x86",
        target_arch = "x86_64",
        target_arch = "aarch64",
        target_arch = "arm",
        target_arch = "riscv32",
        target_arch = "riscv64"
    ))
))]
#[inline(never)]
fn chain(k: usize) -> usize {
    let mut acc: usize = 0;
    for _ in 0..k {
        for _ in 0..ADDS_PER_UNIT {
            acc = core::hint::black_box(acc).wrapping_add(1);
        }
    }
    acc
}
