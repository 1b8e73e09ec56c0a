//! The directory of sparse storage: a page pointer per block, made with the first page.
//!
//! A directory over all of `u64` at block scale 7 is 57 pointers and its length (464 bytes):
//! more than a series that saw a few values holds in its cold tier. So a storage starts
//! without one, and the first page installs it (`install.rs`'s protocol: compare-and-swap,
//! the loser frees its own).
//!
//! One allocation holds the directory's length, then its entries: one for every block a
//! position can name at the storage's block scale (`64 - k`, [`capacity`]), not only the
//! window's, so the record path reads a block's entry without a bound check (blocks past the
//! window have no page, as blocks without records, and go to the cold path, which counts them
//! outside). A storage without a directory points at [`NO_DIRECTORY`], a length of zero and
//! [`MAX_BLOCKS`] entries that are all null: every record goes to the cold path, so a missing
//! directory costs the record path no test of its own either. The same pointer is what the
//! thread-local kind's per-thread cache keeps.
//!
//! The bound check was one load of the three before the cell's (the directory head, its
//! length, the entry) in a record path that is bound by its loads (`benches/RESULTS.md`,
//! issue 44). A model build (`cfg(loom)`) keeps it: loom's atomics cannot live in a static,
//! so there the empty directory's entries are never read.

use super::install::{self, AtomicPtr, Ordering};
use core::marker::PhantomData;

/// The most blocks a position names: `64 - k` at block scale `k` (`Layout::block_count` less
/// one, as block 0 spans two blocks' indices), at most 64.
pub(super) const MAX_BLOCKS: usize = 64;

/// The entries a directory at block scale `k` has: every block a position can name.
pub(super) const fn capacity(k: u32) -> usize {
    MAX_BLOCKS - k as usize
}

/// The directory of every storage that has no directory yet: a length word of zero, then
/// [`MAX_BLOCKS`] null entries (read by the record path without a bound check). Never
/// written.
#[repr(C)]
struct Empty {
    len: usize,
    entries: [core::sync::atomic::AtomicPtr<()>; MAX_BLOCKS],
}

static NO_DIRECTORY: Empty = Empty {
    len: 0,
    entries: [const { core::sync::atomic::AtomicPtr::new(core::ptr::null_mut()) }; MAX_BLOCKS],
};

/// Bytes of a directory of `capacity` entries, its length word included.
pub(super) fn bytes<T>(capacity: usize) -> usize {
    allocation::<T>(capacity).size()
}

/// [`NO_DIRECTORY`]'s address, as a directory head.
fn no_directory() -> *mut usize {
    core::ptr::addr_of!(NO_DIRECTORY).cast::<usize>().cast_mut()
}

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
/// when the block has none (every block of [`NO_DIRECTORY`]).
///
/// # Safety
///
/// `head` is the [`Directory::head`] of a live directory, and `e` the block of a position
/// under its storage's block scale `k`: below [`capacity`]`(k)`, the entries of every
/// directory at that scale, and below [`MAX_BLOCKS`], [`NO_DIRECTORY`]'s.
#[inline(always)]
pub(super) unsafe fn page_at<T>(head: *const usize, e: usize) -> *mut T {
    if cfg!(loom) {
        // SAFETY: `head` is `NO_DIRECTORY` or a directory's allocation, published with
        // release and loaded with acquire (the caller's guarantee): its length word is
        // initialized and never changes.
        if e >= unsafe { *head } {
            return core::ptr::null_mut();
        }
    }
    // SAFETY: by the caller's guarantee `e` is below the entries of `head`'s directory,
    // initialized when it was made and alive as long as it is (`NO_DIRECTORY`'s forever; the
    // loom build checked the bound above, where its entries are loom's atomics and the empty
    // directory's are not read).
    let entry = unsafe {
        &*head
            .byte_add(entries_offset::<T>())
            .cast::<AtomicPtr<T>>()
            .add(e)
    };
    entry.load(Ordering::Acquire)
}

/// A directory of page pointers, installed by the first page: the blocks `0..len` of the
/// window, and null entries past it up to the capacity its installer gives.
pub(super) struct Directory<T> {
    /// [`NO_DIRECTORY`], or the allocation's length word (its capacity).
    head: AtomicPtr<usize>,
    /// The blocks of the window: `0..len` (past it: overflow).
    len: usize,
    _pages: PhantomData<*mut T>,
}

impl<T> Directory<T> {
    /// No directory yet, for a window of blocks `0..len`.
    pub(super) fn new(len: usize) -> Self {
        Directory {
            head: AtomicPtr::new(no_directory()),
            len,
            _pages: PhantomData,
        }
    }

    /// The window's blocks: `0..len()` (past it: overflow).
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// What the record path reads ([`page_at`]): [`NO_DIRECTORY`] until the first page.
    #[inline(always)]
    pub(super) fn head(&self) -> *const usize {
        self.head.load(Ordering::Acquire)
    }

    /// Block `e`'s page (biased), or null (also for a block past the window's).
    #[inline(always)]
    pub(super) fn page(&self, e: usize) -> *mut T {
        if e >= self.len {
            return core::ptr::null_mut();
        }
        // SAFETY: our own head, alive while `self` is; `e` is a block of the window, which
        // every directory of this storage has an entry for.
        unsafe { page_at(self.head(), e) }
    }

    /// Block `e`'s page (biased), or null: the record path's read, without a bound check.
    ///
    /// # Safety
    ///
    /// `e` is the block of a position under the storage's block scale (see [`page_at`]).
    #[inline(always)]
    pub(super) unsafe fn page_unchecked(&self, e: usize) -> *mut T {
        // SAFETY: our own head, alive while `self` is; `e` as the caller guarantees.
        unsafe { page_at(self.head(), e) }
    }

    /// Whether `head` is an installed directory (not [`NO_DIRECTORY`]).
    fn is_installed(head: *const usize) -> bool {
        head != no_directory().cast_const()
    }

    /// The entries, if installed: the window's blocks, then null ones up to the capacity.
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

    /// The entries, installed now if they were not, with `capacity` entries (at least the
    /// window's blocks: [`capacity`] of the storage's block scale).
    pub(super) fn installed(&self, capacity: usize) -> &[AtomicPtr<T>] {
        debug_assert!(
            capacity >= self.len,
            "a directory covers its window's blocks"
        );
        let (len, layout) = (capacity, allocation::<T>(capacity));
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
        let (head, _) = install::install_over(&self.head, no_directory(), make, free);
        // SAFETY: installed (by us or the winner of the race), alive while `self` is.
        unsafe { Self::entries_of(head) }
    }

    /// Bytes the directory holds: none before it is installed.
    pub(super) fn held_bytes(&self) -> usize {
        self.entries()
            .map_or(0, |entries| allocation::<T>(entries.len()).size())
    }
}

impl<T> Drop for Directory<T> {
    fn drop(&mut self) {
        let head = self.head.load(Ordering::Relaxed);
        if Self::is_installed(head) {
            // SAFETY: an installed directory, allocated by `installed` with the layout of as
            // many entries as its length word says; with `&mut self` no one else holds it, and
            // it is freed once. Its entries need no drop (atomic pointers; a loom build's are
            // freed by loom with the execution).
            unsafe { std::alloc::dealloc(head.cast(), allocation::<T>(*head)) };
        }
    }
}
