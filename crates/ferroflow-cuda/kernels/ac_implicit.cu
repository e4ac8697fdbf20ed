// The implicit relaxation on the GPU (seed 003): the twin of crates/ferroflow-ac/src/cpu/
// implicit.rs for its Jacobi sweeps, with the same formulas in the same operation order, so
// that (with --fmad=false) an iteration has the CPU's bits. One iteration is
//   implicit_residual  R(Q) and the frozen operator at every interior node, increments zeroed
//   implicit_rows      per row, Σ R_p and Σ 1/Δτ in the CPU's lane order (LaneSum)
//   implicit_gauge     the sums over the rows, and the gauge c = Σ R_p / Σ 1/Δτ
//   implicit_project   R_p − c/Δτ into the right-hand side, and its norm
//   implicit_jacobi    `sweeps` times, from one increment buffer into the other
//   implicit_update    Q + ΔQ, p re-referenced at the reference node, into the next state
// then fill_walls (boundary.cu). R and the state are real_t; the right-hand side, the frozen
// operator and the increments impl_t (-DIMPL). A thread handles one node; thread blocks are
// IMPLICIT_X × IMPLICIT_Y nodes of one row band (one k-plane in 3D).
#include "ac_residual.cuh"

typedef IMPL impl_t;

#define IMPLICIT_X 32
#define IMPLICIT_Y 8
#define IMPLICIT_THREADS (IMPLICIT_X * IMPLICIT_Y)
#define WARP 32

// Per-run constants of the operator: ferroflow-ac's ImplicitCoefficients, field for field.
struct ImplCoeffs {
    impl_t inv_h[3];
    impl_t inv_2h[3];
    impl_t nu_h2[3];
    impl_t alpha_h2[3];
    impl_t inv_2h_rho[3];
    impl_t visc_diag;
    impl_t therm_diag;
    impl_t inv_cfl_imp;
    impl_t buoyancy[3];
};

// Arrays in the implicit precision: per variable (right-hand side, increments), or the frozen
// operator: λ_d and u_d per axis, then β² and the inverse diagonals of p, u and T.
struct ImplVars {
    impl_t* v[MAX_VARS];
};
#define BETA2 6
#define INV_DIAG_P 7
#define INV_DIAG_U 8
#define INV_DIAG_T 9
#define FROZEN 10
struct Frozen {
    impl_t* v[FROZEN];
};

// Bits 0-5 of `sides`: side 2d (low) and 2d + 1 (high) of axis d is a wall (not a halo);
// bits 6-11: that wall holds T adiabatic.
struct Walls {
    bool lo[3];
    bool hi[3];
};

__device__ __forceinline__ Walls walls_at(const Grid& g, int sides, const idx_t ijk[3]) {
    Walls w;
    for (int d = 0; d < 3; ++d) {
        w.lo[d] = d < DIM && ijk[d] == 1 && ((sides >> (2 * d)) & 1);
        w.hi[d] = d < DIM && ijk[d] == g.n[d] - 2 && ((sides >> (2 * d + 1)) & 1);
    }
    return w;
}

// The interior node of this thread, or false past the interior.
__device__ __forceinline__ bool node_of_thread(const Grid& g, idx_t ijk[3], idx_t& o) {
    ijk[0] = 1 + (idx_t)blockIdx.x * IMPLICIT_X + threadIdx.x;
    ijk[1] = 1 + (idx_t)blockIdx.y * IMPLICIT_Y + threadIdx.y;
    ijk[2] = DIM == 3 ? 1 + (idx_t)blockIdx.z : 0;
    o = node_offset(g, ijk[0], ijk[1], ijk[2]);
    return ijk[0] < g.n[0] - 1 && ijk[1] < g.n[1] - 1;
}

// Writes this block's sum of `x` to partials[e * blocks + block]; every thread calls it.
__device__ __forceinline__ void block_partial(double x, double* partials, int e,
                                              double* scratch) {
    const int t = threadIdx.x + IMPLICIT_X * threadIdx.y;
    const idx_t blocks = (idx_t)gridDim.x * gridDim.y * gridDim.z;
    const idx_t b = blockIdx.x + (idx_t)gridDim.x * (blockIdx.y + (idx_t)gridDim.y * blockIdx.z);
    const double total = block_sum(x, scratch, t, IMPLICIT_THREADS);
    if (t == 0) partials[e * blocks + b] = total;
}

// Neighbours straight from memory.
struct Around {
    const Vars& cur;
    const Grid& g;
    idx_t o;

    __device__ __forceinline__ real_t at(int v, int d, int l) const {
        return load(cur.v[v], o + l * (d == 0 ? 1 : g.stride[d]));
    }
};

template <bool SRC, bool ENERGY>
__device__ __forceinline__ void residual(const Coeffs& c, const ImplCoeffs& op, const Grid& g,
                                         const Vars& cur, const Vars& src, int sides,
                                         real_t* resid_p, real_t* inv_dt, const ImplVars& rhs,
                                         const Frozen& frozen, const ImplVars& delta,
                                         double* partials) {
    __shared__ double scratch[IMPLICIT_THREADS];
    constexpr int EQ = 1 + DIM + ENERGY;
    double sums[MAX_EQUATIONS];
    for (int e = 0; e < MAX_EQUATIONS; ++e) sums[e] = 0;
    idx_t ijk[3], o;
    if (node_of_thread(g, ijk, o)) {
        real_t vel[DIM];
        for (int d = 0; d < DIM; ++d) vel[d] = load(cur.v[1 + d], o);
        const real_t tc = ENERGY ? load(cur.v[1 + DIM], o) : (real_t)0;
        const NodeResidual n =
            node_residual<SRC, ENERGY>(c, Around{cur, g, o}, vel, load(cur.v[0], o), tc, src, o);
        const real_t w = n.rate * c.inv_cfl;
        resid_p[o] = n.r[0];
        inv_dt[o] = w;
        for (int v = 1; v < EQ; ++v) {
            sums[v] = (double)n.r[v] * (double)n.r[v];
            rhs.v[v][o] = (impl_t)(double)n.r[v];
        }
        for (int v = 0; v < EQ; ++v) delta.v[v][o] = 0;
        const Walls walls = walls_at(g, sides, ijk);
        const impl_t pseudo = (impl_t)(double)w * op.inv_cfl_imp;
        impl_t sum_lh = 0, wall_lh = 0, adiabatic = 0;
        for (int d = 0; d < DIM; ++d) {
            const impl_t lam = (impl_t)(double)n.lam[d];
            const impl_t u = (impl_t)(double)vel[d];
            frozen.v[d][o] = lam;
            frozen.v[3 + d][o] = u;
            sum_lh = sum_lh + lam * op.inv_h[d];
            const impl_t b = u * op.inv_2h[d];
            for (int high = 0; high < 2; ++high) {
                if (high ? walls.hi[d] : walls.lo[d]) {
                    wall_lh = wall_lh + lam * op.inv_2h[d];
                    if ((sides >> (6 + 2 * d + high)) & 1) {
                        const impl_t sign = high ? (impl_t)1 : (impl_t)-1;
                        adiabatic = adiabatic + sign * b - fabs(b) - op.alpha_h2[d];
                    }
                }
            }
        }
        frozen.v[BETA2][o] = (impl_t)(double)n.beta2;
        frozen.v[INV_DIAG_P][o] = (impl_t)1 / (pseudo + sum_lh - wall_lh);
        frozen.v[INV_DIAG_U][o] = (impl_t)1 / (pseudo + sum_lh + op.visc_diag);
        frozen.v[INV_DIAG_T][o] = (impl_t)1 / (pseudo + sum_lh + op.therm_diag + adiabatic);
    }
    for (int e = 1; e < EQ; ++e) block_partial(sums[e], partials, e, scratch);
}

// The lane-then-tree sum of `x` over a warp (LaneSum in ferroflow-ac): valid in lane 0.
__device__ __forceinline__ double warp_tree(double x) {
    for (int s = WARP / 2; s > 0; s >>= 1) x += __shfl_down_sync(0xffffffffu, x, s);
    return x;
}

// One warp per interior row r (j = 1 + r % (n1 − 2), k = 1 + r / (n1 − 2)): lane l adds the
// row's nodes l, l + 32, … (from x = 1), then the lanes add up in a tree.
extern "C" __global__ void __launch_bounds__(IMPLICIT_THREADS)
    implicit_rows(const Grid g, const real_t* __restrict__ resid_p,
                  const real_t* __restrict__ inv_dt, double* __restrict__ rows) {
    const idx_t rows_j = g.n[1] - 2, count = g.n[0] - 2;
    const idx_t r = (idx_t)blockIdx.x * (IMPLICIT_THREADS / WARP) + threadIdx.x / WARP;
    const idx_t all = rows_j * (DIM == 3 ? g.n[2] - 2 : 1);
    if (r >= all) return;
    const int lane = threadIdx.x % WARP;
    const idx_t start = node_offset(g, 1, 1 + r % rows_j, DIM == 3 ? 1 + r / rows_j : 0);
    double rp = 0, w = 0;
    for (idx_t x = lane; x < count; x += WARP) {
        rp += (double)resid_p[start + x];
        w += (double)inv_dt[start + x];
    }
    rp = warp_tree(rp);
    w = warp_tree(w);
    if (lane == 0) {
        rows[2 * r] = rp;
        rows[2 * r + 1] = w;
    }
}

// One warp: the row sums added in lanes over the rows, then the gauge.
extern "C" __global__ void implicit_gauge(const double* __restrict__ rows, const idx_t count,
                                          real_t* __restrict__ gauge) {
    const int lane = threadIdx.x;
    double rp = 0, w = 0;
    for (idx_t r = lane; r < count; r += WARP) {
        rp += rows[2 * r];
        w += rows[2 * r + 1];
    }
    rp = warp_tree(rp);
    w = warp_tree(w);
    if (lane == 0) *gauge = (real_t)(rp / w);
}

// The continuity residual projected off the uniform pressure mode, and its norm (partials of
// equation 0).
extern "C" __global__ void __launch_bounds__(IMPLICIT_THREADS)
    implicit_project(const Grid g, const real_t* __restrict__ resid_p,
                     const real_t* __restrict__ inv_dt, const real_t* __restrict__ gauge,
                     impl_t* __restrict__ rhs_p, double* __restrict__ partials) {
    __shared__ double scratch[IMPLICIT_THREADS];
    idx_t ijk[3], o;
    double sum = 0;
    if (node_of_thread(g, ijk, o)) {
        const real_t rp = resid_p[o] - *gauge * inv_dt[o];
        sum = (double)rp * (double)rp;
        rhs_p[o] = (impl_t)(double)rp;
    }
    block_partial(sum, partials, 0, scratch);
}

// One Jacobi sweep: the increment of every interior node from its row of A ΔQ = R with the
// other nodes' increments from `old` (relax_node in implicit.rs). The node's block is
// triangular (T, then p, then u): solved exactly.
template <bool ENERGY>
__device__ __forceinline__ void jacobi(const ImplCoeffs& op, const Grid& g, int sides,
                                       const ImplVars& rhs, const Frozen& fz, const ImplVars& old,
                                       const ImplVars& out) {
    idx_t ijk[3], o;
    if (!node_of_thread(g, ijk, o)) return;
    const Walls w = walls_at(g, sides, ijk);
    const impl_t beta2 = fz.v[BETA2][o];
    impl_t sp = 0, st = 0, su[DIM], wall_p[DIM];
    for (int m = 0; m < DIM; ++m) su[m] = 0;
    // x last, as on the CPU (where it shortens the Gauss–Seidel chain).
    for (int d = DIM - 1; d >= 0; --d) {
        const idx_t s = d == 0 ? 1 : g.stride[d];
        const impl_t a = fz.v[d][o] * op.inv_2h[d];
        const impl_t b = fz.v[3 + d][o] * op.inv_2h[d];
        const impl_t p_lo = old.v[0][o - s], p_hi = old.v[0][o + s];
        sp = sp + beta2 * op.inv_2h[d] * (old.v[1 + d][o + s] - old.v[1 + d][o - s]) -
             a * (p_lo + p_hi);
        const impl_t c_hi = b - a - op.nu_h2[d], c_lo = -b - a - op.nu_h2[d];
        for (int m = 0; m < DIM; ++m)
            su[m] = su[m] + c_hi * old.v[1 + m][o + s] + c_lo * old.v[1 + m][o - s];
        su[d] = su[d] + op.inv_2h_rho[d] * (p_hi - p_lo);
        wall_p[d] = op.inv_2h_rho[d] * ((impl_t)w.hi[d] - (impl_t)w.lo[d]);
        if (ENERGY)
            st = st + (b - a - op.alpha_h2[d]) * old.v[1 + DIM][o + s] +
                 (-b - a - op.alpha_h2[d]) * old.v[1 + DIM][o - s];
    }
    const impl_t dt = ENERGY ? (rhs.v[1 + DIM][o] - st) * fz.v[INV_DIAG_T][o] : (impl_t)0;
    const impl_t dp = (rhs.v[0][o] - sp) * fz.v[INV_DIAG_P][o];
    out.v[0][o] = dp;
    const impl_t inv_du = fz.v[INV_DIAG_U][o];
    for (int m = 0; m < DIM; ++m) {
        impl_t r = rhs.v[1 + m][o] - su[m] - wall_p[m] * dp;
        if (ENERGY) r = r + op.buoyancy[m] * dt;
        out.v[1 + m][o] = r * inv_du;
    }
    if (ENERGY) out.v[1 + DIM][o] = dt;
}

// Q + ΔQ into the next state over every element of the arrays (ΔQ is zero outside the
// interior), p shifted so that it stays referenced at `p_ref`.
extern "C" __global__ void implicit_update(const idx_t len, const int vars, const Vars cur,
                                           const Vars next, const ImplVars delta,
                                           const idx_t p_ref) {
    const idx_t e = (idx_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= len) return;
    const real_t shift = cur.v[0][p_ref] + (real_t)(double)delta.v[0][p_ref];
    for (int v = 0; v < vars; ++v) {
        const real_t s = v == 0 ? shift : (real_t)0;
        next.v[v][e] = cur.v[v][e] + (real_t)(double)delta.v[v][e] - s;
    }
}

#define IMPLICIT_ENTRIES(residual_name, jacobi_name, SRC, ENERGY)                                 \
    extern "C" __global__ void __launch_bounds__(IMPLICIT_THREADS) residual_name(                \
        const Coeffs c, const ImplCoeffs op, const Grid g, const Vars cur, const Vars src,       \
        const int sides, real_t* resid_p, real_t* inv_dt, const ImplVars rhs,                    \
        const Frozen frozen, const ImplVars delta, double* partials) {                           \
        residual<SRC, ENERGY>(c, op, g, cur, src, sides, resid_p, inv_dt, rhs, frozen, delta,   \
                              partials);                                                          \
    }                                                                                             \
    extern "C" __global__ void __launch_bounds__(IMPLICIT_THREADS)                               \
        jacobi_name(const ImplCoeffs op, const Grid g, const int sides, const ImplVars rhs,      \
                    const Frozen frozen, const ImplVars old, const ImplVars out) {                \
        jacobi<ENERGY>(op, g, sides, rhs, frozen, old, out);                                     \
    }

#if WITH_ENERGY
IMPLICIT_ENTRIES(implicit_residual, implicit_jacobi, WITH_SOURCE, true)
#else
IMPLICIT_ENTRIES(implicit_residual, implicit_jacobi, WITH_SOURCE, false)
#endif
