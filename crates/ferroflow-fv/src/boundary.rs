//! Boundary conditions as ghost states: a boundary face's flux is the Roe flux between its
//! cell's state extrapolated to the face and the ghost state [`ghost`] makes of it, so the
//! upwinding decides what enters; the gradients see the ghost of the cell's own state at the
//! ghost centroid.
use crate::gas::{dot, velocity, Gas, Prim, Vec3};

/// What a patch is.
#[derive(Debug, Clone, Copy)]
pub enum Boundary {
    /// Inviscid wall or symmetry plane: the normal velocity reflected, ρ and p copied; in
    /// viscous flow it passes no shear stress and no heat.
    SlipWall,
    /// No-slip wall moving at `velocity` in its plane, adiabatic: V_g = 2V_w − V, ρ and p
    /// copied, so the face's mean velocity is the wall's and ∇T·n vanishes.
    AdiabaticWall {
        /// Velocity of the wall.
        velocity: Vec3,
    },
    /// No-slip wall moving at `velocity` in its plane, held at `temperature`:
    /// V_g = 2V_w − V, T_g = 2T_w − T, p copied, so the face's mean is the wall's state.
    IsothermalWall {
        /// Velocity of the wall.
        velocity: Vec3,
        /// Temperature of the wall (T = p/ρ).
        temperature: f64,
    },
    /// Characteristic far field: the Riemann invariants V_n ± 2c/(γ − 1) of the outgoing
    /// wave from inside and of the incoming one from this free stream, the entropy and
    /// tangential velocity from upstream; supersonic faces take one side whole.
    FarField(Prim),
    /// Subsonic inflow of total pressure `p0` and total temperature `t0` (T = p/ρ) along the
    /// unit vector `direction`: the static pressure, carried by the one wave that leaves, is
    /// the inside one, the rest follows from the isentropic relations.
    Inflow {
        /// Total pressure.
        p0: f64,
        /// Total temperature.
        t0: f64,
        /// Unit flow direction, into the domain.
        direction: Vec3,
    },
    /// Outflow at static pressure `p` where subsonic (ρ and V from inside); supersonic, all
    /// from inside.
    Outflow(f64),
    /// A known solution of (position, time): the ghost takes its value (verification).
    Exact(fn(Vec3, f64) -> Prim),
}

/// The ghost state across a face of outward unit normal `n` at `x` and time `t`, for the
/// inside state `w`.
#[inline]
pub fn ghost(gas: Gas, bc: &Boundary, w: &Prim, n: Vec3, x: Vec3, t: f64) -> Prim {
    match bc {
        Boundary::SlipWall => {
            let vn = dot(velocity(w), n);
            [
                w[0],
                w[1] - 2.0 * vn * n[0],
                w[2] - 2.0 * vn * n[1],
                w[3] - 2.0 * vn * n[2],
                w[4],
            ]
        }
        Boundary::AdiabaticWall { velocity } => {
            let v: Vec3 = std::array::from_fn(|k| 2.0 * velocity[k] - w[k + 1]);
            [w[0], v[0], v[1], v[2], w[4]]
        }
        Boundary::IsothermalWall {
            velocity,
            temperature,
        } => {
            let v: Vec3 = std::array::from_fn(|k| 2.0 * velocity[k] - w[k + 1]);
            let t = 2.0 * temperature - w[4] / w[0];
            [w[4] / t, v[0], v[1], v[2], w[4]]
        }
        Boundary::FarField(free) => far_field(gas, w, free, n),
        Boundary::Inflow { p0, t0, direction } => {
            let g = gas.gamma;
            // Capped at p0: a higher pressure would want the flow out through the inlet.
            let p = w[4].min(*p0);
            let t = t0 * gas.isentropic_temperature_ratio(p / p0);
            let speed = (2.0 * g / (g - 1.0) * (t0 - t)).sqrt();
            let v = direction.map(|d| speed * d);
            [p / t, v[0], v[1], v[2], p]
        }
        Boundary::Outflow(p) => {
            if dot(velocity(w), n) >= gas.sound(w) {
                *w
            } else {
                [w[0], w[1], w[2], w[3], *p]
            }
        }
        Boundary::Exact(solution) => solution(x, t),
    }
}

fn far_field(gas: Gas, inside: &Prim, free: &Prim, n: Vec3) -> Prim {
    let g = gas.gamma;
    let (vi, vf) = (dot(velocity(inside), n), dot(velocity(free), n));
    let (ci, cf) = (gas.sound(inside), gas.sound(free));
    if vf <= -cf {
        return *free;
    }
    if vi >= ci {
        return *inside;
    }
    let out = vi + 2.0 * ci / (g - 1.0);
    let incoming = vf - 2.0 * cf / (g - 1.0);
    let vn = 0.5 * (out + incoming);
    let c = 0.25 * (g - 1.0) * (out - incoming);
    let (upstream, vn_up, c_up) = if vn < 0.0 {
        (free, vf, cf)
    } else {
        (inside, vi, ci)
    };
    // The upstream entropy p/ρ^γ kept: ρ = ρ_up (c/c_up)^{2/(γ−1)}.
    let rho = upstream[0] * gas.isentropic_density_ratio(c / c_up);
    [
        rho,
        upstream[1] + (vn - vn_up) * n[0],
        upstream[2] + (vn - vn_up) * n[1],
        upstream[3] + (vn - vn_up) * n[2],
        rho * c * c / g,
    ]
}

/// The sides of a channel along x (patches of `generate::box_mesh`): an inflow of total
/// pressure and temperature 1 along +x at `xmin`, an outflow at pressure `p` at `xmax`, slip
/// walls elsewhere.
pub fn channel(p: f64) -> [(&'static str, Boundary); 6] {
    let inflow = Boundary::Inflow {
        p0: 1.0,
        t0: 1.0,
        direction: [1.0, 0.0, 0.0],
    };
    [
        ("xmin", inflow),
        ("xmax", Boundary::Outflow(p)),
        ("ymin", Boundary::SlipWall),
        ("ymax", Boundary::SlipWall),
        ("zmin", Boundary::SlipWall),
        ("zmax", Boundary::SlipWall),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slip_wall_reflects_the_normal_velocity() {
        let n = [0.6, 0.8, 0.0];
        let w = [1.0, 1.0, 2.0, 3.0, 0.5];
        let g = ghost(Gas::AIR, &Boundary::SlipWall, &w, n, [0.0; 3], 0.0);
        let mean: Vec3 = std::array::from_fn(|k| 0.5 * (w[k + 1] + g[k + 1]));
        assert!(dot(mean, n).abs() < 1e-15);
        assert_eq!((g[0], g[3], g[4]), (w[0], w[3], w[4]));
    }

    #[test]
    fn no_slip_walls_put_their_velocity_and_temperature_on_the_face() {
        let (w, velocity, n) = ([1.2, 0.3, -0.2, 0.5, 0.9], [0.1, 0.0, 0.4], [0.0, 1.0, 0.0]);
        let adiabatic = Boundary::AdiabaticWall { velocity };
        let g = ghost(Gas::AIR, &adiabatic, &w, n, [0.0; 3], 0.0);
        let isothermal = Boundary::IsothermalWall {
            velocity,
            temperature: 0.6,
        };
        let h = ghost(Gas::AIR, &isothermal, &w, n, [0.0; 3], 0.0);
        for k in 0..3 {
            assert!((0.5 * (w[k + 1] + g[k + 1]) - velocity[k]).abs() < 1e-15);
            assert_eq!(g[k + 1], h[k + 1]);
        }
        assert_eq!((g[0], g[4], h[4]), (w[0], w[4], w[4]));
        assert!(
            (0.5 * (w[4] / w[0] + h[4] / h[0]) - 0.6).abs() < 1e-15,
            "{h:?}"
        );
    }

    #[test]
    fn inflow_has_its_totals_and_outflow_its_pressure() {
        let gas = Gas::AIR;
        let (p0, t0, direction) = (1.2, 1.1, [0.6, 0.0, 0.8]);
        let bc = Boundary::Inflow { p0, t0, direction };
        let inside = [1.0, 0.4, 0.0, 0.3, 1.0];
        let g = ghost(gas, &bc, &inside, [-1.0, 0.0, 0.0], [0.0; 3], 0.0);
        let mach2 = dot(velocity(&g), velocity(&g)) / gas.sound(&g).powi(2);
        let factor = 1.0 + 0.2 * mach2;
        assert!((g[4] * factor.powf(3.5) - p0).abs() < 1e-14, "{g:?}");
        assert!((g[4] / g[0] * factor - t0).abs() < 1e-14, "{g:?}");
        assert!((g[3] / g[1] - 0.8 / 0.6).abs() < 1e-14 && g[4] == inside[4]);
        let n = [1.0, 0.0, 0.0];
        let out = ghost(gas, &Boundary::Outflow(0.7), &inside, n, [0.0; 3], 0.0);
        assert_eq!(out, [1.0, 0.4, 0.0, 0.3, 0.7]);
        let fast = [1.0, 2.0, 0.0, 0.0, 1.0];
        assert_eq!(
            ghost(gas, &Boundary::Outflow(0.7), &fast, n, [0.0; 3], 0.0),
            fast
        );
    }

    #[test]
    fn the_far_field_keeps_the_free_stream_and_passes_outgoing_waves() {
        let gas = Gas::AIR;
        let free = [1.0, 0.5, 0.1, 0.0, 1.0 / 1.4];
        let n = [0.8, 0.0, 0.6];
        let bc = Boundary::FarField(free);
        for normal in [n, n.map(|x| -x)] {
            let g = ghost(gas, &bc, &free, normal, [0.0; 3], 0.0);
            for k in 0..5 {
                assert!((g[k] - free[k]).abs() < 1e-14, "{g:?}");
            }
        }
        // At an outflow face a pressure rise inside keeps its outgoing invariant.
        let inside = [1.1, 0.5, 0.1, 0.0, 1.1 / 1.4];
        let g = ghost(gas, &bc, &inside, n, [0.0; 3], 0.0);
        let riemann = |w: &Prim| dot(velocity(w), n) + 2.0 * gas.sound(w) / 0.4;
        assert!((riemann(&g) - riemann(&inside)).abs() < 1e-14);
        let entropy = |w: &Prim| w[4] / w[0].powf(1.4);
        assert!((entropy(&g) - entropy(&inside)).abs() < 1e-14);
        // Supersonic inflow takes the free stream whole.
        let fast = [1.0, -3.0, 0.0, 0.0, 1.0 / 1.4];
        let g = ghost(
            gas,
            &Boundary::FarField(fast),
            &inside,
            [1.0, 0.0, 0.0],
            [0.0; 3],
            0.0,
        );
        assert_eq!(g, fast);
    }
}
