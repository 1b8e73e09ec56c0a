//! Scalable approximate counters (Scalable Approximate Counting, Ayers 2023): cheap shared counting under contention.
//!
//! A [`ScalableCounter`] is one shared atomic word that many threads increment. Below
//! `2^threshold` it counts exactly. Above, an increment adds `2^k` with probability `2^-k`,
//! where `k` grows with the magnitude of the count. Most increments are then a relaxed load, a
//! few ALU operations and one draw from a per-thread [`RandomSource`]: no write, so the cache
//! line stays shared between cores and the counter scales where a `fetch_add` on one word does
//! not.
//!
//! # The update rule
//!
//! With `t` the threshold (default [`ScalableConfig::DEFAULT_THRESHOLD`] = 13) and `c` the
//! granularity cap (default [`ScalableConfig::DEFAULT_MAX_SHIFT`] = 10), an increment that
//! observes the value `v` does:
//!
//! - `v < 2^t`: `fetch_add(1)`. Exact.
//! - `v >= 2^t`: `k = min(bit_length(v) - t, c)`, so `k = 1` on `[2^t, 2^(t+1))`, `k = 2` on the
//!   next octave, and so on up to `c`. With probability `2^-k` (the top `k` bits of a random
//!   `u32` are all zero) it does `fetch_add(2^k)`; otherwise it writes nothing.
//!
//! Without the cap this is exactly the `ScalableProfileCount` routine of the seed, whose
//! `delta = 1 << (logCount - 12)` is `2^k` for `t = 13`. See `ScalableConfig::shift_for`.
//!
//! # The two refinements of the note
//!
//! - **Capped granularity (Dice, Lev and Moir).** `k` never exceeds `c`
//!   ([`ScalableConfig::with_max_shift`], at most [`ScalableConfig::MAX_MAX_SHIFT`] = 32).
//!   Once the update probability is `2^-c` (1/1024 by default), lowering it further buys no
//!   scalability: a core writes the line once per ~1000 increments, which amortises the
//!   transfer to well under a nanosecond. It does cost accuracy, so the cap stops it: past
//!   `2^(t+c)` (2^23 ≈ 8.4 M by default) every update adds at most `2^c`, the variance grows
//!   only linearly in `n`, and the relative error falls as `1/sqrt(n)` instead of staying at
//!   its plateau. The error is then bounded for every `n` by the uncapped plateau (below).
//! - **Exact while uncontended.** Above the threshold the counter first tries
//!   `compare_exchange(v, v + 1)`. If that succeeds the increment was exact. The first time it
//!   fails (another thread, or an interrupt handler, wrote in between), the counter sets a
//!   *contended* flag and uses the probabilistic rule from then on, until [`reset`]. So a
//!   counter that only ever sees one writer is exact (up to the saturation limit), and a
//!   contended one switches after its first collision. The switch is one-way because a CAS per
//!   increment is itself a write per increment: retrying the CAS under contention would cost as
//!   much as `fetch_add`. Turn the refinement off with
//!   [`ScalableConfig::with_exact_while_uncontended`] to get the cheapest single-writer path
//!   (a load and a draw, no locked instruction) at the price of approximate counts.
//!
//! [`reset`]: ScalableCounter::reset
//!
//! # The estimator, and why it is unbiased
//!
//! The estimate is the stored value itself: [`ScalableCounter::get`] is one relaxed load, with
//! no post-processing. Each increment chooses `k` from what it observed *before* drawing its
//! random number, and the draw is independent of everything before it, so the expected amount
//! it adds is `2^k · 2^-k = 1`, whatever the interleaving, and `1` exactly on the exact paths.
//! The difference between the estimate and the true count is therefore a martingale that starts
//! at 0: `E[get()] = n` after `n` increments. [`ScalableCounter::add`] keeps the same property:
//! it adds `floor(n / 2^k) · 2^k` and then `2^k` with probability `(n mod 2^k) / 2^k`.
//!
//! Interleaving changes which `k` each increment uses, hence the variance, never the mean.
//! Threads must use *independent* random streams: two threads with the same seed make the same
//! decisions, which leaves the mean alone but inflates the variance. Seed each thread with
//! [`WyRand::from_seed_and_thread`] (64-bit hosts) or [`XorShift::from_seed_and_thread`]
//! (32-bit microcontrollers).
//!
//! # Error
//!
//! An increment with shift `k` adds a variance of `2^k - 1`. Summing over octaves
//! ([`ScalableConfig::predicted_variance`]) gives, for the relative standard deviation
//! `σ_rel = sqrt(Var[get()]) / n` when every update above the threshold is probabilistic (the
//! contended case; exact increments only lower it):
//!
//! - **Uncapped plateau.** For `n = x · 2^m` with `1 <= x < 2`,
//!   `σ_rel ≈ 2^(-t/2) · sqrt(2 (x - 2/3)) / x`, which lies between `0.816 · 2^(-t/2)` and
//!   `0.866 · 2^(-t/2)`. For `t = 13`: 0.90 % to 0.96 %. For `t = 10`: 2.6 % to 2.7 %; for
//!   `t = 16`: 0.32 % to 0.34 %. Each step of `t` trades a factor `sqrt(2)` of error against a
//!   factor 2 in the number of writes.
//! - **With the cap.** Identical up to `n = 2^(t+c)`, then falling as roughly
//!   `sqrt((2^c - 1) / n)`. For the defaults (`t = 13`, `c = 10`):
//!
//!   | `n` | 2^16 | 2^20 | 2^23 | 2 × 10^7 | 2^26 | 2^30 |
//!   |---|---|---|---|---|---|---|
//!   | σ_rel | 0.82 % | 0.90 % | 0.90 % | 0.66 % | 0.38 % | 0.10 % |
//!
//!   So `σ_rel <= 0.96 %` for every `n`, and below `2^t` the count is exact.
//! - **The issue's accuracy test** (2 threads × 10^7 increments, `t = 13`, 50 trials with fixed
//!   seeds) predicts σ 0.95 % for the paper's uncapped scheme and 0.66 % with the default cap.
//!   The tests in this module assert a mean error within 0.5 % and p5/p95 within ±2.5 %.
//!
//! The count saturates at [`ScalableCell::MAX`] (`2^63 - 1`) instead of wrapping; that limit
//! is out of reach of increments and only matters for [`ScalableCounter::add`] with huge `n`.
//!
//! # Cost
//!
//! Above the threshold, an increment that does not write is one relaxed load, a bit scan, a
//! random draw and a few compares: on the contended path, the bit length of the value is
//! range-checked once against the probabilistic band and turned into the draw's shift with
//! one compare and one subtraction, reading only the configuration fields that path uses.
//! With a run-time configuration that is about 30 instructions (with the release defaults 29
//! with [`WyRand`] and 34 with [`XorShift`], under fat LTO 28 and 33:
//! `benches/benches/counters_iai.rs`; 38, 40, 36 and 39 before). What an
//! increment carries to the next one is the generator's state: one add for [`WyRand`], three
//! serial shift-xor pairs for [`XorShift`], so on 64-bit hosts prefer [`WyRand`].
//! On the 2-core development VM (`cargo bench -p picollo-benches --bench counters`), with
//! 2 threads × 10^7 increments it cost about 2.4 ns per increment per thread, against about
//! 9.5 ns for `fetch_add` on one shared word and 0.27 ns for per-thread padded shards (which
//! are exact, but cost a sum over all shards to read). One writer alone pays about 2.3 ns
//! without the CAS refinement and 2.7–2.9 ns with it, against 1.9 ns for an uncontended
//! `fetch_add`.
//!
//! # Targets without 64-bit atomics or compare-and-swap
//!
//! A cell is one native atomic [`Word`]: 64 bits where the target has 64-bit atomics, 32 bits
//! elsewhere (all 32-bit microcontrollers), never a lock-based emulation, so an interrupt
//! handler may count into a cell that the code it interrupted is counting into. A 32-bit cell
//! holds estimates up to `2^31 - 1` ([`ScalableCell::MAX`]) and saturates there;
//! [`ScalableConfig::MAX_THRESHOLD`] is 30 there.
//!
//! On `thumbv6m-none-eabi` and `riscv32imc-unknown-none-elf`, which have no compare-and-swap,
//! the writing methods need the firmware to choose how read-modify-writes become atomic:
//! `--cfg portable_atomic_unsafe_assume_single_core` (single-core chips), or picollo-core's
//! `critical-section` feature. Without it a call is a compile error naming both
//! ([`crate::cell::RmwAtomic`]). For example:
//!
//! ```text
//! RUSTFLAGS="--cfg portable_atomic_unsafe_assume_single_core" \
//!     cargo build -p picollo-core --target thumbv6m-none-eabi
//! ```
//!
//! On such a chip a CAS can only fail when an interrupt handler increments in between, which
//! is exactly when exact counting stops being possible without disabling interrupts.
//!
//! # Sharing one configuration between many counters
//!
//! [`ScalableCell`] is the bare 8-byte state, with the configuration passed to each call. An
//! array of cells plus one [`ScalableConfig`] is what an approximate histogram needs.
//! [`ScalableCounter`] bundles one cell with its configuration.

//!
//! # Modules
//!
//! - `random`: the per-thread random sources ([`RandomSource`], [`XorShift`], [`WyRand`]).
//! - `config`: [`ScalableConfig`], the threshold, cap and refinement, with the fields the
//!   hot path reads precomputed.
//! - `cell`: [`ScalableCell`], the one-word state and the update rule (`inc`, `add`).
//! - `counter`: [`ScalableCounter`], a cell bundled with its configuration.

// `Word` is `u64` on targets with 64-bit atomics and `u32` elsewhere: the casts between it
// and `u64` are needed on 32-bit targets even where they are no-ops.
#![allow(clippy::unnecessary_cast)]

mod cell;
mod config;
mod counter;
mod random;
#[cfg(test)]
mod tests;

pub use cell::ScalableCell;
pub use config::ScalableConfig;
pub use counter::ScalableCounter;
pub use random::{RandomSource, WyRand, XorShift};

use crate::cell::Word;

/// Bits of a cell: the native atomic width ([`Word`]), 64 or 32.
const BITS: u32 = Word::BITS;
/// The value bits of a cell.
const VALUE_MASK: Word = (1 << (BITS - 1)) - 1;
/// The contended flag of a cell (set once an exact-mode CAS failed).
const CONTENDED: Word = 1 << (BITS - 1);
/// `log2` of the value from which writes take the saturating CAS loop instead of `fetch_add`.
const GUARD_LOG2: u32 = BITS - 2;
/// Values at or above this take the saturating path.
const GUARD: Word = 1 << GUARD_LOG2;
/// `log2` of the largest delta the `fetch_add` fast path applies; larger ones take the
/// saturating path. With values below `GUARD`, a carry into the flag bit would need about
/// 2^22 writers (64-bit cells) or 2^10 nested writers (32-bit cells: thread mode plus
/// interrupt priorities) racing with stale observations at once.
const FAST_SHIFT_MAX: u32 = if BITS == 64 { 40 } else { 20 };
/// The largest delta the `fetch_add` fast path applies.
const FAST_DELTA_MAX: u64 = 1 << FAST_SHIFT_MAX;
