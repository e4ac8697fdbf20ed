// A structured block's state and memory layout as the kernels see them. The host passes
//   GHOST    ghost layers around a block (ferroflow_core::GHOST)
// The structs are mirrored field by field by #[repr(C)] structs in src/cuda/launch.rs.
#ifndef FERROFLOW_GRID_CUH
#define FERROFLOW_GRID_CUH

#include "prelude.cuh"

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

#endif
