//! A minimal bare-metal runtime for the Picollo firmware images, written here rather than
//! taken from `cortex-m-rt` / `riscv-rt` so that the images contain nothing but what is being
//! measured: a vector table (Cortex-M) or trap vector (RISC-V), a reset routine that zeroes
//! `.bss` and copies `.data`, one timer interrupt (SysTick on Cortex-M, the CLINT machine timer
//! on RISC-V `virt`), a `critical-section` implementation (interrupts off), semihosting for
//! output and exit, markers for instruction counting and a stack-depth probe.
//!
//! Each binary defines `firmware_main`, which the reset routine calls. The linker script of the
//! QEMU machine comes from `.cargo/config.toml` (`-T<machine>.ld`); this crate's build script
//! puts the scripts on the linker's search path.
#![no_std]

use core::fmt::{self, Write};
use core::sync::atomic::{AtomicUsize, Ordering};

#[cfg(target_arch = "arm")]
#[path = "arm.rs"]
mod arch;
#[cfg(target_arch = "riscv32")]
#[path = "riscv.rs"]
mod arch;

pub use arch::{start_timer, stop_timer};

extern "Rust" {
    /// The image's entry point, called by the reset routine with `.bss` zeroed and `.data`
    /// loaded.
    fn firmware_main() -> !;
}

extern "C" {
    static mut _sbss: u32;
    static mut _ebss: u32;
    static mut _sdata: u32;
    static mut _edata: u32;
    static _sidata: u32;
}

/// Zeroes `.bss` and copies `.data` from its load image.
///
/// # Safety
///
/// Only from the reset routine, before anything uses `.bss` or `.data`.
unsafe fn init_memory() {
    // SAFETY: the linker script defines these symbols as word-aligned bounds of `.bss`,
    // `.data` and its load image; the caller guarantees nothing uses them yet.
    unsafe {
        let mut p = &raw mut _sbss;
        while p < &raw mut _ebss {
            p.write_volatile(0);
            p = p.add(1);
        }
        let (mut d, mut s) = (&raw mut _sdata, &raw const _sidata);
        while d < &raw mut _edata {
            d.write_volatile(s.read());
            d = d.add(1);
            s = s.add(1);
        }
    }
}

/// Called by the reset routine.
fn enter_main() -> ! {
    // SAFETY: every binary of this crate defines `firmware_main` with this signature.
    unsafe { firmware_main() }
}

/// The timer tick handler, as a `fn()` address (0: none). Written before the timer starts,
/// read by the interrupt: plain atomic load and store, which every target has.
static TICK_HANDLER: AtomicUsize = AtomicUsize::new(0);

fn set_tick_handler(handler: fn()) {
    TICK_HANDLER.store(handler as usize, Ordering::Release);
}

/// Runs the registered tick handler (from the timer interrupt).
fn on_tick() {
    let h = TICK_HANDLER.load(Ordering::Acquire);
    if h != 0 {
        // SAFETY: the only non-zero value stored is a `fn()` address (`set_tick_handler`).
        let handler: fn() = unsafe { core::mem::transmute::<usize, fn()>(h) };
        handler();
    }
}

/// Semihosting operations (ARM semihosting specification; QEMU implements them for Arm and
/// RISC-V with `-semihosting-config enable=on`).
pub mod semihosting {
    const SYS_WRITE0: usize = 0x04;
    const SYS_EXIT: usize = 0x18;
    /// `ADP_Stopped_ApplicationExit`: QEMU exits with status 0.
    const EXIT_SUCCESS: usize = 0x20026;
    /// `ADP_Stopped_RunTimeErrorUnknown`: QEMU exits with status 1.
    const EXIT_FAILURE: usize = 0x20023;

    /// Writes a NUL-terminated string to the host's stdout.
    pub fn write0(text: &[u8]) {
        debug_assert_eq!(text.last(), Some(&0));
        // SAFETY: SYS_WRITE0 reads the string up to its NUL, which the caller provides.
        unsafe { super::arch::semihosting_call(SYS_WRITE0, text.as_ptr() as usize) };
    }

    /// Ends the QEMU run: status 0 when `success`, else 1.
    pub fn exit(success: bool) -> ! {
        let reason = if success { EXIT_SUCCESS } else { EXIT_FAILURE };
        // SAFETY: SYS_EXIT takes the reason code as its argument on 32-bit targets.
        unsafe { super::arch::semihosting_call(SYS_EXIT, reason) };
        loop {
            core::hint::spin_loop();
        }
    }
}

/// A line-buffered writer to the host's stdout over semihosting.
pub struct Console {
    buf: [u8; 160],
    len: usize,
}

impl Console {
    /// An empty console.
    pub const fn new() -> Self {
        Console {
            buf: [0; 160],
            len: 0,
        }
    }

    /// Sends what is buffered.
    pub fn flush(&mut self) {
        if self.len > 0 {
            self.buf[self.len] = 0;
            semihosting::write0(&self.buf[..=self.len]);
            self.len = 0;
        }
    }
}

impl Default for Console {
    fn default() -> Self {
        Self::new()
    }
}

impl Write for Console {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for &b in s.as_bytes() {
            // Keep one byte for the NUL.
            if self.len == self.buf.len() - 1 {
                self.flush();
            }
            self.buf[self.len] = b;
            self.len += 1;
            if b == b'\n' {
                self.flush();
            }
        }
        Ok(())
    }
}

/// Prints a formatted line and ends the run with failure.
pub fn fail(args: fmt::Arguments<'_>) -> ! {
    let mut out = Console::new();
    let _ = writeln!(out, "FAIL: {args}");
    out.flush();
    semihosting::exit(false)
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    fail(format_args!("panic: {info}"))
}

/// Interrupts off while the closure runs: the single-core `critical-section` implementation.
struct InterruptsOff;
critical_section::set_impl!(InterruptsOff);

// SAFETY: these images run on one core; `acquire` disables interrupts and returns whether
// they were enabled, `release` re-enables them only if so, so nested sections restore the
// outer state and nothing else can run while a section is held.
unsafe impl critical_section::Impl for InterruptsOff {
    unsafe fn acquire() -> critical_section::RawRestoreState {
        // SAFETY: privileged mode (these images never leave it); see the impl's comment.
        unsafe { arch::interrupts_disable() }
    }
    unsafe fn release(was_enabled: critical_section::RawRestoreState) {
        // SAFETY: as for `acquire`.
        unsafe { arch::interrupts_restore(was_enabled) }
    }
}

/// Starts a counted section: `run.sh` counts the instructions QEMU executed between a call
/// to `picollo_mark_begin` and the next call to [`picollo_mark_end`]. The (different) `nop`s
/// keep the two functions distinct and their calls in place: an `asm!` block without `pure`
/// is a side effect the optimizer must keep.
#[inline(never)]
#[no_mangle]
pub extern "C" fn picollo_mark_begin() {
    // SAFETY: a no-op instruction.
    unsafe { core::arch::asm!("nop") };
}

/// Ends a counted section (see [`picollo_mark_begin`]).
#[inline(never)]
#[no_mangle]
pub extern "C" fn picollo_mark_end() {
    // SAFETY: no-op instructions.
    unsafe { core::arch::asm!("nop", "nop") };
}

/// Values for the instruction counts: 64 pseudo-random `u32`s inside `[min, max]`.
pub fn count_values(min: u32, max: u32) -> [u32; 64] {
    let mut values = [0u32; 64];
    let mut x = 0x2545_F491u32;
    for v in values.iter_mut() {
        // xorshift32, skewed towards small values like latencies.
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        *v = min + (x >> (x % 20)) % (max - min + 1);
    }
    values
}

/// The counted sections of an instruction-count image: first `values` read alone (the
/// baseline), then each passed to `record`. `run.sh` reports
/// `(record section - baseline section) / 64` instructions per record.
#[inline(never)]
pub fn count_records<T: Copy>(values: &[T; 64], mut record: impl FnMut(T)) {
    picollo_mark_begin();
    for &v in values {
        core::hint::black_box(v);
    }
    picollo_mark_end();
    picollo_mark_begin();
    for &v in values {
        record(core::hint::black_box(v));
    }
    picollo_mark_end();
}

/// The deepest stack use of `f`, in bytes: paints the stack below the current frame with a
/// pattern, runs `f`, and finds the lowest word it overwrote.
#[inline(never)]
pub fn stack_use(depth: usize, f: impl FnOnce()) -> usize {
    const PAINT: u32 = 0xA5C3_5A3C;
    let base = arch::stack_pointer() & !3;
    let bottom = base - depth;
    let mut p = bottom;
    while p < base {
        // SAFETY: `[bottom, base)` is unused stack below this frame (the caller sizes `depth`
        // within the stack); nothing lives there until `f` runs.
        unsafe { (p as *mut u32).write_volatile(PAINT) };
        p += 4;
    }
    f();
    let mut p = bottom;
    // SAFETY: as above; reading back the painted words.
    while p < base && unsafe { (p as *const u32).read_volatile() } == PAINT {
        p += 4;
    }
    base - p
}
