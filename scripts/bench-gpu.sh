#!/usr/bin/env bash
# Times mpkc's production builds of the stdlib linears against cuBLAS on the GPU machine, in one
# process per M, and prints the tables last (docs/bench.md).
#
#   MPKC=target/release/mpkc OUT=bench-out scripts/bench-gpu.sh [all|m1|m16|m64|fixed]   (default: all)
#
# Each step is its own mpkc process; a single step (e.g. `m16`) keeps one call short where a
# session's command time is bounded.
#
# - bench M:     `mpkc bench --m M` over the embedded stdlib, M = 1, 16 and 64 (a contract that
#                cannot take M lists its cases as skipped, with the checker's reason), both
#                methods (standalone graph replay, persistent stamps), checked against cuBLAS
#                before timing; $OUT/bench-m<M>.json (schema: docs/bench.md) and .txt (the table).
# - fixed cost:  the house linear (stdlib/linear_sm100_v2.mpk) at K = 128 (one stage per task),
#                M = 1 and 16: 1 and 8 tasks per CTA, weights in L2; $OUT/fixed-cost.{json,txt}.
#
# Needs: an NVIDIA GPU, nvcc on PATH (or $NVCC: mpkc compiles the production builds there with it),
# libcublas (found next to nvcc, in $CUDA_HOME/lib64, /usr/local/cuda/lib64 or PyTorch's
# nvidia/cublas/lib; else the cases report no competitor), and an mpkc binary ($MPKC, default
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
  timeout "$STEP_TIMEOUT" "$MPKC" bench --m "$M" --save-json "$base.json" --out "$OUT/build-m$M" \
    >"$base.txt" 2>"$base.log"
  rc=$?
  verdict=OK
  [ $rc -eq 0 ] || { verdict="rc $rc"; FAILED=1; }
  row "bench M = $M" "$verdict" "$base.txt, $base.json, $base.log"
done

if [ "$MODE" = all ] || [ "$MODE" = fixed ]; then
  timeout "$STEP_TIMEOUT" "$MPKC" bench --fixed-cost stdlib/linear_sm100_v2.mpk --param K=128 --m 1,16 \
    --save-json "$OUT/fixed-cost.json" --out "$OUT/build-fixed-cost" >"$OUT/fixed-cost.txt" 2>"$OUT/fixed-cost.log"
  rc=$?
  verdict=OK
  [ $rc -eq 0 ] || { verdict="rc $rc"; FAILED=1; }
  row "fixed cost (K = 128)" "$verdict" "$OUT/fixed-cost.txt, $OUT/fixed-cost.json"
fi

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
fi
echo
printf '%-24s | %-6s | %s\n' step result files
printf '%s\n' "-------------------------+--------+------"
printf '%s\n' "${ROWS[@]}"
exit $FAILED
