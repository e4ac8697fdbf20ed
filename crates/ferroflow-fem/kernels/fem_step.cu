// One fractional step's node loops (src/fractional.rs, spec Part I.2), one thread per node
// gathering over its row (no atomics), or, where a kernel ends in a reduction, SUM_LANES
// threads per SUM_BLOCK nodes in the order of src/sum.rs. The host (src/cuda/step.rs) launches
// them in the CPU step's order; FIXED_PRESSURE is the penalty of a held pressure row.
#include "fem.cuh"

// The arguments of every kernel here, mirrored by `StepArgs` in src/cuda/step.rs.
struct Step {
    Rows rows;
    const double* h;      // M_II^(1/3)
    const double* h_min;  // smallest height over the node
    const int* boundary;  // a fixed-velocity node's index into held_*, -1 for a free node
    const int* held;      // 1 where δp is held at zero
    const double* held_half;  // fixed velocities at t + Δt/2
    const double* held_full;  // at t + Δt
    double* u;
    double* p;
    double* stage0;
    double* stage1;
    double* sum;  // the Runge–Kutta sum, then û
    double* xi;
    double* tau_c;
    double* tau_p;
    double* rate;
    double* grad_p;
    double* f;
    double* h_values;
    double* diagonal;
    double* scale;             // D^(-1/2) of the pressure solve
    double* scaled_diagonal;   // A_II S_I
    const double* x;  // the pressure solve's result
    double* dp;
    double* rot;
    double* dt_node;  // each node's stable time step (fem_time_step)
    Reduction red;
    double nu, rho, dt, cfl, dt_max, c_convection, c_pressure;
    idx_t level;  // the node that sets the pressure's level, or -1
    int local;    // 1: node I steps by dt_node[I] (local time steps), 0: all by dt
};

__device__ __forceinline__ idx_t node() { return (idx_t)blockIdx.x * blockDim.x + threadIdx.x; }

// Node i's Δt: its own with local time steps, else the step's.
__device__ __forceinline__ double step_of(const Step& a, idx_t i) {
    return a.local ? a.dt_node[i] : a.dt;
}

// 2|u_I|/h_I + 4ν/h_I², and their largest (τ's Δt_avg).
extern "C" __global__ void __launch_bounds__(SUM_LANES) fem_rates(const Step a) {
    double x[1] = {0.0};
    for (int k = 0; k < SUM_BLOCK / SUM_LANES; ++k) {
        const idx_t i = chunk_item(k, a.rows.n);
        if (i < 0) continue;
        const double r = 2.0 * norm3(a.u + 3 * i) / a.h[i] + 4.0 * a.nu / (a.h[i] * a.h[i]);
        a.rate[i] = r;
        x[0] = fmax(x[0], r);
    }
    reduce_chunks<1>(x, MAX, a.red);
}

// What the stages freeze at u^n: ξ, τ of convection and of pressure; the sum starts at u^n.
extern "C" __global__ void fem_freeze(const Step a) {
    const idx_t i = node();
    if (i >= a.rows.n) return;
    const double* ui = a.u + 3 * i;
    double s[3] = {0, 0, 0};
    for (unsigned e = a.rows.offsets[i]; e < a.rows.offsets[i + 1]; ++e) {
        const idx_t j = a.rows.columns[e];
        const double c = dot3(ui, a.rows.terms[e].ni_dnj);
        for (int d = 0; d < 3; ++d) s[d] += c * (a.u[3 * j + d] - ui[d]);
    }
    const double fastest = a.red.totals[0];
    for (int d = 0; d < 3; ++d) {
        a.xi[3 * i + d] = s[d] / a.rows.lumped[i];
        a.sum[3 * i + d] = ui[d];
    }
    a.tau_c[i] = 1.0 / (a.rate[i] + a.c_convection * fastest);
    a.tau_p[i] = 1.0 / (a.rate[i] + a.c_pressure * fastest);
}

// Runge–Kutta stage `s`: the momentum's right-hand side at the stage velocity, added to the
// sum and, for s < 3, the next stage's velocity (fixed nodes held).
extern "C" __global__ void fem_stage(const Step a, int s) {
    const idx_t i = node();
    if (i >= a.rows.n) return;
    const double* in = s == 0 ? a.u : (s % 2 ? a.stage0 : a.stage1);
    double* out = s % 2 ? a.stage1 : a.stage0;
    const double* ui = in + 3 * i;
    const double* xii = a.xi + 3 * i;
    const double tau = a.tau_c[i];
    double r[3] = {0, 0, 0};
    for (unsigned e = a.rows.offsets[i]; e < a.rows.offsets[i + 1]; ++e) {
        const idx_t j = a.rows.columns[e];
        const Edge& t = a.rows.terms[e];
        const double conv = dot3(ui, t.ni_dnj);
        const double low = quadratic(t.laplacian, ui);
        const double dp = (a.p[j] - a.p[i]) / a.rho;
        const double visc = a.nu * laplacian_trace(t);
        for (int d = 0; d < 3; ++d) {
            const double du = in[3 * j + d] - ui[d];
            const double dxi = a.xi[3 * j + d] - xii[d];
            r[d] += -(conv + visc + tau * low) * du - dp * t.ni_dnj[d] - tau * conv * dxi;
        }
    }
    const double alpha[3] = {0.5, 0.5, 1.0};
    const double beta[4] = {1.0 / 6.0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 6.0};
    const double m = step_of(a, i) / a.rows.lumped[i];
    const int b = a.boundary[i];
    for (int d = 0; d < 3; ++d) {
        a.sum[3 * i + d] += beta[s] * m * r[d];
        if (s < 3) out[3 * i + d] = a.u[3 * i + d] + alpha[s] * m * r[d];
    }
    if (b < 0) return;
    const double* held = s < 2 ? a.held_half : a.held_full;
    for (int d = 0; d < 3; ++d) {
        if (s < 3) out[3 * i + d] = held[3 * b + d];
        else a.sum[3 * i + d] = held[3 * b + d];
    }
}

// M⁻¹ π of p^n: the pressure gradient's projection.
extern "C" __global__ void fem_gradient_p(const Step a) {
    const idx_t i = node();
    if (i >= a.rows.n) return;
    double s[3] = {0, 0, 0};
    for (unsigned e = a.rows.offsets[i]; e < a.rows.offsets[i + 1]; ++e) {
        const double d = a.p[a.rows.columns[e]] - a.p[i];
        for (int c = 0; c < 3; ++c) s[c] += a.rows.terms[e].ni_dnj[c] * d;
    }
    for (int c = 0; c < 3; ++c) a.grad_p[3 * i + c] = s[c] / a.rows.lumped[i];
}

// The pressure equation's right-hand side f and its matrix H (off-diagonal values, diagonal).
extern "C" __global__ void fem_pressure_system(const Step a) {
    const idx_t i = node();
    if (i >= a.rows.n) return;
    const double* ui = a.sum + 3 * i;
    const double* gi = a.grad_p + 3 * i;
    double s = 0, diagonal = 0;
    for (unsigned e = a.rows.offsets[i]; e < a.rows.offsets[i + 1]; ++e) {
        const idx_t j = a.rows.columns[e];
        const Edge& t = a.rows.terms[e];
        const double tau = 0.5 * (a.tau_p[i] + a.tau_p[j]);
        const double du[3] = {a.sum[3 * j] - ui[0], a.sum[3 * j + 1] - ui[1], a.sum[3 * j + 2] - ui[2]};
        s -= dot3(t.ni_dnj, du);
        s -= tau * laplacian_trace(t) * (a.p[j] - a.p[i]);
        s += tau * (dot3(t.dni_nj, a.grad_p + 3 * j) - dot3(t.ni_dnj, gi));
        const double dt = 0.5 * (step_of(a, i) + step_of(a, j));
        const double h = (dt / a.rho + tau) * laplacian_trace(t);
        a.h_values[e] = h;
        diagonal -= h;
    }
    a.f[i] = a.held[i] ? 0.0 : s;
    a.diagonal[i] = a.held[i] ? FIXED_PRESSURE : diagonal;
}

// The pressure solve's scaling S_I = 1 / sqrt(H_II), and H_II S_I.
extern "C" __global__ void fem_scaling(const Step a) {
    const idx_t i = node();
    if (i >= a.rows.n) return;
    const double d = a.diagonal[i];
    const double s = 1.0 / sqrt(d);
    a.scale[i] = s;
    a.scaled_diagonal[i] = d * s;
}

// Σ f, whose mean leaves f when one node only sets the pressure's level.
extern "C" __global__ void __launch_bounds__(SUM_LANES) fem_total(const Step a) {
    double x[1] = {0.0};
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
    if (a.level >= 0) a.f[i] -= *a.red.totals / (double)a.rows.n;
}

// u^(n+1) = û − (Δt/ρ) M⁻¹ Σ_J ∇_IJ (δp_J − δp_I) off the fixed nodes, and the rotational
// term ν M⁻¹ K_Δt δp.
extern "C" __global__ void fem_correct(const Step a) {
    const idx_t i = node();
    if (i >= a.rows.n) return;
    double g[3] = {0, 0, 0};
    // -0.0: the neutral element of Rust's float `Sum`.
    double k = -0.0;
    for (unsigned e = a.rows.offsets[i]; e < a.rows.offsets[i + 1]; ++e) {
        const Edge& t = a.rows.terms[e];
        const idx_t j = a.rows.columns[e];
        const double d = a.dp[j] - a.dp[i];
        for (int c = 0; c < 3; ++c) g[c] += t.ni_dnj[c] * d;
        k += 0.5 * (step_of(a, i) + step_of(a, j)) * laplacian_trace(t) * d;
    }
    a.rot[i] = a.nu * k / a.rows.lumped[i];
    const double m = step_of(a, i) / (a.rho * a.rows.lumped[i]);
    for (int c = 0; c < 3; ++c)
        a.u[3 * i + c] = a.boundary[i] < 0 ? a.sum[3 * i + c] - m * g[c] : a.sum[3 * i + c];
}

// p^(n+1) = p^n + δp + ν M⁻¹ K_Δt δp off the held rows, the level's node kept.
extern "C" __global__ void fem_pressure_update(const Step a) {
    const idx_t i = node();
    if (i >= a.rows.n || a.held[i]) return;
    const double at = a.level < 0 ? 0.0 : a.rot[a.level];
    a.p[i] += a.dp[i] + a.rot[i] - at;
}

// Σ_I (M_II⁻¹ Σ_J ∇_IJ·(u_J − u_I))² and, over the rows not held, Σ_I (M_II⁻¹ (f − H δp)_I)²:
// the RMS discrete divergence and continuity residual.
extern "C" __global__ void __launch_bounds__(SUM_LANES) fem_divergence(const Step a) {
    double x[2] = {0.0, 0.0};
    for (int k = 0; k < SUM_BLOCK / SUM_LANES; ++k) {
        const idx_t i = chunk_item(k, a.rows.n);
        if (i < 0) continue;
        double d = 0;
        for (unsigned e = a.rows.offsets[i]; e < a.rows.offsets[i + 1]; ++e) {
            const idx_t j = a.rows.columns[e];
            for (int c = 0; c < 3; ++c)
                d += a.rows.terms[e].ni_dnj[c] * (a.u[3 * j + c] - a.u[3 * i + c]);
        }
        const double v = d / a.rows.lumped[i];
        x[0] += v * v;
        double h_dp = a.diagonal[i] * a.dp[i];
        for (unsigned e = a.rows.offsets[i]; e < a.rows.offsets[i + 1]; ++e)
            h_dp += a.h_values[e] * a.dp[a.rows.columns[e]];
        const double r = (a.f[i] - h_dp) / a.rows.lumped[i];
        x[1] += a.held[i] ? 0.0 : r * r;
    }
    reduce_chunks<2>(x, SUM, a.red);
}

// Each node's stability estimate CFL / (2|u|/h_min + 4ν/h_min²), |u| the larger of |u_I| and
// |u_I − u_J|, at most dt_max, into dt_node, and their smallest.
extern "C" __global__ void __launch_bounds__(SUM_LANES) fem_time_step(const Step a) {
    double x[1] = {POSITIVE_INFINITY};
    for (int k = 0; k < SUM_BLOCK / SUM_LANES; ++k) {
        const idx_t i = chunk_item(k, a.rows.n);
        if (i < 0) continue;
        const double* ui = a.u + 3 * i;
        double speed = norm3(ui);
        for (unsigned e = a.rows.offsets[i]; e < a.rows.offsets[i + 1]; ++e) {
            const double* uj = a.u + 3 * (idx_t)a.rows.columns[e];
            const double d[3] = {uj[0] - ui[0], uj[1] - ui[1], uj[2] - ui[2]};
            speed = fmax(speed, norm3(d));
        }
        const double h = a.h_min[i];
        const double dt = fmin(a.cfl / (2.0 * speed / h + 4.0 * a.nu / (h * h)), a.dt_max);
        a.dt_node[i] = dt;
        x[0] = fmin(x[0], dt);
    }
    reduce_chunks<1>(x, MIN, a.red);
}
