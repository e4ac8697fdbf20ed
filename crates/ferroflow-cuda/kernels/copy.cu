// Device-to-device copy with a grid-stride loop: the memory-bandwidth reference (roofline) that
// benchmarks report the solver's throughput against.
#include "prelude.cuh"

extern "C" __global__ void copy_real(const real_t* __restrict__ a, real_t* __restrict__ b,
                                     const idx_t n) {
    const idx_t stride = (idx_t)gridDim.x * blockDim.x;
    for (idx_t i = (idx_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) b[i] = a[i];
}
