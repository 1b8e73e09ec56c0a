//! Counter sources: anything that ticks (clocks, cycle counters, PMU counter groups) and feeds
//! deltas into histograms.
//!
//! - [`CounterSource`] is the trait; [`delta`] computes wrapped differences.
//! - Built-in hardware sources, each compiled only where its instruction or register exists:
//!   `Rdtsc` and `Rdtscp` (x86, x86_64), `CntVct` and `CntVctIsb` (aarch64), `DwtCycCnt`
//!   (Cortex-M, Armv7-M and Armv8-M), `RdCycle` (RISC-V). Every read is a compiler barrier:
//!   the compiler does not move memory accesses across it. What the CPU may reorder is
//!   documented on each type.
//! - [`Scope`] (and [`scope`]) records the delta of a source over a lexical scope into any
//!   [`Record`].
//!
//! Clocks of the operating system (nanos, micros, millis) live in `picollo-alloc`.

use crate::Record;

/// Why a source could not produce a sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum SourceError {
    /// The source does not exist on this machine, or is not enabled.
    Unavailable,
    /// The output slice is shorter than [`CounterSource::values`].
    BufferTooShort,
    /// The source exists but did not count during the interval (for example a multiplexed PMU
    /// counter whose `time_running` is 0). Never report this as a zero.
    NotCounted,
    /// An operating-system error number.
    Os(i32),
}

/// Anything that yields samples of one or several monotonic `u64` counters.
///
/// The deltas between two samples are what histograms record. A counter that is narrower than
/// 64 bits (Cortex-M `CYCCNT` is 32 bits) says so in [`CounterSource::value_bits`], and
/// [`delta`] computes the wrapped difference.
pub trait CounterSource {
    /// How many values one sample holds (1 for a clock).
    fn values(&self) -> usize;

    /// Width in bits of each value; deltas wrap at this width. 64 unless the hardware is narrower.
    fn value_bits(&self) -> u32 {
        64
    }

    /// Takes one sample into `out[..self.values()]`.
    fn sample_into(&mut self, out: &mut [u64]) -> Result<(), SourceError>;

    /// Takes one sample and returns its first value: the fast path scopes use.
    fn sample_first(&mut self) -> Result<u64, SourceError>;
}

/// The difference `later - earlier` of a counter that wraps at `bits` bits (1..=64).
///
/// A `bits` of 0 or above 64 is treated as 64.
#[inline]
pub const fn delta(earlier: u64, later: u64, bits: u32) -> u64 {
    let d = later.wrapping_sub(earlier);
    if bits == 0 || bits >= 64 {
        d
    } else {
        d & ((1u64 << bits) - 1)
    }
}

/// A mutable reference to a source is a source: a [`Scope`] can borrow a source that keeps
/// state (an open PMU group, say) or own a zero-sized one such as `Rdtsc`.
impl<S: CounterSource + ?Sized> CounterSource for &mut S {
    #[inline]
    fn values(&self) -> usize {
        (**self).values()
    }

    #[inline]
    fn value_bits(&self) -> u32 {
        (**self).value_bits()
    }

    #[inline]
    fn sample_into(&mut self, out: &mut [u64]) -> Result<(), SourceError> {
        (**self).sample_into(out)
    }

    #[inline]
    fn sample_first(&mut self) -> Result<u64, SourceError> {
        (**self).sample_first()
    }
}

/// Implements [`CounterSource`] for a one-value source with an infallible `read(&self)`.
// Unused on targets without a built-in source (thumbv6m, for one).
#[allow(unused_macros)]
macro_rules! one_value_source {
    ($ty:ty, $bits:expr) => {
        impl CounterSource for $ty {
            #[inline]
            fn values(&self) -> usize {
                1
            }

            #[inline]
            fn value_bits(&self) -> u32 {
                $bits
            }

            #[inline]
            fn sample_into(&mut self, out: &mut [u64]) -> Result<(), SourceError> {
                match out.first_mut() {
                    Some(slot) => {
                        *slot = u64::from(self.read());
                        Ok(())
                    }
                    None => Err(SourceError::BufferTooShort),
                }
            }

            #[inline]
            fn sample_first(&mut self) -> Result<u64, SourceError> {
                Ok(u64::from(self.read()))
            }
        }
    };
}

// ---------------------------------------------------------------------------------------------
// x86 / x86_64: rdtsc, rdtscp
// ---------------------------------------------------------------------------------------------

#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
pub use x86::{Rdtsc, Rdtscp};

#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
mod x86 {
    use super::{CounterSource, SourceError};

    #[cfg(target_arch = "x86")]
    use core::arch::x86 as arch;
    #[cfg(target_arch = "x86_64")]
    use core::arch::x86_64 as arch;

    /// The x86 time-stamp counter, read with `rdtsc`.
    ///
    /// On x86 CPUs of the last fifteen years the TSC is *invariant* (CPUID `80000007H`
    /// `EDX[8]`): it ticks at a constant nominal rate whatever the core frequency or sleep
    /// state. It therefore counts *reference* cycles, which are core cycles only while the core
    /// runs at its nominal frequency. To count core cycles, use a PMU counter.
    ///
    /// # Ordering
    ///
    /// `rdtsc` is not serializing: the CPU may execute it before earlier instructions have
    /// finished, and later instructions may start before it. Across intervals of a few hundred
    /// cycles or more this is noise. For shorter intervals, end them with [`Rdtscp`], which
    /// waits for earlier instructions. The compiler does not move memory accesses across the
    /// read.
    ///
    /// # Traps
    ///
    /// An operating system can forbid `rdtsc` in user mode (`CR4.TSD`, Linux
    /// `prctl(PR_SET_TSC, PR_TSC_SIGSEGV)`). The read then faults (`SIGSEGV` on Linux): it
    /// never returns a wrong value.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(any(target_arch = "x86", target_arch = "x86_64"))] {
    /// use picollo_core::source::{CounterSource, Rdtsc};
    ///
    /// let mut tsc = Rdtsc::new();
    /// let a = tsc.sample_first()?;
    /// let b = tsc.sample_first()?;
    /// assert!(b >= a);
    /// # }
    /// # Ok::<(), picollo_core::source::SourceError>(())
    /// ```
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Rdtsc {
        _private: (),
    }

    impl Rdtsc {
        /// A TSC source. Every x86 CPU that runs Rust code has `rdtsc`.
        #[inline]
        pub const fn new() -> Self {
            Self { _private: () }
        }

        /// Reads the time-stamp counter.
        #[inline]
        pub fn read(&self) -> u64 {
            // SAFETY: `rdtsc` exists on every x86 CPU Rust supports (Pentium and later) and
            // touches no memory. If the OS forbids it in user mode it faults; it is never UB.
            unsafe { arch::_rdtsc() }
        }
    }

    one_value_source!(Rdtsc, 64);

    /// The x86 time-stamp counter, read with `rdtscp`.
    ///
    /// Same counter as [`Rdtsc`] (see there for what a tick is), but `rdtscp` waits until all
    /// earlier instructions have executed and earlier loads are globally visible before it
    /// reads. Later instructions may still start before it; for the tightest bound on the
    /// start of an interval, put an `lfence` after it. `rdtscp` also returns `IA32_TSC_AUX`,
    /// which Linux sets to `cpu | node << 12` (see [`Rdtscp::read_with_aux`]), so a caller can
    /// discard intervals that migrated between CPUs.
    ///
    /// `rdtscp` is absent from some old CPUs (before Intel Nehalem and AMD K8 revision F), so
    /// [`Rdtscp::new`] checks CPUID first.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(any(target_arch = "x86", target_arch = "x86_64"))] {
    /// use picollo_core::source::{CounterSource, Rdtscp};
    ///
    /// if let Ok(mut tsc) = Rdtscp::new() {
    ///     let a = tsc.sample_first()?;
    ///     let b = tsc.sample_first()?;
    ///     assert!(b >= a);
    /// }
    /// # }
    /// # Ok::<(), picollo_core::source::SourceError>(())
    /// ```
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Rdtscp {
        _private: (),
    }

    impl Rdtscp {
        /// An `rdtscp` source, or [`SourceError::Unavailable`] when CPUID says the CPU has no
        /// `rdtscp` (CPUID `80000001H` `EDX[27]`).
        #[inline]
        pub fn new() -> Result<Self, SourceError> {
            if Self::is_supported() {
                Ok(Self { _private: () })
            } else {
                Err(SourceError::Unavailable)
            }
        }

        /// An `rdtscp` source without the CPUID check.
        ///
        /// # Safety
        ///
        /// The CPU must implement `rdtscp` (see [`Rdtscp::is_supported`]). Executing it on a
        /// CPU without it raises an invalid-opcode fault.
        #[inline]
        pub const unsafe fn new_unchecked() -> Self {
            Self { _private: () }
        }

        /// Whether this CPU implements `rdtscp`, according to CPUID.
        pub fn is_supported() -> bool {
            // SAFETY: every x86 CPU Rust supports (i586 and later) has `cpuid`. Leaf 80000000H
            // is defined on all of them and returns the highest extended leaf; 80000001H is
            // read only when it exists. `__cpuid` became a safe fn after the MSRV (1.88),
            // hence the allow.
            #[allow(unused_unsafe)]
            unsafe {
                let max_extended = arch::__cpuid(0x8000_0000).eax;
                max_extended >= 0x8000_0001 && arch::__cpuid(0x8000_0001).edx & (1 << 27) != 0
            }
        }

        /// Reads the time-stamp counter.
        #[inline]
        pub fn read(&self) -> u64 {
            self.read_with_aux().0
        }

        /// Reads the time-stamp counter and `IA32_TSC_AUX` (on Linux, `cpu | node << 12`).
        #[inline]
        pub fn read_with_aux(&self) -> (u64, u32) {
            let mut aux = 0u32;
            // SAFETY: a `Rdtscp` exists only when the CPU implements `rdtscp` (checked by
            // `new`, or promised by the caller of `new_unchecked`); it writes only `aux`.
            let tsc = unsafe { arch::__rdtscp(&mut aux) };
            (tsc, aux)
        }
    }

    one_value_source!(Rdtscp, 64);
}

// ---------------------------------------------------------------------------------------------
// aarch64: cntvct_el0
// ---------------------------------------------------------------------------------------------

#[cfg(target_arch = "aarch64")]
pub use aarch64::{CntVct, CntVctIsb};

#[cfg(target_arch = "aarch64")]
mod aarch64 {
    use super::{CounterSource, SourceError};
    use core::arch::asm;

    /// Reads `cntfrq_el0`.
    #[inline]
    fn cntfrq() -> u64 {
        let f: u64;
        // SAFETY: `cntfrq_el0` is readable at EL0 and above whenever `cntvct_el0` is (the same
        // `CNTKCTL_EL1` bits gate both); the read touches no memory, stack or flags.
        unsafe { asm!("mrs {}, cntfrq_el0", out(reg) f, options(nomem, nostack, preserves_flags)) };
        f
    }

    /// The Arm generic timer's virtual count, `cntvct_el0`, read with a plain `mrs`.
    ///
    /// This is a *timer*, not a cycle counter: it ticks at [`CntVct::frequency`] (1 GHz on
    /// Armv8.6 and later; often 19.2 MHz to 100 MHz before, 24 MHz on Apple silicon). It is
    /// at least 56 bits wide and does not wrap for at least 40 years, so deltas wrap at 64.
    ///
    /// Linux, macOS and Windows let user mode read it (Linux uses it for the vDSO clock). On
    /// bare metal, EL0 needs `CNTKCTL_EL1.EL0VCTEN`; without it the read traps, it never
    /// returns a wrong value.
    ///
    /// # Ordering
    ///
    /// `mrs cntvct_el0` is not ordered with the instructions around it: the CPU may read the
    /// counter before earlier instructions have finished. That is fine for intervals much
    /// longer than one tick, which is most uses at these frequencies. [`CntVctIsb`] puts an
    /// `isb` before the read, as Linux does, so the read cannot be hoisted above earlier
    /// instructions. The compiler does not move memory accesses across either read.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct CntVct {
        _private: (),
    }

    impl CntVct {
        /// A `cntvct_el0` source.
        #[inline]
        pub const fn new() -> Self {
            Self { _private: () }
        }

        /// Reads `cntvct_el0`.
        #[inline]
        pub fn read(&self) -> u64 {
            let v: u64;
            // SAFETY: reading `cntvct_el0` touches no memory, stack or flags; where EL0 access
            // is disabled it traps rather than misbehaving. No `nomem`, so the compiler keeps
            // memory accesses on their side of the read.
            unsafe { asm!("mrs {}, cntvct_el0", out(reg) v, options(nostack, preserves_flags)) };
            v
        }

        /// Ticks per second of the counter, from `cntfrq_el0` (as firmware programmed it).
        #[inline]
        pub fn frequency(&self) -> u64 {
            cntfrq()
        }
    }

    one_value_source!(CntVct, 64);

    /// `cntvct_el0` read as `isb; mrs`: the same counter as [`CntVct`], but the read cannot be
    /// executed before earlier instructions. Costs a pipeline flush (tens of cycles) per read.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct CntVctIsb {
        _private: (),
    }

    impl CntVctIsb {
        /// A `cntvct_el0` source with an `isb` before each read.
        #[inline]
        pub const fn new() -> Self {
            Self { _private: () }
        }

        /// Reads `cntvct_el0` after an `isb`.
        #[inline]
        pub fn read(&self) -> u64 {
            let v: u64;
            // SAFETY: `isb` and the `cntvct_el0` read touch no memory, stack or flags; where
            // EL0 access is disabled the read traps rather than misbehaving.
            unsafe {
                asm!("isb", "mrs {}, cntvct_el0", out(reg) v, options(nostack, preserves_flags))
            };
            v
        }

        /// Ticks per second of the counter, from `cntfrq_el0`.
        #[inline]
        pub fn frequency(&self) -> u64 {
            cntfrq()
        }
    }

    one_value_source!(CntVctIsb, 64);
}

// ---------------------------------------------------------------------------------------------
// Cortex-M (Armv7-M, Armv8-M): DWT CYCCNT
// ---------------------------------------------------------------------------------------------

// Which Arm targets get `DwtCycCnt`: bare-metal M-profile cores with the Armv7-M or Armv8-M
// architecture. Stable Rust does not expose the Arm target features (`mclass`, `v7`) to `cfg`,
// so the condition uses the atomics the target has instead:
// - Armv6-M (thumbv6m, Cortex-M0/M0+/M1) has no CAS, so no `target_has_atomic = "32"`, and
//   also has no cycle counter: excluded.
// - Armv7-M/Armv8-M (thumbv7m, thumbv7em, thumbv8m.*) have 32-bit CAS but no 64-bit atomics.
// - The A and R profiles (armv7a/armv7r/armv8r-none-*) have 64-bit atomics (`ldrexd`):
//   excluded.
// The one non-M target that still matches is the tier-3 `thumbv6-none-eabi`; the `# Safety`
// sections below require an M-profile core.
#[cfg(all(
    target_arch = "arm",
    target_os = "none",
    target_has_atomic = "32",
    not(target_has_atomic = "64")
))]
pub use cortex_m::DwtCycCnt;

#[cfg(all(
    target_arch = "arm",
    target_os = "none",
    target_has_atomic = "32",
    not(target_has_atomic = "64")
))]
mod cortex_m {
    use super::{CounterSource, SourceError};
    use core::ptr;
    use core::sync::atomic::{compiler_fence, Ordering};

    /// Debug Exception and Monitor Control Register.
    const DEMCR: usize = 0xE000_EDFC;
    /// `DEMCR.TRCENA`: enables the DWT and ITM.
    const DEMCR_TRCENA: u32 = 1 << 24;
    /// DWT Control Register.
    const DWT_CTRL: usize = 0xE000_1000;
    /// `DWT_CTRL.CYCCNTENA`: the cycle counter counts.
    const DWT_CTRL_CYCCNTENA: u32 = 1 << 0;
    /// `DWT_CTRL.NOCYCCNT`: the cycle counter is not implemented.
    const DWT_CTRL_NOCYCCNT: u32 = 1 << 25;
    /// DWT Cycle Count Register.
    const DWT_CYCCNT: usize = 0xE000_1004;
    /// DWT Lock Access Register (CoreSight software lock; implemented on Cortex-M7).
    const DWT_LAR: usize = 0xE000_1FB0;
    /// The key that unlocks [`DWT_LAR`].
    const DWT_LAR_KEY: u32 = 0xC5AC_CE55;

    /// # Safety
    /// `addr` is a readable system-control-space register and the core is privileged.
    #[inline]
    unsafe fn read_reg(addr: usize) -> u32 {
        // SAFETY: the caller guarantees `addr` is a readable, aligned register.
        unsafe { ptr::read_volatile(ptr::with_exposed_provenance::<u32>(addr)) }
    }

    /// # Safety
    /// `addr` is a writable system-control-space register and the core is privileged.
    #[inline]
    unsafe fn write_reg(addr: usize, value: u32) {
        // SAFETY: the caller guarantees `addr` is a writable, aligned register.
        unsafe { ptr::write_volatile(ptr::with_exposed_provenance_mut::<u32>(addr), value) }
    }

    /// The Cortex-M DWT cycle counter, `DWT_CYCCNT` at `0xE000_1004`: core clock cycles,
    /// 32 bits wide (it wraps every `2^32` cycles, 21 s at 200 MHz; [`delta`](super::delta)
    /// handles one wrap).
    ///
    /// Compiled for bare-metal Armv7-M and Armv8-M targets (`thumbv7m`, `thumbv7em`,
    /// `thumbv8m.*`), not for `thumbv6m`: Armv6-M (Cortex-M0/M0+) has no cycle counter. Even on
    /// Armv7-M and Armv8-M the counter is optional; [`DwtCycCnt::enable`] checks
    /// `DWT_CTRL.NOCYCCNT`.
    ///
    /// The counter must be enabled before it counts; [`DwtCycCnt::enable`] does that.
    ///
    /// The compiler does not move memory accesses across a read. Cortex-M pipelines are in
    /// order, so the CPU does not either.
    ///
    /// # Examples
    ///
    /// ```ignore
    /// use picollo_core::source::{CounterSource, DwtCycCnt};
    ///
    /// // SAFETY: privileged code on a Cortex-M4; nothing else touches DEMCR or the DWT.
    /// let mut cycles = unsafe { DwtCycCnt::enable() }.expect("no cycle counter");
    /// let a = cycles.sample_first().unwrap();
    /// ```
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    #[cfg_attr(feature = "defmt", derive(defmt::Format))]
    pub struct DwtCycCnt {
        _private: (),
    }

    impl DwtCycCnt {
        /// Enables the cycle counter and returns a source that reads it.
        ///
        /// Steps: set `DEMCR.TRCENA` (bit 24 of `0xE000_EDFC`), which powers the DWT; write
        /// the CoreSight unlock key to `DWT_LAR` (`0xE000_1FB0`; needed on Cortex-M7, ignored
        /// where the lock is not implemented); check that `DWT_CTRL.NOCYCCNT` (bit 25 of
        /// `0xE000_1000`) is clear; set `DWT_CTRL.CYCCNTENA` (bit 0) and read it back. The
        /// counter is not reset.
        ///
        /// Returns [`SourceError::Unavailable`] when the core has no cycle counter, or the
        /// enable bit did not stick (a debugger or the security state may own the DWT).
        ///
        /// # Safety
        ///
        /// - The core is an Armv7-M or Armv8-M Cortex-M core (the addresses above are its
        ///   system control space), and this code runs in privileged mode: unprivileged
        ///   accesses fault.
        /// - Nothing else modifies `DEMCR` or `DWT_CTRL` while this runs (these are
        ///   read-modify-write updates); in particular no interrupt handler. Code that owns
        ///   the DWT through another crate (`cortex_m::peripheral::DWT`) must not run
        ///   concurrently.
        pub unsafe fn enable() -> Result<Self, SourceError> {
            // SAFETY: the caller guarantees an Armv7-M/Armv8-M core in privileged mode, so
            // these are the documented, aligned SCS/DWT registers, and no concurrent writer.
            unsafe {
                write_reg(DEMCR, read_reg(DEMCR) | DEMCR_TRCENA);
                write_reg(DWT_LAR, DWT_LAR_KEY);
                let ctrl = read_reg(DWT_CTRL);
                if ctrl & DWT_CTRL_NOCYCCNT != 0 {
                    return Err(SourceError::Unavailable);
                }
                write_reg(DWT_CTRL, ctrl | DWT_CTRL_CYCCNTENA);
                if read_reg(DWT_CTRL) & DWT_CTRL_CYCCNTENA == 0 {
                    return Err(SourceError::Unavailable);
                }
            }
            Ok(Self { _private: () })
        }

        /// A source for a cycle counter that is already enabled (by a debugger, startup code,
        /// or `cortex_m::peripheral::DWT::enable_cycle_counter`).
        ///
        /// # Safety
        ///
        /// The core is an Armv7-M or Armv8-M Cortex-M core with a cycle counter, and every
        /// read happens in privileged mode. If the counter is not enabled, reads return a
        /// constant and every delta is 0.
        #[inline]
        pub const unsafe fn new_unchecked() -> Self {
            Self { _private: () }
        }

        /// Reads `DWT_CYCCNT`.
        #[inline]
        pub fn read(&self) -> u32 {
            compiler_fence(Ordering::SeqCst);
            // SAFETY: a `DwtCycCnt` exists only on an Armv7-M/Armv8-M core with a cycle
            // counter, read in privileged mode (`enable`/`new_unchecked` contracts); CYCCNT is
            // an aligned, always-readable register there.
            let v = unsafe { read_reg(DWT_CYCCNT) };
            compiler_fence(Ordering::SeqCst);
            v
        }
    }

    one_value_source!(DwtCycCnt, 32);
}

// ---------------------------------------------------------------------------------------------
// RISC-V: rdcycle
// ---------------------------------------------------------------------------------------------

#[cfg(any(target_arch = "riscv32", target_arch = "riscv64"))]
pub use riscv::RdCycle;

#[cfg(any(target_arch = "riscv32", target_arch = "riscv64"))]
mod riscv {
    use super::{CounterSource, SourceError};
    use core::arch::asm;

    /// The RISC-V `cycle` CSR (Zicntr), read with `rdcycle`: core clock cycles, 64 bits.
    ///
    /// On riscv32 the counter is read as `cycleh`, `cycle`, `cycleh` and retried until both
    /// high halves agree, so the 64-bit value is never torn.
    ///
    /// # Traps
    ///
    /// Machine mode can always read `cycle`. Lower privilege levels need the `CY` bit of
    /// `mcounteren` (and `scounteren` for user mode); otherwise the read raises an
    /// illegal-instruction exception, it never returns a wrong value. Linux 6.6 and later
    /// disable user-mode `rdcycle` unless `sysctl kernel.perf_user_access=2`.
    ///
    /// # Ordering
    ///
    /// CSR reads of `cycle` are not ordered with surrounding instructions on out-of-order
    /// cores; on the in-order cores of microcontrollers this does not matter. The compiler does
    /// not move memory accesses across a read.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    #[cfg_attr(feature = "defmt", derive(defmt::Format))]
    pub struct RdCycle {
        _private: (),
    }

    impl RdCycle {
        /// A `cycle` CSR source.
        #[inline]
        pub const fn new() -> Self {
            Self { _private: () }
        }

        /// Reads the 64-bit cycle counter.
        #[cfg(target_arch = "riscv64")]
        #[inline]
        pub fn read(&self) -> u64 {
            let v: u64;
            // SAFETY: `rdcycle` reads a CSR and touches no memory or stack; where the counter
            // is not accessible it traps rather than misbehaving.
            unsafe { asm!("rdcycle {}", out(reg) v, options(nostack, preserves_flags)) };
            v
        }

        /// Reads the 64-bit cycle counter.
        #[cfg(target_arch = "riscv32")]
        #[inline]
        pub fn read(&self) -> u64 {
            loop {
                let (hi, lo, hi2): (u32, u32, u32);
                // SAFETY: `rdcycleh`/`rdcycle` read CSRs and touch no memory or stack; where
                // the counter is not accessible they trap rather than misbehaving.
                unsafe {
                    asm!(
                        "rdcycleh {0}",
                        "rdcycle {1}",
                        "rdcycleh {2}",
                        out(reg) hi,
                        out(reg) lo,
                        out(reg) hi2,
                        options(nostack, preserves_flags),
                    )
                };
                // The high half changes once per 2^32 cycles, so this retries at most once.
                if hi == hi2 {
                    return (u64::from(hi) << 32) | u64::from(lo);
                }
            }
        }
    }

    one_value_source!(RdCycle, 64);
}

// ---------------------------------------------------------------------------------------------
// Scopes
// ---------------------------------------------------------------------------------------------

/// An RAII guard that samples a source when created and records the delta into a recorder
/// when dropped: the `using (h.GetTickScope())` of Picollo for .NET, for `no_std`.
///
/// - The recorder is held by value as any [`Record`]. Pass `&mut histogram` for a plain
///   histogram (`&mut R` is a `Record` when `R` is), or `&shared` for a shared kind such as
///   `AtomicHistogram`, which implements `Record` for `&AtomicHistogram`.
/// - The source is held by value too. Pass `&mut source` to borrow a source that keeps state
///   (an open PMU group; `&mut S` is a `CounterSource` when `S` is), or pass a zero-sized
///   source such as `Rdtsc::new()` by value.
/// - Only the first value of each sample is used ([`CounterSource::sample_first`]); the delta
///   wraps at [`CounterSource::value_bits`] (see [`delta`]).
/// - If either sample fails, nothing is recorded. `Drop` does this silently; call
///   [`Scope::finish`] to end the scope explicitly and see the delta or the error.
///
/// Bind the guard to a named variable: `let _s = scope(..)`. `let _ = scope(..)` drops it at
/// once and records an empty interval.
///
/// Creating and dropping a scope over `Rdtsc` compiles to the two `rdtsc`, a subtraction and
/// the recorder's `record`: everything is `#[inline]`.
///
/// # Examples
///
/// ```
/// use picollo_core::source::{scope, CounterSource, SourceError};
/// use picollo_core::{storage_len, AtomicHistogram, Histogram, Layout, ReadExt};
/// use portable_atomic::AtomicU64;
///
/// /// A fake clock that advances 10 ticks per sample.
/// struct Fake(u64);
/// impl CounterSource for Fake {
///     fn values(&self) -> usize {
///         1
///     }
///     fn sample_into(&mut self, out: &mut [u64]) -> Result<(), SourceError> {
///         *out.first_mut().ok_or(SourceError::BufferTooShort)? = self.sample_first()?;
///         Ok(())
///     }
///     fn sample_first(&mut self) -> Result<u64, SourceError> {
///         self.0 += 10;
///         Ok(self.0)
///     }
/// }
///
/// const L: Layout = Layout::DEFAULT;
/// const LEN: usize = storage_len(L, 1, 1 << 20);
/// let mut clock = Fake(0);
///
/// // A plain histogram: borrow it mutably.
/// let mut h = Histogram::<[u64; LEN]>::new(L, 1, 1 << 20);
/// {
///     let _s = scope(&mut h, &mut clock);
///     // ... the measured code ...
/// } // records 10 here
/// assert_eq!(h.total(), 1);
///
/// // A shared kind: a shared reference is the recorder, so many threads can scope into it.
/// let shared = AtomicHistogram::<[AtomicU64; LEN]>::new(L, 1, 1 << 20);
/// {
///     let _s = scope(&shared, &mut clock);
/// }
/// assert_eq!(shared.total(), 1);
///
/// // An explicit end returns the delta (and records it).
/// let s = scope(&mut h, &mut clock);
/// assert_eq!(s.finish(), Ok(10));
/// assert_eq!(h.total(), 2);
/// ```
#[must_use = "a scope records when dropped: bind it with `let _s = ...`, not `let _ = ...`"]
pub struct Scope<R: Record, S: CounterSource> {
    recorder: R,
    source: S,
    /// The first sample; `None` once the scope has ended (finished or cancelled).
    start: Option<Result<u64, SourceError>>,
}

impl<R: Record, S: CounterSource> Scope<R, S> {
    /// Starts a scope: samples `source` now; the delta goes into `recorder` when the scope
    /// ends. A failed sample is remembered and makes the scope record nothing.
    #[inline]
    pub fn new(recorder: R, mut source: S) -> Self {
        let start = source.sample_first();
        Self {
            recorder,
            source,
            start: Some(start),
        }
    }

    /// Ends the scope now: samples the source, records the delta and returns it.
    ///
    /// Returns the error of the first or the last sample if either failed; then nothing is
    /// recorded.
    #[inline]
    pub fn finish(mut self) -> Result<u64, SourceError> {
        match self.end() {
            Some(result) => result,
            // `start` is `None` only after `end` ran, and `finish` and `cancel` consume `self`,
            // so this is not reached.
            None => Err(SourceError::Unavailable),
        }
    }

    /// Ends the scope without sampling or recording anything (for example on an error path
    /// that should not count).
    #[inline]
    pub fn cancel(mut self) {
        self.start = None;
    }

    /// Samples the end, records and returns the delta; `None` if the scope already ended.
    #[inline]
    fn end(&mut self) -> Option<Result<u64, SourceError>> {
        let start = self.start.take()?;
        Some(start.and_then(|start| {
            let end = self.source.sample_first()?;
            let d = delta(start, end, self.source.value_bits());
            self.recorder.record(d);
            Ok(d)
        }))
    }
}

impl<R: Record, S: CounterSource> Drop for Scope<R, S> {
    #[inline]
    fn drop(&mut self) {
        // A failed sample records nothing; `finish` is the way to observe it.
        let _ = self.end();
    }
}

impl<R: Record, S: CounterSource + core::fmt::Debug> core::fmt::Debug for Scope<R, S> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Scope")
            .field("source", &self.source)
            .field("start", &self.start)
            .finish_non_exhaustive()
    }
}

/// Starts a [`Scope`] that records the delta of `source` into `recorder` when dropped.
///
/// `scope(&mut histogram, &mut source)` borrows both; `scope(&shared_histogram, Rdtsc::new())`
/// records into a shared kind and owns the (zero-sized) source.
#[inline]
pub fn scope<R: Record, S: CounterSource>(recorder: R, source: S) -> Scope<R, S> {
    Scope::new(recorder, source)
}
