//! The GPU's loops timed one at a time with CUDA events, for `ferroflow bench --fv-cuda`: the
//! cell loops before the face loop, the face loop with stored fluxes, with atomics or in
//! colours, the gather, one residual, one whole steady iteration. Their traffic is
//! [`crate::bench::counts`]'s model.
use super::solver::{CudaSolver, FaceLoop};
use ferroflow_core::BackendError;
use ferroflow_cuda::{median, Timer};

/// Seconds of each loop on the device, medians of the repetitions.
#[derive(Debug, Clone, Copy)]
pub struct CudaTimes {
    /// Primitive states, ghosts, gradients.
    pub prepare: f64,
    /// The face loop, fluxes stored.
    pub faces: f64,
    /// The face loop with atomics (the residual zeroed, then the fluxes added).
    pub faces_atomic: f64,
    /// The face loop in colours (the residual zeroed, then each colour's fluxes added).
    pub faces_coloured: f64,
    /// The gather of the stored fluxes.
    pub gather: f64,
    /// One residual: the three above in a row, fluxes stored.
    pub residual: f64,
    /// One steady iteration of `stages` stages: time steps, residuals, updates, the norm.
    pub iteration: f64,
}

/// The loops of `s` (set up with [`FaceLoop::Coloured`], for its colours) timed: each the
/// median of `repeats` runs after one untimed; the residual and the iteration with stored
/// fluxes, the iteration at the Courant number `cfl` with the coefficients `stages` (the
/// state moves).
pub fn time(
    s: &mut CudaSolver,
    cfl: f64,
    stages: &[f64],
    repeats: usize,
) -> Result<CudaTimes, BackendError> {
    let device = s.device().clone();
    let timer = Timer::new(&device)?;
    let timed = |s: &mut CudaSolver,
                 work: &dyn Fn(&mut CudaSolver) -> Result<(), BackendError>|
     -> Result<f64, BackendError> {
        work(s)?;
        let samples = (0..repeats.max(1))
            .map(|_| timer.seconds(&device.stream, || work(s)))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(median(samples))
    };
    let prepare = timed(s, &|s| {
        s.primitives()?;
        s.gradients()
    })?;
    let faces = timed(s, &|s| s.faces_stored())?;
    let gather = timed(s, &|s| s.gather())?;
    let faces_atomic = timed(s, &|s| s.face_loop(FaceLoop::Atomic))?;
    let faces_coloured = timed(s, &|s| s.face_loop(FaceLoop::Coloured))?;
    s.set_face_loop(FaceLoop::Stored);
    let residual = timed(s, &|s| {
        s.primitives()?;
        s.gradients()?;
        s.face_loop(FaceLoop::Stored)
    })?;
    let iteration = timed(s, &|s| s.iterate(cfl, stages, 1))?;
    Ok(CudaTimes {
        prepare,
        faces,
        faces_atomic,
        faces_coloured,
        gather,
        residual,
        iteration,
    })
}
