//! The multigrid cycle on one GPU ([`multigrid`]): every level a [`CudaBackend`] on one device
//! and stream, its state, residual and forcing on the device; the transfers between levels
//! are kernels (kernels/multigrid.cu), the twins of the CPU's [`Level`] with the same
//! operation order, so that in f64 (without fused multiply-adds) a cycle has the CPU's bits.
//! Only the full-multigrid start, once per run, goes through the host.
use super::backend::{CudaBackend, CudaOptions};
use super::implicit::{flat, launch};
use super::launch::{GridArgs, Vars};
use super::programs::Program;
use super::state::Arrays;
use crate::multigrid::{Fas, Level};
use crate::Problem;
use ferroflow_core::{BackendError, Fields, Real};
use ferroflow_cuda::cudarc::driver::sys::CUdeviceptr;
use ferroflow_cuda::cudarc::driver::{CudaFunction, DeviceRepr};
use ferroflow_cuda::{Device, Scalar};

/// The multigrid cycle of `problem` (method `implicit`, one block) on the device `options`
/// names. A coarse level's forcing is its source term, so every coarse level has one (zero
/// where the problem has none).
pub fn multigrid<R: Real>(
    problem: &Problem<R>,
    options: &CudaOptions,
) -> Result<Fas<CudaBackend<R>>, BackendError> {
    let mut device: Option<Device> = None;
    Fas::over(problem, true, |p, coarse| {
        let with_source;
        let p = match coarse && p.source.is_none() {
            true => {
                let zero = Fields::zeros(p.layout, p.equations());
                with_source =
                    p.clone()
                        .with_source(zero)
                        .map_err(|e| BackendError::NotSuitable {
                            backend: "cuda",
                            what: format!("a coarse level: {e}"),
                        })?;
                &with_source
            }
            false => p,
        };
        let b = CudaBackend::on(p, options, device.as_ref())?;
        device.get_or_insert_with(|| b.device.clone());
        Ok(b)
    })
}

/// The transfer kernels of a level with multigrid levels, and the state a coarse level's
/// correction starts from.
pub(crate) struct Transfers {
    inject: CudaFunction,
    restrict: CudaFunction,
    correct: CudaFunction,
    /// The state at the last `hand_down` to this level (allocated on first use).
    start: Option<Arrays>,
}

impl Transfers {
    /// Compiles and loads the transfers in `precision`.
    pub fn new(device: &Device, precision: Scalar, fmad: bool) -> Result<Transfers, BackendError> {
        let cubin = device.compile(&Program::Multigrid.build(precision, fmad))?;
        let load = |name| device.load(cubin.clone(), name);
        Ok(Transfers {
            inject: load("mg_inject")?,
            restrict: load("mg_restrict")?,
            correct: load("mg_correct")?,
            start: None,
        })
    }
}

#[repr(C)]
#[derive(Clone, Copy)]
struct InjectParams {
    fine: Vars,
    fg: GridArgs,
    coarse: Vars,
    cg: GridArgs,
    vars: i32,
    dim: i32,
}

/// A level's residual as [`Level::hand_down`] reads it (`Residual` in multigrid.cu).
#[repr(C)]
#[derive(Clone, Copy)]
struct Residual {
    r: Vars,
    resid_p: CUdeviceptr,
    inv_dt: CUdeviceptr,
    gauge: CUdeviceptr,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct RestrictParams {
    fine: Residual,
    fg: GridArgs,
    own: Residual,
    forcing: Vars,
    cg: GridArgs,
    vars: i32,
    dim: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct CorrectParams {
    coarse: Vars,
    start: Vars,
    cg: GridArgs,
    reference: i64,
    fine: Vars,
    fg: GridArgs,
    vars: i32,
    dim: i32,
}

// SAFETY (each): a C struct of device pointers and integers, the kernel's struct of the same
// name.
unsafe impl DeviceRepr for InjectParams {}
unsafe impl DeviceRepr for RestrictParams {}
unsafe impl DeviceRepr for CorrectParams {}

/// The error of a level asked for transfers it was not set up with.
fn not_a_level() -> BackendError {
    BackendError::Failed {
        backend: "cuda",
        message: "multigrid transfers asked of a backend without multigrid levels".into(),
    }
}

impl<R: Real> CudaBackend<R> {
    /// Queues R(Q) of the current state (continuity projected) into the next buffer's
    /// interior, which the next iteration overwrites whole.
    fn queue_residual_field(&self) -> Result<Residual, BackendError> {
        let stream = &self.device.stream;
        let relaxer = self.implicit.as_ref().ok_or_else(not_a_level)?;
        let (a, next) = (&self.args, self.state.next());
        let norms = &self.norms;
        relaxer.queue_residual(
            stream,
            &a.coeffs,
            &a.grid,
            &self.state.cur(),
            &a.src,
            norms,
            &next,
        )?;
        let [resid_p, inv_dt, gauge] = relaxer.residual_addresses(stream);
        Ok(Residual {
            r: next,
            resid_p,
            inv_dt,
            gauge,
        })
    }

    fn transfers(&self) -> Result<&Transfers, BackendError> {
        self.multigrid.as_ref().ok_or_else(not_a_level)
    }

    /// The walls of the current state.
    fn fill_current_walls(&self) -> Result<(), BackendError> {
        let stream = &self.device.stream;
        self.boundary
            .launch(stream, &self.state.cur(), &self.args.grid, 0)
    }
}

impl<R: Real> Level for CudaBackend<R> {
    /// Kept on the device, by the coarse level.
    type Start = ();

    fn set_source(&mut self, source: Option<&Fields<R>>) -> Result<(), BackendError> {
        self.state.set_source(&self.device.stream, source)
    }

    fn hand_down(&mut self, coarse: &mut Self) -> Result<(), BackendError> {
        let stream = self.device.stream.clone();
        let (dim, vars) = (self.layout.dim as i32, self.equations as i32);
        let fine = self.queue_residual_field()?;
        let t = self.transfers()?;
        let params = InjectParams {
            fine: self.state.cur(),
            fg: self.args.grid,
            coarse: coarse.state.cur(),
            cg: coarse.args.grid,
            vars,
            dim,
        };
        let nodes = coarse.layout.n.iter().product();
        launch(&stream, &t.inject, params, flat(nodes), "mg_inject")?;
        coarse.fill_current_walls()?;
        let bytes = coarse.layout.len * std::mem::size_of::<R>();
        let c = coarse.multigrid.as_mut().ok_or_else(not_a_level)?;
        if c.start.is_none() {
            c.start = Some(Arrays::new(&stream, coarse.equations, bytes)?);
        }
        if let Some(start) = c.start.as_mut() {
            coarse.state.copy_current(&stream, start)?;
        }
        coarse.state.set_source::<R>(&stream, None)?;
        let own = coarse.queue_residual_field()?;
        let params = RestrictParams {
            fine,
            fg: self.args.grid,
            own,
            forcing: coarse.args.src,
            cg: coarse.args.grid,
            vars,
            dim,
        };
        launch(&stream, &t.restrict, params, flat(nodes), "mg_restrict")
    }

    fn correct(&mut self, coarse: &mut Self, _: (), reference: usize) -> Result<(), BackendError> {
        let stream = self.device.stream.clone();
        let start = coarse.transfers()?.start.as_ref().ok_or_else(not_a_level)?;
        let params = CorrectParams {
            coarse: coarse.state.cur(),
            start: start.vars,
            cg: coarse.args.grid,
            reference: reference as i64,
            fine: self.state.cur(),
            fg: self.args.grid,
            vars: self.equations as i32,
            dim: self.layout.dim as i32,
        };
        let nodes = self.layout.n.iter().product();
        let t = self.transfers()?;
        launch(&stream, &t.correct, params, flat(nodes), "mg_correct")?;
        self.fill_current_walls()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_can_move_to_another_thread() {
        fn send<T: Send>() {}
        send::<Fas<CudaBackend<f64>>>();
    }

    #[test]
    fn parameter_structs_have_the_kernels_layout() {
        // Vars (5 pointers) and Grid (7 integers) are 8-byte aligned: no padding but the
        // tail's, which C adds the same way.
        assert_eq!(std::mem::size_of::<InjectParams>(), 2 * (40 + 56) + 8);
        assert_eq!(std::mem::size_of::<Residual>(), 40 + 24);
        assert_eq!(
            std::mem::size_of::<CorrectParams>(),
            3 * 40 + 2 * 56 + 8 + 8
        );
    }
}
