//! The README's firmware example, as `run.sh` measures it: the same `static` (block scale 9,
//! window `[1, 10^6]`, `AtomicU32` cells), recorded with `record_u32`, and read with the
//! integer read path the README names. No `core::fmt` in either image (the stack figure is
//! printed digit by digit), so the difference between them is the read path alone.
#![no_std]

use picollo_core::{storage_len, AtomicHistogram, AtomicU32, ConstLayout, ConstWindow, Rank};
use picollo_firmware_rt::{count_values, semihosting};

/// The README's `Latency` type.
pub type Latency = AtomicHistogram<
    [AtomicU32; storage_len(ConstLayout::<9>::LAYOUT, 1, 1_000_000)],
    ConstLayout<9>,
    ConstWindow<1, 1_000_000>,
>;

/// The README's `LATENCY` static.
#[no_mangle]
pub static LATENCY: Latency = AtomicHistogram::empty();

/// Records the value stream with `record_u32`, as the README's `on_done` does.
pub fn record_stream() {
    for v in count_values(1, 2_000_000) {
        LATENCY.record_u32(core::hint::black_box(v));
    }
}

/// The seven ranks of the measured batch.
pub const RANKS: [Rank; 7] = [
    Rank::MIN,
    Rank::percent(50),
    Rank::percent(90),
    Rank::percent(99),
    Rank::parse("99.9").unwrap(),
    Rank::parse("99.99").unwrap(),
    Rank::MAX,
];

/// Prints `# stack <what>: <bytes> bytes` over semihosting, without `core::fmt`.
pub fn print_stack(what: &[u8], bytes: usize) {
    let mut line = [0u8; 80];
    let mut len = 0;
    let mut put = |b: u8| {
        if len < line.len() - 1 {
            line[len] = b;
            len += 1;
        }
    };
    b"# stack "
        .iter()
        .chain(what)
        .chain(b": ")
        .for_each(|&b| put(b));
    let mut digits = [0u8; 10];
    let (mut n, mut count) = (bytes, 0);
    loop {
        digits[count] = b'0' + (n % 10) as u8;
        count += 1;
        n /= 10;
        if n == 0 || count == digits.len() {
            break;
        }
    }
    digits[..count].iter().rev().for_each(|&b| put(b));
    b" bytes\n".iter().for_each(|&b| put(b));
    line[len] = 0;
    semihosting::write0(&line[..=len]);
}
