//! The firmware workload on the host: thread mode's values and every interrupt batch, in one
//! thread, then the report. `run.sh` compares each firmware image's report with this one.

use picollo_core::scalable::XorShift;
use picollo_firmware_workload::{Histograms, IRQ_BATCHES};

static HISTOGRAMS: Histograms = Histograms::new();

fn main() {
    HISTOGRAMS.record_thread_values(|| {});
    let mut rng = XorShift::new(0x1A7E);
    for batch in 0..IRQ_BATCHES {
        HISTOGRAMS.record_irq_batch(batch, &mut rng);
    }
    let mut report = String::new();
    HISTOGRAMS
        .report(&mut report)
        .expect("formatting into a String");
    print!("{report}");
}
