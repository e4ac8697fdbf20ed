// Final sum of per-block partial sums (a kernel's thread blocks each write one per row): block
// e adds up row e's `count` partial sums in a fixed order, so totals do not depend on timing.
// The host (src/reduce.rs) passes REDUCE_THREADS, the threads per block.
#include "prelude.cuh"

// The arguments, mirrored by `ReduceParams` in src/reduce.rs.
struct ReduceParams {
    const double* partials;
    idx_t count;
    double* sums;
};

extern "C" __global__ void __launch_bounds__(REDUCE_THREADS) reduce_sums(const ReduceParams a) {
    __shared__ double scratch[REDUCE_THREADS];
    const int t = threadIdx.x;
    const idx_t count = a.count;
    const double* __restrict__ row = a.partials + blockIdx.x * count;
    double x = 0;
    for (idx_t b = t; b < count; b += REDUCE_THREADS) x += row[b];
    const double total = block_sum(x, scratch, t, REDUCE_THREADS);
    if (t == 0) a.sums[blockIdx.x] = total;
}
