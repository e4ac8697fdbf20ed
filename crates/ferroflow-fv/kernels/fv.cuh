// The finite volumes' device formulas: `__device__` twins of src/gas.rs, src/flux.rs,
// src/face.rs and src/boundary.rs, term for term in the same order and association (builds
// are f64 without fused multiply-adds and with IEEE division and square root, so every value
// rounds as on the CPU; only `pow`, for a gas other than air, is the device's own).
#ifndef FERROFLOW_FV_CUH
#define FERROFLOW_FV_CUH
#include "prelude.cuh"

// Boundary kinds, as `Boundary` in src/boundary.rs (`Exact` runs on the CPU only).
#define SLIP_WALL 0
#define ADIABATIC_WALL 1
#define ISOTHERMAL_WALL 2
#define FAR_FIELD 3
#define INFLOW 4
#define OUTFLOW 5

// One patch's condition, mirrored by `PatchArgs` in src/cuda/args.rs: `vector` is a wall's
// velocity or the inflow's direction; `state` the far field's free stream, the isothermal
// wall's temperature, the inflow's (p0, t0) or the outflow's pressure, in that order.
struct Patch {
    idx_t kind;
    double vector[3];
    double state[5];
};

// Limiters, as `Limiter` in src/flux.rs.
#define LIMITER_NONE 0
#define LIMITER_VAN_ALBADA 1

// The limiter's ε (src/flux.rs EPSILON).
#define LIMITER_EPSILON 1e-12

__device__ __forceinline__ double dot3(const double* a, const double* b) {
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

// The velocity's dot product with `n`, of a primitive state.
__device__ __forceinline__ double normal_velocity(const double* w, const double* n) {
    return w[1] * n[0] + w[2] * n[1] + w[3] * n[2];
}

__device__ __forceinline__ double speed_squared(const double* w) {
    return w[1] * w[1] + w[2] * w[2] + w[3] * w[3];
}

// Gas::prim.
__device__ __forceinline__ void primitive(double gamma, const double* u, double* w) {
    const double rho = u[0];
    const double inv = 1.0 / rho;
    const double v[3] = {u[1] * inv, u[2] * inv, u[3] * inv};
    w[0] = rho;
    w[1] = v[0];
    w[2] = v[1];
    w[3] = v[2];
    w[4] = (gamma - 1.0) * (u[4] - 0.5 * rho * dot3(v, v));
}

// Gas::sound.
__device__ __forceinline__ double sound(double gamma, const double* w) {
    return sqrt(gamma * w[4] / w[0]);
}

// Gas::enthalpy.
__device__ __forceinline__ double enthalpy(double gamma, const double* w) {
    return gamma / (gamma - 1.0) * w[4] / w[0] + 0.5 * speed_squared(w);
}

// Gas::flux.
__device__ __forceinline__ void inviscid_flux(double gamma, const double* w, const double* n,
                                              double* f) {
    const double vn = normal_velocity(w, n);
    const double m = w[0] * vn;
    f[0] = m;
    f[1] = m * w[1] + w[4] * n[0];
    f[2] = m * w[2] + w[4] * n[1];
    f[3] = m * w[3] + w[4] * n[2];
    f[4] = m * enthalpy(gamma, w);
}

// AIR_GAMMA: Gas::AIR's γ, whose isentropic powers need no `pow`.
#define AIR_GAMMA 1.4

// gas::seventh_root: x^{1/7} from a guess of the exponent bits and five Newton steps.
__device__ __forceinline__ double seventh_root(double x) {
    const long long one = 0x3ff0000000000000LL;
    const long long bits = __double_as_longlong(x);
    double z = __longlong_as_double((bits - one) / 7 + one);
    for (int i = 0; i < 5; ++i) {
        const double square = z * z;
        z = (6.0 * z + x / (square * square * square)) / 7.0;
    }
    return z;
}

// Gas::isentropic_density_ratio: c_ratio^{2/(γ−1)}.
__device__ __forceinline__ double isentropic_density_ratio(double gamma, double c_ratio) {
    if (gamma == AIR_GAMMA) {
        const double square = c_ratio * c_ratio;
        return square * square * c_ratio;
    }
    return pow(c_ratio, 2.0 / (gamma - 1.0));
}

// Gas::isentropic_temperature_ratio: p_ratio^{(γ−1)/γ}.
__device__ __forceinline__ double isentropic_temperature_ratio(double gamma, double p_ratio) {
    if (gamma == AIR_GAMMA) {
        const double root = seventh_root(p_ratio);
        return root * root;
    }
    return pow(p_ratio, (gamma - 1.0) / gamma);
}

// Harten's entropy fix of a wave speed (src/flux.rs `roe`, `fix`).
__device__ __forceinline__ double entropy_fix(double lambda, double delta) {
    const double a = fabs(lambda);
    const double widened = (lambda * lambda + delta * delta) / (2.0 * delta);
    return a < delta ? widened : a;
}

// flux::roe: Roe's flux per unit area from `l` to `r` through the unit normal `n`.
__device__ __forceinline__ void roe(double gamma, const double* l, const double* r,
                                    const double* n, double* out) {
    double fl[5], fr[5];
    inviscid_flux(gamma, l, n, fl);
    inviscid_flux(gamma, r, n, fr);
    const double sl = sqrt(l[0]), sr = sqrt(r[0]);
    const double inv = 1.0 / (sl + sr);
    double v[3], dv[3];
    for (int k = 0; k < 3; ++k) {
        v[k] = (sl * l[k + 1] + sr * r[k + 1]) * inv;
        dv[k] = r[k + 1] - l[k + 1];
    }
    const double h = (sl * enthalpy(gamma, l) + sr * enthalpy(gamma, r)) * inv;
    const double rho = sl * sr;
    const double q2 = dot3(v, v);
    const double c2 = (gamma - 1.0) * (h - 0.5 * q2);
    const double c = sqrt(c2);
    const double vn = dot3(v, n);
    const double drho = r[0] - l[0], dp = r[4] - l[4], dvn = dot3(dv, n);
    const double a1 = (dp - rho * c * dvn) / (2.0 * c2);
    const double a5 = (dp + rho * c * dvn) / (2.0 * c2);
    const double a2 = drho - dp / c2;
    const double delta = 0.1 * (sqrt(q2) + c);
    const double l1 = entropy_fix(vn - c, delta) * a1, l2 = fabs(vn),
                 l5 = entropy_fix(vn + c, delta) * a5;
    double d[5];
    d[0] = l1 + l2 * a2 + l5;
    for (int k = 0; k < 3; ++k) {
        const double shear = dv[k] - dvn * n[k];
        d[k + 1] = l1 * (v[k] - c * n[k]) + l2 * (a2 * v[k] + rho * shear) + l5 * (v[k] + c * n[k]);
    }
    d[4] = l1 * (h - c * vn) + l2 * (a2 * 0.5 * q2 + rho * (dot3(v, dv) - vn * dvn)) +
           l5 * (h + c * vn);
    for (int k = 0; k < 5; ++k) out[k] = 0.5 * (fl[k] + fr[k] - d[k]);
}

// flux::extrapolate.
__device__ __forceinline__ double extrapolate(int limiter, double projected, double across,
                                              double alpha) {
    if (limiter == LIMITER_NONE) return projected;
    const double b = alpha * across;
    const double a = 2.0 * projected - b;
    const double eps = LIMITER_EPSILON;
    const double s = (a * (b * b + eps) + b * (a * a + eps)) / (a * a + b * b + 2.0 * eps);
    return a * b <= 0.0 ? 0.0 : s;
}

// face::side: cell state `q` (gradient `grad`, component v's at grad[3 v]) extrapolated by
// `r`, `other` the state across, into `w`.
__device__ __forceinline__ void face_side(int limiter, const double* q, const double* other,
                                          const double* grad, const double* r, double alpha,
                                          double* w) {
    for (int v = 0; v < 5; ++v)
        w[v] = q[v] + extrapolate(limiter, dot3(grad + 3 * v, r), other[v] - q[v], alpha);
    // A state the gas cannot have falls back to the cell's (first order).
    if (!(0.0 < w[0] && 0.0 < w[4]))
        for (int v = 0; v < 5; ++v) w[v] = q[v];
}

// boundary::far_field.
__device__ __forceinline__ void far_field(double g, const double* inside, const double* free,
                                          const double* n, double* out) {
    const double vi = normal_velocity(inside, n), vf = normal_velocity(free, n);
    const double ci = sound(g, inside), cf = sound(g, free);
    const double* pick = vf <= -cf ? free : vi >= ci ? inside : nullptr;
    if (pick) {
        for (int k = 0; k < 5; ++k) out[k] = pick[k];
        return;
    }
    const double outgoing = vi + 2.0 * ci / (g - 1.0);
    const double incoming = vf - 2.0 * cf / (g - 1.0);
    const double vn = 0.5 * (outgoing + incoming);
    const double c = 0.25 * (g - 1.0) * (outgoing - incoming);
    const double* upstream = vn < 0.0 ? free : inside;
    const double vn_up = vn < 0.0 ? vf : vi;
    const double c_up = vn < 0.0 ? cf : ci;
    const double rho = upstream[0] * isentropic_density_ratio(g, c / c_up);
    out[0] = rho;
    for (int k = 0; k < 3; ++k) out[k + 1] = upstream[k + 1] + (vn - vn_up) * n[k];
    out[4] = rho * c * c / g;
}

// boundary::ghost: the ghost state across a face of outward unit normal `n` for the inside
// state `w`.
__device__ __forceinline__ void ghost(double g, const Patch& bc, const double* w,
                                      const double* n, double* out) {
    switch (bc.kind) {
    case SLIP_WALL: {
        const double vn = normal_velocity(w, n);
        out[0] = w[0];
        for (int k = 0; k < 3; ++k) out[k + 1] = w[k + 1] - 2.0 * vn * n[k];
        out[4] = w[4];
        return;
    }
    case ADIABATIC_WALL:
    case ISOTHERMAL_WALL: {
        for (int k = 0; k < 3; ++k) out[k + 1] = 2.0 * bc.vector[k] - w[k + 1];
        if (bc.kind == ADIABATIC_WALL) {
            out[0] = w[0];
        } else {
            const double t = 2.0 * bc.state[0] - w[4] / w[0];
            out[0] = w[4] / t;
        }
        out[4] = w[4];
        return;
    }
    case FAR_FIELD:
        far_field(g, w, bc.state, n, out);
        return;
    case INFLOW: {
        const double p0 = bc.state[0], t0 = bc.state[1];
        // Capped at p0: a higher pressure would want the flow out through the inlet.
        const double p = fmin(w[4], p0);
        const double t = t0 * isentropic_temperature_ratio(g, p / p0);
        const double speed = sqrt(2.0 * g / (g - 1.0) * (t0 - t));
        out[0] = p / t;
        for (int k = 0; k < 3; ++k) out[k + 1] = speed * bc.vector[k];
        out[4] = p;
        return;
    }
    default: {  // OUTFLOW
        const bool supersonic = normal_velocity(w, n) >= sound(g, w);
        for (int k = 0; k < 4; ++k) out[k] = w[k];
        out[4] = supersonic ? w[4] : bc.state[0];
        return;
    }
    }
}

// The viscosity (src/viscous.rs `Viscous`, `Viscosity`), mirrored by `ViscousArgs` in
// src/cuda/args.rs: `law` 0 for the Euler equations, 1 a constant μ, 2 Sutherland's law
// μ (T/T_ref)^{3/2} (T_ref + S)/(T + S).
struct Viscosity {
    idx_t law;
    double mu, t_ref, s, prandtl;
};

#define INVISCID 0
#define CONSTANT_VISCOSITY 1

// Viscosity::at.
__device__ __forceinline__ double viscosity_at(const Viscosity& v, double t) {
    if (v.law == CONSTANT_VISCOSITY) return v.mu;
    const double x = t / v.t_ref;
    return v.mu * (x * sqrt(x)) * (v.t_ref + v.s) / (t + v.s);
}

// Viscous::spectral_radius.
__device__ __forceinline__ double viscous_radius(const Viscosity& v, double gamma,
                                                 const double* w, double distance) {
    const double mu = viscosity_at(v, w[4] / w[0]);
    return 2.0 * fmax(4.0 / 3.0, gamma / v.prandtl) * mu / (w[0] * distance);
}

// Viscous::flux: the viscous flux per unit area through `n` where the velocity is `vel`, the
// temperature `t`, the gradients of u, v, w and T `g` (row q: ∂q/∂x).
__device__ __forceinline__ void viscous_flux(const Viscosity& v, double gamma,
                                             const double* vel, double t, const double (*g)[3],
                                             const double* n, double* out) {
    const double mu = viscosity_at(v, t);
    const double bulk = -2.0 / 3.0 * (g[0][0] + g[1][1] + g[2][2]);
    double stress[3];
    for (int i = 0; i < 3; ++i) {
        // Rust's f64 sums start from -0.
        double shear = -0.0;
        for (int j = 0; j < 3; ++j) shear += (g[i][j] + g[j][i]) * n[j];
        stress[i] = mu * (shear + bulk * n[i]);
    }
    const double heat = gamma / (gamma - 1.0) * mu / v.prandtl * dot3(g[3], n);
    out[0] = 0.0;
    for (int i = 0; i < 3; ++i) out[i + 1] = stress[i];
    out[4] = dot3(stress, vel) + heat;
}

// viscous::face_gradient: the mean gradient with its part along d replaced by the jump.
__device__ __forceinline__ void face_gradient(double* mean, double jump, const double* d) {
    const double dd = dot3(d, d);
    const double along = (dot3(mean, d) - jump) / dd;
    for (int k = 0; k < 3; ++k) mean[k] = mean[k] - along * d[k];
}

// viscous::gradients_of: the gradients of u, v, w and T of a cell of state `w` and
// primitive gradients `g` (variable v's at g[3 v]); ∇T = (∇p − T∇ρ)/ρ.
__device__ __forceinline__ void velocity_temperature_gradients(const double* w, const double* g,
                                                               double (*out)[3]) {
    const double t = w[4] / w[0];
    for (int q = 0; q < 3; ++q)
        for (int k = 0; k < 3; ++k) out[q][k] = g[3 * (q + 1) + k];
    for (int k = 0; k < 3; ++k) out[3][k] = (g[12 + k] - t * g[k]) / w[0];
}

#endif
