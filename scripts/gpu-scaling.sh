#!/usr/bin/env bash
# Multi-GPU scaling of the 3D buoyancy-driven cavity (f64) on one host, with the release binary
# built on the development machine (the GPU machine has no Rust toolchain):
#   cargo build --release && mkdir -p .carry && cp target/release/ferroflow .carry/
#   OUT=/some/dir scripts/gpu-scaling.sh .carry/ferroflow [GPUS]
# Strong scaling: 513^3 nodes on 1 GPU, then on GPUS GPUs cut along z, y and x, each with the
# best settings (packing, peer exchange, overlap) and with each switched off in turn. Weak
# scaling: 258^3 nodes per GPU (256 owned per axis), the same cuts, best settings and each
# switch off along z. Every block size gets its tuned launch shape (cached after the first
# run); bench prints the link bandwidth of the run. Writes $OUT/scaling.txt.
set -uo pipefail
bin=${1:?usage: scripts/gpu-scaling.sh PATH_TO_FERROFLOW [GPUS]}
gpus=${2:-2}
out=${OUT:-$PWD/gpu-scaling-out}
mkdir -p "$out"
export FERROFLOW_CUDA_CACHE_DIR=${FERROFLOW_CUDA_CACHE_DIR:-$out/cache}
devices=$(seq -s, 0 $((gpus - 1)))
common=(bench --backend cuda --energy --precision f64 --n2d --repeats 3 --seconds 0.3)
cuts=("1,1,$gpus" "1,$gpus,1" "$gpus,1,1")
toggles=("" "--no-packing" "--exchange host" "--no-overlap")
{
  nvidia-smi topo -m 2>&1 | head -n 12
  echo "## strong scaling, 513^3"
  "$bin" "${common[@]}" --n3d 513
  for cut in "${cuts[@]}"; do
    for t in "${toggles[@]}"; do
      # shellcheck disable=SC2086
      "$bin" "${common[@]}" --n3d 513 --blocks "$cut" --devices "$devices" $t | grep -E '^(cuda|link)'
    done
  done
  echo "## weak scaling, 256^3 owned nodes per GPU"
  "$bin" "${common[@]}" --n3d 258 | grep -E '^(cuda|link)'
  for cut in "${cuts[@]}"; do
    "$bin" "${common[@]}" --n3d 258 --blocks "$cut" --devices "$devices" --weak | grep -E '^(cuda|link)'
  done
  for t in "${toggles[@]:1}"; do
    # shellcheck disable=SC2086
    "$bin" "${common[@]}" --n3d 258 --blocks "${cuts[0]}" --devices "$devices" --weak $t | grep -E '^(cuda|link)'
  done
} >"$out/scaling.txt" 2>&1
