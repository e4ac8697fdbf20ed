#!/usr/bin/env bash
# Multi-GPU scaling of the 3D buoyancy-driven cavity (f64 and f32) on one host, with the release
# binary built on the development machine (the GPU machine has no Rust toolchain):
#   cargo build --release && mkdir -p .carry && cp target/release/ferroflow .carry/
#   OUT=/some/dir scripts/gpu-scaling.sh .carry/ferroflow GPUS PART...
# PART is one of (each fits a 10-minute run on 4 H200s; run them in turn):
#   strong:N   N^3 nodes (513 = 512 cells per axis, 1025) on 1 GPU, then on 2, 4, ... GPUS
#   weak:N     N^3 nodes per GPU (258 or 514: 256 or 512 owned nodes per axis per GPU)
# Every GPU count below GPUS runs its cuts with the better exchange found so far (strided copies
# for faces normal to y and z, packing when x is cut); at GPUS every cut runs packed and strided,
# and the best cut (1,2,2 on 4 GPUs, 1,2,4 on 8) also with host staging and without overlap.
# The settings that are not switched off stay on: peer exchange, overlap. A 3D cut [2,2,2] runs
# on min(GPUS, 8) GPUs (two blocks per GPU on 4). The large parts (strong:1025, weak:514) run
# fewer cuts (see `cuts`).
# Every block size gets its tuned launch shape (cached in $FERROFLOW_CUDA_CACHE_DIR, by default
# under /tmp so that later parts on a warm machine reuse it); bench prints the copy bandwidth
# and the GPU 0 -> GPU 1 link bandwidth of each run. Appends to $OUT/scaling-PART.txt.
set -uo pipefail
bin=${1:?usage: scripts/gpu-scaling.sh PATH_TO_FERROFLOW GPUS PART...}
gpus=${2:?number of GPUs}
shift 2
out=${OUT:-$PWD/gpu-scaling-out}
mkdir -p "$out"
export FERROFLOW_CUDA_CACHE_DIR=${FERROFLOW_CUDA_CACHE_DIR:-/tmp/ferroflow-cache}
common=(bench --backend cuda --energy --precision f64,f32 --n2d --repeats 3 --seconds 0.25)

# Cuts for `count` GPUs: 1D along z, y, x, then 2D and 3D ones (`large`: a shorter list).
cuts() {
  local count=$1 large=$2
  case $count in
  2) if ((large)); then echo "1,2,1"; else echo "1,1,2 1,2,1"; fi ;;
  4) if ((large)); then echo "1,1,4 1,2,2 2,2,2"; else echo "1,1,4 1,4,1 4,1,1 1,2,2 2,2,2"; fi ;;
  8) if ((large)); then echo "1,2,4 2,2,2"; else echo "1,1,8 1,8,1 1,2,4 2,2,2"; fi ;;
  *) echo "1,1,$count" ;;
  esac
}

# The cut whose settings are switched off one at a time on `count` GPUs.
best_cut() { if (($1 >= 8)); then echo "1,2,4"; else echo "1,2,2"; fi; }

# One bench process; prints its lines and how long the whole process took.
case_() {
  local start=$SECONDS
  # shellcheck disable=SC2068
  timeout 300 "$bin" "${common[@]}" $@ 2>&1 | grep -v '^cuda:' || echo "failed: $*"
  echo "   ($((SECONDS - start)) s: $*)"
}

for part in "$@"; do
  kind=${part%%:*} n=${part#*:}
  large=$((n > 600))
  weak=()
  [[ $kind == weak ]] && weak=(--weak)
  {
    echo "## $part on up to $gpus GPUs ($(date -u +%FT%TZ))"
    nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | head -n 1
    case_ --n3d "$n"
    count=2
    while ((count <= gpus)); do
      run=(--n3d "$n" --devices "$(seq -s, 0 $((count - 1)))" "${weak[@]}" --blocks)
      for cut in $(cuts "$count" "$large"); do
        if ((count == gpus)); then
          case_ "${run[@]}" "$cut" --packing
          case_ "${run[@]}" "$cut"
        elif [[ $cut == 1,* ]]; then
          case_ "${run[@]}" "$cut"
        else
          case_ "${run[@]}" "$cut" --packing
        fi
      done
      if ((count == gpus)); then
        case_ "${run[@]}" "$(best_cut "$count")" --exchange host
        case_ "${run[@]}" "$(best_cut "$count")" --no-overlap
      fi
      count=$((count * 2))
    done
  } >>"$out/scaling-${part/:/-}.txt" 2>&1
done
