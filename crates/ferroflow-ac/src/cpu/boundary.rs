//! Physical boundary conditions: fill boundary nodes and ghost layers after each pass.
use crate::cpu::formulas::{extrapolate_cubic, extrapolate_quadratic, extrapolate_zero_gradient};
use crate::SideBc;
use ferroflow_core::{Fields, Real, Side, GHOST};

/// Fills every side of `f` in x, y, z order, from the face nodes of `Layout::wall_face` (the
/// CUDA fill uses the same, so edges and corners match), but the x sides when `x_filled` (the
/// explicit pass fills them row by row, [`XWalls`]). `temperature` is the index of T, if
/// the energy equation is solved. With `fourth` (fourth-order differences, which read two
/// nodes out) the ghosts of the velocity, and of T at an isothermal wall, are extrapolated
/// cubically from the wall node and the nodes inside.
pub(crate) fn fill_boundaries<R: Real>(
    f: &mut Fields<R>,
    sides: &[SideBc; 6],
    temperature: Option<usize>,
    fourth: bool,
    x_filled: bool,
) {
    let l = f.layout;
    // The x sides come first in `Side::ALL`.
    let skip = if x_filled { 2 } else { 0 };
    for side in Side::ALL.into_iter().take(2 * l.dim).skip(skip) {
        let Some(wall) = Wall::of(sides[side as usize], temperature, fourth) else {
            continue;
        };
        l.for_each_wall_node(side, |o, inward| wall.fill(&mut f.vars, o, inward));
    }
}

/// The fill of one physical side: which variable has zero normal gradient, and whether the
/// velocity's ghosts are extrapolated.
#[derive(Clone, Copy)]
pub(crate) struct Wall {
    /// T at an adiabatic wall (with the energy equation).
    adiabatic: Option<usize>,
    fourth: bool,
}

impl Wall {
    /// The fill of a side with condition `bc`; none for a block interface (a halo, filled by
    /// the exchange with the neighbouring block).
    pub(crate) fn of(bc: SideBc, temperature: Option<usize>, fourth: bool) -> Option<Wall> {
        // Velocity at a wall, and T at an isothermal one, are fixed data held in the boundary
        // nodes; pressure is extrapolated to the wall node and its ghosts.
        let adiabatic = match bc {
            SideBc::Wall => None,
            SideBc::AdiabaticWall => temperature,
            SideBc::Interface => return None,
        };
        Some(Wall { adiabatic, fourth })
    }

    /// Fills the wall node at `o` of `vars` and the ghosts beyond it (`inward`: the offset of
    /// the next node inside). Touches only the column through `o` along the side's axis.
    pub(crate) fn fill<R: Real, A: AsMut<[R]>>(&self, vars: &mut [A], o: usize, inward: isize) {
        extrapolate_outward(vars[0].as_mut(), o, inward);
        if let Some(t) = self.adiabatic {
            mirror_outward(vars[t].as_mut(), o, inward);
        }
        if self.fourth {
            for v in (1..vars.len()).filter(|v| Some(*v) != self.adiabatic) {
                extrapolate_ghosts(vars[v].as_mut(), o, inward);
            }
        }
    }
}

/// The x sides' fills, done by the explicit pass on each row it updates: the row's wall nodes
/// and ghosts read only the row's own nodes, which are then in the core's cache (filled after
/// the whole pass, each x wall node of a 257³ grid is a line of its own, read from memory by
/// one thread).
#[derive(Clone, Copy)]
pub(crate) struct XWalls {
    /// The low and the high side.
    sides: [Option<Wall>; 2],
    /// Variables of the state.
    vars: usize,
}

impl XWalls {
    /// The x sides of a block with conditions `sides`.
    pub(crate) fn of(
        sides: &[SideBc; 6],
        temperature: Option<usize>,
        fourth: bool,
        vars: usize,
    ) -> XWalls {
        XWalls {
            sides: [0, 1].map(|s| Wall::of(sides[s], temperature, fourth)),
            vars,
        }
    }

    /// Fills the x sides of one row: `row` holds each variable's row from its first ghost
    /// (`i = -GHOST`) to its last, `n` nodes and the ghosts on either side.
    pub(crate) fn fill<R: Real>(&self, row: &mut [&mut [R]], n: usize) {
        let row = &mut row[..self.vars];
        if let Some(lo) = self.sides[0] {
            lo.fill(row, GHOST, 1);
        }
        if let Some(hi) = self.sides[1] {
            hi.fill(row, GHOST + n - 1, -1);
        }
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
