// Physical boundaries after each pass: the twin of crates/ferroflow-cpu/src/boundary.rs. The
// host launches fill_walls once per axis, in x, y, z order (x walls only where the interior
// pass did not fill them, see ac_step.cu), with the face ranges the CPU uses too
// (`Layout::wall_face` in ferroflow-core: axes filled earlier span their ghosts), so that edges
// and corners match the CPU bitwise. One launch fills both sides of its axis: with n >= 5
// nodes they read and write disjoint nodes.
#include "ac_formulas.cuh"

// Thread f of block row `side` (0 = low, 1 = high) handles face node (lo1 + f % count1,
// lo2 + f / count1) along the two tangential axes in increasing order (x, y or z first), so
// that neighbouring threads of a y or z wall read neighbouring nodes: pressure at the wall node
// and its GHOST ghosts, each extrapolated from the three nodes inside it (wall velocities are
// fixed data). Bit s of `walls` says whether side s is a wall, bit s of `adiabatic` whether T
// (the array `t`, null without the energy equation) has zero normal gradient there: the wall
// value from the two nodes inside, the ghosts mirroring them. With fourth-order differences,
// which read two nodes out, the ghosts of the velocity components `u` (null without) and of T
// where it is not adiabatic are extrapolated cubically from the wall node and the nodes
// inside (`cubic_t`: T's too).
// The arguments, mirrored by `WallParams` in src/cuda/launch.rs.
struct WallParams {
    real_t* p;
    real_t* t;
    real_t* u[3];
    int cubic_t;
    Grid g;
    int axis;
    int walls;
    int adiabatic;
    idx_t lo1;
    idx_t count1;
    idx_t lo2;
    idx_t count2;
};

extern "C" __global__ void fill_walls(const WallParams a) {
    real_t* p = a.p;
    real_t* t = a.t;
    const Grid& g = a.g;
    const int axis = a.axis, walls = a.walls, adiabatic = a.adiabatic;
    const idx_t lo1 = a.lo1, count1 = a.count1, lo2 = a.lo2, count2 = a.count2;
    const int side = blockIdx.y;
    const idx_t f = (idx_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (!((walls >> side) & 1) || f >= count1 * count2) return;
    // Selects rather than arrays indexed by `axis`, which would live in local memory.
    const idx_t n = axis == 0 ? g.n[0] : axis == 1 ? g.n[1] : g.n[2];
    const idx_t stride = axis == 0 ? g.stride[0] : axis == 1 ? g.stride[1] : g.stride[2];
    const idx_t wall = side ? n - 1 : 0;
    const idx_t x1 = lo1 + f % count1, x2 = lo2 + f / count1;
    const idx_t i = axis == 0 ? wall : x1;
    const idx_t j = axis == 1 ? wall : axis == 0 ? x1 : x2;
    const idx_t k = axis == 2 ? wall : x2;
    const idx_t o = node_offset(g, i, j, k);
    const idx_t inward = side ? -stride : stride;
    extrapolate_wall(p, o, -inward, p[o + inward], p[o + 2 * inward], p[o + 3 * inward]);
    const bool mirrored = t && ((adiabatic >> side) & 1);
    if (mirrored) mirror_wall(t, o, -inward, t[o + inward], t[o + 2 * inward]);
    real_t* cubic[4] = {a.u[0], a.u[1], a.u[2], a.cubic_t && !mirrored ? t : nullptr};
    for (int v = 0; v < 4; ++v) {
        real_t* q = cubic[v];
        if (q) extrapolate_ghosts(q, o, -inward, q[o], q[o + inward], q[o + 2 * inward],
                                  q[o + 3 * inward]);
    }
}

// Block interfaces of a decomposed grid: the nodes of one variable in the box of `c0 × c1 × c2`
// nodes from (lo0, lo1, lo2), copied from the array `array` into the packed face buffer `buf`
// (`unpack` = 0) or back (`unpack` = 1), i fastest: the order of `Face::rows` in ferroflow-core.
// The arguments are mirrored by `HaloParams` in src/cuda/launch.rs.
struct HaloParams {
    real_t* array;
    real_t* buf;
    Grid g;
    idx_t lo0;
    idx_t lo1;
    idx_t lo2;
    idx_t c0;
    idx_t c1;
    idx_t c2;
    int unpack;
};

extern "C" __global__ void halo_box(const HaloParams a) {
    const idx_t c0 = a.c0, c1 = a.c1;
    const idx_t f = (idx_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (f >= c0 * c1 * a.c2) return;
    const idx_t o = node_offset(a.g, a.lo0 + f % c0, a.lo1 + f / c0 % c1, a.lo2 + f / (c0 * c1));
    if (a.unpack)
        a.array[o] = a.buf[f];
    else
        a.buf[f] = a.array[o];
}
