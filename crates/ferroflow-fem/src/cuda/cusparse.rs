//! cuSPARSE's SpMV on the solver's pressure matrix, for the benchmark's comparison only (the
//! solver never uses it: its sums would not be the CPU's). cuSPARSE takes the whole scaled
//! matrix S A S in CSR with 32-bit indices, the diagonal among each row's entries, in the
//! solver's precision.
use super::DeviceReal;
use cudarc::cusparse::sys as cs;
use ferroflow_core::BackendError;
use ferroflow_cuda::cudarc::driver::{CudaSlice, CudaStream};
use ferroflow_cuda::{address, median, Check, Device, Scalar, Timer};
use std::ffi::c_void;

fn ptr<T>(v: &CudaSlice<T>, stream: &CudaStream) -> *mut c_void {
    address(v, stream) as *mut c_void
}

fn failed(op: &str, e: cs::cusparseStatus_t) -> BackendError {
    BackendError::Driver {
        backend: "cuda",
        op: format!("cuSPARSE: {op}"),
        message: format!("{e:?}"),
    }
}

/// Checks a cuSPARSE status.
fn ok(op: &str, status: cs::cusparseStatus_t) -> Result<(), BackendError> {
    status.result().map_err(|e| failed(op, e.0))
}

/// The rows of S A S: per row its off-diagonal entries (`offsets`, `columns`, values `h`) and
/// the diagonal `diagonal`, scaled by `s` on both sides, in column order.
fn full_matrix<R: DeviceReal>(
    offsets: &[u32],
    columns: &[u32],
    h: &[R],
    diagonal: &[R],
    s: &[R],
) -> (Vec<i32>, Vec<i32>, Vec<R>) {
    let n = diagonal.len();
    let (mut rows, mut cols, mut vals) = (vec![0i32], Vec::new(), Vec::new());
    for i in 0..n {
        let r = offsets[i] as usize..offsets[i + 1] as usize;
        let at = r.start + columns[r.clone()].partition_point(|&c| (c as usize) < i);
        for e in r.start..at {
            cols.push(columns[e] as i32);
            vals.push(s[i] * h[e] * s[columns[e] as usize]);
        }
        cols.push(i as i32);
        vals.push(s[i] * diagonal[i] * s[i]);
        for e in at..r.end {
            cols.push(columns[e] as i32);
            vals.push(s[i] * h[e] * s[columns[e] as usize]);
        }
        rows.push(cols.len() as i32);
    }
    (rows, cols, vals)
}

/// cuSPARSE's name of the values' type `R`.
fn data_type<R: DeviceReal>() -> cs::cudaDataType {
    match R::SCALAR {
        Scalar::F64 => cs::cudaDataType::CUDA_R_64F,
        Scalar::F32 => cs::cudaDataType::CUDA_R_32F,
    }
}

/// Median seconds of cuSPARSE's SpMV (its default algorithm) of S A S in precision `R`,
/// samples of `launches` products after a warm-up.
pub(crate) fn time_spmv<R: DeviceReal>(
    device: &Device,
    offsets: &[u32],
    columns: &[u32],
    h: &[R],
    diagonal: &[R],
    s: &[R],
    launches: usize,
) -> Result<f64, BackendError> {
    // SAFETY: only tries to open the library by its names.
    if !unsafe { cs::is_culib_present() } {
        return Err(BackendError::Unavailable {
            backend: "cuda",
            reason: "no cuSPARSE: libcusparse.so.13 is not on the loader path".into(),
        });
    }
    let stream = &device.stream;
    let n = diagonal.len();
    let (rows, cols, vals) = full_matrix(offsets, columns, h, diagonal, s);
    let what = "uploading for cuSPARSE";
    let rows = stream.clone_htod(&rows).check(what)?;
    let cols = stream.clone_htod(&cols).check(what)?;
    let vals = stream.clone_htod(&vals).check(what)?;
    let x = stream.clone_htod(&vec![R::one(); n]).check(what)?;
    let y = stream
        .alloc_zeros::<R>(n)
        .check("allocating for cuSPARSE")?;
    let (alpha, beta, real) = (R::one(), R::zero(), data_type::<R>());
    let timer = Timer::new(device)?;
    // SAFETY: the descriptors point to the device arrays above, which outlive them; every
    // handle and descriptor is destroyed before returning.
    unsafe {
        let handle = cudarc::cusparse::result::create().map_err(|e| failed("create", e.0))?;
        let mut matrix = std::ptr::null_mut();
        let mut vx = std::ptr::null_mut();
        let mut vy = std::ptr::null_mut();
        let nnz = vals.len() as i64;
        let result = (|| -> Result<f64, BackendError> {
            ok(
                "set stream",
                cs::cusparseSetStream(handle, stream.cu_stream() as _),
            )?;
            ok(
                "create CSR",
                cs::cusparseCreateCsr(
                    &mut matrix,
                    n as i64,
                    n as i64,
                    nnz,
                    ptr(&rows, stream),
                    ptr(&cols, stream),
                    ptr(&vals, stream),
                    cs::cusparseIndexType_t::CUSPARSE_INDEX_32I,
                    cs::cusparseIndexType_t::CUSPARSE_INDEX_32I,
                    cs::cusparseIndexBase_t::CUSPARSE_INDEX_BASE_ZERO,
                    real,
                ),
            )?;
            for (v, values) in [(&mut vx, &x), (&mut vy, &y)] {
                let values = ptr(values, stream);
                let created = cs::cusparseCreateDnVec(v, n as i64, values, real);
                ok("create a vector", created)?;
            }
            let op = cs::cusparseOperation_t::CUSPARSE_OPERATION_NON_TRANSPOSE;
            let alg = cs::cusparseSpMVAlg_t::CUSPARSE_SPMV_ALG_DEFAULT;
            let one = (&alpha as *const R).cast();
            let zero = (&beta as *const R).cast();
            let mut size = 0usize;
            ok(
                "buffer size",
                cs::cusparseSpMV_bufferSize(
                    handle, op, one, matrix, vx, zero, vy, real, alg, &mut size,
                ),
            )?;
            let buffer = stream
                .alloc_zeros::<u8>(size.max(1))
                .check("allocating for cuSPARSE")?;
            let buf = ptr(&buffer, stream);
            let product = || {
                ok(
                    "SpMV",
                    cs::cusparseSpMV(handle, op, one, matrix, vx, zero, vy, real, alg, buf),
                )
            };
            let sample = || timer.seconds(stream, || (0..launches).try_for_each(|_| product()));
            sample()?;
            let times = (0..7).map(|_| sample()).collect::<Result<Vec<f64>, _>>()?;
            Ok(median(times) / launches as f64)
        })();
        if !vx.is_null() {
            cs::cusparseDestroyDnVec(vx);
        }
        if !vy.is_null() {
            cs::cusparseDestroyDnVec(vy);
        }
        if !matrix.is_null() {
            cs::cusparseDestroySpMat(matrix);
        }
        let _ = cudarc::cusparse::result::destroy(handle);
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_full_matrix_puts_the_diagonal_in_column_order() {
        // Two rows: row 0 has column 1, row 1 has column 0; s = (1, 2).
        let (rows, cols, vals) =
            full_matrix(&[0, 1, 2], &[1, 0], &[-1.0, -1.0], &[3.0, 4.0], &[1.0, 2.0]);
        assert_eq!(rows, [0, 2, 4]);
        assert_eq!(cols, [0, 1, 0, 1]);
        assert_eq!(vals, [3.0, -2.0, -2.0, 16.0]);
    }
}
