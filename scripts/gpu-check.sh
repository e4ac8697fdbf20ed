#!/usr/bin/env bash
# GPU checks of the CUDA backend (crates/ferroflow-ac, its feature cuda) and its runtime
# (crates/ferroflow-cuda), run on the GPU machine, which has no
# Rust toolchain: the test executables are built here and carried there.
#
# Build (development machine, from the repository root):
#   cargo test --release -p ferroflow-ac -p ferroflow-cuda --no-run 2>&1 | tee /tmp/cuda-tests.log
#   mkdir -p gpu-tests
#   grep -o 'target/release/deps/[^)]*' /tmp/cuda-tests.log | xargs -I{} cp {} gpu-tests/
# (cargo prints one "Executable ... (target/release/deps/NAME-HASH)" line per test executable:
#  the unit tests ferroflow_ac-* and ferroflow_cuda-*, and compile_kernels-*, decomposed-*,
#  equivalence-*, gpu-* and mirror-*.)
#
# Run (GPU machine, from the repository root):
#   scripts/gpu-check.sh gpu-tests
# Every executable in the directory runs with --include-ignored: the tests `cargo test` ignores
# for want of a GPU or NVRTC run here, and fail if either is missing. One test at a time
# (tuning times kernels), with output shown; FERROFLOW_TEST_GPUS=N spreads the blocks of the
# decomposed tests over N GPUs. Logs go to $OUT (default ./gpu-check-logs):
# one NAME.log per executable, summary.txt, nvidia-smi.txt, and the tuning cache in cache/.
# The exit status is non-zero if any executable failed.
set -uo pipefail
dir=${1:?usage: scripts/gpu-check.sh DIRECTORY_OF_TEST_EXECUTABLES}
out=${OUT:-$PWD/gpu-check-logs}
mkdir -p "$out/cache"
export FERROFLOW_CUDA_CACHE_DIR="$out/cache"
nvidia-smi >"$out/nvidia-smi.txt" 2>&1 || echo "nvidia-smi failed" >>"$out/nvidia-smi.txt"
status=0
found=0
for exe in "$dir"/*; do
  [[ -f $exe && -x $exe ]] || continue
  found=1
  name=$(basename "$exe")
  start=$SECONDS
  if "$exe" --include-ignored --test-threads=1 --nocapture >"$out/$name.log" 2>&1; then
    result=ok
  else
    result=FAILED
    status=1
  fi
  line="$name: $result in $((SECONDS - start)) s ($(grep -E '^test result:' "$out/$name.log" | tail -n 1))"
  echo "$line" | tee -a "$out/summary.txt"
done
if [[ $found == 0 ]]; then
  echo "no test executables in $dir" | tee -a "$out/summary.txt"
  status=1
fi
# The measured differences, tuning tables and bandwidth, for the record.
grep -hE '^device: |max \||residual norms|tuning (on|took)|shape|^[* ] [0-9]+x|bandwidth|builds compiled' \
  "$out"/*.log >"$out/measurements.txt" 2>/dev/null || true
exit $status
