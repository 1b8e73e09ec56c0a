# Firmware images under QEMU (firmware/run.sh, .ci/check.d/20-firmware.sh): the emulators
# (Cortex-M4 mps2-an386 and Cortex-M0 micro:bit in qemu-system-arm, RISC-V virt in
# qemu-system-misc), the three bare-metal targets, and llvm-tools for llvm-size, llvm-nm and
# llvm-objdump.
apt_install qemu-system-arm qemu-system-misc
rustup target add thumbv7em-none-eabihf thumbv6m-none-eabi riscv32imc-unknown-none-elf
rustup component add llvm-tools
