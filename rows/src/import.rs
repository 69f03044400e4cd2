//! The FFI edge: Arrow data from any Python producer through the PyCapsule protocol
//! (`__arrow_c_stream__`, or `__arrow_c_array__` for one batch), without a copy.

use arrow_array::ffi::{from_ffi, FFI_ArrowArray, FFI_ArrowSchema};
use arrow_array::ffi_stream::{FFI_ArrowArrayStream, RecordBatchStreamReader};
use arrow_array::{make_array, Array, RecordBatch, RecordBatchReader, StructArray};
use arrow_schema::SchemaRef;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyCapsuleMethods, PyTuple};

fn arrow_error(error: arrow_schema::ArrowError) -> PyErr {
    PyValueError::new_err(format!("cannot read the Arrow data: {error}"))
}

/// The schema and every record batch of `data`: a table, a record batch reader, a record
/// batch, or any object with `__arrow_c_stream__` / `__arrow_c_array__` over a struct (columns)
/// type. The schema is there even when no batch is.
pub fn record_batches(data: &Bound<'_, PyAny>) -> PyResult<(SchemaRef, Vec<RecordBatch>)> {
    if data.hasattr("__arrow_c_stream__")? {
        let capsule = data.call_method0("__arrow_c_stream__")?;
        let capsule = capsule.cast::<PyCapsule>()?;
        let pointer = capsule.pointer_checked(Some(c"arrow_array_stream"))?;
        // SAFETY: by the PyCapsule protocol a capsule named "arrow_array_stream" holds a valid
        // ArrowArrayStream. from_raw moves the stream out and marks the capsule's copy released,
        // so the capsule's destructor will not release it a second time.
        let stream = unsafe { FFI_ArrowArrayStream::from_raw(pointer.as_ptr().cast()) };
        let reader = RecordBatchStreamReader::try_new(stream).map_err(arrow_error)?;
        let schema = reader.schema();
        let batches = reader.collect::<Result<Vec<_>, _>>().map_err(arrow_error)?;
        return Ok((schema, batches));
    }
    if data.hasattr("__arrow_c_array__")? {
        let pair = data.call_method0("__arrow_c_array__")?;
        let pair = pair.cast::<PyTuple>()?;
        let schema_capsule = pair.get_item(0)?;
        let array_capsule = pair.get_item(1)?;
        let schema_pointer = schema_capsule
            .cast::<PyCapsule>()?
            .pointer_checked(Some(c"arrow_schema"))?;
        let array_pointer = array_capsule
            .cast::<PyCapsule>()?
            .pointer_checked(Some(c"arrow_array"))?;
        // SAFETY: the capsule named "arrow_schema" holds a valid ArrowSchema that lives as long as
        // the capsule, which `schema_capsule` keeps alive until after the import below; it is
        // only read, never released here.
        let schema = unsafe { &*schema_pointer.as_ptr().cast::<FFI_ArrowSchema>() };
        // SAFETY: the capsule named "arrow_array" holds a valid ArrowArray; from_raw moves it out
        // and marks the capsule's copy released, so it is released exactly once.
        let array = unsafe { FFI_ArrowArray::from_raw(array_pointer.as_ptr().cast()) };
        // SAFETY: `array` and `schema` come from the same producer call, so they describe the
        // same data, as from_ffi requires.
        let data = unsafe { from_ffi(array, schema) }.map_err(arrow_error)?;
        let array = make_array(data);
        let columns = array
            .as_any()
            .downcast_ref::<StructArray>()
            .ok_or_else(|| PyTypeError::new_err("expected Arrow data with columns (a struct)"))?;
        let batch = RecordBatch::from(columns.clone());
        return Ok((batch.schema(), vec![batch]));
    }
    Err(PyTypeError::new_err(format!(
        "expected Arrow data (__arrow_c_stream__ or __arrow_c_array__), not {}",
        data.get_type().name()?
    )))
}
