// Final sum of the per-block residual sums written by ac_step: block e adds up equation e's
// `count` partial sums in a fixed order, so the norms do not depend on timing.
#include "prelude.cuh"

extern "C" __global__ void __launch_bounds__(REDUCE_THREADS)
    reduce_sums(const double* __restrict__ partials, const idx_t count, double* __restrict__ sums) {
    __shared__ double scratch[REDUCE_THREADS];
    const int t = threadIdx.x;
    const double* row = partials + blockIdx.x * count;
    double x = 0;
    for (idx_t b = t; b < count; b += REDUCE_THREADS) x += row[b];
    const double total = block_sum(x, scratch, t, REDUCE_THREADS);
    if (t == 0) sums[blockIdx.x] = total;
}
