//! The CPU instructions the fast path needs ([`CounterInstructions`]) and the real ones
//! ([`NativeInstructions`]): `RDPMC`/`RDTSC` on x86_64, `MRS` of the PMU registers and
//! `CNTVCT_EL0` on arm64 ([`Arm64Counter`] names the register a page's index selects).

/// The CPU instructions the fast path needs, behind a trait so tests can fake them.
pub trait CounterInstructions {
    /// Whether [`CounterInstructions::rdpmc`] can be called at all on this architecture.
    const HAS_RDPMC: bool;

    /// Reads performance counter `counter` (the `ecx` operand of RDPMC).
    ///
    /// # Safety
    ///
    /// User-space RDPMC must be enabled for this task and `counter` must be a counter the kernel
    /// handed out: call it only inside a [`read_page`](crate::page::read_page)-style seqlock
    /// section on a page that says `cap_user_rdpmc` with `index == counter + 1`. Otherwise the CPU
    /// raises #GP (SIGSEGV).
    unsafe fn rdpmc(&self, counter: u32) -> u64;

    /// Whether [`CounterInstructions::rdpmc`] can read counter `counter` at all (arm64 has
    /// registers for 0 to 32 only); [`read_page`](crate::page::read_page) falls back to `read()`
    /// otherwise.
    fn can_read(&self, counter: u32) -> bool {
        let _ = counter;
        true
    }

    /// Reads the time-stamp counter (on arm64, the virtual counter `CNTVCT_EL0`).
    fn rdtsc(&self) -> u64;
}

/// The register an arm64 page's `index - 1` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Arm64Counter {
    /// `PMEVCNTR<n>_EL0`, a programmable event counter (`n` in 0..=30).
    Event(u8),
    /// `PMCCNTR_EL0`, the cycle counter (page index 32).
    Cycle,
    /// `PMICNTR_EL0`, the fixed instruction counter of FEAT_PMUv3_ICNTR (page index 33).
    Instruction,
}

impl Arm64Counter {
    /// The register for counter `counter` (the page's `index - 1`); `None` past 32.
    pub(crate) const fn from_counter(counter: u32) -> Option<Self> {
        match counter {
            0..=30 => Some(Self::Event(counter as u8)),
            31 => Some(Self::Cycle),
            32 => Some(Self::Instruction),
            _ => None,
        }
    }
}

/// Reads an arm64 system register by name (`MRS`).
#[cfg(target_arch = "aarch64")]
macro_rules! mrs {
    ($reg:literal) => {{
        let v: u64;
        // SAFETY: reading a PMU or timer register at EL0; the caller of `rdpmc` guarantees
        // user access is enabled for it (the page says so), and `CNTVCT_EL0` is always
        // readable at EL0 on Linux. MRS has no memory effects; no `nomem`, so the read stays
        // between the seqlock's loads.
        unsafe {
            core::arch::asm!(concat!("mrs {}, ", $reg), out(reg) v, options(nostack, preserves_flags));
        }
        v
    }};
}

/// Reads `PMEVCNTR<n>_EL0` (the register number is part of the instruction).
#[cfg(target_arch = "aarch64")]
fn read_pmevcntr(n: u8) -> u64 {
    macro_rules! arms {
        ($($n:literal => $reg:literal),* $(,)?) => {
            match n {
                $($n => mrs!($reg),)*
                _ => 0,
            }
        };
    }
    arms! {
        0 => "pmevcntr0_el0", 1 => "pmevcntr1_el0", 2 => "pmevcntr2_el0",
        3 => "pmevcntr3_el0", 4 => "pmevcntr4_el0", 5 => "pmevcntr5_el0",
        6 => "pmevcntr6_el0", 7 => "pmevcntr7_el0", 8 => "pmevcntr8_el0",
        9 => "pmevcntr9_el0", 10 => "pmevcntr10_el0", 11 => "pmevcntr11_el0",
        12 => "pmevcntr12_el0", 13 => "pmevcntr13_el0", 14 => "pmevcntr14_el0",
        15 => "pmevcntr15_el0", 16 => "pmevcntr16_el0", 17 => "pmevcntr17_el0",
        18 => "pmevcntr18_el0", 19 => "pmevcntr19_el0", 20 => "pmevcntr20_el0",
        21 => "pmevcntr21_el0", 22 => "pmevcntr22_el0", 23 => "pmevcntr23_el0",
        24 => "pmevcntr24_el0", 25 => "pmevcntr25_el0", 26 => "pmevcntr26_el0",
        27 => "pmevcntr27_el0", 28 => "pmevcntr28_el0", 29 => "pmevcntr29_el0",
        30 => "pmevcntr30_el0",
    }
}

/// The real counter instructions: `RDPMC` and `RDTSC` on x86_64, `MRS` of the PMU
/// registers and `CNTVCT_EL0` on arm64. Elsewhere [`CounterInstructions::HAS_RDPMC`] is
/// false and the fast path always falls back.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct NativeInstructions;

impl CounterInstructions for NativeInstructions {
    const HAS_RDPMC: bool = cfg!(any(target_arch = "x86_64", target_arch = "aarch64"));

    #[inline]
    unsafe fn rdpmc(&self, counter: u32) -> u64 {
        #[cfg(target_arch = "x86_64")]
        {
            let lo: u32;
            let hi: u32;
            // SAFETY: the caller guarantees user-space RDPMC is enabled and `counter` is valid
            // (see the trait's contract). RDPMC only writes eax/edx. No `nomem`: the asm must
            // stay between the seqlock's loads of `lock`.
            unsafe {
                core::arch::asm!(
                    "rdpmc",
                    in("ecx") counter,
                    out("eax") lo,
                    out("edx") hi,
                    options(nostack, preserves_flags),
                );
            }
            (u64::from(hi) << 32) | u64::from(lo)
        }
        #[cfg(target_arch = "aarch64")]
        {
            match Arm64Counter::from_counter(counter) {
                Some(Arm64Counter::Event(n)) => read_pmevcntr(n),
                Some(Arm64Counter::Cycle) => mrs!("pmccntr_el0"),
                // PMICNTR_EL0 by its encoding (op0 3, op1 3, CRn 9, CRm 4, op2 0): older
                // assemblers do not know the name.
                Some(Arm64Counter::Instruction) => mrs!("s3_3_c9_c4_0"),
                None => 0,
            }
        }
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        {
            let _ = counter;
            0
        }
    }

    #[inline]
    fn can_read(&self, counter: u32) -> bool {
        if cfg!(target_arch = "aarch64") {
            Arm64Counter::from_counter(counter).is_some()
        } else {
            true
        }
    }

    #[inline]
    fn rdtsc(&self) -> u64 {
        #[cfg(target_arch = "x86_64")]
        {
            let lo: u32;
            let hi: u32;
            // SAFETY: RDTSC is available on every x86_64 CPU and only writes eax/edx. Linux
            // allows it in user space unless the process opted out with PR_SET_TSC, in which
            // case it raises SIGSEGV (no undefined behaviour).
            unsafe {
                core::arch::asm!(
                    "rdtsc",
                    out("eax") lo,
                    out("edx") hi,
                    options(nostack, preserves_flags),
                );
            }
            (u64::from(hi) << 32) | u64::from(lo)
        }
        #[cfg(target_arch = "aarch64")]
        {
            mrs!("cntvct_el0")
        }
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        {
            0
        }
    }
}
