// One fractional step's node loops (src/fractional.rs, spec Part I.2), one thread per node
// gathering over its row (no atomics), or, where a kernel ends in a reduction, SUM_LANES
// threads per SUM_BLOCK nodes in the order of src/sum.rs. The host (src/cuda/step.rs) launches
// them in the CPU step's order; FIXED_PRESSURE is the penalty of a held pressure row.
#include "fem.cuh"

// The arguments of every kernel here, mirrored by `StepArgs` in src/cuda/step.rs.
struct Step {
    Rows rows;
    const real_t* h;      // M_II^(1/3)
    const real_t* h_min;  // smallest height over the node
    const int* boundary;  // a fixed-velocity node's index into held_*, -1 for a free node
    const int* held;      // 1 where δp is held at zero
    const real_t* held_half;  // fixed velocities at t + Δt/2
    const real_t* held_full;  // at t + Δt
    real_t* u;
    real_t* p;
    real_t* stage0;
    real_t* stage1;
    real_t* sum;  // the Runge–Kutta sum, then û
    real_t* xi;
    real_t* tau_c;
    real_t* tau_p;
    real_t* rate;
    real_t* grad_p;
    real_t* f;
    real_t* h_values;
    real_t* diagonal;
    real_t* scale;             // D^(-1/2) of the pressure solve
    real_t* scaled_diagonal;   // A_II S_I
    const real_t* x;  // the pressure solve's result
    real_t* dp;
    real_t* rot;
    real_t* dt_node;  // each node's stable time step (fem_time_step)
    Reduction red;
    real_t nu, rho, dt, cfl, dt_max, c_convection, c_pressure;
    idx_t level;  // the node that sets the pressure's level, or -1
    int local;    // 1: node I steps by dt_node[I] (local time steps), 0: all by dt
};

__device__ __forceinline__ idx_t node() { return (idx_t)blockIdx.x * blockDim.x + threadIdx.x; }

// Node i's Δt: its own with local time steps, else the step's.
__device__ __forceinline__ real_t step_of(const Step& a, idx_t i) {
    return a.local ? a.dt_node[i] : a.dt;
}

// 2|u_I|/h_I + 4ν/h_I², and their largest (τ's Δt_avg).
extern "C" __global__ void __launch_bounds__(SUM_LANES) fem_rates(const Step a) {
    real_t x[1] = {0.0};
    for (int k = 0; k < SUM_BLOCK / SUM_LANES; ++k) {
        const idx_t i = chunk_item(k, a.rows.n);
        if (i < 0) continue;
        const real_t r =
            (real_t)2 * norm3(a.u + 3 * i) / a.h[i] + (real_t)4 * a.nu / (a.h[i] * a.h[i]);
        a.rate[i] = r;
        x[0] = fmax(x[0], r);
    }
    reduce_chunks<1>(x, MAX, a.red);
}

// What the stages freeze at u^n: ξ, τ of convection and of pressure; the sum starts at u^n.
extern "C" __global__ void fem_freeze(const Step a) {
    const idx_t i = node();
    if (i >= a.rows.n) return;
    const real_t* ui = a.u + 3 * i;
    real_t s[3] = {0, 0, 0};
    for (unsigned e = a.rows.offsets[i]; e < a.rows.offsets[i + 1]; ++e) {
        const idx_t j = a.rows.columns[e];
        const real_t c = dot3(ui, a.rows.terms[e].ni_dnj);
        for (int d = 0; d < 3; ++d) s[d] += c * (a.u[3 * j + d] - ui[d]);
    }
    const real_t fastest = a.red.totals[0];
    for (int d = 0; d < 3; ++d) {
        a.xi[3 * i + d] = s[d] / a.rows.lumped[i];
        a.sum[3 * i + d] = ui[d];
    }
    a.tau_c[i] = (real_t)1 / (a.rate[i] + a.c_convection * fastest);
    a.tau_p[i] = (real_t)1 / (a.rate[i] + a.c_pressure * fastest);
}

// Runge–Kutta stage `s`: the momentum's right-hand side at the stage velocity, added to the
// sum and, for s < 3, the next stage's velocity (fixed nodes held).
extern "C" __global__ void fem_stage(const Step a, int s) {
    const idx_t i = node();
    if (i >= a.rows.n) return;
    const real_t* in = s == 0 ? a.u : (s % 2 ? a.stage0 : a.stage1);
    real_t* out = s % 2 ? a.stage1 : a.stage0;
    const real_t* ui = in + 3 * i;
    const real_t* xii = a.xi + 3 * i;
    const real_t tau = a.tau_c[i];
    real_t r[3] = {0, 0, 0};
    for (unsigned e = a.rows.offsets[i]; e < a.rows.offsets[i + 1]; ++e) {
        const idx_t j = a.rows.columns[e];
        const Edge& t = a.rows.terms[e];
        const real_t conv = dot3(ui, t.ni_dnj);
        const real_t low = quadratic(t.laplacian, ui);
        const real_t dp = (a.p[j] - a.p[i]) / a.rho;
        const real_t visc = a.nu * laplacian_trace(t);
        for (int d = 0; d < 3; ++d) {
            const real_t du = in[3 * j + d] - ui[d];
            const real_t dxi = a.xi[3 * j + d] - xii[d];
            r[d] += -(conv + visc + tau * low) * du - dp * t.ni_dnj[d] - tau * conv * dxi;
        }
    }
    const real_t alpha[3] = {0.5, 0.5, 1.0};
    const real_t beta[4] = {1.0 / 6.0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 6.0};
    const real_t m = step_of(a, i) / a.rows.lumped[i];
    const int b = a.boundary[i];
    for (int d = 0; d < 3; ++d) {
        a.sum[3 * i + d] += beta[s] * m * r[d];
        if (s < 3) out[3 * i + d] = a.u[3 * i + d] + alpha[s] * m * r[d];
    }
    if (b < 0) return;
    const real_t* held = s < 2 ? a.held_half : a.held_full;
    for (int d = 0; d < 3; ++d) {
        if (s < 3) out[3 * i + d] = held[3 * b + d];
        else a.sum[3 * i + d] = held[3 * b + d];
    }
}

// M⁻¹ π of p^n: the pressure gradient's projection.
extern "C" __global__ void fem_gradient_p(const Step a) {
    const idx_t i = node();
    if (i >= a.rows.n) return;
    real_t s[3] = {0, 0, 0};
    for (unsigned e = a.rows.offsets[i]; e < a.rows.offsets[i + 1]; ++e) {
        const real_t d = a.p[a.rows.columns[e]] - a.p[i];
        for (int c = 0; c < 3; ++c) s[c] += a.rows.terms[e].ni_dnj[c] * d;
    }
    for (int c = 0; c < 3; ++c) a.grad_p[3 * i + c] = s[c] / a.rows.lumped[i];
}

// The pressure equation's right-hand side f and its matrix H (off-diagonal values, diagonal).
extern "C" __global__ void fem_pressure_system(const Step a) {
    const idx_t i = node();
    if (i >= a.rows.n) return;
    const real_t* ui = a.sum + 3 * i;
    const real_t* gi = a.grad_p + 3 * i;
    real_t s = 0, diagonal = 0;
    for (unsigned e = a.rows.offsets[i]; e < a.rows.offsets[i + 1]; ++e) {
        const idx_t j = a.rows.columns[e];
        const Edge& t = a.rows.terms[e];
        const real_t tau = (real_t)0.5 * (a.tau_p[i] + a.tau_p[j]);
        const real_t du[3] = {a.sum[3 * j] - ui[0], a.sum[3 * j + 1] - ui[1], a.sum[3 * j + 2] - ui[2]};
        s -= dot3(t.ni_dnj, du);
        s -= tau * laplacian_trace(t) * (a.p[j] - a.p[i]);
        s += tau * (dot3(t.dni_nj, a.grad_p + 3 * j) - dot3(t.ni_dnj, gi));
        const real_t dt = (real_t)0.5 * (step_of(a, i) + step_of(a, j));
        const real_t h = (dt / a.rho + tau) * laplacian_trace(t);
        a.h_values[e] = h;
        diagonal -= h;
    }
    a.f[i] = a.held[i] ? (real_t)0 : s;
    a.diagonal[i] = a.held[i] ? (real_t)FIXED_PRESSURE : diagonal;
}

// The pressure solve's scaling S_I = 1 / sqrt(H_II), and H_II S_I.
extern "C" __global__ void fem_scaling(const Step a) {
    const idx_t i = node();
    if (i >= a.rows.n) return;
    const real_t d = a.diagonal[i];
    const real_t s = (real_t)1 / sqrt(d);
    a.scale[i] = s;
    a.scaled_diagonal[i] = d * s;
}

// Σ f, whose mean leaves f when one node only sets the pressure's level.
extern "C" __global__ void __launch_bounds__(SUM_LANES) fem_total(const Step a) {
    real_t x[1] = {0.0};
    for (int k = 0; k < SUM_BLOCK / SUM_LANES; ++k) {
        const idx_t i = chunk_item(k, a.rows.n);
        if (i >= 0) x[0] += a.f[i];
    }
    reduce_chunks<1>(x, SUM, a.red);
}

// δp, shifted to zero at the level's node; f without its mean where the level is set (the
// solve subtracted it on the fly), for the continuity residual.
extern "C" __global__ void fem_shift(const Step a) {
    const idx_t i = node();
    if (i >= a.rows.n) return;
    a.dp[i] = a.level < 0 ? a.x[i] : a.x[i] - a.x[a.level];
    if (a.level >= 0) a.f[i] -= *a.red.totals / (real_t)a.rows.n;
}

// u^(n+1) = û − (Δt/ρ) M⁻¹ Σ_J ∇_IJ (δp_J − δp_I) off the fixed nodes, and the rotational
// term ν M⁻¹ K_Δt δp.
extern "C" __global__ void fem_correct(const Step a) {
    const idx_t i = node();
    if (i >= a.rows.n) return;
    real_t g[3] = {0, 0, 0};
    // -0.0: the neutral element of Rust's float `Sum`.
    real_t k = -(real_t)0;
    for (unsigned e = a.rows.offsets[i]; e < a.rows.offsets[i + 1]; ++e) {
        const Edge& t = a.rows.terms[e];
        const idx_t j = a.rows.columns[e];
        const real_t d = a.dp[j] - a.dp[i];
        for (int c = 0; c < 3; ++c) g[c] += t.ni_dnj[c] * d;
        k += (real_t)0.5 * (step_of(a, i) + step_of(a, j)) * laplacian_trace(t) * d;
    }
    a.rot[i] = a.nu * k / a.rows.lumped[i];
    const real_t m = step_of(a, i) / (a.rho * a.rows.lumped[i]);
    for (int c = 0; c < 3; ++c)
        a.u[3 * i + c] = a.boundary[i] < 0 ? a.sum[3 * i + c] - m * g[c] : a.sum[3 * i + c];
}

// p^(n+1) = p^n + δp + ν M⁻¹ K_Δt δp off the held rows, the level's node kept.
extern "C" __global__ void fem_pressure_update(const Step a) {
    const idx_t i = node();
    if (i >= a.rows.n || a.held[i]) return;
    const real_t at = a.level < 0 ? (real_t)0 : a.rot[a.level];
    a.p[i] += a.dp[i] + a.rot[i] - at;
}

// Σ_I (M_II⁻¹ Σ_J ∇_IJ·(u_J − u_I))² and, over the rows not held, Σ_I (M_II⁻¹ (f − H δp)_I)²:
// the RMS discrete divergence and continuity residual.
extern "C" __global__ void __launch_bounds__(SUM_LANES) fem_divergence(const Step a) {
    real_t x[2] = {0.0, 0.0};
    for (int k = 0; k < SUM_BLOCK / SUM_LANES; ++k) {
        const idx_t i = chunk_item(k, a.rows.n);
        if (i < 0) continue;
        real_t d = 0;
        for (unsigned e = a.rows.offsets[i]; e < a.rows.offsets[i + 1]; ++e) {
            const idx_t j = a.rows.columns[e];
            for (int c = 0; c < 3; ++c)
                d += a.rows.terms[e].ni_dnj[c] * (a.u[3 * j + c] - a.u[3 * i + c]);
        }
        const real_t v = d / a.rows.lumped[i];
        x[0] += v * v;
        real_t h_dp = a.diagonal[i] * a.dp[i];
        for (unsigned e = a.rows.offsets[i]; e < a.rows.offsets[i + 1]; ++e)
            h_dp += a.h_values[e] * a.dp[a.rows.columns[e]];
        const real_t r = (a.f[i] - h_dp) / a.rows.lumped[i];
        x[1] += a.held[i] ? (real_t)0 : r * r;
    }
    reduce_chunks<2>(x, SUM, a.red);
}

// Each node's stability estimate CFL / (2|u|/h_min + 4ν/h_min²), |u| the larger of |u_I| and
// |u_I − u_J|, at most dt_max, into dt_node, and their smallest.
extern "C" __global__ void __launch_bounds__(SUM_LANES) fem_time_step(const Step a) {
    real_t x[1] = {(real_t)POSITIVE_INFINITY};
    for (int k = 0; k < SUM_BLOCK / SUM_LANES; ++k) {
        const idx_t i = chunk_item(k, a.rows.n);
        if (i < 0) continue;
        const real_t* ui = a.u + 3 * i;
        real_t speed = norm3(ui);
        for (unsigned e = a.rows.offsets[i]; e < a.rows.offsets[i + 1]; ++e) {
            const real_t* uj = a.u + 3 * (idx_t)a.rows.columns[e];
            const real_t d[3] = {uj[0] - ui[0], uj[1] - ui[1], uj[2] - ui[2]};
            speed = fmax(speed, norm3(d));
        }
        const real_t h = a.h_min[i];
        const real_t dt =
            fmin(a.cfl / ((real_t)2 * speed / h + (real_t)4 * a.nu / (h * h)), a.dt_max);
        a.dt_node[i] = dt;
        x[0] = fmin(x[0], dt);
    }
    reduce_chunks<1>(x, MIN, a.red);
}

// What the last step changed, for the host's steady and divergence checks without the state:
// FractionalStep::rates (the largest |u − u0| / Δt_I and |p − p0| / (ρ Δt_I), the same
// operations), and the largest |u| component, infinite where a value is not finite.
struct Change {
    const real_t* u;
    const real_t* u0;
    const real_t* p;
    const real_t* p0;
    const real_t* dt_node;
    Reduction red;
    real_t dt, rho;
    idx_t n;
    int local;
};

extern "C" __global__ void __launch_bounds__(SUM_LANES) fem_changes(const Change a) {
    real_t x[3] = {0, 0, 0};
    for (int k = 0; k < SUM_BLOCK / SUM_LANES; ++k) {
        const idx_t i = chunk_item(k, a.n);
        if (i < 0) continue;
        const real_t dt = a.local ? a.dt_node[i] : a.dt;
        real_t change = 0, fastest = 0;
        bool finite = isfinite(a.p[i]);
        for (int c = 0; c < 3; ++c) {
            const real_t v = a.u[3 * i + c];
            change = fmax(change, fabs(v - a.u0[3 * i + c]));
            fastest = fmax(fastest, fabs(v));
            finite = finite && isfinite(v);
        }
        x[0] = fmax(x[0], change / dt);
        x[1] = fmax(x[1], fabs(a.p[i] - a.p0[i]) / (a.rho * dt));
        x[2] = fmax(x[2], finite ? fastest : (real_t)POSITIVE_INFINITY);
    }
    reduce_chunks<3>(x, MAX, a.red);
}
