//! The directory of sparse storage: a page pointer per block, made with the first page.
//!
//! A directory over all of `u64` at block scale 7 is 57 pointers and its length (464 bytes):
//! more than a series that saw a few values holds in its cold tier. So a storage starts
//! without one, and the first page installs it (`install.rs`'s protocol: compare-and-swap,
//! the loser frees its own).
//!
//! One allocation holds the directory's length, then its entries. A storage without a
//! directory points at [`NO_DIRECTORY`], a length of zero with no entries: the record path's
//! bound check (`block < length`, read from the directory) then sends every record to the
//! cold path, so a missing directory costs the record path no test of its own. The same
//! pointer is what the thread-local kind's per-thread cache keeps.

use super::install::{self, AtomicPtr, Ordering};
use core::marker::PhantomData;

/// The length word of every storage that has no directory yet: zero entries. Never written.
static NO_DIRECTORY: usize = 0;

/// Where the entries start in a directory's allocation: after its length word.
const fn entries_offset<T>() -> usize {
    let align = align_of::<AtomicPtr<T>>();
    size_of::<usize>().div_ceil(align) * align
}

/// The allocation of a directory of `len` entries.
fn allocation<T>(len: usize) -> std::alloc::Layout {
    let entries = std::alloc::Layout::array::<AtomicPtr<T>>(len);
    match entries.and_then(|e| std::alloc::Layout::new::<usize>().extend(e)) {
        Ok((layout, offset)) if offset == entries_offset::<T>() => layout,
        // At most 65 entries of a pointer's size.
        _ => unreachable!("directory of {len} entries"),
    }
}

/// Block `e`'s page through the directory at `head` (biased, see `super::bias`), or null
/// when the block has none, or lies past the directory's length (zero while it is
/// [`NO_DIRECTORY`]).
///
/// # Safety
///
/// `head` is the [`Directory::head`] of a live directory.
#[inline(always)]
pub(super) unsafe fn page_at<T>(head: *const usize, e: usize) -> *mut T {
    // SAFETY: `head` is `NO_DIRECTORY` or a directory's allocation, published with release
    // and loaded with acquire (the caller's guarantee): its length word is initialized and
    // never changes.
    let len = unsafe { *head };
    if e >= len {
        return core::ptr::null_mut();
    }
    // SAFETY: `e < len`: the entry is one of the `len` initialized entries after the length
    // word, alive as long as the directory.
    let entry = unsafe {
        &*head
            .byte_add(entries_offset::<T>())
            .cast::<AtomicPtr<T>>()
            .add(e)
    };
    entry.load(Ordering::Acquire)
}

/// A directory of `len` page pointers, installed by the first page.
pub(super) struct Directory<T> {
    /// [`NO_DIRECTORY`], or the allocation's length word.
    head: AtomicPtr<usize>,
    /// The entries the directory has once installed.
    len: usize,
    _pages: PhantomData<*mut T>,
}

impl<T> Directory<T> {
    /// No directory yet, for `len` entries.
    pub(super) fn new(len: usize) -> Self {
        Directory {
            head: AtomicPtr::new(core::ptr::addr_of!(NO_DIRECTORY).cast_mut()),
            len,
            _pages: PhantomData,
        }
    }

    /// Entries once installed: blocks `0..len()` (past it: overflow).
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// What the record path reads ([`page_at`]): [`NO_DIRECTORY`] until the first page.
    #[inline(always)]
    pub(super) fn head(&self) -> *const usize {
        self.head.load(Ordering::Acquire)
    }

    /// Block `e`'s page (biased), or null.
    #[inline(always)]
    pub(super) fn page(&self, e: usize) -> *mut T {
        // SAFETY: our own head, alive while `self` is.
        unsafe { page_at(self.head(), e) }
    }

    /// Whether `head` is an installed directory (not [`NO_DIRECTORY`]).
    fn is_installed(head: *const usize) -> bool {
        head != core::ptr::addr_of!(NO_DIRECTORY)
    }

    /// The entries, if installed.
    pub(super) fn entries(&self) -> Option<&[AtomicPtr<T>]> {
        let head = self.head();
        if !Self::is_installed(head) {
            return None;
        }
        // SAFETY: an installed directory: `len` initialized entries after the length word,
        // freed only on drop.
        Some(unsafe { Self::entries_of(head) })
    }

    /// The `len` entries of the directory at `head`.
    ///
    /// # Safety
    ///
    /// `head` is an installed directory of this `Directory`, alive for `'a`.
    unsafe fn entries_of<'a>(head: *const usize) -> &'a [AtomicPtr<T>] {
        // SAFETY: the caller's guarantee; the entries follow the length word.
        unsafe {
            let len = *head;
            core::slice::from_raw_parts(
                head.byte_add(entries_offset::<T>()).cast::<AtomicPtr<T>>(),
                len,
            )
        }
    }

    /// The entries, installed now if they were not.
    pub(super) fn installed(&self) -> &[AtomicPtr<T>] {
        let (len, layout) = (self.len, allocation::<T>(self.len));
        let make = || {
            // SAFETY: `layout` has a non-zero size (the length word).
            let head = unsafe { std::alloc::alloc(layout) }.cast::<usize>();
            if head.is_null() {
                std::alloc::handle_alloc_error(layout);
            }
            // SAFETY: `head` is a fresh allocation of `layout`: the length word, then room for
            // `len` entries at `entries_offset`, none of it shared yet.
            unsafe {
                head.write(len);
                let entries = head.byte_add(entries_offset::<T>()).cast::<AtomicPtr<T>>();
                for e in 0..len {
                    entries.add(e).write(AtomicPtr::new(core::ptr::null_mut()));
                }
            }
            head
        };
        let free = |head: *mut usize| {
            // SAFETY: `head` is `make`'s allocation of `layout`, never published.
            unsafe { std::alloc::dealloc(head.cast(), layout) }
        };
        let empty = core::ptr::addr_of!(NO_DIRECTORY).cast_mut();
        let (head, _) = install::install_over(&self.head, empty, make, free);
        // SAFETY: installed (by us or the winner of the race), alive while `self` is.
        unsafe { Self::entries_of(head) }
    }

    /// Bytes the directory holds: none before it is installed.
    pub(super) fn held_bytes(&self) -> usize {
        self.entries()
            .map_or(0, |_| allocation::<T>(self.len).size())
    }
}

impl<T> Drop for Directory<T> {
    fn drop(&mut self) {
        let head = self.head.load(Ordering::Relaxed);
        if Self::is_installed(head) {
            // SAFETY: an installed directory, allocated with this layout by `installed`; with
            // `&mut self` no one else holds it, and it is freed once. Its entries need no drop
            // (atomic pointers; a loom build's are freed by loom with the execution).
            unsafe { std::alloc::dealloc(head.cast(), allocation::<T>(self.len)) };
        }
    }
}
