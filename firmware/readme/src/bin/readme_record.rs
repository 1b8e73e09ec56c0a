//! The README's `static` with recording only: the baseline of the read-path figures. The
//! stack probe runs here too (around nothing), so that its code is in both images.
#![no_std]
#![no_main]

use picollo_firmware_readme::{print_stack, record_stream};
use picollo_firmware_rt::{semihosting, stack_use};

/// The entry point the runtime calls after reset.
#[no_mangle]
pub fn firmware_main() -> ! {
    record_stream();
    let stack = stack_use(1024, || {
        core::hint::black_box(());
    });
    print_stack(b"nothing", stack);
    semihosting::exit(true)
}
