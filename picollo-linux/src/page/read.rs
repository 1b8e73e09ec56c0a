//! The page's layout and the read itself: [`read_page`] loops on the page's seqcount, adds
//! the counter read through [`CounterInstructions`] to the kernel's offset and extrapolates
//! the times; [`Fallback`] says why `read()` must be used instead. This is the hot path of
//! every rdpmc read: its `#[inline]`s are deliberate.

use core::ptr::{addr_of_mut, NonNull};
use core::sync::atomic::{fence, AtomicI64, AtomicU16, AtomicU32, AtomicU64, Ordering};

use super::instructions::CounterInstructions;

/// The kernel's `struct perf_event_mmap_page` (uapi layout, from `perf-event-open-sys`).
pub use perf_event_open_sys::bindings::perf_event_mmap_page as MmapPage;

/// `capabilities` bit: the RDPMC instruction can read the counter.
pub const CAP_USER_RDPMC: u64 = 1 << 2;
/// `capabilities` bit: `time_shift`, `time_mult` and `time_offset` are valid.
pub const CAP_USER_TIME: u64 = 1 << 3;
/// `capabilities` bit: `time_cycles` and `time_mask` are valid (the TSC is narrower than 64 bits
/// for the conversion).
pub(crate) const CAP_USER_TIME_SHORT: u64 = 1 << 5;

/// How many torn reads [`read_page`] retries before giving up with
/// [`Fallback::Contended`]. The kernel updates the page from interrupts on the reading CPU, so
/// a real read retries at most a few times.
pub(crate) const MAX_RETRIES: u32 = 1 << 16;

/// A count and its times, read from a page (or from the group `read()`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PageCounts {
    /// `offset + sign_extend(rdpmc(index - 1), pmc_width)`: the count since the event was
    /// enabled.
    pub value: u64,
    /// Nanoseconds the event was enabled, extrapolated to now.
    pub time_enabled: u64,
    /// Nanoseconds the event was on a counter, extrapolated to now.
    pub time_running: u64,
    /// How many torn reads were retried.
    pub retries: u32,
}

/// Why the page could not give the count, so `read()` must.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fallback {
    /// This architecture has no RDPMC path here.
    NoRdpmcInstruction,
    /// `cap_user_rdpmc` is 0 (software events, RDPMC disabled in sysfs, or no PMU).
    NoUserRdpmc,
    /// `index` is 0: the event is not on a hardware counter right now.
    IndexZero,
    /// `pmc_width` is 0, so the hardware count cannot be sign-extended.
    ZeroWidth,
    /// `index - 1` names no counter these instructions can read (arm64: past 32).
    NoSuchCounter,
    /// `cap_user_time` is 0 (or `time_shift` is out of range), so the times cannot be
    /// extrapolated.
    NoUserTime,
    /// The page changed under 65,536 reads in a row.
    Contended,
}

/// The outcome of [`read_page`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageRead {
    /// The page (and RDPMC) gave a consistent count.
    Counted(PageCounts),
    /// Fall back to `read()`.
    Fallback(Fallback),
}

/// Sign-extends the low `width` bits of `raw`: `((raw << (64 - w)) as i64) >> (64 - w)`.
/// A `width` of 0 gives 0; 64 and above use all bits.
#[inline]
pub(crate) const fn sign_extend(raw: u64, width: u16) -> i64 {
    if width == 0 {
        0
    } else if width >= 64 {
        raw as i64
    } else {
        let s = 64 - width as u32;
        ((raw << s) as i64) >> s
    }
}

/// The nanoseconds elapsed since the page's last update, from a TSC reading, as the uapi
/// header spells it. A `time_shift` of 64 or more (never valid) gives `time_offset`.
#[inline]
pub(crate) const fn time_delta(cyc: u64, page: TimeConversion) -> u64 {
    if page.time_shift >= 64 {
        return page.time_offset;
    }
    let cyc = if page.short {
        page.time_cycles
            .wrapping_add(cyc.wrapping_sub(page.time_cycles) & page.time_mask)
    } else {
        cyc
    };
    let shift = page.time_shift as u32;
    let mult = page.time_mult as u64;
    let quot = cyc >> shift;
    let rem = cyc & ((1u64 << shift) - 1);
    page.time_offset
        .wrapping_add(quot.wrapping_mul(mult))
        .wrapping_add(rem.wrapping_mul(mult) >> shift)
}

/// The TSC-to-time conversion fields of a page.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TimeConversion {
    /// `time_shift` (below 64).
    pub time_shift: u16,
    /// `time_mult`.
    pub time_mult: u32,
    /// `time_offset`.
    pub time_offset: u64,
    /// `cap_user_time_short`.
    pub short: bool,
    /// `time_cycles`.
    pub time_cycles: u64,
    /// `time_mask`.
    pub time_mask: u64,
}

/// Atomic views of the fields of one page.
pub(super) struct Fields<'a> {
    pub(super) lock: &'a AtomicU32,
    pub(super) index: &'a AtomicU32,
    pub(super) offset: &'a AtomicI64,
    pub(super) time_enabled: &'a AtomicU64,
    pub(super) time_running: &'a AtomicU64,
    pub(super) capabilities: &'a AtomicU64,
    pub(super) pmc_width: &'a AtomicU16,
    pub(super) time_shift: &'a AtomicU16,
    pub(super) time_mult: &'a AtomicU32,
    pub(super) time_offset: &'a AtomicU64,
    pub(super) time_cycles: &'a AtomicU64,
    pub(super) time_mask: &'a AtomicU64,
}

impl Fields<'_> {
    /// # Safety
    ///
    /// `p` must point to a `MmapPage` that is valid for reads and writes, aligned, stays alive
    /// while the views are used, and is accessed only atomically by other Rust code meanwhile.
    #[inline]
    pub(super) unsafe fn new(p: *mut MmapPage) -> Self {
        // SAFETY: each pointer is to a naturally aligned field of the page (the uapi layout
        // aligns every field to its size), valid for reads and writes per the caller; the
        // `capabilities` union is one u64 at offset 40.
        unsafe {
            Self {
                lock: AtomicU32::from_ptr(addr_of_mut!((*p).lock)),
                index: AtomicU32::from_ptr(addr_of_mut!((*p).index)),
                offset: AtomicI64::from_ptr(addr_of_mut!((*p).offset)),
                time_enabled: AtomicU64::from_ptr(addr_of_mut!((*p).time_enabled)),
                time_running: AtomicU64::from_ptr(addr_of_mut!((*p).time_running)),
                capabilities: AtomicU64::from_ptr(addr_of_mut!((*p).__bindgen_anon_1).cast()),
                pmc_width: AtomicU16::from_ptr(addr_of_mut!((*p).pmc_width)),
                time_shift: AtomicU16::from_ptr(addr_of_mut!((*p).time_shift)),
                time_mult: AtomicU32::from_ptr(addr_of_mut!((*p).time_mult)),
                time_offset: AtomicU64::from_ptr(addr_of_mut!((*p).time_offset)),
                time_cycles: AtomicU64::from_ptr(addr_of_mut!((*p).time_cycles)),
                time_mask: AtomicU64::from_ptr(addr_of_mut!((*p).time_mask)),
            }
        }
    }
}

/// Reads one counter through its mmap page (see the module docs).
///
/// # Safety
///
/// `page` must point to a `perf_event_mmap_page` that is valid for reads and writes (map it
/// `PROT_READ | PROT_WRITE`), aligned, alive for the call, and written concurrently only by the
/// kernel or by atomic stores. If the page may say `cap_user_rdpmc` with a non-zero `index`,
/// `ins.rdpmc` must be safe to call for that index: with
/// `NativeInstructions`, the event must belong to the calling
/// thread (self-monitoring), as the kernel's page describes the counter of the task running on this
/// CPU.
#[inline]
pub unsafe fn read_page<I: CounterInstructions>(page: NonNull<MmapPage>, ins: &I) -> PageRead {
    // SAFETY: forwarded from this function's contract.
    let f = unsafe { Fields::new(page.as_ptr()) };
    let mut retries = 0u32;
    loop {
        let seq = f.lock.load(Ordering::Acquire);
        if seq & 1 == 0 {
            let index = f.index.load(Ordering::Relaxed);
            let offset = f.offset.load(Ordering::Relaxed);
            let enabled = f.time_enabled.load(Ordering::Relaxed);
            let running = f.time_running.load(Ordering::Relaxed);
            let caps = f.capabilities.load(Ordering::Relaxed);
            let width = f.pmc_width.load(Ordering::Relaxed);
            let conv = TimeConversion {
                time_shift: f.time_shift.load(Ordering::Relaxed),
                time_mult: f.time_mult.load(Ordering::Relaxed),
                time_offset: f.time_offset.load(Ordering::Relaxed),
                short: caps & CAP_USER_TIME_SHORT != 0,
                time_cycles: f.time_cycles.load(Ordering::Relaxed),
                time_mask: f.time_mask.load(Ordering::Relaxed),
            };
            let outcome = if !I::HAS_RDPMC {
                Err(Fallback::NoRdpmcInstruction)
            } else if caps & CAP_USER_RDPMC == 0 {
                Err(Fallback::NoUserRdpmc)
            } else if index == 0 {
                Err(Fallback::IndexZero)
            } else if width == 0 {
                Err(Fallback::ZeroWidth)
            } else if !ins.can_read(index - 1) {
                Err(Fallback::NoSuchCounter)
            } else if caps & CAP_USER_TIME == 0 || conv.time_shift >= 64 {
                Err(Fallback::NoUserTime)
            } else {
                // SAFETY: this section read `cap_user_rdpmc` set and `index != 0`; the caller
                // guarantees RDPMC is allowed for the page's counter. A torn section may pass a
                // stale index, which still names a hardware counter, and its result is
                // discarded below.
                let raw = unsafe { ins.rdpmc(index - 1) };
                let delta = time_delta(ins.rdtsc(), conv);
                Ok(PageCounts {
                    value: offset.wrapping_add(sign_extend(raw, width)) as u64,
                    time_enabled: enabled.wrapping_add(delta),
                    time_running: running.wrapping_add(delta),
                    retries,
                })
            };
            fence(Ordering::Acquire);
            if f.lock.load(Ordering::Relaxed) == seq {
                return match outcome {
                    Ok(c) => PageRead::Counted(c),
                    Err(why) => PageRead::Fallback(why),
                };
            }
        }
        retries += 1;
        if retries >= MAX_RETRIES {
            return PageRead::Fallback(Fallback::Contended);
        }
        core::hint::spin_loop();
    }
}

/// Reads `cap_user_rdpmc`, `index` and `pmc_width` once (no seqlock: for reports, not counts).
///
/// # Safety
///
/// As [`read_page`], without the RDPMC requirement.
pub(crate) unsafe fn page_capabilities(page: NonNull<MmapPage>) -> (u64, u32, u16) {
    // SAFETY: forwarded from this function's contract.
    let f = unsafe { Fields::new(page.as_ptr()) };
    (
        f.capabilities.load(Ordering::Relaxed),
        f.index.load(Ordering::Relaxed),
        f.pmc_width.load(Ordering::Relaxed),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page::instructions::Arm64Counter;
    use crate::page::{NativeInstructions, PageState, SyntheticPage};
    use core::cell::Cell;
    use picollo_testkit::StopFlag;
    use std::sync::Arc;

    /// Fake instructions: a fixed PMC and TSC, counting calls.
    struct Fake {
        pmc: u64,
        tsc: u64,
        calls: Cell<u32>,
    }

    impl Fake {
        fn new(pmc: u64, tsc: u64) -> Self {
            Self {
                pmc,
                tsc,
                calls: Cell::new(0),
            }
        }
    }

    impl CounterInstructions for Fake {
        const HAS_RDPMC: bool = true;
        unsafe fn rdpmc(&self, _counter: u32) -> u64 {
            self.calls.set(self.calls.get() + 1);
            self.pmc
        }
        fn rdtsc(&self) -> u64 {
            self.tsc
        }
    }

    const USER: u64 = CAP_USER_RDPMC | CAP_USER_TIME;

    fn base() -> PageState {
        PageState {
            index: 1,
            offset: 1000,
            time_enabled: 500,
            time_running: 500,
            capabilities: USER,
            pmc_width: 48,
            time_shift: 0,
            time_mult: 1,
            time_offset: 0,
            ..PageState::default()
        }
    }

    fn read(page: &SyntheticPage, ins: &Fake) -> PageRead {
        // SAFETY: a live synthetic page, accessed atomically; Fake's rdpmc is always safe.
        unsafe { read_page(page.as_ptr(), ins) }
    }

    fn counted(r: PageRead) -> PageCounts {
        match r {
            PageRead::Counted(c) => c,
            PageRead::Fallback(f) => panic!("expected a count, got fallback {f:?}"),
        }
    }

    #[test]
    fn sign_extension_by_width() {
        for (width, raw, expect) in [
            (40u16, (1u64 << 40) - 1, -1i64),
            (40, (1 << 39) - 1, (1 << 39) - 1),
            (40, 1 << 39, -(1 << 39)),
            (40, 0xffff_ff00_0000_0005, 5), // bits above the width are ignored
            (48, (1 << 48) - 1, -1),
            (48, 0xabcd_0000_0000_0005, 5),
            (48, 1 << 47, -(1 << 47)),
            (64, u64::MAX, -1),
            (64, 5, 5),
            (0, 12345, 0),
            (70, u64::MAX, -1),
        ] {
            assert_eq!(
                sign_extend(raw, width),
                expect,
                "width {width} raw {raw:#x}"
            );
        }
    }

    #[test]
    fn rdpmc_value_is_offset_plus_sign_extended_pmc() {
        for (width, pmc, expect) in [
            (40u16, (1u64 << 40) - 10, 1000 - 10),
            (48, (1u64 << 48) - 1, 999),
            (48, 250, 1250),
            (64, u64::MAX - 99, 900),
        ] {
            let page = SyntheticPage::with(&PageState {
                pmc_width: width,
                ..base()
            });
            let ins = Fake::new(pmc, 0);
            let c = counted(read(&page, &ins));
            assert_eq!(c.value, expect, "width {width}");
            assert_eq!((c.time_enabled, c.time_running, c.retries), (500, 500, 0));
            assert_eq!(ins.calls.get(), 1);
        }
    }

    #[test]
    fn falls_back_without_calling_rdpmc() {
        for (state, why) in [
            (PageState { index: 0, ..base() }, Fallback::IndexZero),
            (
                PageState {
                    capabilities: CAP_USER_TIME,
                    ..base()
                },
                Fallback::NoUserRdpmc,
            ),
            (
                PageState {
                    pmc_width: 0,
                    ..base()
                },
                Fallback::ZeroWidth,
            ),
            (
                PageState {
                    capabilities: CAP_USER_RDPMC,
                    ..base()
                },
                Fallback::NoUserTime,
            ),
            (
                PageState {
                    time_shift: 64,
                    ..base()
                },
                Fallback::NoUserTime,
            ),
            // What a software event's page looks like on the 2-core VM: cap_bit0_is_deprecated.
            (
                PageState {
                    capabilities: 0b10,
                    index: 0,
                    pmc_width: 0,
                    ..base()
                },
                Fallback::NoUserRdpmc,
            ),
        ] {
            let page = SyntheticPage::with(&state);
            let ins = Fake::new(7, 0);
            assert_eq!(read(&page, &ins), PageRead::Fallback(why));
            assert_eq!(ins.calls.get(), 0, "{why:?} must not execute rdpmc");
        }
    }

    /// The arm64 register file: 31 event counters, the cycle and instruction counters, each
    /// 32 bits wide unless opened as 64-bit, read through [`Arm64Counter`] as the native
    /// arm64 instructions do.
    struct Arm64Fake {
        events: [u64; 31],
        cycle: u64,
        instruction: u64,
        reads: Cell<Vec<Arm64Counter>>,
    }

    impl CounterInstructions for Arm64Fake {
        const HAS_RDPMC: bool = true;
        unsafe fn rdpmc(&self, counter: u32) -> u64 {
            let r = Arm64Counter::from_counter(counter).expect("only readable counters");
            let mut reads = self.reads.take();
            reads.push(r);
            self.reads.set(reads);
            match r {
                Arm64Counter::Event(n) => self.events[usize::from(n)],
                Arm64Counter::Cycle => self.cycle,
                Arm64Counter::Instruction => self.instruction,
            }
        }
        fn can_read(&self, counter: u32) -> bool {
            Arm64Counter::from_counter(counter).is_some()
        }
        fn rdtsc(&self) -> u64 {
            0
        }
    }

    #[test]
    fn arm64_index_names_the_register() {
        assert_eq!(Arm64Counter::from_counter(0), Some(Arm64Counter::Event(0)));
        assert_eq!(
            Arm64Counter::from_counter(30),
            Some(Arm64Counter::Event(30))
        );
        assert_eq!(Arm64Counter::from_counter(31), Some(Arm64Counter::Cycle));
        assert_eq!(
            Arm64Counter::from_counter(32),
            Some(Arm64Counter::Instruction)
        );
        assert_eq!(Arm64Counter::from_counter(33), None);
        let mut events = [0u64; 31];
        events[0] = 111;
        events[5] = 0xFFFF_FFF0; // a 32-bit counter 16 below wrapping
        let ins = Arm64Fake {
            events,
            cycle: 7_000,
            instruction: 9_000,
            reads: Cell::new(Vec::new()),
        };
        // (page index, pmc_width, offset) -> value and register read.
        for (index, width, offset, value, reg) in [
            (1u32, 32u16, 1000i64, 1111u64, Arm64Counter::Event(0)),
            // Sign extension by pmc_width: a 32-bit counter's raw 0xFFFF_FFF0 is -16.
            (6, 32, 1_000_000, 999_984, Arm64Counter::Event(5)),
            // The same raw bits on a 64-bit counter (FEAT_PMUv3p5, config1 bit 0) count up.
            (6, 64, 0, 0xFFFF_FFF0, Arm64Counter::Event(5)),
            (32, 64, 5, 7_005, Arm64Counter::Cycle),
            (33, 64, 0, 9_000, Arm64Counter::Instruction),
        ] {
            let page = SyntheticPage::with(&PageState {
                index,
                pmc_width: width,
                offset,
                ..base()
            });
            // SAFETY: a live synthetic page; the fake's rdpmc reads an array.
            let c = counted(unsafe { read_page(page.as_ptr(), &ins) });
            assert_eq!(c.value, value, "index {index}, width {width}");
            assert_eq!(ins.reads.take(), [reg]);
        }
        // Index 34 names no register: read() instead, and no MRS was executed.
        let page = SyntheticPage::with(&PageState {
            index: 34,
            ..base()
        });
        // SAFETY: as above.
        let r = unsafe { read_page(page.as_ptr(), &ins) };
        assert_eq!(r, PageRead::Fallback(Fallback::NoSuchCounter));
        assert!(ins.reads.take().is_empty());
        // perf_user_access = 0 (or the event opened without config1 bit 1): index 0.
        let page = SyntheticPage::with(&PageState { index: 0, ..base() });
        // SAFETY: as above.
        let r = unsafe { read_page(page.as_ptr(), &ins) };
        assert_eq!(r, PageRead::Fallback(Fallback::IndexZero));
    }

    #[test]
    fn native_instructions_know_their_registers() {
        let n = NativeInstructions;
        assert!(n.can_read(32));
        // Only arm64 has a fixed set of registers to name.
        assert_eq!(n.can_read(33), !cfg!(target_arch = "aarch64"));
        if cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) && !cfg!(miri) {
            // The clock of time extrapolation (TSC, or CNTVCT_EL0 on arm64) runs.
            let t0 = n.rdtsc();
            let mut t1 = t0;
            for _ in 0..1_000_000 {
                t1 = n.rdtsc();
                if t1 > t0 {
                    break;
                }
                core::hint::spin_loop();
            }
            assert!(t1 > t0, "{t0} {t1}");
        }
    }

    #[test]
    fn time_extrapolation() {
        // 3 GHz TSC: ns = cyc * 1/3 = cyc * (mult / 2^shift) with mult = 2^32/3, shift = 32.
        let shift = 32u16;
        let mult = ((1u64 << 32) / 3) as u32;
        let cyc = 3_000_000_000u64 + 12345;
        let page = SyntheticPage::with(&PageState {
            time_shift: shift,
            time_mult: mult,
            time_offset: 10u64.wrapping_neg(), // time_offset may be "negative"
            time_enabled: 1_000,
            time_running: 400,
            ..base()
        });
        let c = counted(read(&page, &Fake::new(0, cyc)));
        let quot = cyc >> shift;
        let rem = cyc & ((1 << shift) - 1);
        let delta = (quot * u64::from(mult))
            .wrapping_add((rem * u64::from(mult)) >> shift)
            .wrapping_sub(10);
        assert_eq!(c.time_enabled, 1_000 + delta);
        assert_eq!(c.time_running, 400 + delta);
        // About one second at 3 GHz.
        assert!((999_000_000..1_001_000_000).contains(&delta), "{delta}");
        // Exactly as the uapi header writes it, through the public helper.
        let conv = TimeConversion {
            time_shift: shift,
            time_mult: mult,
            time_offset: 10u64.wrapping_neg(),
            ..TimeConversion::default()
        };
        assert_eq!(time_delta(cyc, conv), delta);
    }

    #[test]
    fn time_extrapolation_short_cycles() {
        // cap_user_time_short: only the low bits of the TSC since time_cycles count.
        let state = PageState {
            capabilities: USER | CAP_USER_TIME_SHORT,
            time_cycles: 0xffff_0000,
            time_mask: 0xffff_ffff,
            time_shift: 1,
            time_mult: 1,
            time_offset: 0,
            time_enabled: 0,
            time_running: 0,
            ..base()
        };
        let page = SyntheticPage::with(&state);
        // The TSC wrapped past the mask: 0x1_0000_0010 - 0xffff_0000 = 0x1_0010, masked.
        let tsc = 0x1_0000_0010u64;
        let c = counted(read(&page, &Fake::new(0, tsc)));
        let cyc = 0xffff_0000u64 + ((tsc - 0xffff_0000) & 0xffff_ffff);
        assert_eq!(c.time_enabled, cyc >> 1);
        // Without the short flag the full TSC is used.
        let page = SyntheticPage::with(&PageState {
            capabilities: USER,
            ..state
        });
        let c = counted(read(&page, &Fake::new(0, tsc)));
        assert_eq!(c.time_enabled, tsc >> 1);
        // A mask that cuts the delta: only the low 16 bits of (tsc - time_cycles) count.
        let page = SyntheticPage::with(&PageState {
            time_mask: 0xffff,
            ..state
        });
        let c = counted(read(&page, &Fake::new(0, tsc)));
        assert_eq!(c.time_enabled, (0xffff_0000u64 + 0x10) >> 1);
    }

    /// Instructions whose RDPMC "interrupts" the reader: the first call rewrites the page, as
    /// the kernel does when it reschedules the event mid-read.
    struct Interrupting<'a> {
        page: &'a SyntheticPage,
        next: PageState,
        calls: Cell<u32>,
    }

    impl CounterInstructions for Interrupting<'_> {
        const HAS_RDPMC: bool = true;
        unsafe fn rdpmc(&self, _counter: u32) -> u64 {
            let n = self.calls.get();
            self.calls.set(n + 1);
            if n == 0 {
                self.page.set(&self.next);
            }
            0
        }
        fn rdtsc(&self) -> u64 {
            0
        }
    }

    #[test]
    fn torn_read_is_retried_deterministically() {
        let page = SyntheticPage::with(&base());
        let next = PageState {
            offset: 5000,
            time_enabled: 900,
            time_running: 800,
            ..base()
        };
        let ins = Interrupting {
            page: &page,
            next,
            calls: Cell::new(0),
        };
        // SAFETY: a live synthetic page; the fake rdpmc is safe.
        let r = unsafe { read_page(page.as_ptr(), &ins) };
        let c = counted(r);
        assert_eq!((c.value, c.time_enabled, c.time_running), (5000, 900, 800));
        assert_eq!(c.retries, 1);
        assert_eq!(ins.calls.get(), 2);
    }

    #[test]
    fn odd_lock_is_never_accepted() {
        let page = SyntheticPage::with(&base());
        page.begin_update();
        let r = read(&page, &Fake::new(0, 0));
        assert_eq!(r, PageRead::Fallback(Fallback::Contended));
        page.end_update();
        assert_eq!(counted(read(&page, &Fake::new(0, 0))).value, 1000);
    }

    #[test]
    fn concurrent_writer_never_yields_torn_reads() {
        // Every state the writer publishes satisfies enabled = 7k and running = 8k for value k
        // (with time_offset 5k extrapolated in); a torn read mixes two k and breaks that.
        let updates: u64 = if cfg!(miri) { 200 } else { 200_000 };
        let page = Arc::new(SyntheticPage::with(&PageState {
            offset: 1,
            time_enabled: 2,
            time_running: 3,
            time_offset: 5,
            ..base()
        }));
        // Raised when the writer ends, by a panic too: the loop below waits for it.
        let done = Arc::new(StopFlag::new());
        let writer = {
            let page = Arc::clone(&page);
            let done = Arc::clone(&done);
            std::thread::spawn(move || {
                let _done = done.raise_on_drop();
                for k in 1..=updates {
                    page.begin_update();
                    page.store_fields(&PageState {
                        offset: k as i64,
                        time_enabled: 2 * k,
                        time_running: 3 * k,
                        time_offset: 5 * k,
                        ..base()
                    });
                    page.end_update();
                    if k % 64 == 0 {
                        std::thread::yield_now();
                    }
                }
            })
        };
        let ins = Fake::new(0, 0);
        let (mut accepted, mut contended, mut retried) = (0u64, 0u64, 0u64);
        let mut last = 0u64;
        loop {
            let finished = done.is_raised();
            match read(&page, &ins) {
                PageRead::Counted(c) => {
                    let k = c.value;
                    assert_eq!(c.time_enabled, 7 * k, "torn read accepted: {c:?}");
                    assert_eq!(c.time_running, 8 * k, "torn read accepted: {c:?}");
                    assert!(k >= last, "went backwards: {k} < {last}");
                    last = k;
                    accepted += 1;
                    retried += u64::from(c.retries);
                }
                PageRead::Fallback(Fallback::Contended) => contended += 1,
                PageRead::Fallback(f) => panic!("unexpected fallback {f:?}"),
            }
            if finished {
                break;
            }
        }
        writer.join().unwrap();
        eprintln!(
            "concurrent writer: {updates} updates, {accepted} reads accepted, {retried} torn \
             reads retried, {contended} gave up"
        );
        assert!(accepted > 0);
        assert_eq!(last, updates, "the final read sees the final state");
    }
}
