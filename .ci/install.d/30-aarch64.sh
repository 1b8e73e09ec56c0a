# arm64 counter reads (picollo-linux's page.rs): the aarch64 Linux target, a cross linker
# and qemu user mode to run the page-read tests. About 25 s of packages.
rustup target add aarch64-unknown-linux-gnu
apt_install qemu-user gcc-aarch64-linux-gnu libc6-dev-arm64-cross
