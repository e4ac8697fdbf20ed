//! The state on the device for a whole run: two buffers per variable (current and next,
//! swapped by flipping an index, never copied), the source term, and the residual sums. Host
//! transfers happen only on upload, download and residual reads.
use super::launch::{BoundaryKernel, GridArgs, Vars};
use crate::Problem;
use ferroflow_core::{BackendError, Fields, Layout, Real};
use ferroflow_cuda::cudarc::driver::sys::CUdeviceptr;
use ferroflow_cuda::cudarc::driver::{CudaSlice, CudaStream};
use ferroflow_cuda::Scalar;
use ferroflow_cuda::{address, Check};
use std::sync::Arc;

/// The bytes of `values`: `R` is f32 or f64 (checked), plain bits without padding.
pub(crate) fn bytes<R: Real>(values: &[R]) -> &[u8] {
    assert!(Scalar::of::<R>().is_some(), "device arrays hold f32 or f64");
    // SAFETY: f32 and f64 are plain bits without padding; the length is the slice's size.
    unsafe { std::slice::from_raw_parts(values.as_ptr().cast(), std::mem::size_of_val(values)) }
}

/// The bytes of `values`, writable: any bit pattern is a valid f32 or f64 (checked).
pub(crate) fn bytes_mut<R: Real>(values: &mut [R]) -> &mut [u8] {
    assert!(Scalar::of::<R>().is_some(), "device arrays hold f32 or f64");
    let len = std::mem::size_of_val(values);
    // SAFETY: as in `bytes`, and every bit pattern is a valid value.
    unsafe { std::slice::from_raw_parts_mut(values.as_mut_ptr().cast(), len) }
}

/// One array per variable on the device.
pub(crate) struct Arrays {
    slices: Vec<CudaSlice<u8>>,
    pub vars: Vars,
}

impl Arrays {
    /// `count` arrays of `bytes` bytes, zeroed.
    pub fn new(
        stream: &Arc<CudaStream>,
        count: usize,
        bytes: usize,
    ) -> Result<Arrays, BackendError> {
        let mut vars = Vars::default();
        let mut slices = Vec::with_capacity(count);
        for v in 0..count {
            let slice = stream
                .alloc_zeros::<u8>(bytes)
                .check("allocating a state array")?;
            vars.v[v] = address(&slice, stream);
            slices.push(slice);
        }
        Ok(Arrays { slices, vars })
    }

    /// Zeroes every array.
    pub fn zero(&mut self, stream: &Arc<CudaStream>) -> Result<(), BackendError> {
        for slice in &mut self.slices {
            stream.memset_zeros(slice).check("zeroing a device array")?;
        }
        Ok(())
    }

    /// The bytes of element `offset` of array `var` (elements of `size` bytes), copied to the
    /// host (waits for the work queued before).
    pub fn element(
        &self,
        stream: &Arc<CudaStream>,
        var: usize,
        offset: usize,
        size: usize,
    ) -> Result<Vec<u8>, BackendError> {
        let mut value = vec![0u8; size];
        let slice = self.slices[var].slice(offset * size..(offset + 1) * size);
        stream
            .memcpy_dtoh(&slice, &mut value)
            .check("copying a value to the host")?;
        stream.synchronize().check("reading a value")?;
        Ok(value)
    }

    fn upload<R: Real>(
        &mut self,
        stream: &Arc<CudaStream>,
        fields: &Fields<R>,
    ) -> Result<(), BackendError> {
        for (slice, values) in self.slices.iter_mut().zip(&fields.vars) {
            stream
                .memcpy_htod(bytes(values), slice)
                .check("copying the state to the device")?;
        }
        Ok(())
    }
}

/// The current and next state, and the source term.
pub(crate) struct State {
    buffers: [Arrays; 2],
    source: Option<Arrays>,
    cur: usize,
    layout: Layout,
}

impl State {
    /// Device arrays a problem's state needs: two buffers of every variable, and the source.
    pub fn arrays<R: Real>(problem: &Problem<R>) -> usize {
        problem.equations() * (2 + problem.source.is_some() as usize)
    }

    /// Allocates both buffers (zero) and uploads the source term.
    pub fn new<R: Real>(
        stream: &Arc<CudaStream>,
        problem: &Problem<R>,
    ) -> Result<State, BackendError> {
        let count = problem.equations();
        let bytes = problem.layout.len * std::mem::size_of::<R>();
        let source = match &problem.source {
            Some(fields) => {
                let mut arrays = Arrays::new(stream, count, bytes)?;
                arrays.upload(stream, fields)?;
                Some(arrays)
            }
            None => None,
        };
        Ok(State {
            buffers: [
                Arrays::new(stream, count, bytes)?,
                Arrays::new(stream, count, bytes)?,
            ],
            source,
            cur: 0,
            layout: problem.layout,
        })
    }

    /// Which buffer is current (0 or 1).
    pub fn parity(&self) -> usize {
        self.cur
    }

    pub fn cur(&self) -> Vars {
        self.buffers[self.cur].vars
    }

    pub fn next(&self) -> Vars {
        self.buffers[1 - self.cur].vars
    }

    /// The source term's arrays (null pointers without one).
    pub fn source(&self) -> Vars {
        self.source.as_ref().map(|s| s.vars).unwrap_or_default()
    }

    /// Replaces the source term by `source`, or zero; errors for a state without one.
    pub fn set_source<R: Real>(
        &mut self,
        stream: &Arc<CudaStream>,
        source: Option<&Fields<R>>,
    ) -> Result<(), BackendError> {
        let arrays = self.source.as_mut().ok_or_else(|| BackendError::Failed {
            backend: "cuda",
            message: "a source term given to a state set up without one".into(),
        })?;
        match source {
            Some(fields) => {
                fields.check_state(&self.layout, arrays.slices.len(), "cuda")?;
                arrays.upload(stream, fields)
            }
            None => arrays.zero(stream),
        }
    }

    /// Copies the current state into `to` (arrays of the same size).
    pub fn copy_current(
        &self,
        stream: &Arc<CudaStream>,
        to: &mut Arrays,
    ) -> Result<(), BackendError> {
        for (src, dst) in self.buffers[self.cur]
            .slices
            .iter()
            .zip(to.slices.iter_mut())
        {
            stream
                .memcpy_dtod(src, dst)
                .check("copying the state between buffers")?;
        }
        Ok(())
    }

    /// Makes the next state current.
    pub fn swap(&mut self) {
        self.cur = 1 - self.cur;
    }

    /// Replaces the current state, fills its walls, and copies it to the next buffer (wall
    /// velocities live in both; the interior pass writes interior nodes only).
    pub fn upload<R: Real>(
        &mut self,
        stream: &Arc<CudaStream>,
        fields: &Fields<R>,
        boundary: &BoundaryKernel,
        grid: &GridArgs,
    ) -> Result<(), BackendError> {
        fields.check_state(&self.layout, self.buffers[0].slices.len(), "cuda")?;
        let cur = self.cur;
        self.buffers[cur].upload(stream, fields)?;
        boundary.launch(stream, &self.cur(), grid, 0)?;
        let [a, b] = &mut self.buffers;
        let (from, to) = if cur == 0 { (a, b) } else { (b, a) };
        for (src, dst) in from.slices.iter().zip(to.slices.iter_mut()) {
            stream
                .memcpy_dtod(src, dst)
                .check("copying the state between buffers")?;
        }
        stream.synchronize().check("uploading the state")
    }

    /// Variable `var` of the current state at memory offset `offset` (waits for the device).
    pub fn value<R: Real>(
        &self,
        stream: &Arc<CudaStream>,
        var: usize,
        offset: usize,
    ) -> Result<R, BackendError> {
        let bytes =
            self.buffers[self.cur].element(stream, var, offset, std::mem::size_of::<R>())?;
        let mut value = [R::zero()];
        bytes_mut(&mut value).copy_from_slice(&bytes);
        Ok(value[0])
    }

    /// A host copy of the current state.
    pub fn download<R: Real>(&self, stream: &Arc<CudaStream>) -> Result<Fields<R>, BackendError> {
        let count = self.buffers[0].slices.len();
        let mut fields = Fields::zeros(self.layout, count);
        for (values, slice) in fields.vars.iter_mut().zip(&self.buffers[self.cur].slices) {
            stream
                .memcpy_dtoh(slice, bytes_mut(values))
                .check("copying the state to the host")?;
        }
        stream.synchronize().check("downloading the state")?;
        Ok(fields)
    }
}

/// Residual sums: per-block partial sums written by `ac_step`, and their totals.
pub(crate) struct Norms {
    partials: CudaSlice<f64>,
    sums: CudaSlice<f64>,
    /// Partial sums per equation (thread blocks of one `ac_step` launch).
    pub blocks: usize,
}

impl Norms {
    pub fn new(
        stream: &Arc<CudaStream>,
        equations: usize,
        blocks: usize,
    ) -> Result<Norms, BackendError> {
        Ok(Norms {
            partials: stream
                .alloc_zeros(equations * blocks)
                .check("allocating residual sums")?,
            sums: stream
                .alloc_zeros(equations)
                .check("allocating residual sums")?,
            blocks,
        })
    }

    pub fn partials(&self, stream: &CudaStream) -> CUdeviceptr {
        address(&self.partials, stream)
    }

    pub fn sums(&self, stream: &CudaStream) -> CUdeviceptr {
        address(&self.sums, stream)
    }

    /// Copies the totals to the host (waits for the iterations queued before).
    pub fn read(&self, stream: &Arc<CudaStream>) -> Result<Vec<f64>, BackendError> {
        let sums = stream
            .clone_dtoh(&self.sums)
            .check("copying residual norms to the host")?;
        stream.synchronize().check("iterating")?;
        Ok(sums)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_views_cover_the_values() {
        let mut v = vec![1.5f32, -2.0];
        assert_eq!(bytes(&v).len(), 8);
        bytes_mut(&mut v)[..4].copy_from_slice(&3.0f32.to_ne_bytes());
        assert_eq!(v, vec![3.0, -2.0]);
    }
}
