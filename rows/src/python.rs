//! The Python module `ubunye_rows._kernel`: thin wrappers that import Arrow data, release the
//! GIL and run the kernel. No panic crosses into Python: each is caught here and raised as
//! `KernelPanic`, a `KernelFallback`, so the Python path hashes the data. Its typing stub is
//! `ubunye_rows/_kernel.pyi`.

use arrow_array::RecordBatch;
use arrow_schema::Schema;
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::error::{catch_panic, KernelError, Result};
use crate::import::record_batches;
use crate::lanes::{bucket_rows, digest_rows};
use crate::line::{check_members, Rows};

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
create_exception!(
    _kernel,
    KernelPanic,
    KernelFallback,
    "The kernel panicked (a bug in it, caught before it reached Python); the Python path hashes the data."
);

fn to_py(error: KernelError) -> PyErr {
    match error {
        KernelError::Unsupported(text) => UnsupportedColumn::new_err(text),
        KernelError::Value(text) => RefusedValue::new_err(text),
        KernelError::Arguments(text) => PyValueError::new_err(text),
        KernelError::Panic(text) => KernelPanic::new_err(text),
    }
}

fn check_threads(threads: usize) -> PyResult<usize> {
    if threads == 0 {
        return Err(PyValueError::new_err("threads must be >= 1"));
    }
    Ok(threads)
}

/// The lines of every batch, once `names` and `raw` are known to fit the schema (checked on the
/// schema too, so that data without a batch refuses them as well).
fn table_rows<'a>(
    schema: &Schema,
    batches: &'a [RecordBatch],
    names: &[String],
    raw: &[bool],
) -> Result<Vec<Rows<'a>>> {
    check_members(schema.fields().len(), names, raw)?;
    batches
        .iter()
        .map(|batch| Rows::table(batch, names, raw))
        .collect()
}

fn line_rows(batches: &[RecordBatch]) -> Result<Vec<Rows<'_>>> {
    batches.iter().map(Rows::lines).collect()
}

/// Imports `data`, then runs `work` on its schema and batches with the GIL released; the bytes
/// it gives become a Python `bytes`. A panic in either step is raised as `KernelPanic`.
fn run_detached(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    threads: usize,
    work: impl FnOnce(&Schema, &[RecordBatch], usize) -> Result<Vec<u8>> + Send,
) -> PyResult<Py<PyBytes>> {
    let threads = check_threads(threads)?;
    let (schema, batches) = catch_panic(|| record_batches(data)).map_err(to_py)??;
    let bytes = py
        .detach(|| catch_panic(|| work(&schema, &batches, threads)))
        .and_then(|done| done)
        .map_err(to_py)?;
    Ok(PyBytes::new(py, &bytes).unbind())
}

/// What a hash gives back, named by the `output` argument of `hash_table` and `hash_lines`.
#[derive(Clone, Copy)]
enum Output {
    /// Per bucket: rows, lane A and lane B sums, as 768 little-endian u64.
    Buckets,
    /// Every row's SHA-256, 32 bytes each, in row order.
    Digests,
}

impl Output {
    fn parse(name: &str) -> PyResult<Self> {
        match name {
            "buckets" => Ok(Output::Buckets),
            "digests" => Ok(Output::Digests),
            _ => Err(PyValueError::new_err(format!(
                "output must be 'buckets' or 'digests', not {name:?}"
            ))),
        }
    }

    fn of(self, rows: &[Rows<'_>], threads: usize) -> Result<Vec<u8>> {
        match self {
            Output::Buckets => Ok(bucket_rows(rows, threads)?.to_le_bytes()),
            Output::Digests => digest_rows(rows, threads),
        }
    }
}

/// The `output` (`"buckets"` or `"digests"`) of the canonical lines of `data`'s rows. `names`
/// are the columns' names to write (the columns come sorted by name); `raw[i]` marks a column
/// of value texts the Python path already wrote.
#[pyfunction]
fn hash_table(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    names: Vec<String>,
    raw: Vec<bool>,
    output: &str,
    threads: usize,
) -> PyResult<Py<PyBytes>> {
    let output = Output::parse(output)?;
    run_detached(py, data, threads, |schema, batches, threads| {
        output.of(&table_rows(schema, batches, &names, &raw)?, threads)
    })
}

/// The `output` (as `hash_table`) of lines already built: the first column of `data`.
#[pyfunction]
fn hash_lines(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    output: &str,
    threads: usize,
) -> PyResult<Py<PyBytes>> {
    let output = Output::parse(output)?;
    run_detached(py, data, threads, |_, batches, threads| {
        output.of(&line_rows(batches)?, threads)
    })
}

/// Test only, not part of the API: imports `data`, then panics on one of the kernel's `threads`
/// hash threads, as a bug in the writer would, so that tests see the panic arrive as
/// `KernelPanic` and the Python path answer.
#[pyfunction]
fn _panic_for_test(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    threads: usize,
) -> PyResult<Py<PyBytes>> {
    run_detached(py, data, threads, |_, batches, threads| {
        let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
        crate::lanes::pool(threads)
            .install(|| panic!("a test's panic on a hash thread ({rows} rows)"))
    })
}

/// True when the CPU has the SHA extensions (SHA-NI) the kernel's SHA-256 uses.
#[pyfunction]
fn sha_extensions() -> bool {
    crate::sha_extensions()
}

#[pymodule]
fn _kernel(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(hash_table, module)?)?;
    module.add_function(wrap_pyfunction!(hash_lines, module)?)?;
    module.add_function(wrap_pyfunction!(sha_extensions, module)?)?;
    module.add_function(wrap_pyfunction!(_panic_for_test, module)?)?;
    let py = module.py();
    module.add("KernelFallback", py.get_type::<KernelFallback>())?;
    module.add("UnsupportedColumn", py.get_type::<UnsupportedColumn>())?;
    module.add("RefusedValue", py.get_type::<RefusedValue>())?;
    module.add("KernelPanic", py.get_type::<KernelPanic>())?;
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
