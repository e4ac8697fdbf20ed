// Types, layouts and helpers shared by every kernel, in the common subset of CUDA and HIP C++.
// The host (src/compile.rs) passes the specialisation as -D macros:
//   REAL, GHOST                                    every kernel: float | double; ghost layers
//   DIM, BLOCK_X, BLOCK_Y, BLOCK_Z, MARCH, TILE    ac_step.cu: dimension and launch shape
//   MIN_BLOCKS                                     ac_step.cu: blocks per SM to fit (0: any)
//   WITH_SOURCE, WITH_ENERGY                       ac_step.cu: which entry point (0 | 1)
//   REDUCE_THREADS                                 reduce.cu: threads per block
// The structs below are mirrored field by field by #[repr(C)] structs in src/launch.rs.
#ifndef FERROFLOW_PRELUDE_CUH
#define FERROFLOW_PRELUDE_CUH

typedef REAL real_t;
typedef long long idx_t;

// Variables of a state: p, u, v[, w][, T] (unused entries are null).
#define MAX_VARS 5

struct Vars {
    real_t* v[MAX_VARS];
};

// One block's memory layout (ferroflow_core::Layout): node (i, j, k) lives at
// origin + i + j * stride[1] + k * stride[2]; ghosts have negative or >= n indices.
struct Grid {
    idx_t n[3];       // nodes per axis, boundary nodes included (1 on an inactive axis)
    idx_t stride[3];  // element strides (stride[0] == 1)
    idx_t origin;     // offset of node (0, 0, 0)
};

__device__ __forceinline__ idx_t node_offset(const Grid& g, idx_t i, idx_t j, idx_t k) {
    return g.origin + i + j * g.stride[1] + k * g.stride[2];
}

// Read-only loads of the current state: it is never written while a kernel reads it.
__device__ __forceinline__ real_t load(const real_t* a, idx_t o) {
    return __ldg(a + o);
}

// Sum of one value per thread of a block of `threads` threads, in a fixed tree order (so the
// result does not depend on timing); valid in thread `t == 0`. Every thread must call it.
__device__ __forceinline__ double block_sum(double x, double* scratch, int t, int threads) {
    int top = 1;
    while (top < threads) top <<= 1;
    scratch[t] = x;
    __syncthreads();
    for (int s = top >> 1; s > 0; s >>= 1) {
        if (t < s && t + s < threads) scratch[t] += scratch[t + s];
        __syncthreads();
    }
    const double total = scratch[0];
    // The scratch is reused by the next call.
    __syncthreads();
    return total;
}

#endif
