//! The lid-driven cube with the fractional-step solver, marched to steady state: the unit
//! cube split into n³ hexahedra of six tetrahedra, the lid y = 1 moving with u = (1, 0, 0)
//! at its nodes off its edges (as the seed's mesh file), the other walls at rest, the
//! pressure's level held at the origin; Re = 1/ν. Moving edge nodes would make the side walls'
//! top row of faces move, through the walls x = 0 and 1: the centreline profiles were then
//! 0.057 from the structured solver's on 16³ cells, against 0.015 with the edges at rest. Its centreline profiles (u along x = z = 0.5, v
//! along y = z = 0.5) are what the structured solver's cavity3d cases print.
use crate::fractional::{Controls, Fluid, FractionalStep, March};
use ferroflow_core::Real;
use ferroflow_mesh::generate::{box_mesh, BoxCells};
use ferroflow_mesh::{Mesh, MeshError};

/// A steady run's outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct Steady {
    /// How the march ended.
    pub march: March,
    /// (y, u) on the vertical centreline, y increasing.
    pub u_profile: Vec<(f64, f64)>,
    /// (x, v) on the horizontal centreline, x increasing.
    pub v_profile: Vec<(f64, f64)>,
}

/// A cube set up: its mesh, the solver in precision `R` and the velocity each node is held at
/// if fixed.
pub type Cube<R> = (Mesh, FractionalStep<R>, Vec<[f64; 3]>);

/// The cube of `cells` cells per axis at Reynolds number `re`, at rest, with `controls`, in
/// precision `R`.
pub fn cube<R: Real>(cells: usize, re: f64, controls: Controls) -> Result<Cube<R>, MeshError> {
    let mesh = box_mesh(BoxCells::Tet6, [cells; 3], [1.0; 3])?;
    let n = mesh.nodes.len();
    let mut fixed = vec![false; n];
    for (_, nodes) in mesh.faces.iter() {
        nodes.iter().for_each(|&i| fixed[i as usize] = true);
    }
    // The lid's own nodes: its edges, shared with the side walls, stay at rest.
    let inside = |c: f64| c > 0.0 && c < 1.0;
    let held: Vec<[f64; 3]> = (mesh.nodes.iter())
        .map(|x| match x[1] == 1.0 && inside(x[0]) && inside(x[2]) {
            true => [1.0, 0.0, 0.0],
            false => [0.0; 3],
        })
        .collect();
    let mut fixed_p = vec![false; n];
    fixed_p[0] = true;
    let fluid = Fluid {
        viscosity: 1.0 / re,
        density: 1.0,
    };
    let u = held.iter().map(|v| v.map(R::of)).collect();
    let solver = FractionalStep::new(
        &mesh,
        fluid,
        controls,
        fixed,
        fixed_p,
        u,
        vec![R::zero(); n],
    )?;
    Ok((mesh, solver, held))
}

/// Marches the cube of `cells` cells per axis (even: the centrelines are node lines) at
/// Reynolds number `re` with `controls` until the largest |Δu| / Δt and |Δp| / Δt of a step
/// are below `tolerance` or the time reaches `end`.
pub fn run(
    cells: usize,
    re: f64,
    controls: Controls,
    tolerance: f64,
    end: f64,
) -> Result<Steady, MeshError> {
    if !cells.is_multiple_of(2) {
        return Err(MeshError::Invalid(format!(
            "{cells} cells per axis: an even number puts nodes on the centrelines"
        )));
    }
    let (mesh, mut solver, held) = cube::<f64>(cells, re, controls)?;
    let march = solver.march(tolerance, end, &|i, _| held[i]);
    let line = |along: usize, fixed: [usize; 2], component: usize| {
        let mut points: Vec<(f64, f64)> = (mesh.nodes.iter().zip(&solver.u))
            .filter(|(x, _)| fixed.iter().all(|&a| x[a] == 0.5))
            .map(|(x, u)| (x[along], u[component]))
            .collect();
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        points
    };
    Ok(Steady {
        march,
        u_profile: line(1, [0, 2], 0),
        v_profile: line(0, [1, 2], 1),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_coarse_cube_settles_into_the_cavity_vortex() {
        let s = run(8, 100.0, Controls::default(), 1e-3, 20.0).unwrap();
        assert!(s.march.steady, "{s:?}");
        // Nine nodes per centreline, the lid's u = 1 at the top, the return flow below.
        assert_eq!(s.u_profile.len(), 9);
        assert_eq!(s.u_profile[8], (1.0, 1.0));
        let lowest = s
            .u_profile
            .iter()
            .map(|p| p.1)
            .fold(f64::INFINITY, f64::min);
        assert!(lowest < -0.1, "{:?}", s.u_profile);
        // v rises near x = 0 and falls near x = 1 (the vortex turns clockwise).
        assert!(
            s.v_profile[2].1 > 0.05 && s.v_profile[6].1 < -0.05,
            "{:?}",
            s.v_profile
        );
    }

    #[test]
    fn the_steady_state_does_not_depend_on_the_time_step() {
        // Steady: velocity and pressure change by less than 1e-9 per unit time. A fixed point
        // of the step solves the discrete steady problem only if the pressure update vanishes
        // with δp (with the earlier drift of ν M⁻¹ D u per step, D u ≠ 0 by the pressure
        // stabilisation, a δp and a momentum residual ∝ Δt balanced it: 4.8e-4 apart).
        let steady = |controls| {
            let s = run(6, 100.0, controls, 1e-9, 200.0).unwrap();
            assert!(s.march.steady, "{:?}", s.march);
            s
        };
        let one = steady(Controls::default());
        for controls in [
            Controls {
                dt_max: 0.004,
                ..Controls::default()
            },
            Controls {
                local_time_steps: true,
                ..Controls::default()
            },
            // The DFG case's local steps at twice the stable estimate.
            Controls {
                local_time_steps: true,
                cfl: 2.0,
                ..Controls::default()
            },
        ] {
            let other = steady(controls);
            let apart = (one.u_profile.iter().zip(&other.u_profile))
                .chain(one.v_profile.iter().zip(&other.v_profile))
                .map(|(a, b)| (a.1 - b.1).abs())
                .fold(0.0, f64::max);
            assert!(apart < 1e-7, "{controls:?}: profiles {apart:e} apart");
        }
    }
}
