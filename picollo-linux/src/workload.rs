//! Known work for checking counters: fresh pages, each faulted exactly once when first
//! touched.
//!
//! `page-faults` (and `minor-faults`) is the one counter whose expected value a program can
//! know in advance, and it works without a hardware PMU: a private anonymous mapping with
//! transparent huge pages turned off takes exactly one fault per page on its first write. The
//! tests, the examples and anyone checking that a span's counters land where they should use
//! this instead of memory from the allocator, which may already be mapped.
//!
//! ```
//! use picollo_linux::workload::FreshPages;
//!
//! let pages = FreshPages::new(16)?;
//! assert_eq!(pages.touch(0..4), 4); // four page faults
//! assert_eq!(pages.touch(2..8), 4); // pages 2 and 3 were already faulted in
//! assert_eq!(pages.touch(10..99), 6); // clipped to the mapping's 16 pages
//! # Ok::<(), std::io::Error>(())
//! ```

use core::ops::Range;
use core::sync::atomic::{AtomicU8, Ordering};
use std::io;

/// A private anonymous mapping of whole pages without transparent huge pages (so the kernel
/// cannot map several at once): writing a page for the first time is exactly one page fault.
/// Unmapped on drop.
#[derive(Debug)]
pub struct FreshPages {
    base: *mut u8,
    pages: usize,
    page_size: usize,
}

impl FreshPages {
    /// Maps `pages` pages (at least one), none touched yet.
    ///
    /// # Errors
    /// The `mmap` or `madvise(MADV_NOHUGEPAGE)` error; a size that overflows is
    /// `InvalidInput`.
    pub fn new(pages: usize) -> io::Result<Self> {
        // SAFETY: sysconf has no preconditions.
        let page_size = match unsafe { libc::sysconf(libc::_SC_PAGESIZE) } {
            n if n > 0 => n as usize,
            _ => 4096,
        };
        let pages = pages.max(1);
        let len = pages
            .checked_mul(page_size)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "mapping too large"))?;
        // SAFETY: a new private anonymous mapping; no existing memory is affected.
        let p = unsafe {
            libc::mmap(
                core::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let mapped = Self {
            base: p.cast(),
            pages,
            page_size,
        };
        // Without this a huge page could back the whole range and one fault serve it all.
        // SAFETY: `p..p+len` is the mapping just created.
        if unsafe { libc::madvise(p, len, libc::MADV_NOHUGEPAGE) } != 0 {
            // Kernels built without THP refuse the advice; then there is nothing to avoid.
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EINVAL) {
                return Err(e);
            }
        }
        Ok(mapped)
    }

    /// Pages in the mapping.
    pub fn pages(&self) -> usize {
        self.pages
    }

    /// Writes one byte into each page of `range` that lies in the mapping (one fault each, the
    /// first time a page is written) and returns how many pages of it were written for the
    /// first time. Threads may touch the same pages concurrently: each page counts as first
    /// for exactly one of them.
    pub fn touch(&self, range: Range<usize>) -> usize {
        let range = range.start.min(self.pages)..range.end.min(self.pages);
        let mut first = 0;
        for i in range {
            // SAFETY: `i < pages` and pages are at least 2 bytes, so both bytes are inside the
            // mapping, which is readable and writable, lives as long as `self`, and is only
            // ever accessed atomically (an `AtomicU8` has the alignment of a `u8`).
            let (byte, fault) = unsafe {
                let p = self.base.add(i * self.page_size);
                (AtomicU8::from_ptr(p), AtomicU8::from_ptr(p.add(1)))
            };
            // A plain store first: the page's one write fault. Where the swap below is a
            // load-exclusive/store-exclusive loop (arm64 without LSE atomics, the baseline of
            // the aarch64 Linux targets), swapping on an untouched page faults twice: the
            // load maps the zero page, the store copies it (found on the arm64 guest,
            // guest/run.sh: 2 page faults per page).
            fault.store(1, Ordering::Relaxed);
            first += usize::from(byte.swap(1, Ordering::Relaxed) == 0);
        }
        first
    }

    /// [`FreshPages::touch`] over every page.
    pub fn touch_all(&self) -> usize {
        self.touch(0..self.pages)
    }
}

impl Drop for FreshPages {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `new`; nothing refers to it any more.
        unsafe { libc::munmap(self.base.cast(), self.pages * self.page_size) };
    }
}

// SAFETY: the mapping is owned by the value; moving it to another thread changes nothing.
unsafe impl Send for FreshPages {}
// SAFETY: `touch` (the only access to the memory through `&self`) uses atomic swaps, so
// concurrent touches from several threads do not race.
unsafe impl Sync for FreshPages {}

/// Maps, touches and unmaps `pages` fresh pages: exactly `pages` page faults (at least one).
///
/// # Errors
/// As [`FreshPages::new`].
pub fn touch_fresh_pages(pages: usize) -> io::Result<usize> {
    Ok(FreshPages::new(pages)?.touch_all())
}
