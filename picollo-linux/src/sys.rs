//! The one audited module that makes perf system calls: `perf_event_open`, `read`, `ioctl`,
//! `mmap`. Everything returns the errno on failure; callers turn it into a
//! [`PerfError`](crate::PerfError) with the event's name.

use core::ptr::NonNull;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use pe::bindings::{self as b, perf_event_attr};
use perf_event_open_sys as pe;

use crate::event::EventConfig;
use crate::page::MmapPage;

/// The read format every counter in a session uses.
pub(crate) const READ_FORMAT: u64 = (b::PERF_FORMAT_GROUP
    | b::PERF_FORMAT_ID
    | b::PERF_FORMAT_TOTAL_TIME_ENABLED
    | b::PERF_FORMAT_TOTAL_TIME_RUNNING) as u64;

/// The errno of the last failed call on this thread.
pub(crate) fn last_errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

/// Flags of one `perf_event_attr`.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct AttrFlags {
    pub disabled: bool,
    pub pinned: bool,
    pub exclude_user: bool,
    pub exclude_kernel: bool,
    pub exclude_hv: bool,
    pub exclude_host: bool,
    pub exclude_guest: bool,
    pub inherit: bool,
    pub enable_on_exec: bool,
}

/// Whether `perf_event_attr` has `config3` on this target (the aarch64 bindings of
/// `perf-event-open-sys` predate it; [`crate::pmu`] refuses events that need it there).
pub(crate) const HAS_CONFIG3: bool = !cfg!(target_arch = "aarch64");

/// A counting (not sampling) attribute for `config` with the session's read format.
pub(crate) fn attr(config: &EventConfig, flags: AttrFlags) -> perf_event_attr {
    let mut a = perf_event_attr {
        type_: config.type_,
        size: core::mem::size_of::<perf_event_attr>() as u32,
        config: config.config,
        read_format: READ_FORMAT,
        ..perf_event_attr::default()
    };
    a.__bindgen_anon_3.config1 = config.config1;
    a.__bindgen_anon_4.config2 = config.config2;
    #[cfg(not(target_arch = "aarch64"))]
    {
        a.config3 = config.config3;
    }
    a.set_disabled(u64::from(flags.disabled));
    a.set_pinned(u64::from(flags.pinned));
    a.set_exclude_user(u64::from(flags.exclude_user));
    a.set_exclude_kernel(u64::from(flags.exclude_kernel));
    a.set_exclude_hv(u64::from(flags.exclude_hv));
    a.set_exclude_host(u64::from(flags.exclude_host));
    a.set_exclude_guest(u64::from(flags.exclude_guest));
    a.set_inherit(u64::from(flags.inherit));
    a.set_enable_on_exec(u64::from(flags.enable_on_exec));
    a
}

/// `perf_event_open(attr, pid, cpu, group, PERF_FLAG_FD_CLOEXEC)`.
pub(crate) fn open(
    attr: &mut perf_event_attr,
    pid: i32,
    cpu: i32,
    group: Option<BorrowedFd<'_>>,
) -> Result<OwnedFd, i32> {
    let group_fd = group.map_or(-1, |g| g.as_raw_fd());
    // SAFETY: `attr` is a fully initialized `perf_event_attr` whose `size` is its own size; the
    // kernel may write the expected size back into it, which `&mut` allows. `group_fd` is -1 or
    // a live descriptor borrowed for the call.
    let fd = unsafe {
        pe::perf_event_open(
            attr,
            pid,
            cpu,
            group_fd,
            libc::c_ulong::from(b::PERF_FLAG_FD_CLOEXEC),
        )
    };
    if fd < 0 {
        return Err(last_errno());
    }
    // SAFETY: the kernel just returned `fd` as a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// One `read()` into `buf`, retried on EINTR. Returns the bytes read.
pub(crate) fn read_u64s(fd: BorrowedFd<'_>, buf: &mut [u64]) -> Result<usize, i32> {
    loop {
        // SAFETY: `buf` is valid for writes of `size_of_val(buf)` bytes and `fd` is live.
        let n = unsafe {
            libc::read(
                fd.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                core::mem::size_of_val(buf),
            )
        };
        if n >= 0 {
            return Ok(n.unsigned_abs());
        }
        let e = last_errno();
        if e != libc::EINTR {
            return Err(e);
        }
    }
}

/// The ioctls a session uses.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Ioctl {
    Enable,
    Disable,
    Reset,
}

/// `ioctl(fd, PERF_EVENT_IOC_{ENABLE,DISABLE,RESET}, PERF_IOC_FLAG_GROUP)` on a group leader.
pub(crate) fn group_ioctl(fd: BorrowedFd<'_>, which: Ioctl) -> Result<(), i32> {
    let raw = fd.as_raw_fd();
    let arg = b::PERF_IOC_FLAG_GROUP;
    // SAFETY: `raw` is a live perf event descriptor; these ioctls take an integer argument.
    let r = unsafe {
        match which {
            Ioctl::Enable => pe::ioctls::ENABLE(raw, arg),
            Ioctl::Disable => pe::ioctls::DISABLE(raw, arg),
            Ioctl::Reset => pe::ioctls::RESET(raw, arg),
        }
    };
    if r < 0 {
        Err(last_errno())
    } else {
        Ok(())
    }
}

/// `ioctl(fd, PERF_EVENT_IOC_ID)`: the id the group read reports for this event.
pub(crate) fn event_id(fd: BorrowedFd<'_>) -> Result<u64, i32> {
    let mut id = 0u64;
    // SAFETY: `fd` is a live perf event descriptor and `id` is a valid `u64` to write.
    let r = unsafe { pe::ioctls::ID(fd.as_raw_fd(), &mut id) };
    if r < 0 {
        Err(last_errno())
    } else {
        Ok(id)
    }
}

/// A shared read-write mapping of `len` bytes of a file descriptor, unmapped on drop: the one
/// place that calls `mmap`/`munmap`, for perf pages and shared-memory rings alike.
#[derive(Debug)]
pub(crate) struct SharedMapping {
    pub(crate) ptr: NonNull<u8>,
    pub(crate) len: usize,
}

// SAFETY: the mapping is shared memory accessed only through atomics; the handle (pointer and
// length) may move between threads.
unsafe impl Send for SharedMapping {}

impl SharedMapping {
    /// Maps `len` bytes of `fd` from offset 0, shared and read-write.
    pub(crate) fn new(fd: BorrowedFd<'_>, len: usize) -> Result<Self, i32> {
        if len == 0 {
            return Err(libc::EINVAL);
        }
        // SAFETY: a fresh shared mapping of `len` bytes of an open fd; no existing memory is
        // affected.
        let p = unsafe {
            libc::mmap(
                core::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(last_errno());
        }
        NonNull::new(p.cast::<u8>())
            .map(|ptr| Self { ptr, len })
            .ok_or(libc::ENOMEM)
    }
}

impl Drop for SharedMapping {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` are exactly what mmap returned, unmapped once, here; the views
        // into the mapping are dropped before it (field order of their owners).
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

/// The first page of a perf event's mmap (the `perf_event_mmap_page`), mapped read-write as
/// libperf does (so atomic views of it are sound; the kernel accepts `PROT_WRITE` on the user
/// page), unmapped on drop.
#[derive(Debug)]
pub(crate) struct Mapping(SharedMapping);

impl Mapping {
    /// Maps the page of `fd`.
    pub(crate) fn new(fd: BorrowedFd<'_>) -> Result<Self, i32> {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        let len = usize::try_from(page).unwrap_or(4096);
        SharedMapping::new(fd, len).map(Self)
    }

    /// The page.
    pub(crate) fn page(&self) -> NonNull<MmapPage> {
        self.0.ptr.cast()
    }
}

/// The calling thread's CPU time in nanoseconds (`CLOCK_THREAD_CPUTIME_ID`).
pub fn thread_cpu_time_ns() -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if r != 0 {
        return None;
    }
    let s = u64::try_from(ts.tv_sec).ok()?;
    let ns = u64::try_from(ts.tv_nsec).ok()?;
    s.checked_mul(1_000_000_000)?.checked_add(ns)
}
