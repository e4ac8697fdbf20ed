use crate::{Fields, Layout, ProblemError, Real};

/// Fluid properties.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Physics {
    /// Kinematic viscosity ν (m²/s).
    pub viscosity: f64,
    /// Density ρ (kg/m³).
    pub density: f64,
}

/// Parameters of the artificial-compressibility pseudo-time scheme.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Numerics {
    /// Courant number of the local pseudo-time step (convective and viscous limits together).
    pub cfl: f64,
    /// Artificial compressibility scaling κ: β² = max(|u|², κ U_ref²).
    pub kappa: f64,
    /// Reference velocity U_ref (m/s).
    pub u_ref: f64,
    /// Coefficient C4 of the fourth-difference pressure dissipation.
    pub c4: f64,
}

/// One of the `2 × dim` sides of a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// x = 0.
    XLo,
    /// x = Lx.
    XHi,
    /// y = 0.
    YLo,
    /// y = Ly.
    YHi,
    /// z = 0.
    ZLo,
    /// z = Lz.
    ZHi,
}

impl Side {
    /// All sides, in the order boundaries are filled (x, then y, then z).
    pub const ALL: [Side; 6] = [
        Side::XLo,
        Side::XHi,
        Side::YLo,
        Side::YHi,
        Side::ZLo,
        Side::ZHi,
    ];

    /// Axis normal to the side.
    pub fn axis(self) -> usize {
        self as usize / 2
    }

    /// Whether the side is at the upper end of its axis.
    pub fn is_high(self) -> bool {
        self as usize % 2 == 1
    }
}

/// Boundary condition of one side.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SideBc {
    /// No-slip wall. The wall velocity is the velocity held at the side's boundary nodes in the
    /// initial state (a moving lid, or exact values for manufactured solutions); pressure at
    /// the wall and in the ghosts comes from quadratic extrapolation of the interior.
    Wall,
}

/// Everything a backend needs to iterate one block.
#[derive(Debug, Clone)]
pub struct Problem<R> {
    /// Grid layout (2D or 3D, nodes per axis).
    pub layout: Layout,
    /// Node spacing per axis (m); unused axes hold 1.
    pub spacing: [f64; 3],
    /// Fluid properties.
    pub physics: Physics,
    /// Scheme parameters.
    pub numerics: Numerics,
    /// Boundary condition per side (index = `Side as usize`).
    pub sides: [SideBc; 6],
    /// Node whose pressure is the reference (p = 0 there).
    pub pressure_ref: [usize; 3],
    /// Initial state; its boundary-node velocities are the Dirichlet data of the walls.
    pub initial: Fields<R>,
    /// Source term per equation (manufactured solutions), if any.
    pub source: Option<Fields<R>>,
}

/// Fewest nodes per axis: one interior node beyond the three the wall extrapolation reads.
pub const MIN_NODES: usize = 5;

impl<R: Real> Problem<R> {
    /// Checks parameters and builds the problem; the reference node is the grid centre.
    pub fn new(
        layout: Layout,
        lengths: [f64; 3],
        physics: Physics,
        numerics: Numerics,
        initial: Fields<R>,
    ) -> Result<Problem<R>, ProblemError> {
        if !(2..=3).contains(&layout.dim) {
            return Err(ProblemError::Dimension(layout.dim));
        }
        for d in 0..layout.dim {
            if layout.n[d] < MIN_NODES {
                return Err(ProblemError::GridTooSmall {
                    axis: d,
                    nodes: layout.n[d],
                    min: MIN_NODES,
                });
            }
            positive("grid.length", lengths[d])?;
        }
        positive("physics.viscosity", physics.viscosity)?;
        positive("physics.density", physics.density)?;
        if !(numerics.cfl > 0.0 && numerics.cfl <= 2.0) {
            return Err(ProblemError::OutOfRange {
                name: "numerics.cfl",
                value: numerics.cfl,
                allowed: "0 < cfl <= 2",
            });
        }
        positive("numerics.kappa", numerics.kappa)?;
        positive("numerics.u_ref", numerics.u_ref)?;
        if !(0.0..=0.25).contains(&numerics.c4) {
            return Err(ProblemError::OutOfRange {
                name: "numerics.c4",
                value: numerics.c4,
                allowed: "0 <= c4 <= 0.25",
            });
        }
        if initial.layout != layout {
            return Err(ProblemError::Shape {
                what: "initial state",
                got: initial.layout.len,
                expected: layout.len,
            });
        }
        let mut spacing = [1.0; 3];
        for d in 0..layout.dim {
            spacing[d] = lengths[d] / (layout.n[d] - 1) as f64;
        }
        Ok(Problem {
            layout,
            spacing,
            physics,
            numerics,
            sides: [SideBc::Wall; 6],
            pressure_ref: layout.n.map(|n| n / 2),
            initial,
            source: None,
        })
    }

    /// Adds a source term per equation (same layout and variable count as the state).
    pub fn with_source(mut self, source: Fields<R>) -> Result<Problem<R>, ProblemError> {
        if source.layout != self.layout || source.vars.len() != self.equations() {
            return Err(ProblemError::Shape {
                what: "source",
                got: source.vars.len() * source.layout.len,
                expected: self.equations() * self.layout.len,
            });
        }
        self.source = Some(source);
        Ok(self)
    }

    /// Number of equations (= variables): continuity plus one momentum equation per axis.
    pub fn equations(&self) -> usize {
        1 + self.layout.dim
    }

    /// Names of the variables, in storage order.
    pub fn variable_names(&self) -> &'static [&'static str] {
        &["p", "u", "v", "w"][..self.equations()]
    }

    /// Coordinates of node `(i, j, k)`.
    pub fn coordinates(&self, i: usize, j: usize, k: usize) -> [f64; 3] {
        let h = self.spacing;
        [i as f64 * h[0], j as f64 * h[1], k as f64 * h[2]]
    }

    /// Memory offset of the pressure reference node.
    pub fn pressure_ref_offset(&self) -> usize {
        let [i, j, k] = self.pressure_ref.map(|x| x as isize);
        self.layout.index(i, j, k)
    }

    /// Shifts pressure so that it is zero at the reference node. Backends keep pressure
    /// shifted by the previous iteration's reference value (a constant, which the scheme
    /// cannot see), so this exact shift is applied to results only.
    pub fn reference_pressure(&self, fields: &mut Fields<R>) {
        let p = &mut fields.vars[0];
        let p_ref = p[self.pressure_ref_offset()];
        p.iter_mut().for_each(|x| *x = *x - p_ref);
    }
}

fn positive(name: &'static str, value: f64) -> Result<(), ProblemError> {
    if value > 0.0 && value.is_finite() {
        Ok(())
    } else {
        Err(ProblemError::OutOfRange {
            name,
            value,
            allowed: "a finite value > 0",
        })
    }
}
