//! Device memory and events shared between processes of one machine (CUDA IPC): how a driver
//! of blocks in several processes moves halos GPU to GPU without the host. A process exports a
//! buffer or an event as a [`Handle`], sends it to another process (by MPI, say), which opens
//! it; copies and stream waits then cross the processes as they would cross devices.
use crate::device::{Check, Device};
use cudarc::driver::sys::{self, CUdeviceptr, CUevent};
use cudarc::driver::{CudaContext, CudaStream};
use ferroflow_core::BackendError;
use std::sync::Arc;

/// An exported buffer or event: 64 opaque bytes another process opens.
pub type Handle = [u8; 64];

/// Device memory other processes may open. Allocated plainly: memory-pool allocations (what
/// the rest of ferroflow uses) cannot be exported.
pub struct SharedBuffer {
    ctx: Arc<CudaContext>,
    ptr: CUdeviceptr,
}

/// An event other processes may wait for (no timing: interprocess events cannot time).
pub struct SharedEvent {
    ctx: Arc<CudaContext>,
    event: CUevent,
}

/// Another process's [`SharedBuffer`], opened in this one.
pub struct OpenedBuffer {
    ctx: Arc<CudaContext>,
    ptr: CUdeviceptr,
}

/// Another process's [`SharedEvent`], opened in this one.
pub struct OpenedEvent {
    ctx: Arc<CudaContext>,
    event: CUevent,
}

// SAFETY: driver handles may be used from any thread once the context is bound, which every
// method does; the owner uses them through `&self`/`&mut self` only.
unsafe impl Send for SharedBuffer {}
// SAFETY: as above.
unsafe impl Send for SharedEvent {}
// SAFETY: as above.
unsafe impl Send for OpenedBuffer {}
// SAFETY: as above.
unsafe impl Send for OpenedEvent {}

fn bind(ctx: &CudaContext) -> Result<(), BackendError> {
    ctx.bind_to_thread().check("binding a context")
}

fn bytes_of(reserved: [std::ffi::c_char; 64]) -> Handle {
    reserved.map(|c| c as u8)
}

fn chars_of(handle: &Handle) -> [std::ffi::c_char; 64] {
    handle.map(|b| b as std::ffi::c_char)
}

impl SharedBuffer {
    /// `bytes` bytes on `device`, zeroed.
    pub fn new(device: &Device, bytes: usize) -> Result<SharedBuffer, BackendError> {
        bind(&device.ctx)?;
        let mut ptr = 0;
        // SAFETY: a plain allocation in the bound context, zeroed before use.
        unsafe {
            sys::cuMemAlloc_v2(&mut ptr, bytes.max(1))
                .result()
                .check("allocating a shared buffer")?;
            sys::cuMemsetD8_v2(ptr, 0, bytes)
                .result()
                .check("zeroing a shared buffer")?;
        }
        Ok(SharedBuffer {
            ctx: device.ctx.clone(),
            ptr,
        })
    }

    /// Its device address here.
    pub fn address(&self) -> CUdeviceptr {
        self.ptr
    }

    /// The handle another process opens it by.
    pub fn handle(&self) -> Result<Handle, BackendError> {
        bind(&self.ctx)?;
        let mut h = sys::CUipcMemHandle_st { reserved: [0; 64] };
        // SAFETY: the pointer is the base of a cuMemAlloc allocation.
        unsafe { sys::cuIpcGetMemHandle(&mut h, self.ptr) }
            .result()
            .check("exporting a buffer")?;
        Ok(bytes_of(h.reserved))
    }
}

impl Drop for SharedBuffer {
    fn drop(&mut self) {
        if bind(&self.ctx).is_ok() {
            // SAFETY: allocated by cuMemAlloc in `new`, freed once. A failure here is ignored:
            // the context is being torn down.
            let _ = unsafe { sys::cuMemFree_v2(self.ptr) };
        }
    }
}

impl SharedEvent {
    /// An interprocess event on `device`.
    pub fn new(device: &Device) -> Result<SharedEvent, BackendError> {
        bind(&device.ctx)?;
        let flags = sys::CUevent_flags::CU_EVENT_INTERPROCESS as u32
            | sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32;
        let mut event = std::ptr::null_mut();
        // SAFETY: creates an event in the bound context.
        unsafe { sys::cuEventCreate(&mut event, flags) }
            .result()
            .check("creating a shared event")?;
        Ok(SharedEvent {
            ctx: device.ctx.clone(),
            event,
        })
    }

    /// The handle another process opens it by.
    pub fn handle(&self) -> Result<Handle, BackendError> {
        bind(&self.ctx)?;
        let mut h = sys::CUipcEventHandle_st { reserved: [0; 64] };
        // SAFETY: an interprocess event of this context.
        unsafe { sys::cuIpcGetEventHandle(&mut h, self.event) }
            .result()
            .check("exporting an event")?;
        Ok(bytes_of(h.reserved))
    }

    /// Records the work queued on `stream` so far.
    pub fn record(&self, stream: &CudaStream) -> Result<(), BackendError> {
        bind(&self.ctx)?;
        // SAFETY: event and stream of this context.
        unsafe { sys::cuEventRecord(self.event, stream.cu_stream()) }
            .result()
            .check("recording a shared event")
    }
}

impl Drop for SharedEvent {
    fn drop(&mut self) {
        if bind(&self.ctx).is_ok() {
            // SAFETY: created in `new`, destroyed once.
            let _ = unsafe { sys::cuEventDestroy_v2(self.event) };
        }
    }
}

impl OpenedBuffer {
    /// Opens another process's buffer in `device`'s context.
    pub fn open(device: &Device, handle: &Handle) -> Result<OpenedBuffer, BackendError> {
        bind(&device.ctx)?;
        let h = sys::CUipcMemHandle_st {
            reserved: chars_of(handle),
        };
        let mut ptr = 0;
        let lazy = sys::CUipcMem_flags::CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS as u32;
        // SAFETY: a handle exported by `SharedBuffer::handle` in another process.
        unsafe { sys::cuIpcOpenMemHandle_v2(&mut ptr, h, lazy) }
            .result()
            .check("opening another process's buffer")?;
        Ok(OpenedBuffer {
            ctx: device.ctx.clone(),
            ptr,
        })
    }

    /// Its device address here.
    pub fn address(&self) -> CUdeviceptr {
        self.ptr
    }
}

impl Drop for OpenedBuffer {
    fn drop(&mut self) {
        if bind(&self.ctx).is_ok() {
            // SAFETY: opened in `open`, closed once.
            let _ = unsafe { sys::cuIpcCloseMemHandle(self.ptr) };
        }
    }
}

impl OpenedEvent {
    /// Opens another process's event in `device`'s context.
    pub fn open(device: &Device, handle: &Handle) -> Result<OpenedEvent, BackendError> {
        bind(&device.ctx)?;
        let h = sys::CUipcEventHandle_st {
            reserved: chars_of(handle),
        };
        let mut event = std::ptr::null_mut();
        // SAFETY: a handle exported by `SharedEvent::handle` in another process.
        unsafe { sys::cuIpcOpenEventHandle(&mut event, h) }
            .result()
            .check("opening another process's event")?;
        Ok(OpenedEvent {
            ctx: device.ctx.clone(),
            event,
        })
    }

    /// Makes `stream` wait for the event's latest record, as queued when this is called.
    pub fn wait(&self, stream: &CudaStream) -> Result<(), BackendError> {
        bind(&self.ctx)?;
        // SAFETY: an opened event and a stream of this context.
        unsafe { sys::cuStreamWaitEvent(stream.cu_stream(), self.event, 0) }
            .result()
            .check("waiting for another process's event")
    }
}

impl Drop for OpenedEvent {
    fn drop(&mut self) {
        if bind(&self.ctx).is_ok() {
            // SAFETY: opened in `open`, destroyed once.
            let _ = unsafe { sys::cuEventDestroy_v2(self.event) };
        }
    }
}
