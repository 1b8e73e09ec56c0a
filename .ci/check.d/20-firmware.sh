#!/usr/bin/env bash
# picollo-core on the targets without compare-and-swap with no cfg and no feature (the plain
# kinds must build there as they are), then the firmware images under QEMU: the interrupt
# workload against the host, instruction counts, .bss placement, helper-free record path on
# Cortex-M0, the RMW compile error, interrupts that read and reset inside thread-mode resets
# and reads (atomic and approximate kinds, each core: about 1 s of QEMU each), and the
# Cortex-M4 size and stack limits, the README's figures among them (firmware/run.sh; about
# 70 s in all on 2 cores, builds included).
set -euo pipefail
cd "$(dirname "$0")/../.."
for target in thumbv6m-none-eabi riscv32imc-unknown-none-elf; do
  echo "build picollo-core for $target with no cfg and no feature"
  RUSTFLAGS="" cargo build -q -p picollo-core --target "$target"
done
# defmt::Format on every public type a firmware logs (a compile-time list).
cargo test -q -p picollo-core --features defmt --test firmware
# The report (figures for benches/RESULTS.md) is kept for the bench step's
# benches/reports.d/firmware.sh, which reuses it under CI instead of running the images again.
mkdir -p target/firmware-report
REPORT="$PWD/target/firmware-report/ci-report.md" bash firmware/run.sh
