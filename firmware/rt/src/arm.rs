//! Cortex-M (ARMv6-M and ARMv7E-M): vector table, reset, SysTick, PRIMASK, semihosting.

use core::arch::asm;

extern "C" {
    static _stack_top: u32;
}

type Handler = unsafe extern "C" fn();

/// The Cortex-M vector table: initial stack pointer, then the 15 system exception vectors.
#[repr(C)]
pub struct VectorTable {
    stack_top: *const u32,
    handlers: [Handler; 15],
}

// SAFETY: read-only data the hardware reads; the raw pointer is only an address.
unsafe impl Sync for VectorTable {}

#[link_section = ".vector_table"]
#[used]
#[no_mangle]
static VECTOR_TABLE: VectorTable = VectorTable {
    stack_top: &raw const _stack_top,
    handlers: [
        reset,      // Reset
        unexpected, // NMI
        hard_fault, // HardFault
        unexpected, // MemManage
        unexpected, // BusFault
        unexpected, // UsageFault
        unexpected, // reserved
        unexpected, // reserved
        unexpected, // reserved
        unexpected, // reserved
        unexpected, // SVCall
        unexpected, // DebugMonitor
        unexpected, // reserved
        unexpected, // PendSV
        systick,    // SysTick
    ],
};

/// Zeroes `.bss`, loads `.data`, enables the FPU where there is one, calls `firmware_main`.
unsafe extern "C" fn reset() {
    // SAFETY: nothing has run yet that uses `.bss` or `.data`.
    unsafe { super::init_memory() };
    #[cfg(target_abi = "eabihf")]
    // SAFETY: CPACR (0xE000ED88) exists on every Cortex-M4F; granting full access to CP10 and
    // CP11 enables the FPU, which the hard-float ABI may use.
    unsafe {
        const CPACR: *mut u32 = 0xE000_ED88 as *mut u32;
        CPACR.write_volatile(CPACR.read_volatile() | (0xF << 20));
        asm!("dsb", "isb");
    }
    super::enter_main()
}

unsafe extern "C" fn unexpected() {
    super::fail(format_args!("unexpected exception"))
}

unsafe extern "C" fn hard_fault() {
    super::fail(format_args!("hard fault"))
}

unsafe extern "C" fn systick() {
    super::on_tick()
}

const SYST_CSR: *mut u32 = 0xE000_E010 as *mut u32;
const SYST_RVR: *mut u32 = 0xE000_E014 as *mut u32;
const SYST_CVR: *mut u32 = 0xE000_E018 as *mut u32;

/// Starts SysTick on the processor clock, interrupting every `period` cycles, each tick
/// calling `handler`.
pub fn start_timer(period: u32, handler: fn()) {
    super::set_tick_handler(handler);
    // SAFETY: the SysTick registers exist on every Cortex-M with the SysTick option, which
    // both machines used here have.
    unsafe {
        SYST_RVR.write_volatile(period.clamp(1, 0x00FF_FFFF));
        SYST_CVR.write_volatile(0);
        // ENABLE | TICKINT | CLKSOURCE (processor clock).
        SYST_CSR.write_volatile(0b111);
    }
}

/// Stops SysTick.
pub fn stop_timer() {
    // SAFETY: as in `start_timer`.
    unsafe { SYST_CSR.write_volatile(0) };
}

/// Disables interrupts; returns whether they were enabled.
///
/// # Safety
///
/// Privileged mode.
pub unsafe fn interrupts_disable() -> u32 {
    let primask: u32;
    // SAFETY: reading PRIMASK and setting it are allowed in privileged mode (the caller's
    // promise). The asm has no `nomem`, so it orders memory accesses like a compiler fence.
    unsafe {
        asm!("mrs {}, PRIMASK", out(reg) primask);
        asm!("cpsid i");
    }
    // PRIMASK bit 0 set means interrupts were already disabled.
    (primask & 1 == 0) as u32
}

/// Re-enables interrupts if `was_enabled`.
///
/// # Safety
///
/// Privileged mode; `was_enabled` comes from the matching [`interrupts_disable`].
pub unsafe fn interrupts_restore(was_enabled: u32) {
    if was_enabled != 0 {
        // SAFETY: as in `interrupts_disable`.
        unsafe { asm!("cpsie i") };
    }
}

/// The current stack pointer.
pub fn stack_pointer() -> usize {
    let sp: usize;
    // SAFETY: reads a register.
    unsafe { asm!("mov {}, sp", out(reg) sp, options(nomem, nostack)) };
    sp
}

/// A semihosting call: `bkpt 0xAB` with the operation in r0 and its argument in r1.
///
/// # Safety
///
/// `op` and `arg` must form a valid semihosting request.
pub unsafe fn semihosting_call(op: usize, arg: usize) -> usize {
    let ret: usize;
    // SAFETY: the debugger (QEMU) services the breakpoint; the caller vouches for the request.
    unsafe { asm!("bkpt 0xAB", inout("r0") op => ret, in("r1") arg, options(nostack)) };
    ret
}
