// The implicit relaxation on the GPU (seed 003): the twin of crates/ferroflow-ac/src/cpu/
// implicit.rs for its Jacobi sweeps, with the same formulas in the same operation order, so
// that (with --fmad=false) an iteration has the CPU's bits. One iteration is
//   implicit_residual  R(Q) and the frozen operator at every interior node, increments zeroed
//   implicit_rows      per row, Σ R_p and Σ 1/Δτ in the CPU's lane order (LaneSum)
//   implicit_gauge     the sums over the rows, and the gauge c = Σ R_p / Σ 1/Δτ
//   implicit_project   R_p − c/Δτ into the right-hand side, and its norm
//   implicit_jacobi    `sweeps` times, from one increment buffer into the other, two at a
//                      time by implicit_jacobi_twice
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
    impl_t split_scale;
    impl_t split_floor;
};

// The pressure row's split radius λ_p ≤ λ (ImplicitCoefficients::pressure_radius).
__device__ __forceinline__ impl_t pressure_radius(const ImplCoeffs& op, impl_t lam, impl_t beta2,
                                                  impl_t inv_h) {
    return fmax(fmin(lam, op.split_scale * beta2 * inv_h), op.split_floor * lam);
}

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

// The kernels' arguments, each mirrored by the #[repr(C)] struct of the same name in
// src/cuda/implicit.rs.
struct ResidualParams {
    Coeffs c;
    ImplCoeffs op;
    Grid g;
    Vars cur;
    Vars src;
    int sides;
    real_t* resid_p;
    real_t* inv_dt;
    ImplVars rhs;
    Frozen frozen;
    ImplVars delta;
    double* partials;
    Vars out;
};

struct RowsParams {
    Grid g;
    const real_t* resid_p;
    const real_t* inv_dt;
    double* rows;
};

struct GaugeParams {
    const double* rows;
    idx_t count;
    real_t* gauge;
    double* sums;
};

struct ProjectParams {
    Grid g;
    const real_t* resid_p;
    const real_t* inv_dt;
    const real_t* gauge;
    impl_t* rhs_p;
    double* partials;
};

struct SweepParams {
    ImplCoeffs op;
    Grid g;
    int sides;
    ImplVars rhs;
    Frozen frozen;
    ImplVars old;
    ImplVars out;
};

struct UpdateParams {
    idx_t len;
    int vars;
    Vars cur;
    Vars next;
    ImplVars delta;
    idx_t p_ref;
    const real_t* given;
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
                                         double* partials, const Vars& out) {
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
            // R itself, for a multigrid level's forcing (null otherwise).
            if (out.v[v]) out.v[v][o] = n.r[v];
        }
        for (int v = 0; v < EQ; ++v) delta.v[v][o] = 0;
        const Walls walls = walls_at(g, sides, ijk);
        const impl_t pseudo = (impl_t)(double)w * op.inv_cfl_imp;
        const impl_t beta2 = (impl_t)(double)n.beta2;
        impl_t sum_lh = 0, sum_lph = 0, wall_lph = 0, adiabatic = 0;
        for (int d = 0; d < DIM; ++d) {
            const impl_t lam = (impl_t)(double)n.lam[d];
            const impl_t u = (impl_t)(double)vel[d];
            frozen.v[d][o] = lam;
            frozen.v[3 + d][o] = u;
            sum_lh = sum_lh + lam * op.inv_h[d];
            const impl_t lp = pressure_radius(op, lam, beta2, op.inv_h[d]);
            sum_lph = sum_lph + lp * op.inv_h[d];
            const impl_t b = u * op.inv_2h[d];
            for (int high = 0; high < 2; ++high) {
                if (high ? walls.hi[d] : walls.lo[d]) {
                    wall_lph = wall_lph + lp * op.inv_2h[d];
                    if ((sides >> (6 + 2 * d + high)) & 1) {
                        const impl_t sign = high ? (impl_t)1 : (impl_t)-1;
                        adiabatic = adiabatic + sign * b - fabs(b) - op.alpha_h2[d];
                    }
                }
            }
        }
        frozen.v[BETA2][o] = beta2;
        frozen.v[INV_DIAG_P][o] = (impl_t)1 / (pseudo + sum_lph - wall_lph);
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
    implicit_rows(const RowsParams a) {
    const Grid& g = a.g;
    const real_t* __restrict__ resid_p = a.resid_p;
    const real_t* __restrict__ inv_dt = a.inv_dt;
    double* __restrict__ rows = a.rows;
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

// One warp: the row sums added in lanes over the rows, then the gauge, and both sums (which a
// decomposed grid adds over its blocks before its gauge is known).
extern "C" __global__ void implicit_gauge(const GaugeParams a) {
    const double* __restrict__ rows = a.rows;
    const idx_t count = a.count;
    const int lane = threadIdx.x;
    double rp = 0, w = 0;
    for (idx_t r = lane; r < count; r += WARP) {
        rp += rows[2 * r];
        w += rows[2 * r + 1];
    }
    rp = warp_tree(rp);
    w = warp_tree(w);
    if (lane == 0) {
        *a.gauge = (real_t)(rp / w);
        a.sums[0] = rp;
        a.sums[1] = w;
    }
}

// The continuity residual projected off the uniform pressure mode, and its norm (partials of
// equation 0).
extern "C" __global__ void __launch_bounds__(IMPLICIT_THREADS)
    implicit_project(const ProjectParams a) {
    const Grid& g = a.g;
    const real_t* __restrict__ resid_p = a.resid_p;
    const real_t* __restrict__ inv_dt = a.inv_dt;
    const real_t* __restrict__ gauge = a.gauge;
    impl_t* __restrict__ rhs_p = a.rhs_p;
    __shared__ double scratch[IMPLICIT_THREADS];
    idx_t ijk[3], o;
    double sum = 0;
    if (node_of_thread(g, ijk, o)) {
        const real_t rp = resid_p[o] - *gauge * inv_dt[o];
        sum = (double)rp * (double)rp;
        rhs_p[o] = (impl_t)(double)rp;
    }
    block_partial(sum, a.partials, 0, scratch);
}

// What a sweep reads at a node besides its neighbours' increments: the right-hand side and
// the frozen operator.
struct NodeData {
    impl_t rhs[MAX_EQUATIONS];
    impl_t lam[DIM], u[DIM], beta2, inv_p, inv_u, inv_t;
};

template <bool ENERGY>
__device__ __forceinline__ NodeData node_data(const ImplVars& rhs, const Frozen& fz, idx_t o) {
    NodeData n;
    for (int v = 0; v < 1 + DIM + ENERGY; ++v) n.rhs[v] = rhs.v[v][o];
    for (int d = 0; d < DIM; ++d) {
        n.lam[d] = fz.v[d][o];
        n.u[d] = fz.v[3 + d][o];
    }
    n.beta2 = fz.v[BETA2][o];
    n.inv_p = fz.v[INV_DIAG_P][o];
    n.inv_u = fz.v[INV_DIAG_U][o];
    n.inv_t = ENERGY ? fz.v[INV_DIAG_T][o] : (impl_t)0;
    return n;
}

// The increment of a node from its row of A ΔQ = R, the other nodes' increments from `nb`
// (`nb.at(v, d, l)`: variable v at l nodes along axis d): relax_node in implicit.rs. The
// node's block is triangular (T, then p, then u): solved exactly.
template <bool ENERGY, class N>
__device__ __forceinline__ void relax(const ImplCoeffs& op, const NodeData& n, const Walls& w,
                                      const N& nb, impl_t out[MAX_EQUATIONS]) {
    impl_t sp = 0, st = 0, su[DIM], wall_p[DIM];
    for (int m = 0; m < DIM; ++m) su[m] = 0;
    // x last, as on the CPU (where it shortens the Gauss–Seidel chain).
    for (int d = DIM - 1; d >= 0; --d) {
        const impl_t a = n.lam[d] * op.inv_2h[d];
        const impl_t ap = pressure_radius(op, n.lam[d], n.beta2, op.inv_h[d]) * op.inv_2h[d];
        const impl_t b = n.u[d] * op.inv_2h[d];
        const impl_t p_lo = nb.at(0, d, -1), p_hi = nb.at(0, d, 1);
        sp = sp + n.beta2 * op.inv_2h[d] * (nb.at(1 + d, d, 1) - nb.at(1 + d, d, -1)) -
             ap * (p_lo + p_hi);
        const impl_t c_hi = b - a - op.nu_h2[d], c_lo = -b - a - op.nu_h2[d];
        for (int m = 0; m < DIM; ++m)
            su[m] = su[m] + c_hi * nb.at(1 + m, d, 1) + c_lo * nb.at(1 + m, d, -1);
        su[d] = su[d] + op.inv_2h_rho[d] * (p_hi - p_lo);
        wall_p[d] = op.inv_2h_rho[d] * ((impl_t)w.hi[d] - (impl_t)w.lo[d]);
        if (ENERGY)
            st = st + (b - a - op.alpha_h2[d]) * nb.at(1 + DIM, d, 1) +
                 (-b - a - op.alpha_h2[d]) * nb.at(1 + DIM, d, -1);
    }
    const impl_t dt = ENERGY ? (n.rhs[1 + DIM] - st) * n.inv_t : (impl_t)0;
    const impl_t dp = (n.rhs[0] - sp) * n.inv_p;
    out[0] = dp;
    for (int m = 0; m < DIM; ++m) {
        impl_t r = n.rhs[1 + m] - su[m] - wall_p[m] * dp;
        if (ENERGY) r = r + op.buoyancy[m] * dt;
        out[1 + m] = r * n.inv_u;
    }
    if (ENERGY) out[1 + DIM] = dt;
}

// Increments of the previous sweep, from memory.
struct OldAt {
    const ImplVars& old;
    const Grid& g;
    idx_t o;

    __device__ __forceinline__ impl_t at(int v, int d, int l) const {
        return old.v[v][o + l * (d == 0 ? 1 : g.stride[d])];
    }
};

// One Jacobi sweep from `old` into `out`.
template <bool ENERGY>
__device__ __forceinline__ void jacobi(const ImplCoeffs& op, const Grid& g, int sides,
                                       const ImplVars& rhs, const Frozen& fz, const ImplVars& old,
                                       const ImplVars& out) {
    idx_t ijk[3], o;
    if (!node_of_thread(g, ijk, o)) return;
    impl_t x[MAX_EQUATIONS];
    relax<ENERGY>(op, node_data<ENERGY>(rhs, fz, o), walls_at(g, sides, ijk), OldAt{old, g, o},
                  x);
    for (int v = 0; v < 1 + DIM + ENERGY; ++v) out.v[v][o] = x[v];
}

// Two Jacobi sweeps in one pass: a thread block relaxes a tile of FUSED_X × FUSED_Y nodes
// from `old` into shared memory (the first sweep), then the tile's inner nodes from those
// (the second), so the right-hand side and the operator are read once for two sweeps and the
// intermediate increments never go to memory; the ring of the tile is relaxed by both of its
// neighbours (the price: FUSED_X × FUSED_Y threads for (FUSED_X − 2) × (FUSED_Y − 2) nodes).
// In 3D the block marches up FUSED_PLANES planes in k, keeping the first sweep's planes k − 1,
// k and k + 1 in a ring of three. Every node computes exactly what `jacobi` does twice, so the
// bits are those of two sweeps.
#define FUSED_X 32
#define FUSED_Y (sizeof(impl_t) == 4 ? 16 : 8)
#define FUSED_PLANES 16
#define FUSED_SLOTS (DIM == 3 ? 3 : 1)
// Two blocks per SM in 3D: measured on an H100 (193³, operator f32), 147 µs per sweep against
// 155–185 µs with one, with 32 × 8 blocks or with 8 or 32 planes per block.
#define FUSED_MIN_BLOCKS (DIM == 3 ? 2 : 1)

// The first sweep's increments in shared memory.
struct MidAt {
    const impl_t* mid;  // [slot][var][y][x]
    int x, y;
    int slot[3];  // slots of planes k − 1, k, k + 1

    __device__ __forceinline__ impl_t at(int v, int d, int l) const {
        const int plane = FUSED_Y * FUSED_X;
        const int s = d == 2 ? slot[1 + l] : slot[1];
        const int xx = d == 0 ? x + l : x, yy = d == 1 ? y + l : y;
        return mid[(s * MAX_EQUATIONS + v) * plane + yy * FUSED_X + xx];
    }
};

template <bool ENERGY>
__device__ __forceinline__ void jacobi_twice(const ImplCoeffs& op, const Grid& g, int sides,
                                             const ImplVars& rhs, const Frozen& fz,
                                             const ImplVars& old, const ImplVars& out) {
    constexpr int EQ = 1 + DIM + ENERGY;
    constexpr int PLANE = FUSED_Y * FUSED_X;
    __shared__ impl_t mid[FUSED_SLOTS * MAX_EQUATIONS * PLANE];
    const int x = threadIdx.x, y = threadIdx.y;
    idx_t ijk[3] = {(idx_t)blockIdx.x * (FUSED_X - 2) + x, (idx_t)blockIdx.y * (FUSED_Y - 2) + y,
                    0};
    const bool in_plane = ijk[0] >= 1 && ijk[0] <= g.n[0] - 2 && ijk[1] >= 1 &&
                          ijk[1] <= g.n[1] - 2;
    const bool inner = x >= 1 && x < FUSED_X - 1 && y >= 1 && y < FUSED_Y - 1;
    const idx_t k0 = DIM == 3 ? 1 + (idx_t)blockIdx.z * FUSED_PLANES : 0;
    const idx_t k_end = DIM == 3 ? min(k0 + FUSED_PLANES, g.n[2] - 1) : 1;
    // The first sweep at plane k into its slot; returns the node's data when it is interior.
    auto first = [&](idx_t k, NodeData& data) {
        impl_t* m = mid + (DIM == 3 ? k % 3 : 0) * MAX_EQUATIONS * PLANE + y * FUSED_X + x;
        const bool interior = in_plane && (DIM == 2 || (k >= 1 && k <= g.n[2] - 2));
        impl_t v1[MAX_EQUATIONS];
        for (int v = 0; v < EQ; ++v) v1[v] = 0;
        if (interior) {
            ijk[2] = k;
            const idx_t o = node_offset(g, ijk[0], ijk[1], k);
            data = node_data<ENERGY>(rhs, fz, o);
            relax<ENERGY>(op, data, walls_at(g, sides, ijk), OldAt{old, g, o}, v1);
        }
        for (int v = 0; v < EQ; ++v) m[v * PLANE] = v1[v];
    };
    NodeData here, ahead;
    if (DIM == 3) first(k0 - 1, ahead);
    first(k0, here);
    for (idx_t k = k0; k < k_end; ++k) {
        if (DIM == 3) first(k + 1, ahead);
        __syncthreads();
        const bool interior = in_plane && (DIM == 2 || k <= g.n[2] - 2);
        if (inner && interior) {
            ijk[2] = k;
            const idx_t o = node_offset(g, ijk[0], ijk[1], k);
            MidAt nb = {mid, x, y, {0, 0, 0}};
            for (int l = 0; l < 3; ++l) nb.slot[l] = DIM == 3 ? (int)((k - 1 + l) % 3) : 0;
            impl_t v2[MAX_EQUATIONS];
            relax<ENERGY>(op, here, walls_at(g, sides, ijk), nb, v2);
            for (int v = 0; v < EQ; ++v) out.v[v][o] = v2[v];
        }
        // The slot of plane k − 1 is refilled with plane k + 2 next.
        __syncthreads();
        here = ahead;
    }
}

// Q + ΔQ into the next state over every element of the arrays (ΔQ is zero at the walls), p
// shifted so that it stays referenced at `p_ref`, or by `*given` where not null (a block of a
// decomposed grid, whose reference node another block may hold).
extern "C" __global__ void implicit_update(const UpdateParams a) {
    const idx_t len = a.len, p_ref = a.p_ref;
    const int vars = a.vars;
    const Vars &cur = a.cur, &next = a.next;
    const ImplVars& delta = a.delta;
    const real_t* __restrict__ given = a.given;
    const idx_t e = (idx_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= len) return;
    const real_t shift = given ? *given : cur.v[0][p_ref] + (real_t)(double)delta.v[0][p_ref];
    for (int v = 0; v < vars; ++v) {
        const real_t s = v == 0 ? shift : (real_t)0;
        next.v[v][e] = cur.v[v][e] + (real_t)(double)delta.v[v][e] - s;
    }
}

#define IMPLICIT_ENTRIES(residual_name, jacobi_name, SRC, ENERGY)                                 \
    extern "C" __global__ void __launch_bounds__(IMPLICIT_THREADS)                               \
        residual_name(const ResidualParams a) {                                                   \
        residual<SRC, ENERGY>(a.c, a.op, a.g, a.cur, a.src, a.sides, a.resid_p, a.inv_dt, a.rhs, \
                              a.frozen, a.delta, a.partials, a.out);                      \
    }                                                                                             \
    extern "C" __global__ void __launch_bounds__(IMPLICIT_THREADS)                               \
        jacobi_name(const SweepParams a) {                                                        \
        jacobi<ENERGY>(a.op, a.g, a.sides, a.rhs, a.frozen, a.old, a.out);                       \
    }                                                                                             \
    extern "C" __global__ void __launch_bounds__(FUSED_X * 16, FUSED_MIN_BLOCKS)                 \
        jacobi_name##_twice(const SweepParams a) {                                                \
        jacobi_twice<ENERGY>(a.op, a.g, a.sides, a.rhs, a.frozen, a.old, a.out);                 \
    }

#if WITH_ENERGY
IMPLICIT_ENTRIES(implicit_residual, implicit_jacobi, WITH_SOURCE, true)
#else
IMPLICIT_ENTRIES(implicit_residual, implicit_jacobi, WITH_SOURCE, false)
#endif
