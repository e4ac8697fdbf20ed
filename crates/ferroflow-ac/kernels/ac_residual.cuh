// The scheme's residual at one node: the twin of `node_residual` in
// crates/ferroflow-ac/src/cpu/step.rs (same formulas, same operation order), shared by the
// fused explicit pass (ac_step.cu) and the implicit relaxation (ac_implicit.cu). Needs DIM and
// FOURTH (1: fourth-order differences, which read the velocities and T two nodes out; 0:
// second order).
#ifndef FERROFLOW_AC_RESIDUAL_CUH
#define FERROFLOW_AC_RESIDUAL_CUH

#include "ac_formulas.cuh"

#define MAX_EQUATIONS (2 + DIM)

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
    real_t divergence;  // weight of the divergence form in convection
    real_t fourth;      // 1: fourth-order differences, 0: second (a build's FOURTH)
};

// How far the differences of the velocities and T reach along an axis.
#define Q_REACH (FOURTH ? 2 : 1)

// The first derivative along axis d of variable v from `nb`: central differences of second or
// (FOURTH) fourth order. The twin of `derivative` in step.rs.
template <class N>
__device__ __forceinline__ real_t derivative(const N& nb, int v, int d, real_t inv_2h) {
    if (FOURTH)
        return central_difference_4(nb.at(v, d, -2), nb.at(v, d, -1), nb.at(v, d, 1),
                                    nb.at(v, d, 2), inv_2h);
    return central_difference(nb.at(v, d, -1), nb.at(v, d, 1), inv_2h);
}

// Convection (advective form, plus c.divergence times its difference from the divergence
// form where that weight is not 0: a branch every thread takes alike; with FOURTH the
// advective form by fourth-order differences) and Laplacian of the transported variable `v`
// (a velocity component or T), which is `centre` at the node: the twin of `transport` in
// step.rs.
template <class N>
__device__ __forceinline__ void transport(const Coeffs& c, const N& nb, int v,
                                          const real_t vel[DIM], real_t centre, real_t& conv,
                                          real_t& lap) {
    conv = 0;
    lap = 0;
    for (int d = 0; d < DIM; ++d) {
        const real_t lo = nb.at(v, d, -1), hi = nb.at(v, d, 1);
        if (FOURTH) {
            const real_t lo2 = nb.at(v, d, -2), hi2 = nb.at(v, d, 2);
            conv = conv + vel[d] * central_difference_4(lo2, lo, hi, hi2, c.inv_2h[d]);
            lap = lap + second_difference_4(lo2, lo, centre, hi, hi2, c.inv_h2[d]);
            continue;
        }
        const real_t advective = vel[d] * central_difference(lo, hi, c.inv_2h[d]);
        conv = conv + advective;
        if (c.divergence != 0) {
            const real_t u_lo = nb.at(1 + d, d, -1), u_hi = nb.at(1 + d, d, 1);
            const real_t divergence = central_difference(u_lo * lo, u_hi * hi, c.inv_2h[d]);
            conv = conv + c.divergence * (divergence - advective);
        }
        lap = lap + second_difference(lo, centre, hi, c.inv_h2[d]);
    }
}

// What the scheme computes at one interior node: every equation's residual (continuity,
// momentum per axis, energy) and what the local time step and the implicit operator are made
// of.
struct NodeResidual {
    real_t r[MAX_EQUATIONS];
    real_t rate;  // of the local pseudo-time step: dt = cfl / rate
    real_t beta2;
    real_t lam[DIM];  // spectral radius per axis
};

// The residuals at offset `o`, whose velocity, p and T are `vel`, `pc` and `tc`, neighbours
// from `nb` (`nb.at(v, d, l)`: variable v at l nodes along axis d).
template <bool SRC, bool ENERGY, class N>
__device__ __forceinline__ NodeResidual node_residual(const Coeffs& c, const N& nb,
                                                      const real_t vel[DIM], real_t pc,
                                                      real_t tc, const Vars& src, idx_t o) {
    NodeResidual n;
    real_t speed2 = 0;
    for (int d = 0; d < DIM; ++d) speed2 = speed2 + vel[d] * vel[d];
    n.beta2 = local_beta2(speed2, c.beta2_min);
    real_t sum_lh = 0, sum_l2 = 0, diss = 0, div = 0;
    for (int d = 0; d < DIM; ++d) {
        const real_t lam = spectral_radius(vel[d], n.beta2);
        n.lam[d] = lam;
        const real_t lh = lam * c.inv_h[d];
        sum_lh = sum_lh + lh;
        sum_l2 = sum_l2 + lam * lam;
        const real_t d4 = fourth_difference(nb.at(0, d, -2), nb.at(0, d, -1), pc,
                                            nb.at(0, d, 1), nb.at(0, d, 2));
        diss = diss + lh * d4;
        div = div + derivative(nb, 1 + d, d, c.inv_2h[d]);
    }
    n.rate = time_step_rate(sum_lh, c.viscous_rate, sum_l2 * c.inv_4nu);
    n.r[0] = -n.beta2 * div - c.c4 * diss;
    if (SRC) n.r[0] = n.r[0] + load(src.v[0], o);
    for (int m = 0; m < DIM; ++m) {
        real_t conv, lap;
        transport(c, nb, 1 + m, vel, vel[m], conv, lap);
        const real_t grad_p = derivative(nb, 0, m, c.inv_2h[m]);
        real_t r = c.nu * lap - conv - grad_p * c.inv_rho;
        if (ENERGY) r = r + buoyancy(c.buoyancy[m], tc, c.t_ref);
        if (SRC) r = r + load(src.v[1 + m], o);
        n.r[1 + m] = r;
    }
    if (ENERGY) {
        real_t conv, lap;
        transport(c, nb, 1 + DIM, vel, tc, conv, lap);
        real_t r = c.alpha * lap - conv;
        if (SRC) r = r + load(src.v[1 + DIM], o);
        n.r[1 + DIM] = r;
    }
    return n;
}

#endif
