//! The thread-local record against the plain record in several layouts of a binary that
//! links nothing but Picollo's kinds (the peer's code is in `thread_local`, which prints the
//! same table for its own binary): see `picollo_benches::layouts`. Each layout runs in a
//! process of its own; the block's last row is the target (thread-local at most 1.5× the
//! plain record of its width, in every layout).
//!
//! Run: `cargo bench -p picollo-benches --bench thread_local_alone`.

use picollo_benches::layouts;

#[global_allocator]
static ALLOCATOR: layouts::TrackCells = layouts::TrackCells;

fn main() {
    if layouts::run_child() {
        return;
    }
    layouts::report(
        "thread-local-layouts-alone",
        "`thread_local_alone` (Picollo's plain and thread-local kinds only)",
    );
}
