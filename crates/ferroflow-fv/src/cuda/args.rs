//! The kernels' argument structs, field for field as `Step` and `Patch` in kernels/fv_step.cu
//! and kernels/fv.cuh.
use crate::boundary::Boundary;
use crate::flux::Limiter;
use crate::viscous::{Viscosity, Viscous};
use ferroflow_core::BackendError;
use ferroflow_cuda::cudarc::driver::sys::CUdeviceptr;
use ferroflow_cuda::cudarc::driver::DeviceRepr;

/// `Patch` of kernels/fv.cuh: a boundary condition.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct PatchArgs {
    kind: i64,
    vector: [f64; 3],
    state: [f64; 5],
}

impl PatchArgs {
    /// The device's form of `bc`; [`Boundary::Exact`] has none (a host function).
    pub(super) fn new(bc: &Boundary) -> Result<PatchArgs, BackendError> {
        let (kind, vector, state) = match *bc {
            Boundary::SlipWall => (0, [0.0; 3], [0.0; 5]),
            Boundary::AdiabaticWall { velocity } => (1, velocity, [0.0; 5]),
            Boundary::IsothermalWall {
                velocity,
                temperature,
            } => (2, velocity, [temperature, 0.0, 0.0, 0.0, 0.0]),
            Boundary::FarField(free) => (3, [0.0; 3], free),
            Boundary::Inflow { p0, t0, direction } => (4, direction, [p0, t0, 0.0, 0.0, 0.0]),
            Boundary::Outflow(p) => (5, [0.0; 3], [p, 0.0, 0.0, 0.0, 0.0]),
            Boundary::Exact(_) => {
                return Err(BackendError::NotSuitable {
                    backend: "cuda",
                    what: "an exact-solution boundary (a host function)".into(),
                })
            }
        };
        Ok(PatchArgs {
            kind,
            vector,
            state,
        })
    }
}

/// The limiter's code in the kernels (`LIMITER_*` of kernels/fv.cuh).
pub(super) fn limiter_code(limiter: Limiter) -> i64 {
    match limiter {
        Limiter::None => 0,
        Limiter::VanAlbada => 1,
    }
}

/// `Viscosity` of kernels/fv.cuh: the law (0 for the Euler equations) and its numbers.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct ViscousArgs {
    law: i64,
    mu: f64,
    t_ref: f64,
    s: f64,
    prandtl: f64,
}

impl ViscousArgs {
    /// The device's form of `viscous`.
    pub(super) fn new(viscous: Option<Viscous>) -> ViscousArgs {
        let (law, mu, t_ref, s, prandtl) = match viscous {
            None => (0, 0.0, 0.0, 0.0, 0.0),
            Some(v) => match v.viscosity {
                Viscosity::Constant(mu) => (1, mu, 0.0, 0.0, v.prandtl),
                Viscosity::Sutherland { mu, t, s } => (2, mu, t, s, v.prandtl),
            },
        };
        ViscousArgs {
            law,
            mu,
            t_ref,
            s,
            prandtl,
        }
    }
}

/// `Step` of kernels/fv_step.cu.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub(super) struct StepArgs {
    pub cells: i64,
    pub faces: i64,
    pub internal: i64,
    pub pairs: i64,
    pub left: CUdeviceptr,
    pub right: CUdeviceptr,
    pub normal: CUdeviceptr,
    pub area: CUdeviceptr,
    pub face_centroid: CUdeviceptr,
    pub volume: CUdeviceptr,
    pub centroid: CUdeviceptr,
    pub patch: CUdeviceptr,
    pub patches: CUdeviceptr,
    pub offsets: CUdeviceptr,
    pub cell_faces: CUdeviceptr,
    pub weights: CUdeviceptr,
    pub u: CUdeviceptr,
    pub u0: CUdeviceptr,
    pub r: CUdeviceptr,
    pub prim: CUdeviceptr,
    pub grad: CUdeviceptr,
    pub flux: CUdeviceptr,
    pub wave: CUdeviceptr,
    pub dt: CUdeviceptr,
    pub partials: CUdeviceptr,
    pub gamma: f64,
    pub cfl: f64,
    pub alpha: f64,
    pub limiter: i64,
    pub viscosity: ViscousArgs,
}

// SAFETY: C structs of device addresses and numbers, without padding.
unsafe impl DeviceRepr for StepArgs {}
// SAFETY: as above.
unsafe impl DeviceRepr for PatchArgs {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patches_carry_their_numbers_and_the_structs_have_no_padding() {
        let p = PatchArgs::new(&Boundary::Inflow {
            p0: 1.2,
            t0: 0.9,
            direction: [0.6, 0.0, 0.8],
        })
        .unwrap();
        assert_eq!(
            (p.kind, p.vector, p.state[..2].to_vec()),
            (4, [0.6, 0.0, 0.8], vec![1.2, 0.9])
        );
        assert_eq!(
            PatchArgs::new(&Boundary::Outflow(0.7)).unwrap().state[0],
            0.7
        );
        assert_eq!(std::mem::size_of::<PatchArgs>(), 72);
        assert_eq!(std::mem::size_of::<StepArgs>(), 8 * (4 + 21 + 3 + 1 + 5));
    }
}
