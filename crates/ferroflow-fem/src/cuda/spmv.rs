//! The pressure solve's matrix–vector product: its variants ([`SpmvShape`]), their storage
//! ([`Layout`]: the node graph's CSR rows, or sliced ELLPACK built from them) and the timing that
//! picks one on the actual pressure matrix ([`SpmvTuning`], through `ferroflow_cuda::tune`).
//! Every variant adds a row's terms in the CPU's order, so the choice changes speed only.
use super::cg::grid;
use super::{exact, DeviceReal, SPMV};
use ferroflow_core::BackendError;
use ferroflow_cuda::cudarc::driver::sys::CUdeviceptr;
use ferroflow_cuda::cudarc::driver::{
    CudaFunction, CudaSlice, CudaStream, DeviceRepr, PushKernelArg,
};
use ferroflow_cuda::cudarc::nvrtc::Ptx;
use ferroflow_cuda::{address, Build, Check, Device, Scalar, Tunable};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::sync::Arc;

/// How threads share the product's rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SpmvShape {
    /// CSR, one thread per row.
    Csr {
        /// Threads per block.
        threads: u32,
    },
    /// CSR, `lanes` threads per row: coalesced loads of a row's entries, the products added
    /// in order through warp shuffles.
    Vector {
        /// Threads per row (a power of two up to 32).
        lanes: u32,
        /// Threads per block.
        threads: u32,
    },
    /// SELL-32-σ: slices of 32 rows (a warp), a slice's k-th entries stored side by side,
    /// rows sorted by length within windows of `sigma` rows; one thread per row.
    Sell {
        /// Rows per sorting window (1: not sorted, plain sliced ELLPACK).
        sigma: u32,
        /// Threads per block.
        threads: u32,
    },
}

/// The variant used untuned.
pub const DEFAULT_SPMV: SpmvShape = SpmvShape::Csr { threads: 128 };

/// The variants tuning times, the default first.
pub fn spmv_candidates() -> Vec<SpmvShape> {
    use SpmvShape::*;
    let mut c = vec![DEFAULT_SPMV, Csr { threads: 64 }, Csr { threads: 256 }];
    for lanes in [2, 4, 8, 16, 32] {
        c.extend([128, 256].map(|threads| Vector { lanes, threads }));
    }
    for sigma in [1, 1024] {
        c.extend([128, 256].map(|threads| Sell { sigma, threads }));
    }
    c
}

impl SpmvShape {
    /// The build of `fem_spmv.cu` for this variant in `precision`.
    pub fn build(self, precision: Scalar) -> Build {
        let b = exact(SPMV, precision).define("SPMV_THREADS", self.threads());
        let b = match self {
            SpmvShape::Csr { .. } => b.define("SPMV_CSR", 1),
            SpmvShape::Vector { lanes, .. } => {
                b.define("SPMV_VECTOR", 1).define("SPMV_LANES", lanes)
            }
            SpmvShape::Sell { .. } => b.define("SPMV_SELL", 1),
        };
        Build {
            label: self.to_string(),
            ..b
        }
    }

    fn threads(self) -> u32 {
        match self {
            SpmvShape::Csr { threads }
            | SpmvShape::Vector { threads, .. }
            | SpmvShape::Sell { threads, .. } => threads,
        }
    }

    /// Threads launched per item of the layout (a row, or a slice position).
    fn per_item(self) -> usize {
        match self {
            SpmvShape::Vector { lanes, .. } => lanes as usize,
            _ => 1,
        }
    }
}

impl fmt::Display for SpmvShape {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            SpmvShape::Csr { threads } => write!(f, "csr/{threads}"),
            SpmvShape::Vector { lanes, threads } => write!(f, "csr-{lanes}/{threads}"),
            SpmvShape::Sell { sigma, threads } => write!(f, "sell-32-{sigma}/{threads}"),
        }
    }
}

/// A slice position or stored entry that holds nothing.
const NONE: u32 = u32::MAX;

/// Sliced ELLPACK of CSR rows, on the host.
#[derive(Debug, Clone, PartialEq)]
struct Sell {
    /// First stored entry of each slice.
    starts: Vec<u32>,
    /// Column of each stored entry (0 for padding).
    columns: Vec<u32>,
    /// CSR entry of each stored entry ([`NONE`] for padding).
    source: Vec<u32>,
    /// Entries of the row at each slice position.
    lengths: Vec<u32>,
    /// Row at each slice position ([`NONE`] past the last row).
    rows: Vec<u32>,
}

/// Rows per slice: a warp.
const SLICE: usize = 32;

fn sell(offsets: &[u32], columns: &[u32], sigma: usize) -> Sell {
    let n = offsets.len() - 1;
    let len = |r: u32| offsets[r as usize + 1] - offsets[r as usize];
    let mut order: Vec<u32> = (0..n as u32).collect();
    for window in order.chunks_mut(sigma.max(1)) {
        window.sort_by_key(|&r| std::cmp::Reverse(len(r)));
    }
    let slices = n.div_ceil(SLICE);
    let mut s = Sell {
        starts: Vec::with_capacity(slices + 1),
        columns: Vec::new(),
        source: Vec::new(),
        lengths: vec![0; slices * SLICE],
        rows: vec![NONE; slices * SLICE],
    };
    let mut total = 0u32;
    for slice in 0..slices {
        s.starts.push(total);
        let members = &order[slice * SLICE..n.min((slice + 1) * SLICE)];
        for (lane, &r) in members.iter().enumerate() {
            s.rows[slice * SLICE + lane] = r;
            s.lengths[slice * SLICE + lane] = len(r);
        }
        total += SLICE as u32 * members.iter().map(|&r| len(r)).max().unwrap_or(0);
    }
    s.starts.push(total);
    s.columns = vec![0; total as usize];
    s.source = vec![NONE; total as usize];
    for (pos, &r) in s.rows.iter().enumerate().filter(|(_, &r)| r != NONE) {
        let base = s.starts[pos / SLICE] as usize + pos % SLICE;
        for k in 0..len(r) as usize {
            let e = offsets[r as usize] as usize + k;
            s.columns[base + SLICE * k] = columns[e];
            s.source[base + SLICE * k] = e as u32;
        }
    }
    s
}

/// A product's storage on the device.
pub(crate) struct Layout<R: DeviceReal> {
    starts: CudaSlice<u32>,
    columns: CudaSlice<u32>,
    values: CudaSlice<R>,
    /// SELL only: lengths, rows and each stored entry's CSR entry.
    sell: Option<[CudaSlice<u32>; 3]>,
    /// Threads' items: rows (CSR) or slice positions (SELL).
    items: usize,
}

impl<R: DeviceReal> Layout<R> {
    /// The CSR rows `offsets`, `columns`.
    pub(crate) fn csr(
        stream: &Arc<CudaStream>,
        offsets: &[u32],
        columns: &[u32],
    ) -> Result<Layout<R>, BackendError> {
        let up = |v: &[u32]| stream.clone_htod(v).check("uploading the matrix pattern");
        Ok(Layout {
            starts: up(offsets)?,
            columns: up(columns)?,
            values: stream
                .alloc_zeros(columns.len())
                .check("allocating the matrix")?,
            sell: None,
            items: offsets.len() - 1,
        })
    }

    fn sell(
        stream: &Arc<CudaStream>,
        offsets: &[u32],
        columns: &[u32],
        sigma: usize,
    ) -> Result<Layout<R>, BackendError> {
        let s = sell(offsets, columns, sigma);
        let up = |v: &[u32]| stream.clone_htod(v).check("uploading a sliced matrix");
        Ok(Layout {
            starts: up(&s.starts)?,
            columns: up(&s.columns)?,
            values: stream
                .alloc_zeros(s.columns.len())
                .check("allocating a sliced matrix")?,
            sell: Some([up(&s.lengths)?, up(&s.rows)?, up(&s.source)?]),
            items: s.rows.len(),
        })
    }
}

/// `Spmv` of kernels/fem_spmv.cu, field for field.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub(crate) struct SpmvArgs {
    starts: CUdeviceptr,
    columns: CUdeviceptr,
    values: CUdeviceptr,
    lengths: CUdeviceptr,
    rows: CUdeviceptr,
    diagonal: CUdeviceptr,
    s: CUdeviceptr,
    pub(crate) status: CUdeviceptr,
    n: i64,
}

// SAFETY: a C struct of device addresses and an integer.
unsafe impl DeviceRepr for SpmvArgs {}

/// One variant, loaded, with its storage.
pub(crate) struct SpmvKernel<R: DeviceReal> {
    product: CudaFunction,
    scale: CudaFunction,
    pub(crate) shape: SpmvShape,
    layout: Arc<Layout<R>>,
}

impl<R: DeviceReal> SpmvKernel<R> {
    /// The arguments for the scaled diagonal `diagonal`, scaling `s` and the solve's status
    /// (0: none, run always).
    pub(crate) fn args(
        &self,
        stream: &CudaStream,
        diagonal: CUdeviceptr,
        s: CUdeviceptr,
        status: CUdeviceptr,
    ) -> SpmvArgs {
        let l = &self.layout;
        let (lengths, rows) = match &l.sell {
            Some([lengths, rows, _]) => (address(lengths, stream), address(rows, stream)),
            None => (0, 0),
        };
        SpmvArgs {
            starts: address(&l.starts, stream),
            columns: address(&l.columns, stream),
            values: address(&l.values, stream),
            lengths,
            rows,
            diagonal,
            s,
            status,
            n: l.items as i64,
        }
    }

    /// Stores the matrix `h` (CSR order) scaled by `args.s` by column, in this layout.
    pub(crate) fn scale(
        &self,
        stream: &CudaStream,
        args: &SpmvArgs,
        h: CUdeviceptr,
    ) -> Result<(), BackendError> {
        let source = match &self.layout.sell {
            Some([_, _, source]) => address(source, stream),
            None => 0,
        };
        let count = self.layout.values.len() as i64;
        let mut launch = stream.launch_builder(&self.scale);
        launch.arg(args).arg(&source).arg(&h).arg(&count);
        // SAFETY: the arguments are the kernel's; every array holds `count` stored entries.
        unsafe { launch.launch(grid(count as usize, self.shape.threads())) }
            .check("launching fem_scale_values")?;
        Ok(())
    }

    /// Queues w = S A S x.
    pub(crate) fn launch(
        &self,
        stream: &CudaStream,
        args: &SpmvArgs,
        x: CUdeviceptr,
        w: CUdeviceptr,
    ) -> Result<(), BackendError> {
        let threads = self.layout.items * self.shape.per_item();
        let mut launch = stream.launch_builder(&self.product);
        launch.arg(args).arg(&x).arg(&w);
        // SAFETY: the arguments are the kernel's; x and w hold one value per row.
        unsafe { launch.launch(grid(threads, self.shape.threads())) }
            .check("launching fem_spmv")?;
        Ok(())
    }
}

/// What timing the variants needs: the pressure matrix (`h`, CSR order, with its scaling
/// and scaled diagonal), a vector `x` and scratch `w` (one value per row).
pub(crate) struct SpmvTuning<'a, R: DeviceReal> {
    pub(crate) device: &'a Device,
    pub(crate) csr: Arc<Layout<R>>,
    pub(crate) offsets: &'a [u32],
    pub(crate) columns: &'a [u32],
    pub(crate) h: CUdeviceptr,
    pub(crate) s: CUdeviceptr,
    pub(crate) diagonal: CUdeviceptr,
    pub(crate) x: CUdeviceptr,
    pub(crate) w: CUdeviceptr,
}

impl<R: DeviceReal> Tunable for SpmvTuning<'_, R> {
    type Shape = SpmvShape;
    type Kernel = SpmvKernel<R>;

    fn what(&self) -> String {
        "pressure matrix-vector product".into()
    }

    fn candidates(&self) -> Result<Vec<SpmvShape>, BackendError> {
        Ok(spmv_candidates())
    }

    fn default_shape(&self) -> SpmvShape {
        DEFAULT_SPMV
    }

    fn build(&self, shape: SpmvShape) -> Build {
        shape.build(R::SCALAR)
    }

    /// Loads the variant with its storage (the CSR one shared), the matrix scaled into it.
    fn load(&self, cubin: Vec<u8>, shape: SpmvShape) -> Result<SpmvKernel<R>, BackendError> {
        let stream = &self.device.stream;
        let module = (self.device.ctx)
            .load_module(Ptx::from_binary(cubin))
            .check("loading a matrix-vector product")?;
        let layout = match shape {
            SpmvShape::Sell { sigma, .. } => Arc::new(Layout::sell(
                stream,
                self.offsets,
                self.columns,
                sigma as usize,
            )?),
            _ => self.csr.clone(),
        };
        let kernel = SpmvKernel {
            product: module.load_function("fem_spmv").check("finding fem_spmv")?,
            scale: module
                .load_function("fem_scale_values")
                .check("finding fem_scale_values")?,
            shape,
            layout,
        };
        let args = kernel.args(stream, self.diagonal, self.s, 0);
        kernel.scale(stream, &args, self.h)?;
        Ok(kernel)
    }

    fn queue(&self, kernel: &SpmvKernel<R>) -> Result<(), BackendError> {
        let stream = &self.device.stream;
        let args = kernel.args(stream, self.diagonal, self.s, 0);
        kernel.launch(stream, &args, self.x, self.w)
    }

    fn nodes(&self) -> usize {
        self.offsets.len() - 1
    }

    fn cache_key(&self) -> String {
        format!(
            "fem pressure spmv | {} rows | {} entries | {:?}",
            self.offsets.len() - 1,
            self.columns.len(),
            R::SCALAR
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_hold_each_row_in_order_and_sorting_keeps_windows() {
        // 40 rows of lengths 1..=3 (row r: r % 3 + 1 entries, columns r, r+1, ...).
        let n = 40u32;
        let mut offsets = vec![0u32];
        let mut columns = Vec::new();
        for r in 0..n {
            columns.extend((0..r % 3 + 1).map(|k| (r + k) % n));
            offsets.push(columns.len() as u32);
        }
        // Stored entries: 32 per slice times its longest row; one window of 1024 sorts the 13
        // rows of 3 entries into the first slice with 19 shorter ones, the second holds rows of 1.
        for (sigma, stored) in [(1, 192), (8, 192), (1024, 128)] {
            let s = sell(&offsets, &columns, sigma);
            assert_eq!(s.rows.len(), 64);
            let mut seen = vec![false; n as usize];
            for (pos, &r) in s.rows.iter().enumerate() {
                if r == NONE {
                    assert!(pos >= n as usize);
                    continue;
                }
                // Sorting only within windows of sigma rows.
                assert_eq!(pos / sigma.min(64), r as usize / sigma.min(64), "σ {sigma}");
                seen[r as usize] = true;
                let base = s.starts[pos / SLICE] as usize + pos % SLICE;
                for k in 0..s.lengths[pos] as usize {
                    let e = offsets[r as usize] as usize + k;
                    assert_eq!(s.source[base + SLICE * k], e as u32);
                    assert_eq!(s.columns[base + SLICE * k], columns[e]);
                }
            }
            assert!(seen.iter().all(|&s| s));
            assert_eq!(*s.starts.last().unwrap(), stored, "σ {sigma}");
        }
    }

    #[test]
    fn candidates_start_with_the_default_and_are_distinct() {
        let c = spmv_candidates();
        assert_eq!(c[0], DEFAULT_SPMV);
        for (i, s) in c.iter().enumerate() {
            assert!(!c[..i].contains(s), "{s} twice");
            assert!(s.threads() % 32 == 0 && s.threads() <= 512, "{s}");
        }
    }
}
