//! A row's canonical line: a JSON object of the columns in the order given (the caller sorts
//! them by name), null members left out.

use arrow_array::RecordBatch;

use crate::error::{KernelError, Result};
use crate::strings::Bytes;
use crate::writer::{write_struct, Column, Head};

/// Refuses `names` and `raw` unless they give one name and one flag to each of `columns`
/// columns: a caller's bug, never a reason to hand the table to the Python path.
pub fn check_members(columns: usize, names: &[String], raw: &[bool]) -> Result<()> {
    if names.len() == columns && raw.len() == columns {
        return Ok(());
    }
    Err(KernelError::Arguments(format!(
        "expected one name and one raw flag per column of the data ({columns} columns), got {} \
         names and {} raw flags",
        names.len(),
        raw.len()
    )))
}

/// The names of `batch`'s columns in their order: the names to write them under when the
/// caller has no others (tests, benches).
pub fn column_names(batch: &RecordBatch) -> Vec<String> {
    batch
        .schema()
        .fields()
        .iter()
        .map(|field| field.name().clone())
        .collect()
}

/// What each row of a batch is hashed as.
pub enum Rows<'a> {
    /// Canonical lines built from the batch's columns.
    Table {
        members: Vec<(Head, Column<'a>)>,
        rows: usize,
    },
    /// Lines already built (one string column): hashed as they are.
    Lines(Bytes<'a>, usize),
}

impl<'a> Rows<'a> {
    /// The lines of `batch`, whose columns are written under `names`; `raw[i]` marks a column
    /// of texts the Python path already wrote.
    pub fn table(batch: &'a RecordBatch, names: &[String], raw: &[bool]) -> Result<Rows<'a>> {
        check_members(batch.num_columns(), names, raw)?;
        let mut members = Vec::with_capacity(names.len());
        for ((name, column), &is_raw) in names.iter().zip(batch.columns()).zip(raw) {
            members.push((
                Head::new(name.as_bytes()),
                Column::new(column.as_ref(), is_raw)?,
            ));
        }
        Ok(Rows::Table {
            members,
            rows: batch.num_rows(),
        })
    }

    /// The lines held in the first column of `batch` (string, no nulls).
    pub fn lines(batch: &'a RecordBatch) -> Result<Rows<'a>> {
        use arrow_array::cast::AsArray;
        use arrow_schema::DataType;

        let column = batch
            .columns()
            .first()
            .ok_or_else(|| KernelError::Value("no column of lines".to_string()))?;
        if column.null_count() > 0 {
            return Err(KernelError::Value(
                "a canonical line is never null".to_string(),
            ));
        }
        let bytes = match column.data_type() {
            DataType::Utf8 => Bytes::string(column.as_string::<i32>()),
            DataType::LargeUtf8 => Bytes::large_string(column.as_string::<i64>()),
            other => return Err(KernelError::Unsupported(format!("lines of type {other}"))),
        };
        Ok(Rows::Lines(bytes, batch.num_rows()))
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn len(&self) -> usize {
        match self {
            Rows::Table { rows, .. } | Rows::Lines(_, rows) => *rows,
        }
    }

    /// Replaces `out` with row `i`'s line.
    #[inline]
    pub fn write(&self, i: usize, out: &mut Vec<u8>) -> Result<()> {
        out.clear();
        match self {
            Rows::Lines(bytes, _) => out.extend_from_slice(bytes.at(i)),
            Rows::Table { members, .. } => write_struct(members, i, out)?,
        }
        Ok(())
    }
}
