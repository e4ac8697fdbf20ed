//! Faces of a structured block copied as strided boxes straight from or into a state (one 3D
//! copy per variable) on another device or a pinned host buffer, without packing kernels.
use super::launch::Vars;
use ferroflow_core::decomposition::{region_len, Face, Region};
use ferroflow_core::{BackendError, Layout, Real};
use ferroflow_cuda::cudarc::driver::sys::{self, CUdeviceptr, CUmemorytype};
use ferroflow_cuda::cudarc::driver::CudaStream;
use ferroflow_cuda::Check;

/// A face copied as strided boxes (one per variable), without packing.
pub enum BoxCopy {
    /// This block's send layers to a packed buffer in pinned host memory.
    ToHost(CUdeviceptr),
    /// A packed buffer in pinned host memory into this block's halo.
    FromHost(CUdeviceptr),
    /// The sending block's send layers (state, context, layout) into this block's halo.
    FromDevice(Vars, sys::CUcontext, Layout),
}

/// Copies `face` of the state `vars` (layout `layout`) as `how` says, on `stream`.
pub fn copy_boxes<R: Real>(
    stream: &CudaStream,
    layout: &Layout,
    vars: &Vars,
    face: &Face,
    how: BoxCopy,
) -> Result<(), BackendError> {
    let size = std::mem::size_of::<R>();
    let ctx = stream.context().cu_ctx();
    stream
        .context()
        .bind_to_thread()
        .check("binding a context")?;
    for c in box_copies(layout, vars, ctx, face, how, size) {
        // SAFETY: both boxes lie inside their arrays or buffers; the stream orders the copy
        // after the work that wrote the source.
        unsafe { sys::cuMemcpy3DPeerAsync(&c, stream.cu_stream()) }
            .result()
            .check("copying a halo box")?;
    }
    Ok(())
}

/// The copies of [`copy_boxes`], one per variable: the state `vars` (layout `layout`) is in
/// context `ctx`, values are `size` bytes.
fn box_copies(
    layout: &Layout,
    vars: &Vars,
    ctx: sys::CUcontext,
    face: &Face,
    how: BoxCopy,
    size: usize,
) -> Vec<sys::CUDA_MEMCPY3D_PEER_st> {
    let incoming = !matches!(how, BoxCopy::ToHost(_));
    let mut at = 0;
    let mut copies = Vec::with_capacity(face.vars);
    for var in 0..face.vars {
        let region = face.region(layout, var, incoming);
        let count = [0, 1, 2].map(|d| (region[d].1 - region[d].0) as usize);
        // Where this variable's values start in a packed buffer.
        let packed = (at * size) as CUdeviceptr;
        at += region_len(&region);
        let mine = End::device(vars.v[var], ctx, layout, &region, size);
        let (src, dst) = match how {
            BoxCopy::FromDevice(v, sctx, l) => {
                let theirs = Face {
                    side: face.side.opposite(),
                    ..*face
                }
                .region(&l, var, false);
                (End::device(v.v[var], sctx, &l, &theirs, size), mine)
            }
            BoxCopy::FromHost(h) => (End::host(h + packed, count, size), mine),
            BoxCopy::ToHost(h) => (mine, End::host(h + packed, count, size)),
        };
        copies.push(box_copy(&src, &dst, count, size));
    }
    copies
}

/// One side of a box copy: a box of a device array, or a packed box in pinned host memory.
struct End {
    memory: CUmemorytype,
    device: CUdeviceptr,
    host: *mut std::ffi::c_void,
    context: sys::CUcontext,
    /// Bytes per row and rows per plane.
    pitch: usize,
    height: usize,
}

impl End {
    /// The box `region` of the array at `base` (context `context`, layout `layout`).
    fn device(
        base: CUdeviceptr,
        context: sys::CUcontext,
        layout: &Layout,
        region: &Region,
        size: usize,
    ) -> End {
        let [i, j, k] = region.map(|(lo, _)| lo);
        End {
            memory: CUmemorytype::CU_MEMORYTYPE_DEVICE,
            device: base + (layout.index(i, j, k) * size) as CUdeviceptr,
            host: std::ptr::null_mut(),
            context,
            pitch: layout.stride[1] * size,
            height: layout.stride[2] / layout.stride[1],
        }
    }

    /// `count` values packed at the pinned host address `at`.
    fn host(at: CUdeviceptr, count: [usize; 3], size: usize) -> End {
        End {
            memory: CUmemorytype::CU_MEMORYTYPE_HOST,
            device: 0,
            host: at as *mut _,
            context: std::ptr::null_mut(),
            pitch: count[0] * size,
            height: count[1],
        }
    }
}

/// The driver's description of the copy of `count` values from `src` to `dst`.
fn box_copy(src: &End, dst: &End, count: [usize; 3], size: usize) -> sys::CUDA_MEMCPY3D_PEER_st {
    sys::CUDA_MEMCPY3D_PEER_st {
        srcXInBytes: 0,
        srcY: 0,
        srcZ: 0,
        srcLOD: 0,
        srcMemoryType: src.memory,
        srcHost: src.host,
        srcDevice: src.device,
        srcArray: std::ptr::null_mut(),
        srcContext: src.context,
        srcPitch: src.pitch,
        srcHeight: src.height,
        dstXInBytes: 0,
        dstY: 0,
        dstZ: 0,
        dstLOD: 0,
        dstMemoryType: dst.memory,
        dstHost: dst.host,
        dstDevice: dst.device,
        dstArray: std::ptr::null_mut(),
        dstContext: dst.context,
        dstPitch: dst.pitch,
        dstHeight: dst.height,
        WidthInBytes: count[0] * size,
        Height: count[1],
        Depth: count[2],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferroflow_core::Side;

    const HOST: CUdeviceptr = 0x9000;

    fn context(n: usize) -> sys::CUcontext {
        n as sys::CUcontext
    }

    /// The copies of the x-high face of two variables (8-byte values) of a 3D block.
    fn copies(how: BoxCopy) -> (Layout, Vars, Vec<sys::CUDA_MEMCPY3D_PEER_st>) {
        let layout = Layout::new(3, [6, 5, 4]);
        let mut vars = Vars::default();
        vars.v[..2].copy_from_slice(&[1 << 20, 2 << 20]);
        let face = Face {
            side: Side::XHi,
            vars: 2,
            reach: 1,
        };
        let copies = box_copies(&layout, &vars, context(1), &face, how, 8);
        (layout, vars, copies)
    }

    /// The address of the first node of variable `var`'s box of `side` in `vars`.
    fn first(layout: &Layout, vars: &Vars, side: Side, var: usize, incoming: bool) -> u64 {
        let face = Face {
            side,
            vars: 2,
            reach: 1,
        };
        let r = face.region(layout, var, incoming);
        vars.v[var] + 8 * layout.index(r[0].0, r[1].0, r[2].0) as u64
    }

    #[test]
    fn boxes_go_to_and_from_packed_host_buffers_variable_after_variable() {
        let (layout, vars, out) = copies(BoxCopy::ToHost(HOST));
        let (_, _, back) = copies(BoxCopy::FromHost(HOST));
        let row = (8 * layout.stride[1], layout.stride[2] / layout.stride[1]);
        let first_len = region_len(
            &Face {
                side: Side::XHi,
                vars: 2,
                reach: 1,
            }
            .region(&layout, 0, false),
        );
        for (var, (o, b)) in out.iter().zip(&back).enumerate() {
            let packed = HOST as usize + 8 * first_len * var;
            assert_eq!(o.srcMemoryType, CUmemorytype::CU_MEMORYTYPE_DEVICE);
            assert_eq!(o.srcDevice, first(&layout, &vars, Side::XHi, var, false));
            assert_eq!(
                (o.srcContext, o.srcPitch, o.srcHeight),
                (context(1), row.0, row.1)
            );
            assert_eq!(o.dstMemoryType, CUmemorytype::CU_MEMORYTYPE_HOST);
            assert_eq!((o.dstHost as usize, o.dstDevice), (packed, 0));
            assert!(o.dstContext.is_null());
            assert_eq!((o.dstPitch, o.dstHeight), (o.WidthInBytes, o.Height));
            // Receiving: the same packed layout into the layers beyond the side.
            assert_eq!(b.srcMemoryType, CUmemorytype::CU_MEMORYTYPE_HOST);
            assert_eq!((b.srcHost as usize, b.srcPitch), (packed, b.WidthInBytes));
            assert_eq!(b.dstDevice, first(&layout, &vars, Side::XHi, var, true));
            assert_eq!(
                (b.dstContext, b.dstPitch, b.dstHeight),
                (context(1), row.0, row.1)
            );
            assert_eq!(
                (b.WidthInBytes, b.Height, b.Depth),
                (o.WidthInBytes, o.Height, o.Depth)
            );
        }
    }

    #[test]
    fn device_boxes_read_the_senders_opposite_side_in_its_context() {
        let theirs = Layout::new(3, [7, 5, 4]);
        let mut from = Vars::default();
        from.v[..2].copy_from_slice(&[5 << 20, 6 << 20]);
        let (layout, vars, c) = copies(BoxCopy::FromDevice(from, context(2), theirs));
        for (var, c) in c.iter().enumerate() {
            assert_eq!(c.srcDevice, first(&theirs, &from, Side::XLo, var, false));
            assert_eq!(
                (c.srcContext, c.srcPitch),
                (context(2), 8 * theirs.stride[1])
            );
            assert_eq!(c.dstDevice, first(&layout, &vars, Side::XHi, var, true));
            assert_eq!(c.dstContext, context(1));
            assert!(c.srcHost.is_null() && c.dstHost.is_null());
        }
    }
}
