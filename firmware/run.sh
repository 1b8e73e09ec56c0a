#!/usr/bin/env bash
# Builds the firmware images for Cortex-M4 (mps2-an386), Cortex-M0 (micro:bit) and riscv32imc
# (virt), runs them under QEMU, and checks, failing on any miss:
#   - the interrupt workload's report equals the host's, byte for byte, and no image hangs
#     (time limit) or records without a timer interrupt overlapping thread mode;
#   - on the atomic and approximate kinds, an interrupt that reads or resets inside a
#     thread-mode reset, or reads inside a thread-mode percentile batch, never waits and gets
#     the documented result (interrupt_reset), and thread-mode reads that an interrupt's
#     reset overlaps complete consistent;
#   - the plain images build with no cfg and no feature on every target, and the
#     read-modify-write kinds used without support fail to compile with a message naming the
#     cfg and the features;
#   - the recommended `static` histogram is in .bss (no flash for its storage);
#   - the 32-bit record path calls no compiler helper on Cortex-M0;
#   - the Cortex-M4 record-only and percentile .text stay within size-limits.txt, and an integer
#     percentile batch stays within 256 bytes of stack there;
#   - the README's figures for its own pattern (the integer read path's .text over recording
#     alone, and the stack of a seven-rank batch) are measured on exactly that code (readme/),
#     stay within size-limits.txt, and are the figures README.md prints.
# It prints the figures as markdown (instruction counts from QEMU execution traces, .text per
# image, stack depth); with REPORT=path it also writes them there.
#
# Usage: firmware/run.sh   (needs qemu-system-arm, qemu-system-misc, the three rustup targets
# and the llvm-tools component; see .ci/install.d/20-firmware.sh)
set -euo pipefail
cd "$(dirname "$0")"
# The linker scripts come from .cargo/config.toml rustflags, which RUSTFLAGS would replace.
unset RUSTFLAGS CARGO_ENCODED_RUSTFLAGS
export CARGO_TERM_COLOR=never

TARGETS=(thumbv7em-none-eabihf thumbv6m-none-eabi riscv32imc-unknown-none-elf)
declare -A MACHINE=([thumbv7em-none-eabihf]=mps2-an386 [thumbv6m-none-eabi]=microbit
  [riscv32imc-unknown-none-elf]=virt)
declare -A CORE=([thumbv7em-none-eabihf]="Cortex-M4 (mps2-an386)"
  [thumbv6m-none-eabi]="Cortex-M0 (micro:bit)" [riscv32imc-unknown-none-elf]="riscv32imc (virt)")
TIME_LIMIT=60
STACK_LIMIT=256

LLVM_BIN="$(rustc --print sysroot)/lib/rustlib/$(rustc -vV | sed -n 's/^host: //p')/bin"
for tool in llvm-size llvm-nm llvm-objdump; do
  [ -x "$LLVM_BIN/$tool" ] || { echo "error: $tool missing: rustup component add llvm-tools" >&2; exit 1; }
done
for q in qemu-system-arm qemu-system-riscv32; do
  command -v "$q" >/dev/null || { echo "error: $q missing: apt-get install qemu-system-arm qemu-system-misc" >&2; exit 1; }
done

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
report() { printf '%s\n' "$*" >>"$WORK/report.md"; }

qemu() { # target elf semihosting-output [extra qemu args...]
  local target=$1 elf=$2 out=$3; shift 3
  local system=qemu-system-arm
  [[ $target == riscv32* ]] && system=qemu-system-riscv32
  timeout "$TIME_LIMIT" "$system" -M "${MACHINE[$target]}" -bios none -display none \
    -serial null -monitor none -chardev "file,id=semihosting,path=$out" \
    -semihosting-config enable=on,target=native,chardev=semihosting "$@" -kernel "$elf"
}

echo "== host reference"
cargo build -q --release -p picollo-firmware-host
./target/release/picollo-firmware-host >"$WORK/host.txt"

report "### Firmware under QEMU (\`firmware/run.sh\`)"
report ""
report "QEMU $(qemu-system-arm --version | sed -n '1s/.*version \([^ ]*\).*/\1/p'), $(rustc --version), release profile \`opt-level = \"s\"\`, fat LTO."

declare -A COUNT TEXT DATA BSS STACK TICKS SCENARIOS
for target in "${TARGETS[@]}"; do
  echo "== $target on ${MACHINE[$target]}"
  # Plain images first, alone, so that no feature of the RMW images leaks into them.
  cargo build -q --release -p picollo-firmware-plain --target "$target"
  cargo build -q --release -p picollo-firmware --target "$target"
  dir=target/$target/release

  # Read-modify-write kinds without support: a compile error naming the cfg and features.
  if [[ $target != thumbv7em* ]]; then
    if cargo build -q --release -p picollo-firmware-plain --example rmw_error --target "$target" \
      2>"$WORK/rmw.txt"; then
      fail "$target: the atomic histogram compiled without read-modify-write support"
    else
      for needle in "has no read-modify-write operations on this target" \
        "portable_atomic_unsafe_assume_single_core" "critical-section"; do
        grep -q -- "$needle" "$WORK/rmw.txt" || fail "$target: RMW error does not say '$needle'"
      done
    fi
  fi

  # The workload under a timer interrupt, compared with the host.
  out=$WORK/$target.txt
  if ! qemu "$target" "$dir/concurrent" "$out"; then
    fail "$target: concurrent image failed or hung (limit ${TIME_LIMIT}s): $(cat "$out" 2>/dev/null)"
  elif ! diff <(grep -v '^#' "$out") "$WORK/host.txt" >"$WORK/diff.txt"; then
    fail "$target: report differs from the host's:"
    cat "$WORK/diff.txt" >&2
  fi
  STACK[$target]=$(sed -n 's/^# stack fixed_percentiles: \([0-9]*\) bytes/\1/p' "$out")
  TICKS[$target]=$(sed -n 's/^# ticks during thread-mode recording: \([0-9]*\)/\1/p' "$out")
  echo "   report matches the host; ${TICKS[$target]:-?} ticks overlapped thread mode; percentile stack ${STACK[$target]:-?} B"

  # Interrupts that read and reset inside thread mode's resets and reads, on the atomic and
  # the approximate kinds (issue 26): each scenario checks its documented result and fails
  # the image (exit 1) on a miss; a wait that never ends hits the time limit.
  out=$WORK/$target-interrupt-reset.txt
  if ! qemu "$target" "$dir/interrupt_reset" "$out"; then
    fail "$target: interrupt_reset failed or hung (limit ${TIME_LIMIT}s): $(cat "$out" 2>/dev/null)"
  elif [ "$(grep -c ': ok$' "$out")" -ne 8 ]; then
    fail "$target: interrupt_reset reported $(grep -c ': ok$' "$out") of 8 scenarios: $(cat "$out")"
  fi
  sed 's/^/   /' "$out"
  SCENARIOS[$target]=$(cat "$out")

  # Instruction counts from an execution trace: each measurement is a baseline section and a
  # record section (rt's count_records); (record - baseline) / 64 per measurement, in order.
  for image in count_const count_runtime count_mutex count_atomic; do
    trace=$WORK/trace.log
    if ! qemu "$target" "$dir/$image" "$WORK/count.txt" -singlestep -d exec,nochain -D "$trace"; then
      fail "$target: $image failed: $(cat "$WORK/count.txt")"
      continue
    fi
    read -r -a per_record <<<"$(awk '/ picollo_mark_begin$/ {s = 1; n = 0; next}
      / picollo_mark_end$/ {if (s) c[++k] = n; s = 0; next}
      s {n++}
      END {for (i = 2; i <= k; i += 2) printf "%.2f ", (c[i] - c[i - 1]) / 64}' "$trace")"
    rm -f "$trace"
    COUNT[$target/$image]=${per_record[0]:-?}
    [ "$image" = count_runtime ] && COUNT[$target/count_u64]=${per_record[1]:-?}
  done
  for image in count_const count_runtime count_u64 count_mutex count_atomic; do
    : "${COUNT[$target/$image]:=?}"
  done
  echo "   instructions per in-window record: const ${COUNT[$target/count_const]}, runtime ${COUNT[$target/count_runtime]}, u64 ${COUNT[$target/count_u64]}, atomic ${COUNT[$target/count_atomic]}, mutex ${COUNT[$target/count_mutex]}"

  # No compiler helper calls in the 32-bit record loops (Cortex-M0: no CLZ, no 64-bit shifts).
  for image in count_const count_runtime count_mutex; do
    "$LLVM_BIN/llvm-objdump" -d --no-show-raw-insn "$dir/$image" \
      | awk '/^[0-9a-f]+ <.*count_records/ {on = 1; next} /^$/ {on = 0} on' >"$WORK/loop.s"
    [ -s "$WORK/loop.s" ] || fail "$target: no count_records in $image"
    if grep -E '\b(bl|blx|call|jal)\b.*<__' "$WORK/loop.s" >"$WORK/helpers.txt"; then
      fail "$target: $image record loop calls compiler helpers: $(cat "$WORK/helpers.txt")"
    fi
  done

  # The README's pattern (Cortex-M4 only: its figures are Cortex-M4 figures, and its static
  # does not fit the micro:bit): recording alone, then with the integer read path it names.
  if [[ $target == thumbv7em* ]]; then
    cargo build -q --release -p picollo-firmware-readme --target "$target"
    for image in readme_record readme_read; do
      if ! qemu "$target" "$dir/$image" "$WORK/$image.txt"; then
        fail "$target: $image failed: $(cat "$WORK/$image.txt" 2>/dev/null)"
      fi
      TEXT[$target/$image]=$("$LLVM_BIN/llvm-size" -A "$dir/$image" | awk '$1 == ".text" {print $2}')
      # Function sizes, by name without the hash, for the list of what the reads add.
      "$LLVM_BIN/llvm-nm" -C -S --radix=d "$dir/$image" | awk '$3 ~ /^[tTW]$/ {
          name = $4; for (i = 5; i <= NF; i++) name = name " " $i
          sub(/::h[0-9a-f]+$/, "", name); print name "\t" $2 + 0}' \
        | sort >"$WORK/$image.syms"
    done
    STACK[$target/readme]=$(sed -n 's/^# stack try_read fixed_percentiles: \([0-9]*\) bytes/\1/p' "$WORK/readme_read.txt")
    README_READ_TEXT=$((TEXT[$target/readme_read] - TEXT[$target/readme_record]))
    # What the reads add, function by function (new functions, and growth of the others).
    README_READ_FUNCTIONS=$(join -t $'\t' -a 2 -e 0 -o 0,1.2,2.2 "$WORK/readme_record.syms" \
      "$WORK/readme_read.syms" | awk -F '\t' '$3 != $2 {d = $3 - $2; printf "%s\t%d\n", $1, d}' \
      | sort -t $'\t' -k2,2nr | awk -F '\t' '{printf "%s`%s` %+d", sep, $1, $2; sep = ", "}')
    echo "   README read path: +$README_READ_TEXT B .text, seven-rank batch ${STACK[$target/readme]:-?} B of stack"
    echo "   by function: $README_READ_FUNCTIONS"
  fi

  # Code size per image, and .bss placement of the recommended static.
  for image in size_base size_record size_percentiles size_stats size_float; do
    sizes=$("$LLVM_BIN/llvm-size" -A "$dir/$image")
    TEXT[$target/$image]=$(awk '$1 == ".text" {print $2}' <<<"$sizes")
    DATA[$target/$image]=$(awk '$1 == ".rodata" || $1 == ".data" {s += $2} END {print s + 0}' <<<"$sizes")
    BSS[$target/$image]=$(awk '$1 == ".bss" {print $2}' <<<"$sizes")
  done
  sym=$("$LLVM_BIN/llvm-nm" -S "$dir/size_record" | awk '$4 == "PICOLLO_SIZE_HISTOGRAM" {print $3, $2}')
  read -r sym_type sym_size <<<"$sym"
  [[ $sym_type == [bB] ]] || fail "$target: the static histogram is not in .bss (nm type '$sym_type')"
  data=$("$LLVM_BIN/llvm-size" -A "$dir/size_record" | awk '$1 == ".data" {print $2}')
  [ "${data:-0}" -eq 0 ] || fail "$target: size_record has ${data} bytes of .data (expected 0)"
  echo "   static histogram: nm type $sym_type, $((16#$sym_size)) bytes in .bss, .data ${data:-0} bytes"
done

# Limits: the Cortex-M4 record-only and percentile .text, and the percentile stack.
m4=thumbv7em-none-eabihf
record_text=$((TEXT[$m4/size_record] - TEXT[$m4/size_base]))
percentile_text=$((TEXT[$m4/size_percentiles] - TEXT[$m4/size_record]))
while read -r target what limit; do
  [[ -z ${target:-} || $target == \#* ]] && continue
  case $what in
    record) value=$((TEXT[$target/size_record] - TEXT[$target/size_base])) ;;
    percentiles) value=$((TEXT[$target/size_percentiles] - TEXT[$target/size_record])) ;;
    readme-read) value=$((TEXT[$target/readme_read] - TEXT[$target/readme_record])) ;;
    readme-stack) value=${STACK[$target/readme]:-999999} ;;
    *) fail "size-limits.txt: unknown item '$what'"; continue ;;
  esac
  [ "$value" -le "$limit" ] || fail "$target: $what is $value bytes, above the limit of $limit (size-limits.txt)"
  # The README states these two limits: they must be the figures it prints.
  case $what in
    readme-read | readme-stack)
      figure=$(sed ':a;s/\B[0-9]\{3\}\>/,&/;ta' <<<"$limit")
      [ "$what" = readme-read ] && needle="$figure B of \`.text\`" || needle="$figure B of stack"
      grep -qF -- "$needle" ../README.md \
        || fail "README.md does not say '$needle' (size-limits.txt: $target $what $limit)" ;;
  esac
done <size-limits.txt
[ "${STACK[$m4]:-9999}" -le "$STACK_LIMIT" ] \
  || fail "$m4: integer percentile batch uses ${STACK[$m4]:-?} bytes of stack (limit $STACK_LIMIT)"
echo "== Cortex-M4: record-only .text $record_text B, percentiles +$percentile_text B, stack ${STACK[$m4]} B"

report ""
report "Instructions per in-window record (QEMU \`-singlestep -d exec,nochain\` trace: instructions between markers around 64 records, minus the same loop without the record, divided by 64; \`u32\` counters, block scale 7, window \`[1, 10^6]\`):"
report ""
report "| core | \`record_u32\`, const layout | \`record_u32\`, runtime layout | \`record(u64)\`, runtime layout | atomic \`record_u32\` (shared with interrupts) | \`critical_section::Mutex\` + \`record_u32\` |"
report "|---|---|---|---|---|---|"
for target in "${TARGETS[@]}"; do
  report "| ${CORE[$target]} | ${COUNT[$target/count_const]} | ${COUNT[$target/count_runtime]} | ${COUNT[$target/count_u64]} | ${COUNT[$target/count_atomic]} | ${COUNT[$target/count_mutex]} |"
done
report ""
report "Code size (\`llvm-size -A\`, bytes; the images record into a \`static\` plain histogram behind a critical section, block scale 7, window \`[1, 10^6]\`, 1,780 \`u32\` buckets; built with no cfg and no feature). \`+ percentiles\` adds seven fixed-point ranks, \`+ stats\` adds \`int_stats()\`, \`f64 path\` is record + \`percentiles(&[f64])\` + \`stats()\`:"
report ""
report "| core | base .text | record-only .text (Δ) | + percentiles (Δ) | + stats (Δ) | f64 path (Δ over record) | .rodata+.data, record-only | .bss, record-only |"
report "|---|---|---|---|---|---|---|---|"
for target in "${TARGETS[@]}"; do
  base=${TEXT[$target/size_base]}
  rec=${TEXT[$target/size_record]}
  pct=${TEXT[$target/size_percentiles]}
  sts=${TEXT[$target/size_stats]}
  flt=${TEXT[$target/size_float]}
  report "| ${CORE[$target]} | $base | $rec (+$((rec - base))) | $pct (+$((pct - rec))) | $sts (+$((sts - pct))) | $flt (+$((flt - rec))) | ${DATA[$target/size_record]} | ${BSS[$target/size_record]} |"
done
report ""
report "The README's pattern on the Cortex-M4 (\`readme/\`: its \`static\` \`AtomicHistogram\`, block scale 9, window \`[1, 10^6]\`, 6,096 \`AtomicU32\` cells): \`try_read\` of \`fixed_percentiles\` (seven ranks), \`int_stats\`, \`min\` and \`max\` adds $README_READ_TEXT B of \`.text\` to the image that only records (${TEXT[$m4/readme_record]} → ${TEXT[$m4/readme_read]} B); the seven-rank batch uses ${STACK[$m4/readme]} B of stack (its output array, 7 × 56 = 392 B, is the caller's). By function (\`llvm-nm -S\`, bytes; inlined code is counted in its caller): $README_READ_FUNCTIONS."
report ""
report "Stack depth of one \`fixed_percentiles\` batch of seven ranks (stack painted below the caller's frame, then scanned): $(for t in "${TARGETS[@]}"; do printf '%s %s B; ' "${CORE[$t]}" "${STACK[$t]}"; done)"
report ""
report "Interrupt workload: 12,000 values from thread mode (which waits for a timer tick every 400 values, so interrupts always land inside its stream) and 4,000 from the timer interrupt (SysTick / CLINT) into a lock-free \`static\` \`AtomicHistogram\`, a \`Mutex<RefCell<Histogram<[u16; N]>>>\`, an \`ApproxHistogram\` and a \`ScalableCounter\`, three values in sixteen below or above the window (one in sixteen above 2^32); reports identical to the host on all three cores; timer ticks that recorded while thread mode was recording: $(for t in "${TARGETS[@]}"; do printf '%s %s; ' "${CORE[$t]}" "${TICKS[$t]}"; done)"

report ""
report "Interrupts inside thread mode's resets and reads (\`mcu/src/bin/interrupt_reset.rs\`, 100 timer ticks per scenario; the interrupt uses the wait-free \`try_\` reads, thread mode the blocking ones; how many ticks land inside varies from run to run):"
for target in "${TARGETS[@]}"; do
  report ""
  report "${CORE[$target]}:"
  report ""
  while IFS= read -r line; do report "- $line"; done <<<"${SCENARIOS[$target]:-(not run)}"
done

echo
cat "$WORK/report.md"
[ -n "${REPORT:-}" ] && cp "$WORK/report.md" "$REPORT"
if [ "$failures" -ne 0 ]; then
  echo "firmware: $failures check(s) failed" >&2
  exit 1
fi
echo "firmware: all checks passed"
