//! The Python module `ubunye_rows._kernel`: thin wrappers that import Arrow data, release the
//! GIL and run the kernel.

use arrow_array::RecordBatch;
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::error::{KernelError, Result};
use crate::import::record_batches;
use crate::lanes::{bucket_rows, digest_rows};
use crate::line::Rows;

create_exception!(
    _kernel,
    KernelFallback,
    PyException,
    "The kernel did not hash this data; the Python path does."
);
create_exception!(
    _kernel,
    UnsupportedColumn,
    KernelFallback,
    "A column type the kernel does not write."
);
create_exception!(
    _kernel,
    RefusedValue,
    KernelFallback,
    "A value the kernel will not write; the Python path says why."
);

fn to_py(error: KernelError) -> PyErr {
    match error {
        KernelError::Unsupported(text) => UnsupportedColumn::new_err(text),
        KernelError::Value(text) => RefusedValue::new_err(text),
    }
}

fn check_threads(threads: usize) -> PyResult<usize> {
    if threads == 0 {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "threads must be >= 1",
        ));
    }
    Ok(threads)
}

fn table_rows<'a>(
    batches: &'a [RecordBatch],
    names: &[String],
    raw: &[bool],
) -> Result<Vec<Rows<'a>>> {
    batches
        .iter()
        .map(|batch| Rows::table(batch, names, raw))
        .collect()
}

fn line_rows(batches: &[RecordBatch]) -> Result<Vec<Rows<'_>>> {
    batches.iter().map(Rows::lines).collect()
}

/// Imports `data`, then runs `work` on its batches with the GIL released; the bytes it gives
/// become a Python `bytes`.
fn run_detached(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    threads: usize,
    work: impl FnOnce(&[RecordBatch], usize) -> Result<Vec<u8>> + Send,
) -> PyResult<Py<PyBytes>> {
    let threads = check_threads(threads)?;
    let batches = record_batches(data)?;
    let bytes = py.detach(|| work(&batches, threads)).map_err(to_py)?;
    Ok(PyBytes::new(py, &bytes).unbind())
}

/// Per bucket: rows, lane A and lane B sums of the canonical lines of `data`'s rows, as 768
/// little-endian u64. `names` are the columns' names to write (the columns come sorted by name);
/// `raw[i]` marks a column of value texts the Python path already wrote.
#[pyfunction]
fn table_buckets(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    names: Vec<String>,
    raw: Vec<bool>,
    threads: usize,
) -> PyResult<Py<PyBytes>> {
    run_detached(py, data, threads, |batches, threads| {
        let rows = table_rows(batches, &names, &raw)?;
        Ok(bucket_rows(&rows, threads)?.to_le_bytes())
    })
}

/// Every row's SHA-256 (32 bytes each, in row order) of the canonical lines of `data`.
#[pyfunction]
fn table_digests(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    names: Vec<String>,
    raw: Vec<bool>,
    threads: usize,
) -> PyResult<Py<PyBytes>> {
    run_detached(py, data, threads, |batches, threads| {
        digest_rows(&table_rows(batches, &names, &raw)?, threads)
    })
}

/// Per-bucket sums (as `table_buckets`) of lines already built: the first column of `data`.
#[pyfunction]
fn line_buckets(py: Python<'_>, data: &Bound<'_, PyAny>, threads: usize) -> PyResult<Py<PyBytes>> {
    run_detached(py, data, threads, |batches, threads| {
        Ok(bucket_rows(&line_rows(batches)?, threads)?.to_le_bytes())
    })
}

/// Every line's SHA-256 (as `table_digests`) of lines already built: the first column of `data`.
#[pyfunction]
fn line_digests(py: Python<'_>, data: &Bound<'_, PyAny>, threads: usize) -> PyResult<Py<PyBytes>> {
    run_detached(py, data, threads, |batches, threads| {
        digest_rows(&line_rows(batches)?, threads)
    })
}

/// True when the CPU has the SHA extensions (SHA-NI) the kernel's SHA-256 uses.
#[pyfunction]
fn sha_extensions() -> bool {
    crate::sha_extensions()
}

#[pymodule]
fn _kernel(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(table_buckets, module)?)?;
    module.add_function(wrap_pyfunction!(table_digests, module)?)?;
    module.add_function(wrap_pyfunction!(line_buckets, module)?)?;
    module.add_function(wrap_pyfunction!(line_digests, module)?)?;
    module.add_function(wrap_pyfunction!(sha_extensions, module)?)?;
    let py = module.py();
    module.add("KernelFallback", py.get_type::<KernelFallback>())?;
    module.add("UnsupportedColumn", py.get_type::<UnsupportedColumn>())?;
    module.add("RefusedValue", py.get_type::<RefusedValue>())?;
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
