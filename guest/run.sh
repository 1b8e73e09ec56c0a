#!/usr/bin/env bash
# Picollo's hardware counters on a real kernel PMU driver: boots Debian's arm64 kernel under
# `qemu-system-aarch64 -machine virt -cpu max -icount shift=0` (the armv8_pmuv3 driver, 7
# counters; one instruction is one cycle and one nanosecond of guest time, so counts are
# exact) with an initramfs of busybox, `picollo` and `picollo-guest` (static, musl), and
# runs `picollo-guest check` there: exact instruction counts of add_chain_256(n) through
# CounterSession reads, the user-space read path (perf_user_access=1: the mmap page's
# seqlock, index, pmc_width, MRS) and its read() fallback (perf_user_access=0), groups of 7
# and 8, multiplexing of 8 and 12 counters, spans, the tracing layer, `picollo counters`,
# `picollo stat` and `picollo attach -e instructions PID`, and capability detection. See
# guest/src/ (main.rs: the map; model.rs: the model) for the checks and their model.
#
# The guest prints `PASS name: …` / `FAIL name: …` lines and a final
# `PICOLLO-GUEST DONE passed=N failed=M`; this script prints them and exits non-zero on any
# FAIL, a missing summary (a crash or a hang) or the time limit. With REPORT=path it also
# writes the read-cost figures as markdown there (benches/reports.d/guest.sh).
#
# Usage: guest/run.sh   (needs what .ci/install.d/35-guest.sh installs: qemu-system-arm,
# gcc-aarch64-linux-gnu, the aarch64-unknown-linux-musl target, dpkg's arm64 architecture)
# The kernel and busybox .debs are downloaded once with `apt-get download` into target/guest.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never
TARGET=aarch64-unknown-linux-musl
WORK=target/guest
TIME_LIMIT=${GUEST_TIME_LIMIT:-150}
mkdir -p "$WORK/debs"

for tool in qemu-system-aarch64 aarch64-linux-gnu-gcc dpkg-deb cpio gzip; do
  command -v "$tool" >/dev/null || { echo "error: $tool missing: see .ci/install.d/35-guest.sh" >&2; exit 1; }
done

# Why musl: the target links statically by default with its own libc, so the binaries run
# on the bare initramfs, and its build directory is separate from the -gnu target's that
# .ci/check.d/30-aarch64.sh uses (different RUSTFLAGS there would rebuild both every time).
echo "== build picollo and picollo-guest for $TARGET"
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_LINKER=aarch64-linux-gnu-gcc
cargo build -q --release -p picollo-cli -p picollo-guest --target "$TARGET"
# picollo-linux's tests that take another branch with a PMU run in the guest too: the
# hardware tests, which skip on CI's VM, and the span and software-event tests (release:
# the dependencies are the ones just built).
GUEST_TESTS=(hardware spans software_events)
declare -A test_bin
while IFS=$'\t' read -r name exe; do
  test_bin[$name]=$exe
done < <(cargo test -q --release -p picollo-linux "${GUEST_TESTS[@]/#/--test=}" --target "$TARGET" \
  --no-run --message-format=json |
  sed -n 's/.*"target":{[^}]*"name":"\([^"]*\)".*"executable":"\([^"]*\)".*/\1\t\2/p')
for t in "${GUEST_TESTS[@]}"; do
  [ -x "${test_bin[$t]:-}" ] || { echo "error: no test binary for picollo-linux/tests/$t.rs" >&2; exit 1; }
done

echo "== kernel and busybox from Debian (arm64)"
kernel_pkg=$(apt-cache depends linux-image-arm64:arm64 2>/dev/null |
  sed -n 's/^ *Depends: \(linux-image-[0-9][^:]*-arm64\)\(:arm64\)\?$/\1/p' | head -1)
[ -n "$kernel_pkg" ] || { echo "error: no linux-image-arm64:arm64 in apt: dpkg --add-architecture arm64 && apt-get update" >&2; exit 1; }
for pkg in "$kernel_pkg" busybox-static; do
  if ! ls "$WORK/debs/${pkg}_"*_arm64.deb >/dev/null 2>&1; then
    (cd "$WORK/debs" && apt-get download -q "$pkg:arm64" 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
  fi
  deb=$(ls "$WORK/debs/${pkg}_"*_arm64.deb 2>/dev/null | head -1)
  [ -n "$deb" ] || { echo "error: apt-get download $pkg:arm64 failed" >&2; exit 1; }
  stamp="$WORK/extracted/.$(basename "$deb")"
  if [ ! -e "$stamp" ]; then
    dpkg-deb -x "$deb" "$WORK/extracted"
    touch "$stamp"
  fi
done
kernel=$(ls "$WORK"/extracted/boot/vmlinuz-*-arm64 | sort -V | tail -1)
echo "   $(basename "$kernel"), busybox $(ls "$WORK"/debs/busybox-static_*_arm64.deb | sed 's/.*busybox-static_\([^_]*\)_.*/\1/; s/%3a/:/')"

echo "== initramfs"
root="$WORK/root"
rm -rf "$root"
mkdir -p "$root"/{bin,proc,sys,dev,tmp}
cp "$WORK/extracted/bin/busybox" "$root/bin/"
for b in picollo picollo-guest; do
  cp "target/$TARGET/release/$b" "$root/bin/"
  aarch64-linux-gnu-strip "$root/bin/$b"
done
for t in "${GUEST_TESTS[@]}"; do
  cp "${test_bin[$t]}" "$root/bin/test-$t"
  aarch64-linux-gnu-strip "$root/bin/test-$t"
done
cat >"$root/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /dev/shm
mount -t tmpfs shm /dev/shm
mount -t tmpfs tmp /tmp
echo "guest: $(uname -r), $(dmesg | grep -o 'enabled with .* counters available')"
picollo-guest check /bin/picollo
echo "guest: picollo-guest exited with status $?"
# picollo-linux's tests on this PMU (user access left on by the checks). A test may still
# skip for an event QEMU's PMU lacks (generic cache events), never for want of a PMU.
for t in @GUEST_TESTS@; do
  if PICOLLO_SKIP_LOG=/tmp/skips /bin/test-$t --test-threads=1 >/tmp/$t.log 2>&1; then
    echo "PASS tests-$t: picollo-linux/tests/$t.rs: $(grep -o '[0-9]* passed; [0-9]* failed' /tmp/$t.log)"
  else
    echo "FAIL tests-$t: picollo-linux/tests/$t.rs failed:"
    sed "s/^/INFO   /" /tmp/$t.log
  fi
done
if [ -e /tmp/skips ]; then
  while IFS="$(printf '\t')" read -r kind test reason; do
    case "$reason" in
      "no hardware PMU"*) echo "FAIL tests: $test skipped in the guest: $reason" ;;
      *) echo "INFO tests: $test skipped in the guest: $reason" ;;
    esac
  done </tmp/skips
fi
poweroff -f
EOF
sed -i "s/@GUEST_TESTS@/${GUEST_TESTS[*]}/" "$root/init"
chmod +x "$root/init"
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) >"$WORK/initramfs.cpio.gz"

echo "== boot (limit ${TIME_LIMIT} s)"
log="$WORK/console.log"
start=$(date +%s)
status=0
timeout "$TIME_LIMIT" qemu-system-aarch64 -machine virt -cpu max -icount shift=0 -m 1024 \
  -display none -monitor none -serial stdio -nic none -no-reboot \
  -kernel "$kernel" -initrd "$WORK/initramfs.cpio.gz" \
  -append "console=ttyAMA0 panic=-1 quiet" </dev/null >"$log" 2>&1 || status=$?
elapsed=$(( $(date +%s) - start ))
tr -d '\r' <"$log" | grep -E '^(guest:|PASS|FAIL|INFO|FIGURE|PICOLLO-GUEST|thread .* panicked)' || true
echo "   guest ran ${elapsed} s"

failures=0
if [ "$status" -eq 124 ]; then
  echo "FAIL: the guest did not finish within ${TIME_LIMIT} s (console log: $log)" >&2
  failures=$((failures + 1))
fi
summary=$(tr -d '\r' <"$log" | sed -n 's/^PICOLLO-GUEST DONE passed=\([0-9]*\) failed=\([0-9]*\)$/\1 \2/p' | tail -1)
if [ -z "$summary" ]; then
  echo "FAIL: no summary from the guest (crash or hang); last lines of $log:" >&2
  tail -n 30 "$log" >&2
  failures=$((failures + 1))
else
  read -r passed failed <<<"$summary"
  nfail=$(tr -d '\r' <"$log" | grep -c '^FAIL' || true)
  [ "$failed" -eq 0 ] && [ "$nfail" -eq 0 ] || failures=$((failures + failed + nfail))
  echo "== guest checks: $passed passed, $failed failed"
fi

if [ -n "${REPORT:-}" ]; then
  fig() { tr -d '\r' <"$log" | sed -n "s/^FIGURE $1 //p" | tail -1; }
  {
    echo "### Counter reads on a real PMU driver (\`guest/run.sh\`)"
    echo
    echo "Debian $(basename "$kernel" | sed 's/vmlinuz-//') (armv8_pmuv3 driver) under QEMU $(qemu-system-aarch64 --version | sed -n '1s/.*version \([^ ]*\).*/\1/p') \`-machine virt -cpu max -icount shift=0\` (one instruction per cycle), $(rustc --version), \`--release\`, \`$TARGET\`. Guest instructions per \`CounterSession::read\`, user and kernel (a second session with \`exclude_kernel(false)\` around 1,000 reads, median of 5); the user-space path is the mmap page's seqlock and \`MRS\` of the counter register (\`perf_user_access=1\`), the other one \`read()\` of the group:"
    echo
    echo "| counters in the group | user-space read | \`read()\` syscall | ratio |"
    echo "|---|---|---|---|"
    for n in 1 2; do
      u=$(fig "read_user_$n"); s=$(fig "read_syscall_$n")
      ratio=$(awk -v u="$u" -v s="$s" 'BEGIN { if (u > 0) printf "%.1f×", s / u; else print "?" }')
      echo "| $n | ${u:-?} | ${s:-?} | $ratio |"
    done
    echo
    echo "Instructions inside a measured interval besides the workload (\`258·n + C\`, exact for every n): user-space reads C = $(fig constant_user_read), \`read()\` C = $(fig constant_syscall_read), \`span!\` C = $(fig constant_span), a span of the \`tracing\` layer C = $(fig constant_tracing)."
  } >"$REPORT"
fi

if [ "$failures" -ne 0 ]; then
  echo "guest: $failures failure(s)" >&2
  exit 1
fi
echo "guest: all checks passed in ${elapsed} s"
