//! Known work for counter checks: fresh pages, each faulted exactly once when first touched
//! (shared by the tests and the `server` example).
#![allow(dead_code)] // each user needs part of it

/// A fresh private mapping of whole pages without transparent huge pages (so the kernel
/// cannot map several at once): touching a page the first time is exactly one page fault.
pub struct FreshPages {
    base: *mut u8,
    len: usize,
}

impl FreshPages {
    /// Maps `pages` pages (none touched yet).
    pub fn new(pages: usize) -> Self {
        let len = pages.max(1) * 4096;
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
        assert_ne!(
            p,
            libc::MAP_FAILED,
            "mmap: {}",
            std::io::Error::last_os_error()
        );
        // SAFETY: `p..p+len` is the mapping just created.
        unsafe { libc::madvise(p, len, libc::MADV_NOHUGEPAGE) };
        Self {
            base: p.cast(),
            len,
        }
    }

    /// Writes one byte into each page of `range` (one fault each, the first time).
    pub fn touch(&self, range: core::ops::Range<usize>) {
        for i in range {
            assert!(i * 4096 < self.len, "page {i} is outside the mapping");
            // SAFETY: inside the mapping, which is readable and writable.
            unsafe { self.base.add(i * 4096).write_volatile(1) };
        }
    }
}

impl Drop for FreshPages {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `new`; nothing refers to it any more.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

// SAFETY: the mapping is owned by the value and only written through volatile byte stores
// (each test task to its own pages); moving it to another thread changes nothing.
unsafe impl Send for FreshPages {}
// SAFETY: as above: concurrent `touch`es are volatile stores to distinct or identical bytes
// through raw pointers, never Rust references to the memory.
unsafe impl Sync for FreshPages {}

/// Maps, touches and unmaps `pages` fresh pages: exactly `pages` page faults.
pub fn touch_fresh(pages: usize) {
    FreshPages::new(pages).touch(0..pages);
}
