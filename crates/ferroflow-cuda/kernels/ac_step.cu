// The fused interior pass: the twin of `update_row` in crates/ferroflow-cpu/src/step.rs (same
// formulas, same operation order). One pass over memory per pseudo-time iteration reads the
// current state and writes the interior nodes of the next one; wall nodes and ghosts are left
// to boundary.cu. A launch covers the box of nodes `r` (all interior nodes, or a part of them
// when a decomposed block computes the nodes its neighbours need first). A thread updates MARCH consecutive nodes along the last axis (j in 2D, k in
// 3D), marching up it with the values along that axis in registers. When `norms` is set, each
// block writes its residual sums to `partials` (partials[e * blocks + block]) for reduce.cu to
// add up in a fixed order. The template switches SRC (source terms) and ENERGY (temperature T
// after the velocity, its transport and its buoyancy in the momentum equations) make four entry
// points; without them the code is that of the flow alone.
#include "ac_formulas.cuh"

#define BLOCK_THREADS (BLOCK_X * BLOCK_Y * BLOCK_Z)
#define MAX_EQUATIONS (2 + DIM)

static_assert(DIM == 2 || DIM == 3, "DIM is 2 or 3");
static_assert(DIM == 3 || BLOCK_Z == 1, "2D thread blocks are flat");
static_assert(MARCH >= 1, "a thread updates at least one node");

// The axis a thread marches along: the last one, whose neighbours are a row (2D) or a plane
// (3D) away, so the ones it keeps in registers are those the caches serve worst.
#define MARCH_AXIS (DIM - 1)

// Per-run constants in the run's precision: ferroflow-core's Coefficients, field for field
// (tests/mirror.rs checks the order).
struct Coeffs {
    real_t inv_h[3];
    real_t inv_2h[3];
    real_t inv_h2[3];
    real_t nu;
    real_t inv_rho;
    real_t cfl;
    real_t inv_cfl;
    real_t c4;
    real_t beta2_min;
    real_t viscous_rate;
    real_t inv_4nu;
    real_t alpha;
    real_t t_ref;
    real_t buoyancy[3];
};

// A box of nodes [lo, hi) per axis.
struct Region {
    idx_t lo[3];
    idx_t hi[3];
};

// Values along the march axis around the node a thread is at, kept in registers while it
// marches: each value is loaded once per thread instead of once per node that reads it.
struct Queue {
    real_t p[5];           // p at -2 .. +2
    real_t q[DIM + 1][3];  // the velocity components and T at -1 .. +1
};

// Loads the queue for the node at offset `o`; `s` is the march axis' stride.
template <bool ENERGY>
__device__ __forceinline__ void queue_fill(Queue& z, const Vars& cur, idx_t o, idx_t s) {
    for (int l = 0; l < 5; ++l) z.p[l] = load(cur.v[0], o + (l - 2) * s);
    for (int m = 0; m < DIM + ENERGY; ++m)
        for (int l = 0; l < 3; ++l) z.q[m][l] = load(cur.v[1 + m], o + (l - 1) * s);
}

// Moves the queue one node up the march axis; `o` is the offset of the new node.
template <bool ENERGY>
__device__ __forceinline__ void queue_shift(Queue& z, const Vars& cur, idx_t o, idx_t s) {
    for (int l = 0; l < 4; ++l) z.p[l] = z.p[l + 1];
    z.p[4] = load(cur.v[0], o + 2 * s);
    for (int m = 0; m < DIM + ENERGY; ++m) {
        z.q[m][0] = z.q[m][1];
        z.q[m][1] = z.q[m][2];
        z.q[m][2] = load(cur.v[1 + m], o + s);
    }
}

// Value of variable `v` (0 = p) at offset `o + l * stride[d]`, from the queue along the march
// axis.
__device__ __forceinline__ real_t at(const Vars& cur, const Queue& z, const Grid& g, int v, int d,
                                     idx_t o, int l) {
    if (d == MARCH_AXIS) return v == 0 ? z.p[2 + l] : z.q[v - 1][1 + l];
    // stride[0] is 1 (Layout): written as a constant, the x neighbours are immediate offsets
    // from the node's address instead of products computed at run time.
    return load(cur.v[v], o + l * (d == 0 ? 1 : g.stride[d]));
}

// Convection u.grad(q) and Laplacian of the transported variable `v` (a velocity component or
// T) at offset `o`, where it is `centre`: the twin of `transport` in step.rs.
__device__ __forceinline__ void transport(const Coeffs& c, const Grid& g, const Vars& cur,
                                          const Queue& z, int v, idx_t o, const real_t vel[DIM],
                                          real_t centre, real_t& conv, real_t& lap) {
    conv = 0;
    lap = 0;
    for (int d = 0; d < DIM; ++d) {
        const real_t lo = at(cur, z, g, v, d, o, -1), hi = at(cur, z, g, v, d, o, 1);
        conv = conv + vel[d] * central_difference(lo, hi, c.inv_2h[d]);
        lap = lap + second_difference(lo, centre, hi, c.inv_h2[d]);
    }
}

// Updates the node at offset `o` into `next` and, if `norms`, adds its squared residuals.
template <bool SRC, bool ENERGY>
__device__ __forceinline__ void update_node(const Coeffs& c, const Grid& g, const Vars& cur,
                                            const Queue& z, const Vars& next, const Vars& src,
                                            idx_t o, real_t p_shift, int norms,
                                            double sums[MAX_EQUATIONS]) {
    real_t vel[DIM];
    real_t speed2 = 0;
    for (int d = 0; d < DIM; ++d) {
        vel[d] = z.q[d][1];
        speed2 = speed2 + vel[d] * vel[d];
    }
    const real_t beta2 = local_beta2(speed2, c.beta2_min);
    const real_t pc = z.p[2];
    real_t sum_lh = 0, sum_l2 = 0, diss = 0, div = 0;
    for (int d = 0; d < DIM; ++d) {
        const real_t lam = spectral_radius(vel[d], beta2);
        const real_t lh = lam * c.inv_h[d];
        sum_lh = sum_lh + lh;
        sum_l2 = sum_l2 + lam * lam;
        const real_t d4 = fourth_difference(at(cur, z, g, 0, d, o, -2), at(cur, z, g, 0, d, o, -1),
                                            pc, at(cur, z, g, 0, d, o, 1),
                                            at(cur, z, g, 0, d, o, 2));
        diss = diss + lh * d4;
        div = div + central_difference(at(cur, z, g, 1 + d, d, o, -1),
                                       at(cur, z, g, 1 + d, d, o, 1), c.inv_2h[d]);
    }
    const real_t rate = time_step_rate(sum_lh, c.viscous_rate, sum_l2 * c.inv_4nu);
    const real_t dt = c.cfl / rate;
    real_t rp = -beta2 * div - c.c4 * diss;
    if (SRC) rp = rp + load(src.v[0], o);
    next.v[0][o] = pc + dt * rp - p_shift;
    if (norms) {
        // The norm measures the change of the referenced pressure: a uniform drift (which the
        // reference shift removes) is not a residual.
        const real_t rp_ref = rp - p_shift * (rate * c.inv_cfl);
        sums[0] += (double)rp_ref * (double)rp_ref;
    }
    const real_t tc = ENERGY ? z.q[DIM][1] : (real_t)0;
    for (int m = 0; m < DIM; ++m) {
        real_t conv, lap;
        transport(c, g, cur, z, 1 + m, o, vel, vel[m], conv, lap);
        const real_t grad_p =
            central_difference(at(cur, z, g, 0, m, o, -1), at(cur, z, g, 0, m, o, 1), c.inv_2h[m]);
        real_t r = c.nu * lap - conv - grad_p * c.inv_rho;
        if (ENERGY) r = r + buoyancy(c.buoyancy[m], tc, c.t_ref);
        if (SRC) r = r + load(src.v[1 + m], o);
        if (norms) sums[1 + m] += (double)r * (double)r;
        next.v[1 + m][o] = vel[m] + dt * r;
    }
    if (ENERGY) {
        real_t conv, lap;
        transport(c, g, cur, z, 1 + DIM, o, vel, tc, conv, lap);
        real_t r = c.alpha * lap - conv;
        if (SRC) r = r + load(src.v[1 + DIM], o);
        if (norms) sums[1 + DIM] += (double)r * (double)r;
        next.v[1 + DIM][o] = tc + dt * r;
    }
}

template <bool SRC, bool ENERGY>
__device__ __forceinline__ void step_block(const Coeffs& c, const Grid& g, const Vars& cur,
                                           const Vars& next, const Vars& src, const Region& r,
                                           const real_t* shift, double* partials, int norms) {
    __shared__ double scratch[BLOCK_THREADS];
    const int t = threadIdx.x + BLOCK_X * (threadIdx.y + BLOCK_Y * threadIdx.z);
    // The node of thread (x, y, z) and its first along the march axis.
    idx_t ijk[3] = {(idx_t)blockIdx.x * BLOCK_X + threadIdx.x,
                    (idx_t)blockIdx.y * BLOCK_Y + threadIdx.y,
                    (idx_t)blockIdx.z * BLOCK_Z + threadIdx.z};
    ijk[MARCH_AXIS] *= MARCH;
    for (int d = 0; d < DIM; ++d) ijk[d] += r.lo[d];
    // The reference pressure of the current state (of the whole grid, for a block of a
    // decomposed one), read here so that the host never waits.
    const real_t p_shift = __ldg(shift);
    const int equations = 1 + DIM + ENERGY;
    double sums[MAX_EQUATIONS];
    for (int e = 0; e < MAX_EQUATIONS; ++e) sums[e] = 0;
    if (ijk[0] < r.hi[0] && ijk[1] < r.hi[1] && (DIM == 2 || ijk[2] < r.hi[2])) {
        const idx_t s = g.stride[MARCH_AXIS];
        idx_t o = node_offset(g, ijk[0], ijk[1], ijk[2]);
        Queue z;
        queue_fill<ENERGY>(z, cur, o, s);
        for (int m = 0; m < MARCH; ++m) {
            if (m > 0) {
                if (ijk[MARCH_AXIS] + m >= r.hi[MARCH_AXIS]) break;
                o += s;
                queue_shift<ENERGY>(z, cur, o, s);
            }
            update_node<SRC, ENERGY>(c, g, cur, z, next, src, o, p_shift, norms, sums);
        }
    }
    if (norms) {
        const idx_t blocks = (idx_t)gridDim.x * gridDim.y * gridDim.z;
        const idx_t b = blockIdx.x + (idx_t)gridDim.x * (blockIdx.y + (idx_t)gridDim.y * blockIdx.z);
        for (int e = 0; e < equations; ++e) {
            const double total = block_sum(sums[e], scratch, t, BLOCK_THREADS);
            if (t == 0) partials[e * blocks + b] = total;
        }
    }
}

// Every entry point takes the same arguments; `src` is unused without a source term.
#define AC_STEP_ENTRY(name, SRC, ENERGY)                                                          \
    extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)                                   \
        name(const Coeffs c, const Grid g, const Vars cur, const Vars next, const Vars src,      \
             const Region r, const real_t* shift, double* partials, const int norms) {           \
        step_block<SRC, ENERGY>(c, g, cur, next, src, r, shift, partials, norms);                \
    }

AC_STEP_ENTRY(ac_step, false, false)
AC_STEP_ENTRY(ac_step_src, true, false)
AC_STEP_ENTRY(ac_step_energy, false, true)
AC_STEP_ENTRY(ac_step_energy_src, true, true)
