// The explicit steady iteration's loops (src/residual.rs, src/time.rs `steady`): one thread
// per cell for the cell loops, gathering over the cell's faces in ascending order as the CPU
// does, one thread per face for the face loops. The face fluxes are stored and gathered
// (`fv_faces`, `fv_viscous`, `fv_gather`: the CPU's bits); `fv_faces_atomic` adds them to the cells with
// atomics instead (faster where it is, not bitwise: the order of the additions is the
// hardware's), `fv_faces_coloured` in place, one colour of faces sharing no cell per launch
// (not bitwise either: each cell adds its faces in the colours' order). Arrays are structures of arrays: component k of item i at [k * count + i].
// The host (src/cuda/solver.rs) launches them in the CPU's order; FV_THREADS is the threads per
// block of `fv_norm`.
#include "fv.cuh"

// The arguments of every kernel here, mirrored by `StepArgs` in src/cuda/args.rs.
struct Step {
    idx_t cells;     // cells; their ghosts follow them in `prim` and `centroid`
    idx_t faces;     // faces: internal ones first, then the boundary's
    idx_t internal;  // internal faces
    idx_t pairs;     // (cell, face) pairs
    const unsigned* left;
    const unsigned* right;        // a cell, or for boundary face internal + b the ghost cells + b
    const double* normal;         // 3 × faces
    const double* area;           // faces
    const double* face_centroid;  // 3 × faces
    const double* volume;         // cells
    const double* centroid;       // 3 × (cells + ghosts)
    const unsigned* patch;        // each boundary face's patch
    const Patch* patches;
    const unsigned* offsets;     // cells + 1: where each cell's faces start in cell_faces
    const unsigned* cell_faces;  // each cell's faces, ascending
    const double* weights;       // 3 × pairs: least-squares coefficients
    double* u;                   // 5 × cells, conservative
    double* u0;                  // 5 × cells, the iteration's start
    double* r;                   // 5 × cells, the residual
    double* prim;                // 5 × (cells + ghosts)
    double* grad;                // 15 × cells: variable v's ∂/∂x_a at row 3 v + a
    double* flux;                // 5 × faces, flux times area from left to right
    double* wave;                // faces: (|V·n| + c) A
    double* dt;                  // cells: the local time step
    double* partials;            // 5 partial sums per block of fv_norm
    double gamma, cfl, alpha;
    idx_t limiter;
    Viscosity viscosity;
};

__device__ __forceinline__ idx_t item() { return (idx_t)blockIdx.x * blockDim.x + threadIdx.x; }

// The other side of face f seen from cell c, and the sign of its flux for c
// (Geometry::across).
__device__ __forceinline__ idx_t across(const Step& a, idx_t f, idx_t c, double* sign) {
    const idx_t l = __ldg(a.left + f);
    *sign = l == c ? 1.0 : -1.0;
    return l == c ? (idx_t)__ldg(a.right + f) : l;
}

__device__ __forceinline__ void load_prim(const Step& a, idx_t c, double* w) {
    const idx_t n = a.cells + (a.faces - a.internal);
    for (int v = 0; v < 5; ++v) w[v] = load(a.prim, v * n + c);
}

__device__ __forceinline__ void load_point(const double* x, idx_t count, idx_t i, double* p) {
    for (int k = 0; k < 3; ++k) p[k] = load(x, k * count + i);
}

// Primitive states of the cells (Solver::primitives, first half).
extern "C" __global__ void fv_primitives(const Step a) {
    const idx_t c = item();
    if (c >= a.cells) return;
    const idx_t n = a.cells + (a.faces - a.internal);
    double u[5], w[5];
    for (int v = 0; v < 5; ++v) u[v] = load(a.u, v * a.cells + c);
    primitive(a.gamma, u, w);
    for (int v = 0; v < 5; ++v) a.prim[v * n + c] = w[v];
}

// The ghosts' states from their cells' (Solver::primitives, second half).
extern "C" __global__ void fv_ghosts(const Step a) {
    const idx_t b = item();
    if (b >= a.faces - a.internal) return;
    const idx_t f = a.internal + b;
    const idx_t n = a.cells + (a.faces - a.internal);
    double w[5], nf[3], out[5];
    load_prim(a, a.left[f], w);
    load_point(a.normal, a.faces, f, nf);
    ghost(a.gamma, a.patches[a.patch[b]], w, nf, out);
    for (int v = 0; v < 5; ++v) a.prim[v * n + a.cells + b] = out[v];
}

// gradients::gradients: each cell's least-squares gradients over its faces in order.
extern "C" __global__ void fv_gradients(const Step a) {
    const idx_t c = item();
    if (c >= a.cells) return;
    double q[5], g[15];
    load_prim(a, c, q);
    for (int k = 0; k < 15; ++k) g[k] = 0.0;
    for (idx_t p = a.offsets[c]; p < a.offsets[c + 1]; ++p) {
        double sign, qj[5], w[3];
        load_prim(a, across(a, __ldg(a.cell_faces + p), c, &sign), qj);
        load_point(a.weights, a.pairs, p, w);
        for (int v = 0; v < 5; ++v) {
            const double dq = qj[v] - q[v];
            for (int k = 0; k < 3; ++k) g[3 * v + k] += w[k] * dq;
        }
    }
    for (int k = 0; k < 15; ++k) a.grad[k * a.cells + c] = g[k];
}

// Side `c` of face f (centroid xf, `d` from left to right, dd = d·d) extrapolated to the
// face, `other` across it; `sign` +1 for the left side, -1 for the right.
__device__ __forceinline__ void extrapolated(const Step& a, idx_t c, idx_t other,
                                             const double* xf, const double* d, double dd,
                                             double sign, double* w) {
    const idx_t n = a.cells + (a.faces - a.internal);
    double q[5], qo[5], x[3], r[3], g[15];
    load_prim(a, c, q);
    load_prim(a, other, qo);
    load_point(a.centroid, n, c, x);
    for (int k = 0; k < 3; ++k) r[k] = xf[k] - x[k];
    for (int k = 0; k < 15; ++k) g[k] = load(a.grad, k * a.cells + c);
    face_side((int)a.limiter, q, qo, g, r, sign * dot3(r, d) / dd, w);
}

// Solver::face_loop for face f: its flux times area.
__device__ __forceinline__ void face_flux(const Step& a, idx_t f, double* out) {
    const idx_t n = a.cells + (a.faces - a.internal);
    const idx_t l = __ldg(a.left + f), rt = __ldg(a.right + f);
    double nf[3], xf[3], xl[3], xr[3], d[3];
    load_point(a.normal, a.faces, f, nf);
    load_point(a.face_centroid, a.faces, f, xf);
    load_point(a.centroid, n, l, xl);
    load_point(a.centroid, n, rt, xr);
    for (int k = 0; k < 3; ++k) d[k] = xr[k] - xl[k];
    const double dd = dot3(d, d);
    double wl[5], wr[5];
    extrapolated(a, l, rt, xf, d, dd, 1.0, wl);
    if (f < a.internal)
        extrapolated(a, rt, l, xf, d, dd, -1.0, wr);
    else
        ghost(a.gamma, a.patches[a.patch[f - a.internal]], wl, nf, wr);
    roe(a.gamma, wl, wr, nf, out);
    const double area = load(a.area, f);
    for (int v = 0; v < 5; ++v) out[v] = out[v] * area;
}

// The face loop, fluxes stored.
extern "C" __global__ void fv_faces(const Step a) {
    const idx_t f = item();
    if (f >= a.faces) return;
    double out[5];
    face_flux(a, f, out);
    for (int v = 0; v < 5; ++v) a.flux[v * a.faces + f] = out[v];
}

// The face loop adding each flux to its cells' residuals (zeroed before) with atomics.
extern "C" __global__ void fv_faces_atomic(const Step a) {
    const idx_t f = item();
    if (f >= a.faces) return;
    double out[5];
    face_flux(a, f, out);
    const idx_t l = a.left[f], rt = a.right[f];
    for (int v = 0; v < 5; ++v) {
        atomicAdd(a.r + v * a.cells + l, out[v]);
        if (f < a.internal) atomicAdd(a.r + v * a.cells + rt, -out[v]);
    }
}

// The face loop over one colour, faces order[begin, end) of which no two share a cell: each
// adds its flux to its cells' residuals (zeroed before) in place.
extern "C" __global__ void fv_faces_coloured(const Step a, const unsigned* order, idx_t begin,
                                             idx_t end) {
    const idx_t i = begin + item();
    if (i >= end) return;
    const idx_t f = order[i];
    double out[5];
    face_flux(a, f, out);
    const idx_t l = a.left[f], rt = a.right[f];
    for (int v = 0; v < 5; ++v) {
        a.r[v * a.cells + l] += out[v];
        if (f < a.internal) a.r[v * a.cells + rt] -= out[v];
    }
}

// viscous::subtract_fluxes: each face's viscous flux times area taken from its stored flux.
extern "C" __global__ void fv_viscous(const Step a) {
    const idx_t f = item();
    if (f >= a.faces) return;
    const idx_t n = a.cells + (a.faces - a.internal);
    const idx_t l = __ldg(a.left + f), rt = __ldg(a.right + f);
    double wl[5], wr[5], g[15], gl[4][3], gr[4][3], xl[3], xr[3], d[3], nf[3];
    load_prim(a, l, wl);
    load_prim(a, rt, wr);
    for (int k = 0; k < 15; ++k) g[k] = load(a.grad, k * a.cells + l);
    velocity_temperature_gradients(wl, g, gl);
    // A ghost has no gradient of its own: the cell's stands for the mean.
    if (rt < a.cells) {
        for (int k = 0; k < 15; ++k) g[k] = load(a.grad, k * a.cells + rt);
        velocity_temperature_gradients(wr, g, gr);
    } else {
        for (int q = 0; q < 4; ++q)
            for (int k = 0; k < 3; ++k) gr[q][k] = gl[q][k];
    }
    const double ql[4] = {wl[1], wl[2], wl[3], wl[4] / wl[0]};
    const double qr[4] = {wr[1], wr[2], wr[3], wr[4] / wr[0]};
    load_point(a.centroid, n, l, xl);
    load_point(a.centroid, n, rt, xr);
    for (int k = 0; k < 3; ++k) d[k] = xr[k] - xl[k];
    double grad[4][3];
    for (int q = 0; q < 4; ++q) {
        for (int k = 0; k < 3; ++k) grad[q][k] = 0.5 * (gl[q][k] + gr[q][k]);
        face_gradient(grad[q], qr[q] - ql[q], d);
    }
    const double v[3] = {0.5 * (ql[0] + qr[0]), 0.5 * (ql[1] + qr[1]), 0.5 * (ql[2] + qr[2])};
    const double t = 0.5 * (ql[3] + qr[3]);
    load_point(a.normal, a.faces, f, nf);
    double out[5];
    viscous_flux(a.viscosity, a.gamma, v, t, grad, nf, out);
    // A slip wall is a symmetry plane: the normal stress only.
    if (f >= a.internal && a.patches[a.patch[f - a.internal]].kind == SLIP_WALL) {
        const double normal = out[1] * nf[0] + out[2] * nf[1] + out[3] * nf[2];
        out[0] = 0.0;
        for (int k = 0; k < 3; ++k) out[k + 1] = normal * nf[k];
        out[4] = 0.0;
    }
    const double area = load(a.area, f);
    for (int k = 0; k < 5; ++k) a.flux[k * a.faces + f] -= out[k] * area;
}

// Solver::gather: each cell's residual from its faces' fluxes, in order.
extern "C" __global__ void fv_gather(const Step a) {
    const idx_t c = item();
    if (c >= a.cells) return;
    double r[5] = {0.0, 0.0, 0.0, 0.0, 0.0};
    for (idx_t p = a.offsets[c]; p < a.offsets[c + 1]; ++p) {
        double sign;
        const idx_t f = __ldg(a.cell_faces + p);
        across(a, f, c, &sign);
        for (int v = 0; v < 5; ++v) r[v] += sign * load(a.flux, v * a.faces + f);
    }
    for (int v = 0; v < 5; ++v) a.r[v * a.cells + c] = r[v];
}

// Solver::time_steps, face part: (|V·n| + c) A of the mean of the face's two states, plus
// the viscous radius (viscous::add_spectral_radii).
extern "C" __global__ void fv_waves(const Step a) {
    const idx_t f = item();
    if (f >= a.faces) return;
    double l[5], r[5], w[5], nf[3];
    load_prim(a, a.left[f], l);
    load_prim(a, a.right[f], r);
    for (int v = 0; v < 5; ++v) w[v] = 0.5 * (l[v] + r[v]);
    load_point(a.normal, a.faces, f, nf);
    const double area = a.area[f];
    double wave = (fabs(normal_velocity(w, nf)) + sound(a.gamma, w)) * area;
    if (a.viscosity.law != INVISCID) {
        const idx_t n = a.cells + (a.faces - a.internal);
        double xl[3], xr[3], d[3];
        load_point(a.centroid, n, a.left[f], xl);
        load_point(a.centroid, n, a.right[f], xr);
        for (int k = 0; k < 3; ++k) d[k] = xr[k] - xl[k];
        wave += viscous_radius(a.viscosity, a.gamma, w, dot3(d, nf)) * area;
    }
    a.wave[f] = wave;
}

// Solver::time_steps, cell part: CFL Ω / Σ_f λ_f A_f, the faces in order.
extern "C" __global__ void fv_time_steps(const Step a) {
    const idx_t c = item();
    if (c >= a.cells) return;
    // Rust's f64 sums start from -0.
    double sum = -0.0;
    for (idx_t p = a.offsets[c]; p < a.offsets[c + 1]; ++p) sum += load(a.wave, __ldg(a.cell_faces + p));
    a.dt[c] = a.cfl * a.volume[c] / sum;
}

// A stage of time::steady: U = U0 − α Δt/Ω R; the first stage (`first`) keeps U as U0.
extern "C" __global__ void fv_stage(const Step a, int first) {
    const idx_t c = item();
    if (c >= a.cells) return;
    const double step = a.alpha * a.dt[c] / a.volume[c];
    for (int v = 0; v < 5; ++v) {
        const idx_t i = v * a.cells + c;
        const double start = first ? a.u[i] : a.u0[i];
        if (first) a.u0[i] = start;
        a.u[i] = start - step * a.r[i];
    }
}

// Σ (R_v/Ω)² of each variable v over each block's cells into partials[v × blocks + block]
// (reduce_sums adds each variable's up).
extern "C" __global__ void __launch_bounds__(FV_THREADS) fv_norm(const Step a) {
    __shared__ double scratch[FV_THREADS];
    const idx_t c = item();
    for (int v = 0; v < 5; ++v) {
        double x = 0.0;
        if (c < a.cells) {
            const double q = a.r[v * a.cells + c] / a.volume[c];
            x = q * q;
        }
        const double total = block_sum(x, scratch, threadIdx.x, FV_THREADS);
        if (threadIdx.x == 0) a.partials[v * gridDim.x + blockIdx.x] = total;
    }
}
