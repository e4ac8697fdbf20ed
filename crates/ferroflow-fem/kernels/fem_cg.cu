// The pressure solve's conjugate gradients (src/cg.rs: diagonal scaling S = D^(-1/2), the
// three-term recurrence of Saad's algorithm 6.18) with the whole loop on the device: one
// iteration is the matrix–vector product (fem_spmv.cu), `cg_dots` (both dot products in one
// fixed-order reduction, whose last block also takes the iteration's scalar decisions into
// `CgState`) and `cg_update`. Once the solve has converged or stopped, every kernel returns at
// once, so the host may queue iterations in batches (a CUDA graph) and look at the state
// between them only.
#include "fem.cuh"

// The solve's scalars, mirrored by `CgState` in src/cuda/cg.rs.
// Its reals are f64 whatever real_t: they hold real_t values widened, exactly, and are read
// back as real_t.
struct CgState {
    double bb, rr, rw, relative_residual, gamma, rho, gamma_prev, rr_prev, rho_prev, tolerance;
    idx_t iterations, max_iterations, status;
};

// `CgState::status`.
#define RUNNING 0
#define CONVERGED 1
#define STOPPED 2

// The arguments, mirrored by `CgArgs` in src/cuda/cg.rs. y and r: the current and the older
// vectors, by the parity of the iterations done.
struct Cg {
    CgState* state;
    const real_t* f;        // the right-hand side
    const real_t* f_total;  // Σ f, whose mean leaves f; null to keep f
    const real_t* s;        // the scaling D^(-1/2)
    real_t* sb;
    real_t* y0;
    real_t* y1;
    real_t* r0;
    real_t* r1;
    real_t* w;
    real_t* x;
    Reduction red;
    idx_t n;
};

// S b, y = S⁻¹ x₀ (x₀ = 0) and (S b, S b); the state for a new solve.
extern "C" __global__ void __launch_bounds__(SUM_LANES) cg_setup(const Cg a) {
    real_t x[1] = {0.0};
    for (int k = 0; k < SUM_BLOCK / SUM_LANES; ++k) {
        const idx_t i = chunk_item(k, a.n);
        if (i < 0) continue;
        real_t b = a.f[i];
        if (a.f_total) b -= *a.f_total / (real_t)a.n;
        const real_t sb = b * a.s[i];
        a.sb[i] = sb;
        a.y0[i] = (real_t)0 / a.s[i];
        x[0] += sb * sb;
    }
    if (!reduce_chunks<1>(x, SUM, a.red)) return;
    CgState& st = *a.state;
    st.bb = a.red.totals[0];
    st.iterations = 0;
    st.relative_residual = 0.0;
    st.gamma_prev = 0.0;
    st.rr_prev = 0.0;
    st.rho_prev = 1.0;
    st.status = st.bb == 0.0 ? CONVERGED : RUNNING;
}

// r = S b − S A S y with w = S A S y, and the older vectors as the current ones.
extern "C" __global__ void cg_start(const Cg a) {
    const idx_t i = (idx_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= a.n || a.state->status != RUNNING) return;
    const real_t r = a.sb[i] - a.w[i];
    a.r0[i] = r;
    a.r1[i] = r;
    a.y1[i] = a.y0[i];
}

// (r, r) and (r, A r), then the iteration's decisions: stop, or γ and ρ for the update.
extern "C" __global__ void __launch_bounds__(SUM_LANES) cg_dots(const Cg a, int parity) {
    if (a.state->status != RUNNING) return;
    const real_t* r = parity ? a.r1 : a.r0;
    real_t x[2] = {0.0, 0.0};
    for (int k = 0; k < SUM_BLOCK / SUM_LANES; ++k) {
        const idx_t i = chunk_item(k, a.n);
        if (i < 0) continue;
        x[0] += r[i] * r[i];
        x[1] += r[i] * a.w[i];
    }
    if (!reduce_chunks<2>(x, SUM, a.red)) return;
    CgState& st = *a.state;
    const real_t rr = a.red.totals[0], rw = a.red.totals[1];
    st.rr = rr;
    st.rw = rw;
    const real_t relative = sqrt(rr / (real_t)st.bb);
    st.relative_residual = relative;
    if (relative < (real_t)st.tolerance) {
        st.status = CONVERGED;
        return;
    }
    if (st.iterations == st.max_iterations || rw <= (real_t)0 || !isfinite(rw)) {
        st.status = STOPPED;
        return;
    }
    const real_t gamma = rr / rw;
    const real_t one = 1;
    const real_t rho = st.iterations == 0
                           ? one
                           : one / (one - gamma / (real_t)st.gamma_prev * rr / (real_t)st.rr_prev /
                                              (real_t)st.rho_prev);
    st.gamma = gamma;
    st.rho = rho;
    st.gamma_prev = gamma;
    st.rr_prev = rr;
    st.rho_prev = rho;
    st.iterations += 1;
}

// x_{j+1} = ρ (x_j + γ r_j) + (1 − ρ) x_{j−1}, r likewise with −γ A r_j, into the older
// vectors (which become the current ones).
extern "C" __global__ void cg_update(const Cg a, int parity) {
    const idx_t i = (idx_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= a.n || a.state->status != RUNNING) return;
    const real_t gamma = (real_t)a.state->gamma, rho = (real_t)a.state->rho;
    const real_t* y = parity ? a.y1 : a.y0;
    const real_t* r = parity ? a.r1 : a.r0;
    real_t* yp = parity ? a.y0 : a.y1;
    real_t* rp = parity ? a.r0 : a.r1;
    yp[i] = rho * (y[i] + gamma * r[i]) + ((real_t)1 - rho) * yp[i];
    rp[i] = rho * (r[i] - gamma * a.w[i]) + ((real_t)1 - rho) * rp[i];
}

// x = S y of the current y.
extern "C" __global__ void cg_finish(const Cg a) {
    const idx_t i = (idx_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= a.n) return;
    const real_t* y = a.state->iterations % 2 ? a.y1 : a.y0;
    a.x[i] = y[i] * a.s[i];
}
