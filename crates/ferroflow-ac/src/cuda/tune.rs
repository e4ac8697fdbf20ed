//! The interior kernel's launch shapes: the candidates tuning times, and [`StepTuning`], what
//! the runtime's tuner needs to time them. The timed passes read the current buffer and write
//! the interior nodes and walls of the other one, which the next iteration overwrites before
//! anything reads them: tuning leaves the state unchanged and needs no scratch memory.
use super::launch::{BoundaryKernel, LaunchShape, StepArgs, StepKernel, Vars};
use super::programs::{Program, Variant};
use ferroflow_core::{BackendError, Layout, Real};
use ferroflow_cuda::{Build, Device, Scalar, Tunable};

/// How the interior kernel's launch shape is chosen.
pub type TuneMode = ferroflow_cuda::TuneMode<LaunchShape>;
/// How the interior kernel's launch shape was chosen, with the timing table.
pub type TuneReport = ferroflow_cuda::TuneReport<LaunchShape>;

/// The shape used without tuning, in 2D and 3D: a warp along x reads contiguous rows.
pub const DEFAULT_SHAPE: LaunchShape = LaunchShape::new([32, 4, 1], 1);

/// The launch shapes tuning times for a `dim`-dimensional grid, the default first (it is the
/// first incumbent).
pub fn candidates(dim: usize) -> Vec<LaunchShape> {
    let s = LaunchShape::new;
    let t = LaunchShape::tiled;
    let rest: &[LaunchShape] = if dim == 2 {
        &[
            s([16, 2, 1], 1),
            s([16, 4, 1], 1),
            s([16, 8, 1], 1),
            s([32, 1, 1], 1),
            s([32, 2, 1], 1),
            s([32, 8, 1], 1),
            s([64, 1, 1], 1),
            s([64, 2, 1], 1),
            s([64, 4, 1], 1),
            s([128, 1, 1], 1),
            s([128, 2, 1], 1),
            s([256, 1, 1], 1),
            s([32, 2, 1], 2),
            s([32, 4, 1], 2),
            s([32, 8, 1], 2),
            s([64, 2, 1], 2),
            s([64, 4, 1], 2),
            s([32, 2, 1], 4),
            s([32, 4, 1], 4),
            s([64, 2, 1], 4),
            s([32, 4, 1], 8),
        ]
    } else {
        &[
            s([32, 2, 2], 1),
            s([32, 8, 1], 1),
            s([64, 2, 1], 1),
            s([64, 4, 1], 1),
            s([128, 1, 1], 1),
            s([16, 4, 4], 1),
            s([16, 8, 2], 1),
            s([32, 4, 2], 1),
            s([32, 4, 1], 2),
            s([32, 4, 1], 4),
            s([32, 4, 1], 8),
            s([32, 8, 1], 2),
            s([32, 8, 1], 4),
            s([64, 2, 1], 4),
            s([64, 4, 1], 4),
            s([32, 4, 1], 16),
            s([32, 2, 1], 2),
            s([64, 2, 1], 2),
            s([32, 2, 1], 4),
            s([32, 4, 1], 1).with_min_blocks(6),
            s([32, 4, 1], 1).with_min_blocks(7),
            s([64, 2, 1], 1).with_min_blocks(6),
            s([32, 4, 1], 2).with_min_blocks(5),
            s([32, 4, 1], 4).with_min_blocks(5),
            t([32, 8], 8).with_min_blocks(2),
            t([32, 8], 16).with_min_blocks(2),
            t([32, 8], 32).with_min_blocks(2),
            t([32, 4], 16).with_min_blocks(4),
            t([64, 4], 16).with_min_blocks(2),
            t([64, 4], 8).with_min_blocks(2),
            t([64, 4], 32).with_min_blocks(2),
            t([64, 4], 64).with_min_blocks(2),
            t([64, 4], 128).with_min_blocks(2),
            t([64, 2], 16).with_min_blocks(4),
            t([64, 2], 32).with_min_blocks(4),
        ]
    };
    std::iter::once(DEFAULT_SHAPE)
        .chain(rest.iter().copied())
        .collect()
}

/// Everything the timed launches of one backend need.
pub(crate) struct StepTuning<'a, R> {
    pub device: &'a Device,
    pub layout: Layout,
    pub precision: Scalar,
    pub fmad: bool,
    /// The entry point the problem needs.
    pub variant: Variant,
    pub args: &'a StepArgs<R>,
    /// The wall fills that follow each pass.
    pub boundary: &'a BoundaryKernel,
    pub cur: Vars,
    pub next: Vars,
}

impl<R: Real> Tunable for StepTuning<'_, R> {
    type Shape = LaunchShape;
    type Kernel = StepKernel;

    fn what(&self) -> String {
        "ac_step launch shape".into()
    }

    fn candidates(&self) -> Result<Vec<LaunchShape>, BackendError> {
        let shapes: Vec<LaunchShape> = candidates(self.layout.dim)
            .into_iter()
            .filter(|s| s.grid(&self.layout).is_ok())
            .collect();
        if shapes.is_empty() {
            return Err(BackendError::NotSuitable {
                backend: "cuda",
                what: format!("a {:?}-node grid: no launch shape fits", self.layout.n),
            });
        }
        Ok(shapes)
    }

    fn default_shape(&self) -> LaunchShape {
        DEFAULT_SHAPE
    }

    fn build(&self, shape: LaunchShape) -> Build {
        Program::AcStep {
            dim: self.layout.dim,
            shape,
            variant: self.variant,
        }
        .build(self.precision, self.fmad)
    }

    fn load(&self, cubin: Vec<u8>, shape: LaunchShape) -> Result<StepKernel, BackendError> {
        let function = self.device.load(cubin, self.variant.entry())?;
        StepKernel::new(function, shape, &self.layout)
    }

    /// One `ac_step` launch and the wall fills after it (residual norms off, as in most
    /// iterations): shapes differ in which x walls they leave to the wall fills.
    fn queue(&self, kernel: &StepKernel) -> Result<(), BackendError> {
        let stream = &self.device.stream;
        // Any value serves as the pressure shift while timing.
        let done = kernel.launch(
            stream,
            self.args,
            &self.cur,
            &self.next,
            None,
            self.cur.v[0],
            false,
        )?;
        self.boundary
            .launch(stream, &self.next, &self.args.grid, done)
    }

    fn nodes(&self) -> usize {
        self.layout.interior_nodes()
    }

    fn cache_key(&self) -> String {
        let [n0, n1, n2] = self.layout.n;
        format!(
            "{}D {n0}x{n1}x{n2} | {:?} | {}{}",
            self.layout.dim,
            self.precision,
            self.variant.entry(),
            self.variant.order(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_start_with_the_default_and_fit_a_block() {
        for dim in [2, 3] {
            let c = candidates(dim);
            assert_eq!(c[0], DEFAULT_SHAPE);
            for (i, s) in c.iter().enumerate() {
                assert!(s.threads() <= 256 && s.threads() % 32 == 0, "{s}");
                assert!(!c[..i].contains(s), "{s} twice");
                if dim == 2 {
                    assert_eq!(s.block[2], 1);
                    assert!(!s.tile, "{s}");
                }
                if s.tile {
                    // Two f64 plane tiles of five variables with a ring two nodes deep fit
                    // the 48 KiB of static shared memory.
                    let [x, y, _] = s.block;
                    assert!((x + 4) * (y + 4) * 8 * 5 * 2 <= 48 * 1024, "{s}");
                }
            }
        }
    }
}
