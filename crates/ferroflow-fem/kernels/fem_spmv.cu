// The pressure solve's product w = S A S x (src/cg.rs `Matrix::scaled_product`) on values
// scaled once per solve, v_IJ = A_IJ S_J, and the scaled diagonal A_II S_I. Every variant adds
// a row's terms in the CPU's order (the diagonal's, then the row's entries by column), so all
// give the CPU's bits; they differ in how threads share the work:
//   SPMV_CSR     one thread per row;
//   SPMV_VECTOR  SPMV_LANES threads per row load its entries side by side, then add their
//                products in order through warp shuffles;
//   SPMV_SELL    sliced ELLPACK: rows in slices of 32 (a warp), a slice's k-th entries side by
//                side, one thread per row (SELL-C-σ: rows sorted by length within windows of σ).
// SPMV_THREADS: threads per block. After a solve has stopped (`state`, may be null) it returns.
#include "fem.cuh"

#ifndef SPMV_THREADS
#error "SPMV_THREADS (threads per block) must be defined"
#endif

// The matrix and scaling, mirrored by `SpmvArgs` in src/cuda/spmv.rs.
struct Spmv {
    const unsigned* starts;   // CSR: each row's first entry; SELL: each slice's
    const unsigned* columns;
    const real_t* values;
    const unsigned* lengths;  // SELL: entries of each slice position's row
    const unsigned* rows;     // SELL: the row at each slice position (~0u: none)
    const real_t* diagonal;   // A_II S_I
    const real_t* s;
    const idx_t* status;      // the solve's, or null
    idx_t n;                  // rows; SELL: slice positions
};

extern "C" __global__ void __launch_bounds__(SPMV_THREADS)
    fem_spmv(const Spmv a, const real_t* __restrict__ x, real_t* __restrict__ w) {
    if (a.status && *a.status != 0) return;
    const idx_t thread = (idx_t)blockIdx.x * SPMV_THREADS + threadIdx.x;
#if defined(SPMV_CSR)
    const idx_t i = thread;
    if (i >= a.n) return;
    real_t s = a.diagonal[i] * x[i];
    for (unsigned e = a.starts[i]; e < a.starts[i + 1]; ++e) s += a.values[e] * x[a.columns[e]];
    w[i] = a.s[i] * s;
#elif defined(SPMV_VECTOR)
    const idx_t i = thread / SPMV_LANES;
    const int lane = threadIdx.x % SPMV_LANES;
    if (i >= a.n) return;
    // The lanes of this row within the warp.
    const unsigned group = SPMV_LANES == 32 ? 0xffffffffu : ((1u << SPMV_LANES) - 1u)
                                                                << (threadIdx.x % 32 - lane);
    const unsigned begin = a.starts[i], end = a.starts[i + 1];
    real_t s = a.diagonal[i] * x[i];
    for (unsigned base = begin; base < end; base += SPMV_LANES) {
        const unsigned e = base + lane;
        const real_t v = e < end ? a.values[e] * x[a.columns[e]] : (real_t)0;
        const unsigned count = min(end - base, (unsigned)SPMV_LANES);
        for (unsigned t = 0; t < count; ++t) s += __shfl_sync(group, v, t, SPMV_LANES);
    }
    if (lane == 0) w[i] = a.s[i] * s;
#elif defined(SPMV_SELL)
    const idx_t slice = thread / 32;
    const int lane = threadIdx.x % 32;
    if (thread >= a.n) return;
    const unsigned i = a.rows[thread];
    if (i == ~0u) return;
    const unsigned length = a.lengths[thread];
    const unsigned base = a.starts[slice] + lane;
    real_t s = a.diagonal[i] * x[i];
    for (unsigned k = 0; k < length; ++k) s += a.values[base + 32 * k] * x[a.columns[base + 32 * k]];
    w[i] = a.s[i] * s;
#else
#error "define one of SPMV_CSR, SPMV_VECTOR, SPMV_SELL"
#endif
}

// v_p = H_src(p) S_column(p) for each stored position p (src: the CSR entry, ~0u for padding,
// null for CSR order itself), and A_II S_I with S_I = 1 / sqrt(A_II).
extern "C" __global__ void fem_scale_values(const Spmv a, const unsigned* source, const real_t* h,
                                            idx_t count) {
    const idx_t p = (idx_t)blockIdx.x * SPMV_THREADS + threadIdx.x;
    if (p >= count) return;
    const unsigned e = source ? source[p] : (unsigned)p;
    if (e != ~0u) ((real_t*)a.values)[p] = h[e] * a.s[a.columns[p]];
}
