// The fused interior pass: the twin of `update_row` in crates/ferroflow-cpu/src/step.rs (same
// formulas, same operation order). One pass over memory per pseudo-time iteration reads the
// current state and writes the interior nodes of the next one; wall nodes and ghosts are left
// to boundary.cu. A launch covers the box of nodes `r` (all interior nodes, or a part of them
// when a decomposed block computes the nodes its neighbours need first). A thread updates
// MARCH consecutive nodes along the last axis (j in 2D, k in 3D), marching up it with the
// values along that axis in registers. With TILE (3D, thread blocks one node deep), the block
// also keeps the k-plane it is at in shared memory, so that each value of the plane is read
// from memory (the L2 cache, mostly) once instead of once per neighbour that reads it. When `norms` is set, each
// block writes its residual sums to `partials` (partials[e * blocks + block]) for reduce.cu to
// add up in a fixed order. The template switches SRC (source terms) and ENERGY (temperature T
// after the velocity, its transport and its buoyancy in the momentum equations) make four
// entry points, of which a build holds the one WITH_SOURCE and WITH_ENERGY select; without
// them the code is that of the flow alone. The host (src/cuda/programs.rs) passes
//   DIM, BLOCK_X, BLOCK_Y, BLOCK_Z, MARCH, TILE    dimension and launch shape
//   MIN_BLOCKS                                     blocks per SM to fit (0: any)
//   WITH_SOURCE, WITH_ENERGY                       which entry point (0 | 1)
//   FOURTH                                         differences of fourth order (0 | 1)
#include "ac_residual.cuh"

#define BLOCK_THREADS (BLOCK_X * BLOCK_Y * BLOCK_Z)

static_assert(DIM == 2 || DIM == 3, "DIM is 2 or 3");
static_assert(DIM == 3 || BLOCK_Z == 1, "2D thread blocks are flat");
static_assert(MARCH >= 1, "a thread updates at least one node");
static_assert(!TILE || (DIM == 3 && BLOCK_Z == 1), "plane tiles are for flat 3D thread blocks");

// The axis a thread marches along: the last one, whose neighbours are a row (2D) or a plane
// (3D) away, so the ones it keeps in registers are those the caches serve worst.
#define MARCH_AXIS (DIM - 1)

// How far the stencil reaches along an axis: p's fourth difference, two nodes each way (the
// other variables reach Q_REACH).
#define REACH 2
// Values of each velocity component and of T a queue holds.
#define Q_WIDTH (2 * Q_REACH + 1)

// A box of nodes [lo, hi) per axis.
struct Region {
    idx_t lo[3];
    idx_t hi[3];
};

// Values along the march axis around the node a thread is at, kept in registers while it
// marches: each value is loaded once per thread instead of once per node that reads it.
struct Queue {
    real_t p[5];                 // p at -2 .. +2
    real_t q[DIM + 1][Q_WIDTH];  // the velocity components and T at -Q_REACH .. +Q_REACH
};

// The values a queue takes in when it moves one node up: p two nodes ahead, the others
// Q_REACH.
struct Heads {
    real_t p;
    real_t q[DIM + 1];
};

// Loads the queue for the node at offset `o`; `s` is the march axis' stride.
template <bool ENERGY>
__device__ __forceinline__ void queue_fill(Queue& z, const Vars& cur, idx_t o, idx_t s) {
    for (int l = 0; l < 5; ++l) z.p[l] = load(cur.v[0], o + (l - 2) * s);
    for (int m = 0; m < DIM + ENERGY; ++m)
        for (int l = 0; l < Q_WIDTH; ++l) z.q[m][l] = load(cur.v[1 + m], o + (l - Q_REACH) * s);
}

// Loads the heads for moving the queue to the node at offset `o`.
template <bool ENERGY>
__device__ __forceinline__ Heads heads_load(const Vars& cur, idx_t o, idx_t s) {
    Heads h;
    h.p = load(cur.v[0], o + 2 * s);
    for (int m = 0; m < DIM + ENERGY; ++m) h.q[m] = load(cur.v[1 + m], o + Q_REACH * s);
    return h;
}

// Moves the queue one node up the march axis, taking in `h`.
template <bool ENERGY>
__device__ __forceinline__ void queue_push(Queue& z, const Heads& h) {
    for (int l = 0; l < 4; ++l) z.p[l] = z.p[l + 1];
    z.p[4] = h.p;
    for (int m = 0; m < DIM + ENERGY; ++m) {
        for (int l = 0; l + 1 < Q_WIDTH; ++l) z.q[m][l] = z.q[m][l + 1];
        z.q[m][Q_WIDTH - 1] = h.q[m];
    }
}

// Variable `v` at `l` nodes along the march axis, from the queue.
__device__ __forceinline__ real_t queued(const Queue& z, int v, int l) {
    return v == 0 ? z.p[2 + l] : z.q[v - 1][Q_REACH + l];
}

// Neighbours of the node at offset `o`: along the march axis from the queue, along the others
// from the current state in memory (through the caches).
struct FromMemory {
    const Vars& cur;
    const Grid& g;
    const Queue& z;
    idx_t o;

    // Variable `v` at `l` nodes along axis `d`.
    __device__ __forceinline__ real_t at(int v, int d, int l) const {
        if (d == MARCH_AXIS) return queued(z, v, l);
        // stride[0] is 1 (Layout): written as a constant, the x neighbours are immediate
        // offsets from the node's address instead of products computed at run time.
        return load(cur.v[v], o + l * (d == 0 ? 1 : g.stride[d]));
    }
};

#if TILE
// A block's k-plane in shared memory: its BLOCK_X × BLOCK_Y nodes and REACH more on each
// side, per variable.
#define TILE_W (BLOCK_X + 2 * REACH)
#define TILE_H (BLOCK_Y + 2 * REACH)
typedef real_t Plane[TILE_H][TILE_W];

// Neighbours of the node at (x, y) of the plane tile: along k from the queue, in the plane
// from the tile.
struct FromTile {
    const Plane* t;
    const Queue& z;
    int x, y;

    __device__ __forceinline__ real_t at(int v, int d, int l) const {
        if (d == MARCH_AXIS) return queued(z, v, l);
        return d == 0 ? t[v][y][x + l] : t[v][y + l][x];
    }
};

// Cell `h` of the ring W nodes deep around the tile's nodes, as offsets from its first node:
// the columns left and right of them first, then the rows below and above (no corners: the
// stencil has no cross terms).
template <int W>
__device__ __forceinline__ void ring_cell(int h, int& di, int& dj) {
    constexpr int COLUMN = W * BLOCK_Y;
    if (h < 2 * COLUMN) {
        const int side = h / COLUMN, rem = h % COLUMN;
        dj = rem / W;
        di = side ? BLOCK_X + rem % W : rem % W - W;
    } else {
        h -= 2 * COLUMN;
        constexpr int ROW = W * BLOCK_X;
        const int side = h / ROW, rem = h % ROW;
        di = rem % BLOCK_X;
        dj = side ? BLOCK_Y + rem / BLOCK_X : rem / BLOCK_X - W;
    }
}

// The ring around a tile: REACH nodes deep for p, Q_REACH for the other variables, as one list
// that the block's threads share out, PER_THREAD cells each at most.
template <bool ENERGY>
struct Ring {
    static constexpr int P_CELLS = 2 * REACH * (BLOCK_X + BLOCK_Y);
    static constexpr int Q_CELLS = 2 * Q_REACH * (BLOCK_X + BLOCK_Y);
    static constexpr int CELLS = P_CELLS + (DIM + ENERGY) * Q_CELLS;
    static constexpr int PER_THREAD = (CELLS + BLOCK_THREADS - 1) / BLOCK_THREADS;
};

// One ring cell a thread loads at every plane: its address at the first plane (null when no
// node of the box reads it) and its place in the tiles.
struct RingItem {
    const real_t* at;
    int cell;
};

// Item `n` of thread `t`: ring cell t + n * BLOCK_THREADS of the block whose first node is
// (i0, j0, k0).
template <bool ENERGY>
__device__ __forceinline__ RingItem ring_item(const Vars& cur, const Grid& g, const Region& r,
                                              idx_t i0, idx_t j0, idx_t k0, int t, int n) {
    typedef Ring<ENERGY> R;
    RingItem item = {nullptr, 0};
    const int c = t + n * BLOCK_THREADS;
    if (c >= R::CELLS) return item;
    int v, w, di, dj;
    if (c < R::P_CELLS) {
        v = 0;
        w = REACH;
        ring_cell<REACH>(c, di, dj);
    } else {
        v = 1 + (c - R::P_CELLS) / R::Q_CELLS;
        w = Q_REACH;
        ring_cell<Q_REACH>((c - R::P_CELLS) % R::Q_CELLS, di, dj);
    }
    const idx_t i = i0 + di, j = j0 + dj;
    if (i < r.hi[0] + w && j < r.hi[1] + w) {
        item.at = cur.v[v] + node_offset(g, i, j, k0);
        item.cell = (v * TILE_H + REACH + dj) * TILE_W + REACH + di;
    }
    return item;
}
#endif

// The new p and T of a node (T unused without the energy equation).
struct Updated {
    real_t p;
    real_t t;
};

// Updates the node at offset `o`, whose queue is `z` and neighbours `nb`, into `next` and, if
// `norms`, adds its squared residuals; returns its new p and T.
template <bool SRC, bool ENERGY, class N>
__device__ __forceinline__ Updated update_node(const Coeffs& c, const N& nb, const Queue& z,
                                            const Vars& next, const Vars& src, idx_t o,
                                            real_t p_shift, int norms,
                                            double sums[MAX_EQUATIONS]) {
    real_t vel[DIM];
    for (int d = 0; d < DIM; ++d) vel[d] = z.q[d][Q_REACH];
    const real_t tc = ENERGY ? z.q[DIM][Q_REACH] : (real_t)0;
    const NodeResidual n = node_residual<SRC, ENERGY>(c, nb, vel, z.p[2], tc, src, o);
    const real_t dt = c.cfl / n.rate;
    Updated u = {z.p[2] + dt * n.r[0] - p_shift, (real_t)0};
    next.v[0][o] = u.p;
    if (norms) {
        // The norm measures the change of the referenced pressure: a uniform drift (which the
        // reference shift removes) is not a residual.
        const real_t rp_ref = n.r[0] - p_shift * (n.rate * c.inv_cfl);
        sums[0] += (double)rp_ref * (double)rp_ref;
    }
    for (int m = 0; m < DIM; ++m) {
        if (norms) sums[1 + m] += (double)n.r[1 + m] * (double)n.r[1 + m];
        next.v[1 + m][o] = vel[m] + dt * n.r[1 + m];
    }
    if (ENERGY) {
        if (norms) sums[1 + DIM] += (double)n.r[1 + DIM] * (double)n.r[1 + DIM];
        u.t = tc + dt * n.r[1 + DIM];
        next.v[1 + DIM][o] = u.t;
    }
    return u;
}

#if TILE
// The x walls of the next state, filled by the warps that update the nodes next to them, so
// that fill_walls need not reach them through memory a row apart: bits 0 and 1 of `x_walls`
// ask for the low and the high wall (only in a launch over all interior nodes, whose first
// and last x nodes it holds), bits 2 and 3 say that T is adiabatic there. The node next to a
// wall takes the new values of the two beyond it from its neighbours in the warp (the host
// asks for the high wall only where they share it). The twin of fill_walls along x; every
// thread of the block must call it (`active`: the thread updated the node at `o`, x index i).
template <bool ENERGY>
__device__ __forceinline__ void fill_x_walls(const Vars& next, idx_t o, idx_t i,
                                             const Region& r, int x_walls, bool active,
                                             const Updated& u) {
    const unsigned warp = 0xffffffffu;
    real_t* t = next.v[1 + DIM];
    // Block-uniform conditions: every lane of a warp that shuffles takes part.
    if ((x_walls & 1) && blockIdx.x == 0) {
        const real_t p1 = __shfl_down_sync(warp, u.p, 1), p2 = __shfl_down_sync(warp, u.p, 2);
        const real_t t1 = ENERGY ? __shfl_down_sync(warp, u.t, 1) : (real_t)0;
        if (active && i == r.lo[0]) {
            extrapolate_wall(next.v[0], o - 1, -1, u.p, p1, p2);
            if (ENERGY && (x_walls & 4)) mirror_wall(t, o - 1, -1, u.t, t1);
        }
    }
    if ((x_walls & 2) && blockIdx.x == gridDim.x - 1) {
        const real_t p1 = __shfl_up_sync(warp, u.p, 1), p2 = __shfl_up_sync(warp, u.p, 2);
        const real_t t1 = ENERGY ? __shfl_up_sync(warp, u.t, 1) : (real_t)0;
        if (active && i == r.hi[0] - 1) {
            extrapolate_wall(next.v[0], o + 1, 1, u.p, p1, p2);
            if (ENERGY && (x_walls & 8)) mirror_wall(t, o + 1, 1, u.t, t1);
        }
    }
}
#endif

// Writes block b's residual sums to `partials`; every thread of the block must call it.
template <bool ENERGY>
__device__ __forceinline__ void block_norms(const double sums[MAX_EQUATIONS], double* partials,
                                            double* scratch, int t) {
    const idx_t blocks = (idx_t)gridDim.x * gridDim.y * gridDim.z;
    const idx_t b = blockIdx.x + (idx_t)gridDim.x * (blockIdx.y + (idx_t)gridDim.y * blockIdx.z);
#pragma unroll
    for (int e = 0; e < 1 + DIM + ENERGY; ++e) {
        const double total = block_sum(sums[e], scratch, t, BLOCK_THREADS);
        if (t == 0) partials[e * blocks + b] = total;
    }
}

#if !TILE
// Each thread marches up its own column; in-plane neighbours come through the caches. The x
// walls are left to fill_walls (`x_walls` is 0): the checks and exchanges of fill_x_walls cost
// this kernel registers, and more than they save.
template <bool SRC, bool ENERGY>
__device__ __forceinline__ void step_block(const Coeffs& c, const Grid& g, const Vars& cur,
                                           const Vars& next, const Vars& src, const Region& r,
                                           const real_t* shift, double* partials, int norms,
                                           int) {
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
                queue_push<ENERGY>(z, heads_load<ENERGY>(cur, o, s));
            }
            update_node<SRC, ENERGY>(c, FromMemory{cur, g, z, o}, z, next, src, o, p_shift,
                                     norms, sums);
        }
    }
    if (norms) block_norms<ENERGY>(sums, partials, scratch, t);
}
#else
// The block marches up k one plane at a time: each thread puts its node of the plane (the
// centre of its queue) into the tile, the ring around the tile comes from memory, and after a
// barrier every thread reads its in-plane neighbours from the tile. The next plane's values
// are loaded before the update of the current one and stored into the other tile after it,
// so their loads overlap the arithmetic; a tile is refilled one plane after it was read, past
// the barrier that ends that plane, so one barrier per plane suffices.
template <bool SRC, bool ENERGY>
__device__ __forceinline__ void step_block(const Coeffs& c, const Grid& g, const Vars& cur,
                                           const Vars& next, const Vars& src, const Region& r,
                                           const real_t* shift, double* partials, int norms,
                                           int x_walls) {
    constexpr int VARS = 1 + DIM + ENERGY;
    constexpr int ITEMS = Ring<ENERGY>::PER_THREAD;
    __shared__ Plane tiles[2][VARS];
    __shared__ double scratch[BLOCK_THREADS];
    const int t = threadIdx.x + BLOCK_X * threadIdx.y;
    const idx_t i0 = (idx_t)blockIdx.x * BLOCK_X + r.lo[0];
    const idx_t j0 = (idx_t)blockIdx.y * BLOCK_Y + r.lo[1];
    const idx_t k0 = (idx_t)blockIdx.z * MARCH + r.lo[2];
    const idx_t i = i0 + threadIdx.x, j = j0 + threadIdx.y;
    const bool computes = i < r.hi[0] && j < r.hi[1];
    // Threads just past the box still carry their column: the nodes of the box read it.
    const bool carries = i < r.hi[0] + REACH && j < r.hi[1] + REACH;
    const real_t p_shift = __ldg(shift);
    double sums[MAX_EQUATIONS];
    for (int e = 0; e < MAX_EQUATIONS; ++e) sums[e] = 0;
    const idx_t s = g.stride[2];
    const idx_t k_end = k0 + MARCH < r.hi[2] ? k0 + MARCH : r.hi[2];
    const int centre = REACH * TILE_W + REACH + threadIdx.x + TILE_W * threadIdx.y;
    RingItem items[ITEMS];
    real_t ring[ITEMS];
#pragma unroll
    for (int n = 0; n < ITEMS; ++n) {
        items[n] = ring_item<ENERGY>(cur, g, r, i0, j0, k0, t, n);
        if (items[n].at) ring[n] = __ldg(items[n].at);
    }
    idx_t o = node_offset(g, i, j, k0);
    Queue z;
    if (carries) queue_fill<ENERGY>(z, cur, o, s);
    // Puts plane `k`'s values (the queue's centres and `ring`) into `tile`.
    auto store = [&](real_t* tile) {
        if (carries) {
            tile[centre] = z.p[2];
            for (int v = 1; v < VARS; ++v)
                tile[v * TILE_H * TILE_W + centre] = z.q[v - 1][Q_REACH];
        }
#pragma unroll
        for (int n = 0; n < ITEMS; ++n)
            if (items[n].at) tile[items[n].cell] = ring[n];
    };
    store(&tiles[0][0][0][0]);
    __syncthreads();
    for (idx_t k = k0; k < k_end; ++k, o += s) {
        const int b = (k - k0) & 1;
        const bool more = k + 1 < k_end;
        Heads h;
        if (more) {
            const idx_t dk = (k + 1 - k0) * s;
#pragma unroll
            for (int n = 0; n < ITEMS; ++n)
                if (items[n].at) ring[n] = __ldg(items[n].at + dk);
            if (carries) h = heads_load<ENERGY>(cur, o + s, s);
        }
        Updated u = {0, 0};
        if (computes)
            u = update_node<SRC, ENERGY>(c, FromTile{tiles[b], z, REACH + (int)threadIdx.x,
                                                     REACH + (int)threadIdx.y},
                                         z, next, src, o, p_shift, norms, sums);
        // Fourth-order differences also need the velocity ghosts: fill_walls does those walls.
        if (!FOURTH && x_walls) fill_x_walls<ENERGY>(next, o, i, r, x_walls, computes, u);
        if (more) {
            if (carries) queue_push<ENERGY>(z, h);
            store(&tiles[b ^ 1][0][0][0]);
        }
        __syncthreads();
    }
    if (norms) block_norms<ENERGY>(sums, partials, scratch, t);
}
#endif

// With MIN_BLOCKS, the compiler caps the registers per thread so that an SM holds that many
// blocks at once.
#if MIN_BLOCKS > 0
#define BOUNDS __launch_bounds__(BLOCK_THREADS, MIN_BLOCKS)
#else
#define BOUNDS __launch_bounds__(BLOCK_THREADS)
#endif

// The arguments of every entry point, mirrored by `StepParams` in src/cuda/launch.rs: `src` is
// unused without a source term, `x_walls` is described at fill_x_walls.
struct StepParams {
    Coeffs c;
    Grid g;
    Vars cur;
    Vars next;
    Vars src;
    Region r;
    const real_t* shift;
    double* partials;
    int norms;
    int x_walls;
};

#define AC_STEP_ENTRY(name, SRC, ENERGY)                                                          \
    extern "C" __global__ void BOUNDS name(const StepParams a) {                                 \
        step_block<SRC, ENERGY>(a.c, a.g, a.cur, a.next, a.src, a.r, a.shift, a.partials,       \
                                a.norms, a.x_walls);                                              \
    }

#if WITH_ENERGY && WITH_SOURCE
AC_STEP_ENTRY(ac_step_energy_src, true, true)
#elif WITH_ENERGY
AC_STEP_ENTRY(ac_step_energy, false, true)
#elif WITH_SOURCE
AC_STEP_ENTRY(ac_step_src, true, false)
#else
AC_STEP_ENTRY(ac_step, false, false)
#endif
