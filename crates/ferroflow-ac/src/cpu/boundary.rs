//! Physical boundary conditions: fill boundary nodes and ghost layers after each pass.
use crate::cpu::formulas::{extrapolate_cubic, extrapolate_quadratic, extrapolate_zero_gradient};
use crate::SideBc;
use ferroflow_core::{Fields, Real, Side, GHOST};

/// Fills every side of `f` in x, y, z order, from the face nodes of `Layout::wall_face` (the
/// CUDA fill uses the same, so edges and corners match). `temperature` is the index of T, if
/// the energy equation is solved. With `fourth` (fourth-order differences, which read two
/// nodes out) the ghosts of the velocity, and of T at an isothermal wall, are extrapolated
/// cubically from the wall node and the nodes inside.
pub(crate) fn fill_boundaries<R: Real>(
    f: &mut Fields<R>,
    sides: &[SideBc; 6],
    temperature: Option<usize>,
    fourth: bool,
) {
    let l = f.layout;
    let vars = f.vars.len();
    for side in Side::ALL.into_iter().take(2 * l.dim) {
        // Velocity at a wall, and T at an isothermal one, are fixed data held in the boundary
        // nodes; pressure is extrapolated to the wall node and its ghosts.
        let adiabatic = match sides[side as usize] {
            SideBc::Wall => None,
            SideBc::AdiabaticWall => temperature,
            // A halo: filled by the exchange with the neighbouring block.
            SideBc::Interface => continue,
        };
        l.for_each_wall_node(side, |o, inward| {
            extrapolate_outward(&mut f.vars[0], o, inward);
            if let Some(t) = adiabatic {
                mirror_outward(&mut f.vars[t], o, inward);
            }
            if fourth {
                for v in (1..vars).filter(|v| Some(*v) != adiabatic) {
                    extrapolate_ghosts(&mut f.vars[v], o, inward);
                }
            }
        });
    }
}

/// Zero normal gradient at the wall node `o`: its value from the two nodes inside it, and the
/// ghosts beyond it mirroring the nodes inside (T is even about the wall).
fn mirror_outward<R: Real>(t: &mut [R], o: usize, inward: isize) {
    let step = |n: isize| (o as isize + n * inward) as usize;
    t[o] = extrapolate_zero_gradient(t[step(1)], t[step(2)]);
    for layer in 1..=GHOST as isize {
        t[step(-layer)] = t[step(layer)];
    }
}

/// Fills the wall node at `o` and the ghosts beyond it, each from the three nodes inside it.
fn extrapolate_outward<R: Real>(p: &mut [R], o: usize, inward: isize) {
    let step = |n: isize| (o as isize + n * inward) as usize;
    for layer in 0..=GHOST as isize {
        let t = -layer;
        p[step(t)] = extrapolate_quadratic(p[step(t + 1)], p[step(t + 2)], p[step(t + 3)]);
    }
}

/// Fills the ghosts beyond the wall node at `o` (which holds wall data), each from the four
/// nodes inside it.
fn extrapolate_ghosts<R: Real>(q: &mut [R], o: usize, inward: isize) {
    let step = |n: isize| (o as isize + n * inward) as usize;
    for layer in 1..=GHOST as isize {
        let t = -layer;
        q[step(t)] = extrapolate_cubic(
            q[step(t + 1)],
            q[step(t + 2)],
            q[step(t + 3)],
            q[step(t + 4)],
        );
    }
}
