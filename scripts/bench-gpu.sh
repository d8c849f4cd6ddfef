#!/usr/bin/env bash
# Times mpkc's production builds of the stdlib linears against cuBLAS (and its consumer ops
# against PyTorch eager) on the GPU machine, in one process per M, and prints the tables last
# (docs/bench.md).
#
#   MPKC=target/release/mpkc OUT=bench-out scripts/bench-gpu.sh [all|m1|m16|m64|fixed]   (default: all)
#
# Each step is its own mpkc process; a single step (e.g. `m16`) keeps one call short where a
# session's command time is bounded.
#
# - bench M:     `mpkc bench --m M` over the embedded stdlib, M = 1, 16 and 64 (a contract that
#                cannot take M lists its cases as skipped, with the checker's reason), both
#                methods (standalone graph replay, persistent stamps), checked against cuBLAS
#                (the consumer ops against PyTorch eager, run by python3) before timing; $OUT/bench-m<M>.json (schema: docs/bench.md) and .txt (the table).
# - fixed cost:  the house linear (stdlib/linear_sm100_v2.mpk) at K = 128 (one stage per task),
#                M = 1 and 16: 1 and 8 tasks per CTA, weights in L2; $OUT/fixed-cost.{json,txt};
#                the same for the 64-row residual linear's o_proj, $OUT/fixed-cost-tile64.*.
#
# Needs: an NVIDIA GPU, nvcc on PATH (or $NVCC: mpkc compiles the production builds there with it),
# libcublas (found next to nvcc, in $CUDA_HOME/lib64, /usr/local/cuda/lib64 or PyTorch's
# nvidia/cublas/lib; else the cases report no competitor), python3 with PyTorch and CUDA for the
# consumer ops' competitor ($MPKC_PYTHON; else they report no competitor), and an mpkc binary ($MPKC, default
# target/release/mpkc: build it where Rust is with `cargo build --release`, carry it over). Run it
# from the repository root (the fixed cost reads stdlib/). Each step is bounded to 590 s.
set -u
MODE=${1:-all}
case "$MODE" in
  all | m1 | m16 | m64 | fixed) ;;
  *) echo "usage: $0 [all|m1|m16|m64|fixed]" >&2; exit 2 ;;
esac
MPKC=${MPKC:-target/release/mpkc}
OUT=${OUT:-bench-out}
STEP_TIMEOUT=${STEP_TIMEOUT:-590}
mkdir -p "$OUT"
# The production builds go outside $OUT (a device call returns only a few files of $OUT: the
# tables, JSON and perf.md must be among them).
BUILD=${BUILD:-$(mktemp -d "${TMPDIR:-/tmp}/mpkc-bench.XXXXXX")}
FAILED=0
ROWS=()

# The competitor's library: the first folder holding libcublas.so*.
nvcc_bin=$(command -v "${NVCC:-nvcc}" 2>/dev/null || true)
torch_cublas=$(python3 -c 'import os, nvidia.cublas as c; print(os.path.join(list(c.__path__)[0], "lib"))' 2>/dev/null || true)
for d in "${CUDA_HOME:-/nonexistent}/lib64" "${nvcc_bin:+$(dirname "$(dirname "$nvcc_bin")")/lib64}" \
  /usr/local/cuda/lib64 "$torch_cublas"; do
  if [ -n "$d" ] && ls "$d"/libcublas.so* >/dev/null 2>&1; then
    export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    echo "libcublas from $d"
    break
  fi
done

row() { ROWS+=("$(printf '%-24s | %-6s | %s' "$1" "$2" "$3")"); }

for M in 1 16 64; do
  [ "$MODE" = all ] || [ "$MODE" = "m$M" ] || continue
  base="$OUT/bench-m$M"
  # The stdlib caps m_real at 16: M = 64 is examples/linear_bf16_m64.mpk,
  # examples/linear_bf16_residual_m64.mpk, examples/linear_bf16_splitk_sum_m64.mpk and
  # examples/linear_bf16_tail_m64.mpk (lm_head) (tile N 64), and
  # examples/linear_bf16_gemv_mma_m64.mpk (the MMA GEMV at 64 tokens: q_b, o_proj),
  # examples/linear_bf16_splitk_atomic_m64.mpk (`split_k atomic`); the
  # tail-tile linears (kv_a, lm_head) are examples/linear_bf16_tail.mpk.
  # examples/linear_bf16_residual_tile64.mpk: the residual linears on 64-row tiles (sm_90a);
  # examples/linear_bf16_splitk_atomic.mpk: `split_k atomic` at 1 and 16 tokens;
  # examples/linear_bf16_short_tile.mpk: short tiles (sm_90a) at every M, no K split.
  # At M = 16 lm_head also runs on the 64-token tiles of examples/linear_bf16_tail_m64.mpk
  # (tile N 64, tile K 256, 253 tasks; its m_real range admits 16): the weight stream is the
  # same, the wider tile K halves the stage waits per byte.
  if [ "$M" = 64 ]; then files=(examples/linear_bf16_m64.mpk examples/linear_bf16_residual_m64.mpk examples/linear_bf16_splitk_sum_m64.mpk examples/linear_bf16_tail_m64.mpk examples/linear_bf16_gemv_mma_m64.mpk examples/linear_bf16_splitk_atomic_m64.mpk examples/linear_bf16_short_tile.mpk); else files=(stdlib examples/linear_bf16_tail.mpk examples/linear_bf16_residual_tile64.mpk examples/linear_bf16_splitk_atomic.mpk examples/linear_bf16_short_tile.mpk); fi
  [ "$M" = 16 ] && files+=(examples/linear_bf16_tail_m64.mpk)
  timeout "$STEP_TIMEOUT" "$MPKC" bench "${files[@]}" --m "$M" --save-json "$base.json" --out "$BUILD/build-m$M" \
    >"$base.txt" 2>"$base.log"
  rc=$?
  verdict=OK
  [ $rc -eq 0 ] || { verdict="rc $rc"; FAILED=1; }
  [ $rc -eq 124 ] && verdict="rc 124 (ran past STEP_TIMEOUT = $STEP_TIMEOUT s)"
  # perf.md names a failed step in its section, with the last progress line it reached.
  if [ $rc -eq 0 ]; then rm -f "$base.failed"; else
    { echo "this step failed: $verdict; mpkc bench printed no table. Its last progress line:"; tail -1 "$base.log"; } >"$base.failed"
  fi
  row "bench M = $M" "$verdict" "$base.txt, $base.json, $base.log"
done

if [ "$MODE" = all ] || [ "$MODE" = fixed ]; then
  timeout "$STEP_TIMEOUT" "$MPKC" bench --fixed-cost stdlib/linear_sm100_v2.mpk --param K=128 --m 1,16 \
    --save-json "$OUT/fixed-cost.json" --out "$BUILD/build-fixed-cost" >"$OUT/fixed-cost.txt" 2>"$OUT/fixed-cost.log"
  rc=$?
  verdict=OK
  [ $rc -eq 0 ] || { verdict="rc $rc"; FAILED=1; }
  row "fixed cost (K = 128)" "$verdict" "$OUT/fixed-cost.txt, $OUT/fixed-cost.json"
  # The same on the 64-row residual linear (7 pages at 5 stages, 2 at K = 128: a task after
  # another on its SM takes the pages it left, plan::queue), o_proj's 112 tasks.
  timeout "$STEP_TIMEOUT" "$MPKC" bench --fixed-cost examples/linear_bf16_residual_tile64.mpk --instance o_proj --param K=128 --m 1,16 \
    --save-json "$OUT/fixed-cost-tile64.json" --out "$BUILD/build-fixed-cost-tile64" >"$OUT/fixed-cost-tile64.txt" 2>"$OUT/fixed-cost-tile64.log"
  rc=$?
  verdict=OK
  [ $rc -eq 0 ] || { verdict="rc $rc"; FAILED=1; }
  row "fixed cost, 64-row tile" "$verdict" "$OUT/fixed-cost-tile64.txt, $OUT/fixed-cost-tile64.json"
fi

# docs/perf.md: the tables in $OUT with what produced them (copy it into docs/ from $OUT). A step
# run earlier into the same $OUT (a split run: `m1 fixed`, then `m16`, then `m64`, each call
# under 10 minutes) keeps its section; $OUT/steps.txt lists the steps in the order they ran.
echo "$MODE $(date -u +%Y-%m-%dT%H:%MZ) ${MPKC_COMMIT:-unknown}" >>"$OUT/steps.txt"
{
  echo "# mpkc performance (generated by scripts/bench-gpu.sh; do not edit)"
  echo
  echo "- date: $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "- GPU, driver: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
  echo "- mpkc: $("$MPKC" --version 2>/dev/null), commit ${MPKC_COMMIT:-unknown} (the last step's)"
  echo "- command: \`MPKC=$MPKC OUT=$OUT scripts/bench-gpu.sh MODE\`, MODE, finish time and commit of each step: $(awk '{printf "%s%s (%s, %s)", (NR > 1 ? ", " : ""), $1, $2, ($3 == "" ? "unknown" : $3)}' "$OUT/steps.txt")"
  echo "- method: docs/bench.md (persistent: the tasks queued per CTA as the megakernel runs them; standalone: graph replay)"
  for M in 1 16 64; do
    [ -f "$OUT/bench-m$M.txt" ] || continue
    echo; echo "## M = $M"; echo; echo '```'; cat "$OUT/bench-m$M.txt" "$OUT/bench-m$M.failed" 2>/dev/null; echo '```'
  done
  # The issue-12 targets, scored over the bench JSON of every M run so far.
  jsons=()
  for M in 1 16 64; do [ -f "$OUT/bench-m$M.json" ] && jsons+=("$OUT/bench-m$M.json"); done
  if [ ${#jsons[@]} -gt 0 ]; then echo; python3 "$(dirname "$0")/perf-targets.py" "${jsons[@]}"; fi
  # What limits the targets not met: ncu readings kept by hand (docs/perf-limits.md).
  if [ -f "$(dirname "$0")/../docs/perf-limits.md" ]; then echo; cat "$(dirname "$0")/../docs/perf-limits.md"; fi
  if [ -f "$OUT/fixed-cost.txt" ]; then
    echo; echo "## Per-task fixed cost"; echo; echo '```'; cat "$OUT/fixed-cost.txt" 2>/dev/null; echo '```'
    echo; echo "## Per-task fixed cost, 64-row tile (examples/linear_bf16_residual_tile64.mpk, o_proj)"; echo; echo '```'; cat "$OUT/fixed-cost-tile64.txt" 2>/dev/null; echo '```'
  fi
} >"$OUT/perf.md"

echo
echo "mpkc bench, $(date -u +%Y-%m-%dT%H:%MZ), $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1), $("$MPKC" --version 2>/dev/null)"
for M in 1 16 64; do
  [ "$MODE" = all ] || [ "$MODE" = "m$M" ] || continue
  echo
  cat "$OUT/bench-m$M.txt" 2>/dev/null
done
if [ "$MODE" = all ] || [ "$MODE" = fixed ]; then
  echo
  cat "$OUT/fixed-cost.txt" 2>/dev/null
  cat "$OUT/fixed-cost-tile64.txt" 2>/dev/null
fi
echo
printf '%-24s | %-6s | %s\n' step result files
printf '%s\n' "-------------------------+--------+------"
printf '%s\n' "${ROWS[@]}"
exit $FAILED
