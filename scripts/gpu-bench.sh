#!/usr/bin/env bash
# Benchmarks and GPU-scale verification on the GPU machine (no Rust toolchain there): run the
# release binary built on the development machine. Writes $OUT/bench.txt, $OUT/verify.txt and
# $OUT/results.tar.gz (summaries and centreline profiles of the verification runs).
#   cargo build --release && mkdir -p .carry && cp target/release/ferroflow .carry/
#   OUT=/some/dir scripts/gpu-bench.sh .carry/ferroflow [bench|verify|all]
set -uo pipefail
bin=${1:?usage: scripts/gpu-bench.sh PATH_TO_FERROFLOW [bench|verify|all]}
what=${2:-all}
out=${OUT:-$PWD/gpu-bench-out}
work=$(mktemp -d)
mkdir -p "$out"
export FERROFLOW_CUDA_CACHE_DIR="$work/cache"
step() { echo "## $*"; "$@"; echo "(exit $?)"; echo; }
# Verification runs write results only at the end (no periodic checkpoints), and each has a
# time limit so that the collection below always happens.
long() { local limit=$1; shift; step timeout "$limit" "$@" --set output.checkpoint_interval=0; }
[[ $what == verify ]] || {
  step "$bin" info
  # Launch-shape tables (each also caches the choice for the runs below).
  for p in f64 f32; do
    step "$bin" tune cavity2d-re100 --set 'mesh.nodes=[4097,4097]' --precision $p
    step "$bin" tune cavity3d-re100 --set 'mesh.nodes=[257,257,257]' --precision $p
    step "$bin" tune cavity3d-re100 --set 'mesh.nodes=[513,513,513]' --precision $p
  done
  step "$bin" bench --backend cuda --n2d 1025,4097,8193 --n3d 257,513
  step "$bin" bench --backend cuda --no-tune --n2d 4097 --n3d 257
  step "$bin" bench --backend cuda --fmad --n2d 4097 --n3d 257,513 --precision f64
  step "$bin" bench --backend cuda --n2d 4000,4032,4064,4095,4096,4097,4098,4128,4160,4200 --n3d 257 --precision f64 --repeats 3
  step "$bin" bench --backend cpu --n2d 4097 --n3d 257 --repeats 3
} >"$out/bench.txt" 2>&1
[[ $what == bench ]] || {
  step "$bin" verify mms --dim 2 --backend cuda --out "$work/mms2"
  step "$bin" verify mms --dim 3 --backend cuda --out "$work/mms3"
  step "$bin" verify mms --dim 3 --energy --backend cuda --out "$work/mms3e"
  long 120 "$bin" verify cavity cavity2d-re100 cavity2d-re1000 cavity3d-re100 --set backend.kind=cuda --out "$work/gpu-same-grid"
  long 120 "$bin" verify cavity cavity2d-re1000 --set 'mesh.nodes=[257,257]' --set backend.kind=cuda --out "$work/gpu-2d-257"
  long 200 "$bin" verify cavity cavity3d-re1000 --set 'mesh.nodes=[129,129,129]' --set numerics.check_interval=500 --set backend.kind=cuda --out "$work/gpu-3d-129"
  long 200 "$bin" verify cavity cavity3d-re1000 --set 'mesh.nodes=[193,193,193]' --set numerics.check_interval=500 --set backend.kind=cuda --out "$work/gpu-3d-193"
  step env FERROFLOW="$bin" OUT="$work/bdc-study" "$(dirname "$0")/bdc-study.sh" bdc3d 33 65 129
} >"$out/verify.txt" 2>&1
[[ $what == bench ]] || (cd "$work" && tar czf "$out/results.tar.gz" --exclude='*.vti' --exclude='*.ffcp' --exclude='*.pvd' mms2 mms3 mms3e gpu-same-grid gpu-2d-257 gpu-3d-129 gpu-3d-193 bdc-study cache)
rm -rf "$work"
