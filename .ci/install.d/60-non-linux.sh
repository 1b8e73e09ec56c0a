# picollo-tracing off Linux: the standard libraries of a Windows and a macOS target, for
# `cargo check` (no linker needed). About 20 s of downloads.
rustup target add x86_64-pc-windows-gnu x86_64-apple-darwin
