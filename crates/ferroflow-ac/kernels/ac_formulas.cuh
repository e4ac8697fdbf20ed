// Pointwise formulas of the artificial-compressibility scheme: the __device__ twins of
// crates/ferroflow-ac/src/cpu/formulas.rs, with the same names, arguments and operation order,
// so that (compiled with --fmad=false) they round exactly as the CPU does.
#ifndef FERROFLOW_AC_FORMULAS_CUH
#define FERROFLOW_AC_FORMULAS_CUH

#include "grid.cuh"

// Local artificial compressibility beta^2 = max(|u|^2, kappa U_ref^2).
__device__ __forceinline__ real_t local_beta2(real_t speed2, real_t beta2_min) {
    return fmax(speed2, beta2_min);
}

// Spectral radius of the inviscid flux Jacobian along one axis: |u| + sqrt(u^2 + beta^2).
__device__ __forceinline__ real_t spectral_radius(real_t u, real_t beta2) {
    return fabs(u) + sqrt(u * u + beta2);
}

// Fourth difference p[-2] - 4 p[-1] + 6 p[0] - 4 p[1] + p[2].
__device__ __forceinline__ real_t fourth_difference(real_t m2, real_t m1, real_t c, real_t p1,
                                                    real_t p2) {
    return (m2 + p2) - (real_t)4 * (m1 + p1) + (real_t)6 * c;
}

// Central first derivative (p1 - m1) / 2h, with inv_2h = 1 / 2h.
__device__ __forceinline__ real_t central_difference(real_t m1, real_t p1, real_t inv_2h) {
    return (p1 - m1) * inv_2h;
}

// Central second derivative (m1 - 2c + p1) / h^2, with inv_h2 = 1 / h^2.
__device__ __forceinline__ real_t second_difference(real_t m1, real_t c, real_t p1,
                                                    real_t inv_h2) {
    return (m1 + p1 - (c + c)) * inv_h2;
}

// Fourth-order central first derivative (8 (p1 - m1) - (p2 - m2)) / 12h, inv_2h = 1 / 2h.
__device__ __forceinline__ real_t central_difference_4(real_t m2, real_t m1, real_t p1, real_t p2,
                                                       real_t inv_2h) {
    return ((real_t)8 * (p1 - m1) - (p2 - m2)) * inv_2h * (real_t)(1.0 / 6.0);
}

// Fourth-order central second derivative (16 (m1 + p1) - (m2 + p2) - 30 c) / 12h^2.
__device__ __forceinline__ real_t second_difference_4(real_t m2, real_t m1, real_t c, real_t p1,
                                                      real_t p2, real_t inv_h2) {
    return ((real_t)16 * (m1 + p1) - (m2 + p2) - (real_t)30 * c) * inv_h2 * (real_t)(1.0 / 12.0);
}

// Cubic extrapolation to the node beyond a from four nodes a, b, c, d going inward.
__device__ __forceinline__ real_t extrapolate_cubic(real_t a, real_t b, real_t c, real_t d) {
    return (real_t)4 * (a + c) - (real_t)6 * b - d;
}

// Rate of the local pseudo-time step: sum lambda_d / h_d + viscous rate + Peclet rate
// (dt = cfl / rate).
__device__ __forceinline__ real_t time_step_rate(real_t sum_lambda_over_h, real_t viscous_rate,
                                                 real_t peclet_rate) {
    return sum_lambda_over_h + viscous_rate + peclet_rate;
}

// Quadratic extrapolation to the node beyond a from three nodes a, b, c going inward.
__device__ __forceinline__ real_t extrapolate_quadratic(real_t a, real_t b, real_t c) {
    return (real_t)3 * (a - b) + c;
}

// Boussinesq buoyancy source of one momentum component, coef (T - T_ref), coef = -beta_T g.
__device__ __forceinline__ real_t buoyancy(real_t coef, real_t t, real_t t_ref) {
    return coef * (t - t_ref);
}

// Wall value with zero normal gradient from the two nodes inside it: (4 a - b) / 3.
__device__ __forceinline__ real_t extrapolate_zero_gradient(real_t a, real_t b) {
    return ((real_t)4 * a - b) / (real_t)3;
}

// Pressure at the wall node `w` and the GHOST ghosts beyond it (`out`: the outward stride),
// layer by layer, each from the three nodes inside it; a, b, c are the nodes inside the wall,
// nearest first.
__device__ __forceinline__ void extrapolate_wall(real_t* p, idx_t w, idx_t out, real_t a,
                                                 real_t b, real_t c) {
    for (int layer = 0; layer <= GHOST; ++layer) {
        const real_t v = extrapolate_quadratic(a, b, c);
        p[w + layer * out] = v;
        c = b;
        b = a;
        a = v;
    }
}

// The GHOST ghosts beyond the wall node `w` (which holds wall data), layer by layer, each
// cubically from the four nodes inside it; a is the wall node, b, c, d the nodes inside.
__device__ __forceinline__ void extrapolate_ghosts(real_t* q, idx_t w, idx_t out, real_t a,
                                                   real_t b, real_t c, real_t d) {
    for (int layer = 1; layer <= GHOST; ++layer) {
        const real_t v = extrapolate_cubic(a, b, c, d);
        q[w + layer * out] = v;
        d = c;
        c = b;
        b = a;
        a = v;
    }
}

// T at the adiabatic wall node `w` from the two nodes inside it (a nearest, b), and its ghosts
// mirroring them (T is even about the wall).
__device__ __forceinline__ void mirror_wall(real_t* t, idx_t w, idx_t out, real_t a, real_t b) {
    static_assert(GHOST == 2, "the ghosts mirror the two nodes inside the wall");
    t[w] = extrapolate_zero_gradient(a, b);
    t[w + out] = a;
    t[w + 2 * out] = b;
}

#endif
