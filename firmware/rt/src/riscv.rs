//! RISC-V (RV32IMC, machine mode, QEMU `virt` with `-bios none`): entry, trap vector, CLINT
//! machine timer, `mstatus.MIE`, semihosting.

use core::arch::{asm, global_asm};

// Entry: the stack, the trap vector, then Rust. The trap entry saves the caller-saved
// registers (the Rust handler saves the rest), calls `trap`, restores them and returns.
global_asm!(
    r#"
    .section .text.start, "ax"
    .global _start
_start:
    .option push
    .option norelax
    la gp, __global_pointer$
    .option pop
    la sp, _stack_top
    la t0, trap_entry
    csrw mtvec, t0
    call reset

    .section .text.trap, "ax"
    .balign 4
trap_entry:
    addi sp, sp, -64
    sw ra, 0(sp)
    sw t0, 4(sp)
    sw t1, 8(sp)
    sw t2, 12(sp)
    sw a0, 16(sp)
    sw a1, 20(sp)
    sw a2, 24(sp)
    sw a3, 28(sp)
    sw a4, 32(sp)
    sw a5, 36(sp)
    sw a6, 40(sp)
    sw a7, 44(sp)
    sw t3, 48(sp)
    sw t4, 52(sp)
    sw t5, 56(sp)
    sw t6, 60(sp)
    call trap
    lw ra, 0(sp)
    lw t0, 4(sp)
    lw t1, 8(sp)
    lw t2, 12(sp)
    lw a0, 16(sp)
    lw a1, 20(sp)
    lw a2, 24(sp)
    lw a3, 28(sp)
    lw a4, 32(sp)
    lw a5, 36(sp)
    lw a6, 40(sp)
    lw a7, 44(sp)
    lw t3, 48(sp)
    lw t4, 52(sp)
    lw t5, 56(sp)
    lw t6, 60(sp)
    addi sp, sp, 64
    mret
"#
);

/// Zeroes `.bss`, loads `.data`, calls `firmware_main`.
#[no_mangle]
unsafe extern "C" fn reset() -> ! {
    // SAFETY: nothing has run yet that uses `.bss` or `.data`.
    unsafe { super::init_memory() };
    super::enter_main()
}

/// `mcause` of the machine timer interrupt.
const MACHINE_TIMER: usize = (1 << 31) | 7;

/// The CLINT of QEMU `virt`: hart 0's `mtimecmp` and the `mtime` counter (10 MHz).
const MTIMECMP: *mut u32 = 0x0200_4000 as *mut u32;
const MTIME: *const u32 = 0x0200_BFF8 as *const u32;

/// The timer period in `mtime` ticks (set by `start_timer`).
static PERIOD: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(0);

#[no_mangle]
extern "C" fn trap() {
    let cause: usize;
    // SAFETY: reads a CSR.
    unsafe { asm!("csrr {}, mcause", out(reg) cause) };
    if cause == MACHINE_TIMER {
        schedule_next();
        super::on_tick();
    } else {
        let epc: usize;
        // SAFETY: reads a CSR.
        unsafe { asm!("csrr {}, mepc", out(reg) epc) };
        super::fail(format_args!("trap: mcause={cause:#x} mepc={epc:#x}"))
    }
}

fn mtime() -> u64 {
    loop {
        // SAFETY: the CLINT's `mtime` is always readable in machine mode.
        let (hi, lo, hi2) = unsafe {
            (
                MTIME.add(1).read_volatile(),
                MTIME.read_volatile(),
                MTIME.add(1).read_volatile(),
            )
        };
        if hi == hi2 {
            return ((hi as u64) << 32) | lo as u64;
        }
    }
}

/// Sets `mtimecmp` one period ahead (the write order avoids a spurious interrupt).
fn schedule_next() {
    let next = mtime() + PERIOD.load(core::sync::atomic::Ordering::Relaxed) as u64;
    // SAFETY: hart 0's `mtimecmp` is writable in machine mode.
    unsafe {
        MTIMECMP.add(1).write_volatile(u32::MAX);
        MTIMECMP.write_volatile(next as u32);
        MTIMECMP.add(1).write_volatile((next >> 32) as u32);
    }
}

/// Starts the machine timer, interrupting every `period` `mtime` ticks (10 MHz on `virt`),
/// each tick calling `handler`.
pub fn start_timer(period: u32, handler: fn()) {
    super::set_tick_handler(handler);
    PERIOD.store(period.max(1), core::sync::atomic::Ordering::Relaxed);
    schedule_next();
    // SAFETY: machine mode: enable the machine timer interrupt, then interrupts globally.
    unsafe {
        asm!("csrs mie, {}", in(reg) 1usize << 7);
        asm!("csrsi mstatus, 8");
    }
}

/// Stops the machine timer interrupt.
pub fn stop_timer() {
    // SAFETY: machine mode.
    unsafe { asm!("csrc mie, {}", in(reg) 1usize << 7) };
}

/// Disables interrupts; returns whether they were enabled.
///
/// # Safety
///
/// Machine mode.
pub unsafe fn interrupts_disable() -> u32 {
    let mstatus: usize;
    // SAFETY: machine mode (the caller's promise). No `nomem`: orders memory accesses.
    unsafe { asm!("csrrci {}, mstatus, 8", out(reg) mstatus) };
    (mstatus & 8 != 0) as u32
}

/// Re-enables interrupts if `was_enabled`.
///
/// # Safety
///
/// Machine mode; `was_enabled` comes from the matching [`interrupts_disable`].
pub unsafe fn interrupts_restore(was_enabled: u32) {
    if was_enabled != 0 {
        // SAFETY: as in `interrupts_disable`.
        unsafe { asm!("csrsi mstatus, 8") };
    }
}

/// The current stack pointer.
pub fn stack_pointer() -> usize {
    let sp: usize;
    // SAFETY: reads a register.
    unsafe { asm!("mv {}, sp", out(reg) sp, options(nomem, nostack)) };
    sp
}

/// A semihosting call: the `slli x0, x0, 0x1f; ebreak; srai x0, x0, 7` sequence (uncompressed)
/// with the operation in a0 and its argument in a1.
///
/// # Safety
///
/// `op` and `arg` must form a valid semihosting request.
pub unsafe fn semihosting_call(op: usize, arg: usize) -> usize {
    let ret: usize;
    // SAFETY: QEMU services the marked `ebreak`; the caller vouches for the request.
    unsafe {
        asm!(
            ".balign 16",
            ".option push",
            ".option norvc",
            "slli x0, x0, 0x1f",
            "ebreak",
            "srai x0, x0, 7",
            ".option pop",
            inout("a0") op => ret,
            in("a1") arg,
            options(nostack)
        )
    };
    ret
}
