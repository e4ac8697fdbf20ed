// Types and helpers any kernel may include, in the common subset of CUDA and HIP C++. Every
// build defines REAL (float | double, src/compile.rs); the file that includes this header
// documents its own macros.
#ifndef FERROFLOW_PRELUDE_CUH
#define FERROFLOW_PRELUDE_CUH

typedef REAL real_t;
typedef long long idx_t;

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
