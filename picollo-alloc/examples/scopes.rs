//! `GettingStartedScopes` of Picollo for .NET: tick, nano, micro and milli scopes around
//! sleeps, all recorded into one histogram (max trackable 2 s in nanoseconds), then its
//! summary table.
//! The histogram has no units: each scope records in its own, which is the point of the
//! .NET example.
//!
//! ```text
//! cargo run --release -p picollo-alloc --example scopes -- [sleep_ms]   # default 250
//! ```
//!
//! The .NET example sleeps 1000 ms per scope; the default here is 250 ms so that the example
//! runs in about a second. Ticks are the CPU timestamp counter (several GHz on x86), so with
//! 1000 ms sleeps the tick scope can exceed the 2 s range and count as overflow.

use picollo_alloc::clock::{
    micro_scope, milli_scope, nano_scope, tick_scope, ticks_per_second, ticks_to_nanos, Ticks,
};
use picollo_alloc::{HistogramBuilder, SummaryExt};
use picollo_core::fmt::Grouped;
use std::thread::sleep;
use std::time::Duration;

/// One second in nanoseconds (Picollo for .NET's `NanoScope.OneSecondValue`).
const ONE_SECOND: u64 = 1_000_000_000;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let sleep_ms = match std::env::args().nth(1) {
        None => 250,
        Some(arg) => match arg.parse::<u64>() {
            Ok(ms) if (1..=10_000).contains(&ms) => ms,
            _ => {
                eprintln!("usage: scopes [sleep_ms]  (1..=10000)");
                std::process::exit(2);
            }
        },
    };
    let pause = || sleep(Duration::from_millis(sleep_ms));
    // Calibrate before timing anything (the first call measures for about 20 ms on x86).
    let rate = ticks_per_second();

    let mut h = HistogramBuilder::new()
        .max_trackable(ONE_SECOND * 2)
        .plain()?;

    // `finish` ends a scope explicitly and returns what it recorded.
    let ticks = {
        let s = tick_scope(&mut h);
        pause();
        s.finish()
            .map_err(|e| format!("the tick source failed: {e:?}"))?
    };

    {
        let _s = nano_scope(&mut h);
        pause();
    }

    {
        let _s = micro_scope(&mut h);
        pause();
    }

    {
        let _s = milli_scope(&mut h);
        pause();
    }

    println!("{}", h.summary().table("Histogram summary"));
    println!(
        "Ticks ({}): {} per second; the tick scope recorded {} ticks = {} ns",
        Ticks::source_name(),
        Grouped(rate),
        Grouped(ticks),
        Grouped(ticks_to_nanos(ticks))
    );
    Ok(())
}
