#!/usr/bin/env bash
# Runs mpkc's GPU verification on the GPU machine, in one run, and prints a table last.
#
#   scripts/gpu-verify.sh [all|verify|dsv3|inject|sanitize|gpus|tests]     (default: all)
#
# - verify:   every stdlib case (each task instance and each producer -> dependent chain through
#             events) at M = 1 and M = 16, plus a run with 7 tasks per CTA (ring slots reused
#             twice over); the odd shapes are in the stdlib itself (q_b's split-K loop of 3 stages
#             under a 6-stage ring, argmax over 129,280 = 63.1 chunks of 2,048).
# - dsv3:     DeepSeek-V3's routed experts (stdlib/dsv3/moe_experts.mpk, at M = 1, 16 and 3 with
#             7 tasks per CTA), the router-weighted SwiGLU, and the MoE block as one chain
#             (`mpkc verify --chain stdlib/dsv3/moe_block.chain.toml`) at M = 1 and 4, and the
#             whole decode layer (`stdlib/dsv3/decode_layer.chain.toml`) at M = 1 and 4.
# - inject:   each test-only fault must FAIL and name the barrier, page or region it broke.
# - sanitize: compute-sanitizer memcheck, racecheck, synccheck and initcheck, one pass per case
#             at M = 1 with 2 tasks per CTA, the cases spread over every GPU of the host.
# - gpus:     the stdlib at M = 1 on GPU 0 alone, then on every GPU (`--gpus all`): the verdicts
#             must be identical; both wall times and the speedup are printed.
# - tests:    the test binary of tests/gpu.rs ($GPU_TESTS), built where Rust is with
#             `cargo test --test gpu --no-run` (cargo prints its path, target/debug/deps/gpu-<hash>)
#             and carried over, run from the repository root with --include-ignored and $MPKC
#             exported (the tests find mpkc through it): the no-driver check (the driver hidden),
#             the stdlib at M = 1 and 16, the fault injections, and on a host with two or more GPUs
#             the spread over every GPU. One row per test. In `all` only where $GPU_TESTS is set.
#
# Needs: an NVIDIA GPU, nvcc on PATH (or $NVCC), compute-sanitizer for `sanitize`, and an mpkc
# binary ($MPKC, default target/release/mpkc: build it where Rust is, carry it over). Logs go to
# $OUT (default gpu-verify-out/). Run it from the repository root (the tests read examples/).
set -u
MODE=${1:-all}
MPKC=${MPKC:-target/release/mpkc}
GPU_TESTS=${GPU_TESTS:-}
OUT=${OUT:-gpu-verify-out}
mkdir -p "$OUT"
ROWS=()
FAILED=0

row() {
  local r
  r=$(printf '%-11s | %-58s | %-6s | %s' "$1" "$2" "$3" "$4")
  ROWS+=("$r")
  echo "$r" >>"$OUT/rows.txt"  # survives a run cut short
}

summary_of() { grep -E '^verified ' "$1" | tail -1; }

# Cases at once per GPU in `verify` (`--per-gpu`; the chains run one case each).
PER_GPU=${PER_GPU:-4}

run_verify() { # name, log, args...
  local name=$1 log=$2; shift 2
  "$MPKC" verify --per-gpu "$PER_GPU" "$@" >"$log" 2>&1
  local rc=$?
  local verdict=PASS
  [ $rc -eq 0 ] || { verdict=FAIL; FAILED=1; }
  row verify "$name" "$verdict" "rc $rc; $(summary_of "$log")"
}

# An injected fault passes the check when verify exits 1 and its report names the fault.
run_inject() { # fault, case, expected-pattern
  local fault=$1 case=$2 pat=$3 log="$OUT/inject-${1%%=*}-$2.log"
  "$MPKC" verify --inject "$fault" --only "$case" --timeout 120 --wait-timeout-ms 2000 >"$log" 2>&1
  local rc=$?
  local msg
  msg=$(grep -E -m1 "$pat" "$log" | sed -e 's/^ *//' | cut -c1-150)
  if [ $rc -eq 1 ] && [ -n "$msg" ]; then
    row inject "$fault on $case" "CAUGHT" "$msg"
  else
    FAILED=1
    row inject "$fault on $case" "MISSED" "rc $rc; see $log"
  fi
}

if [ "$MODE" = all ] || [ "$MODE" = verify ]; then
  run_verify "stdlib, M = 1, 4 tasks per CTA" "$OUT/verify-m1.log" --m 1
  run_verify "stdlib, M = 16, 4 tasks per CTA" "$OUT/verify-m16.log" --m 16
  run_verify "stdlib, contract M, 7 tasks per CTA, seed 2" "$OUT/verify-t7.log" --tasks 7 --seed 2
  # Issue 11, case 3: a 32-thread arrival after a named barrier over the 128 consumer threads.
  run_verify "examples/linear_partial_arrival.mpk, M = 16, 4 tasks per CTA" "$OUT/verify-partial-m16.log" examples/linear_partial_arrival.mpk --m 16
  run_verify "examples/linear_partial_arrival.mpk, M = 1, 7 tasks per CTA" "$OUT/verify-partial-t7.log" examples/linear_partial_arrival.mpk --m 1 --tasks 7
  # Issue 12, Deliver 3: 64 tokens per task (tile N 64); 37 leaves a partial activation tile.
  run_verify "examples/linear_bf16_m64.mpk, M = 64, 4 tasks per CTA" "$OUT/verify-m64.log" examples/linear_bf16_m64.mpk --m 64
  run_verify "examples/linear_bf16_m64.mpk, M = 37, 7 tasks per CTA" "$OUT/verify-m37-t7.log" examples/linear_bf16_m64.mpk --m 37 --tasks 7
  # 64 tokens per task on 64-row tiles with tile K 256: the residual linear, the in-task split-K
  # sum and lm_head's tail tile (16,160 = 252 x 64 + 32).
  run_verify "examples/linear_bf16_{residual,splitk_sum,tail}_m64.mpk, M = 64, 4 tasks per CTA" "$OUT/verify-k256-m64.log" examples/linear_bf16_residual_m64.mpk examples/linear_bf16_splitk_sum_m64.mpk examples/linear_bf16_tail_m64.mpk --m 64
  run_verify "examples/linear_bf16_{residual,splitk_sum,tail}_m64.mpk, M = 37, 7 tasks per CTA" "$OUT/verify-k256-m37-t7.log" examples/linear_bf16_residual_m64.mpk examples/linear_bf16_splitk_sum_m64.mpk examples/linear_bf16_tail_m64.mpk --m 37 --tasks 7
  # Issue 12, Deliver 3: a tail tile (kv_a N 576, lm_head N 16,160).
  run_verify "examples/linear_bf16_tail.mpk, M = 16, 4 tasks per CTA" "$OUT/verify-tail-m16.log" examples/linear_bf16_tail.mpk --m 16
  run_verify "examples/linear_bf16_tail.mpk, M = 1, 7 tasks per CTA" "$OUT/verify-tail-t7.log" examples/linear_bf16_tail.mpk --m 1 --tasks 7
  # Issue 12: 64-row tiles on sm_90a (one m64 wgmma per K step, twice the tasks).
  run_verify "examples/linear_bf16_residual_tile64.mpk, M = 16, 4 tasks per CTA" "$OUT/verify-tile64-m16.log" examples/linear_bf16_residual_tile64.mpk --m 16
  run_verify "examples/linear_bf16_residual_tile64.mpk, M = 1, 7 tasks per CTA" "$OUT/verify-tile64-t7.log" examples/linear_bf16_residual_tile64.mpk --m 1 --tasks 7
  grep -E '^  (PASS|FAIL|SKIP)' "$OUT/verify-m1.log" "$OUT/verify-m16.log" | sed -e "s|$OUT/||" >"$OUT/verify-cases.txt"
fi

if [ "$MODE" = all ] || [ "$MODE" = dsv3 ]; then
  run_verify "dsv3 routed experts, contract M" "$OUT/verify-moe.log" stdlib/dsv3/moe_experts.mpk
  run_verify "dsv3 routed experts, M = 3, 7 tasks per CTA" "$OUT/verify-moe-m3.log" stdlib/dsv3/moe_experts.mpk --instance dsv3 --m 3 --tasks 7 --seed 2
  run_verify "dsv3 router-weighted SwiGLU, contract M" "$OUT/verify-silu-w.log" stdlib/dsv3/silu_mul_fp8.mpk --only weighted
  run_verify "dsv3 MoE block chain, M = 1" "$OUT/verify-chain-m1.log" --chain stdlib/dsv3/moe_block.chain.toml
  run_verify "dsv3 MoE block chain, M = 4" "$OUT/verify-chain-m4.log" --chain stdlib/dsv3/moe_block.chain.toml --m 4
  run_verify "dsv3 decode layer chain, M = 1, context 16,384" "$OUT/verify-layer-m1.log" --chain stdlib/dsv3/decode_layer.chain.toml --context 16384
  run_verify "dsv3 decode layer chain, M = 4, context 513" "$OUT/verify-layer-m4.log" --chain stdlib/dsv3/decode_layer.chain.toml --m 4 --context 513
fi

if [ "$MODE" = all ] || [ "$MODE" = inject ]; then
  run_inject region-short linear_sm100_v2 'E0304|E0110'
  run_inject region-short rmsnorm_v2_h4096 'E0304|E0110'
  run_inject page-skip linear_sm100_v2 'release of this page was skipped|acquired without'
  run_inject page-skip rmsnorm_v2_h4096 'release of this page was skipped|acquired without'
  run_inject page-double linear_sm100_v2 'released twice'
  run_inject page-double argmax_reduce_v2 'released twice'
  run_inject count-off linear_sm100_v2 'op ordinal 0'
  run_inject count-off silu_mul_v2 'SEM_DEP_READY'
  run_inject reinit-drop linear_sm100_v2 're-init was dropped'
  run_inject reinit-drop linear_fp8_blockscale_q_b 're-init was dropped'
  run_inject bad-scale linear_fp8_blockscale_q_b 'W_scale\[0\] = .* is not a power of two'
fi

if [ "$MODE" = all ] || [ "$MODE" = sanitize ]; then
  SB="$OUT/sanitize-build"
  "$MPKC" verify --m 1 --tasks 2 --out "$SB" --wait-timeout-ms 120000 >"$OUT/sanitize-build.log" 2>&1
  if [ $? -ne 0 ]; then
    FAILED=1
    row sanitize "test build at M = 1" FAIL "see $OUT/sanitize-build.log"
  fi
  # `NAME<TAB>reference: …` per runnable case; the sanitizer watches the kernel, not torch: Python
  # references run on the CPU here (MPKC_REFERENCE_DEVICE, docs/references.md).
  CASES=$("$MPKC" verify --m 1 --list | grep -v 'skipped:' | cut -f1)
  export MPKC_REFERENCE_DEVICE=cpu
  NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
  [ "$NGPU" -ge 1 ] || NGPU=1
  sanitize_case() { # case, device -> one result line "PASS|FAIL<TAB>detail"
    local c=$1 dev=$2 res="" tool log rc errs ok bad
    for tool in memcheck racecheck synccheck initcheck; do
      log="$OUT/san-$tool-$(echo "$c" | tr -c 'A-Za-z0-9_\n' '_').log"
      timeout "${SAN_TIMEOUT:-300}" compute-sanitizer --tool "$tool" --target-processes all --error-exitcode 9 \
        "$MPKC" verify --m 1 --tasks 2 --out "$SB" --wait-timeout-ms 120000 --child "$c" --device "$dev" >"$log" 2>&1
      rc=$?
      errs=$(grep -E -m1 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | sed -e 's/^=* *//')
      ok=$(grep -c '"status":"ok"' "$log")
      bad=$(grep -c '"pass":false' "$log")
      if [ $rc -eq 0 ] && [ "$ok" -ge 1 ] && [ "$bad" -eq 0 ]; then res="$res $tool ok;"; else res="$res $tool rc=$rc ($errs);"; fi
    done
    printf '%s\t%s\n' "$( [ "${res#*rc=}" = "$res" ] && echo PASS || echo FAIL)" "$res"
  }
  # Case k runs on GPU k mod NGPU; each GPU works through its share in order.
  mapfile -t CASE_LIST < <(printf '%s\n' "$CASES" | sed '/^$/d')
  for ((d = 0; d < NGPU; d++)); do
    (
      for ((k = d; k < ${#CASE_LIST[@]}; k += NGPU)); do
        sanitize_case "${CASE_LIST[$k]}" "$d" >"$OUT/san-result-$k.txt"
      done
    ) &
  done
  wait
  for ((k = 0; k < ${#CASE_LIST[@]}; k++)); do
    IFS=$'\t' read -r verdict detail <"$OUT/san-result-$k.txt"
    [ "$verdict" = PASS ] || FAILED=1
    row sanitize "${CASE_LIST[$k]}" "$verdict" "$detail"
  done
fi

if [ "$MODE" = all ] || [ "$MODE" = gpus ]; then
  t0=$(date +%s.%N)
  "$MPKC" verify --m 1 --gpus 0 >"$OUT/gpus-one.log" 2>&1; rc1=$?
  t1=$(date +%s.%N)
  "$MPKC" verify --m 1 --gpus all >"$OUT/gpus-all.log" 2>&1; rc2=$?
  t2=$(date +%s.%N)
  verdicts() { grep -E '^  (PASS|FAIL|SKIP)' "$1" | sed -e 's/  \[.*$//'; }
  n=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
  one=$(awk "BEGIN{print $t1 - $t0}"); all=$(awk "BEGIN{print $t2 - $t1}")
  if [ $rc1 -eq 0 ] && [ $rc2 -eq 0 ] && [ "$(verdicts "$OUT/gpus-one.log")" = "$(verdicts "$OUT/gpus-all.log")" ]; then
    row gpus "stdlib, M = 1: 1 GPU vs all $n" SAME "$(printf '%.1f s on 1 GPU, %.1f s on %s: %.2fx' "$one" "$all" "$n" "$(awk "BEGIN{print $one / $all}")")"
  else
    FAILED=1
    row gpus "stdlib, M = 1: 1 GPU vs all $n" DIFFER "rc $rc1/$rc2; diff $OUT/gpus-one.log $OUT/gpus-all.log"
  fi
fi

if [ "$MODE" = tests ] || { [ "$MODE" = all ] && [ -n "$GPU_TESTS" ]; }; then
  if [ -z "$GPU_TESTS" ] || [ ! -x "$GPU_TESTS" ]; then
    FAILED=1
    row tests "tests/gpu.rs" FAIL "GPU_TESTS='$GPU_TESTS' is no executable: cargo test --test gpu --no-run"
  else
    log="$OUT/tests.log"
    skip=()
    n=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
    # The spread over every GPU needs two; on one GPU it is left out, and said so.
    [ "$n" -ge 2 ] || skip=(--skip spreading_over_every_gpu_gives_the_one_gpu_results)
    MPKC="$(cd "$(dirname "$MPKC")" && pwd)/$(basename "$MPKC")" \
      "$GPU_TESTS" --include-ignored --test-threads 1 "${skip[@]}" >"$log" 2>&1
    rc=$?
    while read -r name verdict; do
      row tests "$name" "$verdict" "see $log"
    done < <(sed -n -e 's/^test \([A-Za-z0-9_:]*\) \.\.\. \(ok\|FAILED\|ignored\).*$/\1 \2/p' "$log")
    [ "$n" -ge 2 ] || row tests spreading_over_every_gpu_gives_the_one_gpu_results SKIP "$n GPU on this host"
    if [ $rc -ne 0 ] || ! grep -q '^test result: ok' "$log"; then
      FAILED=1
      row tests "tests/gpu.rs" FAIL "rc $rc; $(grep -E '^test result' "$log" | tail -1)"
    fi
  fi
fi

echo
echo "mpkc GPU verification, $(date -u +%Y-%m-%d), $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
printf '%-11s | %-58s | %-6s | %s\n' step case result detail
printf '%s\n' "------------+------------------------------------------------------------+--------+-------"
printf '%s\n' "${ROWS[@]}"
exit $FAILED
