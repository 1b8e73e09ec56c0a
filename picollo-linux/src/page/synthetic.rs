//! [`SyntheticPage`]: a heap-allocated `perf_event_mmap_page` that tests and benchmarks write
//! the way the kernel does (seqcount odd, fields, seqcount even), all with atomic stores.

use core::ptr::NonNull;
use core::sync::atomic::{fence, Ordering};

use super::read::{Fields, MmapPage};

/// The fields of a page that [`read_page`](crate::page::read_page) uses, for building
/// [`SyntheticPage`]s.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PageState {
    /// `index`: hardware counter + 1, or 0.
    pub index: u32,
    /// `offset`.
    pub offset: i64,
    /// `time_enabled`.
    pub time_enabled: u64,
    /// `time_running`.
    pub time_running: u64,
    /// `capabilities` bits ([`CAP_USER_RDPMC`](crate::page::CAP_USER_RDPMC),
    /// [`CAP_USER_TIME`](crate::page::CAP_USER_TIME), …).
    pub capabilities: u64,
    /// `pmc_width`.
    pub pmc_width: u16,
    /// `time_shift`.
    pub time_shift: u16,
    /// `time_mult`.
    pub time_mult: u32,
    /// `time_offset`.
    pub time_offset: u64,
    /// `time_cycles`.
    pub time_cycles: u64,
    /// `time_mask`.
    pub time_mask: u64,
}

/// A heap-allocated `perf_event_mmap_page` that tests and benchmarks write like the kernel does:
/// bump `lock` to odd, store the fields, bump `lock` to even. All stores are atomic, so a
/// writer thread may race [`read_page`](crate::page::read_page).
#[derive(Debug)]
pub struct SyntheticPage {
    ptr: NonNull<MmapPage>,
}

// SAFETY: the page is owned by this value and only accessed through atomics.
unsafe impl Send for SyntheticPage {}
// SAFETY: every access through `&SyntheticPage` (and `read_page`) is an atomic load or store.
unsafe impl Sync for SyntheticPage {}

impl Default for SyntheticPage {
    fn default() -> Self {
        Self::new()
    }
}

impl SyntheticPage {
    /// A zeroed page (`lock` 0, no capabilities).
    pub fn new() -> Self {
        let b = Box::<MmapPage>::default();
        Self {
            ptr: NonNull::from(Box::leak(b)),
        }
    }

    /// A page holding `state`.
    pub fn with(state: &PageState) -> Self {
        let p = Self::new();
        p.set(state);
        p
    }

    /// The page, for [`read_page`](crate::page::read_page).
    pub fn as_ptr(&self) -> NonNull<MmapPage> {
        self.ptr
    }

    fn fields(&self) -> Fields<'_> {
        // SAFETY: `ptr` is a live, aligned, uniquely owned heap page, accessed only atomically.
        unsafe { Fields::new(self.ptr.as_ptr()) }
    }

    /// The current `lock` value.
    pub fn lock(&self) -> u32 {
        self.fields().lock.load(Ordering::Relaxed)
    }

    /// Starts an update: `lock` becomes odd. Readers retry until [`SyntheticPage::end_update`].
    pub(crate) fn begin_update(&self) {
        let f = self.fields();
        f.lock.store(
            f.lock.load(Ordering::Relaxed).wrapping_add(1),
            Ordering::Relaxed,
        );
        fence(Ordering::Release);
    }

    /// Ends an update: `lock` becomes even again.
    pub(crate) fn end_update(&self) {
        let f = self.fields();
        f.lock.store(
            f.lock.load(Ordering::Relaxed).wrapping_add(1),
            Ordering::Release,
        );
    }

    /// Stores the fields without touching `lock` (use between begin and end).
    pub(crate) fn store_fields(&self, s: &PageState) {
        let f = self.fields();
        let r = Ordering::Relaxed;
        f.index.store(s.index, r);
        f.offset.store(s.offset, r);
        f.time_enabled.store(s.time_enabled, r);
        f.time_running.store(s.time_running, r);
        f.capabilities.store(s.capabilities, r);
        f.pmc_width.store(s.pmc_width, r);
        f.time_shift.store(s.time_shift, r);
        f.time_mult.store(s.time_mult, r);
        f.time_offset.store(s.time_offset, r);
        f.time_cycles.store(s.time_cycles, r);
        f.time_mask.store(s.time_mask, r);
    }

    /// One complete update: begin, store, end. Single writer only.
    pub fn set(&self, s: &PageState) {
        self.begin_update();
        self.store_fields(s);
        self.end_update();
    }
}

impl Drop for SyntheticPage {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from `Box::leak` in `new` and is freed only here.
        drop(unsafe { Box::from_raw(self.ptr.as_ptr()) });
    }
}
