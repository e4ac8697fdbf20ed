// The multigrid transfers between a level and the next coarser one, both on the device: the
// twins of inject, restrict and prolong_add in crates/ferroflow-ac/src/multigrid.rs (and of
// the forcing and the correction of its `Level` for the CPU), in the same operation order,
// so that a cycle has the CPU's bits. Coarse node (i, j, k) is fine node (2i, 2j, 2k) along
// the `dim` active axes. A thread handles one node of the grid the kernel writes.
#include "grid.cuh"

#define TRANSFER_THREADS 256

// The arguments, mirrored by the #[repr(C)] structs of the same names in src/cuda/multigrid.rs.
struct InjectParams {
    Vars fine;
    Grid fg;
    Vars coarse;
    Grid cg;
    int vars;
    int dim;
};

// A level's residual as `Level::hand_down` reads it: R at the interior nodes, the continuity
// residual projected off the pressure drift (resid_p − gauge / Δτ, as `residual_field`).
struct Residual {
    Vars r;
    const real_t* resid_p;
    const real_t* inv_dt;
    const real_t* gauge;
};

struct RestrictParams {
    Residual fine;
    Grid fg;
    Residual own;
    Vars forcing;
    Grid cg;
    int vars;
    int dim;
};

struct CorrectParams {
    Vars coarse;
    Vars start;
    Grid cg;
    idx_t reference;
    Vars fine;
    Grid fg;
    int vars;
    int dim;
};

// Node (i, j, k) of `g` for thread `t` over all its nodes; false past them.
__device__ __forceinline__ bool node_of(const Grid& g, idx_t t, idx_t at[3]) {
    at[0] = t % g.n[0];
    at[1] = t / g.n[0] % g.n[1];
    at[2] = t / (g.n[0] * g.n[1]);
    return at[2] < g.n[2];
}

__device__ __forceinline__ bool on_boundary(const Grid& g, const idx_t at[3], int dim) {
    for (int a = 0; a < dim; ++a)
        if (at[a] == 0 || at[a] == g.n[a] - 1) return true;
    return false;
}

__device__ __forceinline__ real_t residual_at(const Residual& r, int v, idx_t o) {
    return v == 0 ? r.resid_p[o] - *r.gauge * r.inv_dt[o] : r.r.v[v][o];
}

// The fine state at every coarse node, boundary nodes included.
extern "C" __global__ void mg_inject(const InjectParams a) {
    idx_t at[3];
    if (!node_of(a.cg, (idx_t)blockIdx.x * blockDim.x + threadIdx.x, at)) return;
    const idx_t s = 2;
    const idx_t fo = node_offset(a.fg, s * at[0], a.dim > 1 ? s * at[1] : 0,
                                 a.dim > 2 ? s * at[2] : 0);
    const idx_t co = node_offset(a.cg, at[0], at[1], at[2]);
    for (int v = 0; v < a.vars; ++v) a.coarse.v[v][co] = a.fine.v[v][fo];
}

// The coarse level's forcing: the full-weighted fine residual minus the coarse level's own
// residual, at every interior node; zero on the boundary.
extern "C" __global__ void mg_restrict(const RestrictParams a) {
    idx_t at[3];
    if (!node_of(a.cg, (idx_t)blockIdx.x * blockDim.x + threadIdx.x, at)) return;
    const idx_t co = node_offset(a.cg, at[0], at[1], at[2]);
    const bool boundary = on_boundary(a.cg, at, a.dim);
    const int span[3] = {1, a.dim > 1 ? 1 : 0, a.dim > 2 ? 1 : 0};
    for (int v = 0; v < a.vars; ++v) {
        if (boundary) {
            a.forcing.v[v][co] = 0;
            continue;
        }
        double sum = 0;
        for (int dk = -span[2]; dk <= span[2]; ++dk)
            for (int dj = -span[1]; dj <= span[1]; ++dj)
                for (int di = -span[0]; di <= span[0]; ++di) {
                    const int d[3] = {di, dj, dk};
                    double w = 1;
                    for (int x = 0; x < a.dim; ++x) w *= d[x] == 0 ? 0.5 : 0.25;
                    const idx_t fo = node_offset(a.fg, 2 * at[0] + di, 2 * at[1] + dj,
                                                 a.dim > 2 ? 2 * at[2] + dk : 0);
                    sum += w * (double)residual_at(a.fine, v, fo);
                }
        a.forcing.v[v][co] = (real_t)sum - residual_at(a.own, v, co);
    }
}

// Adds the interpolated change of the coarse state since `start` (its pressure change at the
// coarse node `reference` taken off) to the fine state's interior nodes.
extern "C" __global__ void mg_correct(const CorrectParams a) {
    idx_t at[3];
    if (!node_of(a.fg, (idx_t)blockIdx.x * blockDim.x + threadIdx.x, at)) return;
    if (on_boundary(a.fg, at, a.dim)) return;
    idx_t below[3];
    bool midway[3];
    for (int x = 0; x < 3; ++x) {
        below[x] = x < a.dim ? at[x] / 2 : 0;
        midway[x] = x < a.dim && at[x] % 2 == 1;
    }
    const idx_t fo = node_offset(a.fg, at[0], at[1], at[2]);
    const real_t level = a.coarse.v[0][a.reference] - a.start.v[0][a.reference];
    for (int v = 0; v < a.vars; ++v) {
        double sum = 0;
        int count = 0;
        for (int corner = 0; corner < 8; ++corner) {
            const bool up[3] = {(corner & 1) != 0, (corner & 2) != 0, (corner & 4) != 0};
            if ((up[0] && !midway[0]) || (up[1] && !midway[1]) || (up[2] && !midway[2]))
                continue;
            const idx_t co =
                node_offset(a.cg, below[0] + up[0], below[1] + up[1], below[2] + up[2]);
            real_t change = a.coarse.v[v][co] - a.start.v[v][co];
            if (v == 0) change = change - level;
            sum += (double)change;
            count += 1;
        }
        a.fine.v[v][fo] = (real_t)((double)a.fine.v[v][fo] + sum / (double)count);
    }
}
