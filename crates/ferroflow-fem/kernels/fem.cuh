// The finite elements' device formulas and fixed-order reductions: `__device__` twins of
// src/fractional.rs, src/edges.rs and src/sum.rs, term for term in the same order, in the
// working precision real_t (builds have no fused multiply-adds, IEEE division and square root,
// and keep subnormals, so every value rounds as on the CPU). Every literal in an expression is cast to real_t:
// a bare double literal would lift an f32 expression to f64.
#ifndef FERROFLOW_FEM_CUH
#define FERROFLOW_FEM_CUH
#include "prelude.cuh"

// Items per block and threads per block of a fixed-order sum (src/sum.rs: BLOCK, LANES).
#define SUM_BLOCK 1024
#define SUM_LANES 256

// +∞ (NVRTC has no math.h): the identity of a minimum.
#define POSITIVE_INFINITY __longlong_as_double(0x7ff0000000000000LL)

// The 16 values of a directed edge, as `EdgeTerms` in src/edges.rs.
struct Edge {
    real_t laplacian[9];
    real_t mass;
    real_t ni_dnj[3];
    real_t dni_nj[3];
};

// Where the mesh and its operators are: rows of the node graph, as `EdgeOperators`.
struct Rows {
    const unsigned* offsets;
    const unsigned* columns;
    const Edge* terms;
    const real_t* lumped;
    idx_t n;
};

__device__ __forceinline__ real_t laplacian_trace(const Edge& e) {
    return e.laplacian[0] + e.laplacian[4] + e.laplacian[8];
}

__device__ __forceinline__ real_t dot3(const real_t* a, const real_t* b) {
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

__device__ __forceinline__ real_t norm3(const real_t* a) { return sqrt(dot3(a, a)); }

// aᵀ L a for a row-major 3 × 3 L.
__device__ __forceinline__ real_t quadratic(const real_t* l, const real_t* a) {
    real_t s = 0;
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c) s += a[r] * l[3 * r + c] * a[c];
    return s;
}

enum Op { SUM = 0, MAX = 1, MIN = 2 };

__device__ __forceinline__ real_t combine(real_t a, real_t b, int op) {
    return op == SUM ? a + b : op == MAX ? fmax(a, b) : fmin(a, b);
}

// The lanes of a block added pairwise (src/sum.rs `lanes`); the total in thread 0.
__device__ __forceinline__ real_t lane_tree(real_t x, real_t* scratch, int op) {
    const int t = threadIdx.x;
    scratch[t] = x;
    __syncthreads();
    for (int s = SUM_LANES / 2; s > 0; s >>= 1) {
        if (t < s) scratch[t] = combine(scratch[t], scratch[t + s], op);
        __syncthreads();
    }
    const real_t total = scratch[0];
    __syncthreads();
    return total;
}

// Where a reduction's block partials and totals go; `counter` starts at 0 and is left so.
struct Reduction {
    real_t* partials;
    unsigned* counter;
    real_t* totals;
};

// Reduces each thread's K lane values (thread t of block b holds items b·SUM_BLOCK + t +
// k·SUM_LANES in order) over the grid: every block writes its K partials, and the last block
// to finish adds them up as lanes and a tree into `totals`. True in thread 0 of that block,
// after the totals are written (for a caller's final scalar work).
template <int K>
__device__ bool reduce_chunks(real_t (&x)[K], int op, const Reduction r) {
    __shared__ real_t scratch[SUM_LANES];
    __shared__ bool last;
    const int t = threadIdx.x;
    for (int k = 0; k < K; ++k) x[k] = lane_tree(x[k], scratch, op);
    if (t == 0) {
        for (int k = 0; k < K; ++k) r.partials[blockIdx.x * K + k] = x[k];
        __threadfence();
        last = atomicAdd(r.counter, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last) return false;
    __threadfence();
    for (int k = 0; k < K; ++k) {
        real_t y = op == MIN ? (real_t)POSITIVE_INFINITY : (real_t)0;
        for (unsigned b = t; b < gridDim.x; b += SUM_LANES)
            y = combine(y, __ldcg(r.partials + b * K + k), op);
        y = lane_tree(y, scratch, op);
        if (t == 0) r.totals[k] = y;
    }
    if (t == 0) *r.counter = 0;
    return t == 0;
}

// Item k of this thread's lanes, or -1 past the end.
__device__ __forceinline__ idx_t chunk_item(int k, idx_t n) {
    const idx_t i = (idx_t)blockIdx.x * SUM_BLOCK + threadIdx.x + (idx_t)k * SUM_LANES;
    return i < n ? i : -1;
}

#endif
