# The arm64 Linux guest of guest/run.sh (.ci/check.d/35-guest.sh): qemu-system-aarch64 (in
# qemu-system-arm), the cross linker, the static musl target for picollo and picollo-guest,
# cpio for the initramfs, and dpkg's arm64 architecture so that guest/run.sh can
# `apt-get download` Debian's arm64 kernel (the package linux-image-arm64 depends on) and
# busybox-static:arm64 into target/guest. About 20 s (most of it the extra apt-get update).
apt_install qemu-system-arm gcc-aarch64-linux-gnu cpio
rustup target add aarch64-unknown-linux-musl
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  as_root dpkg --add-architecture arm64
  as_root apt-get update -qq
fi
