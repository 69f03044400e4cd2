//! One column's canonical value texts, read straight from its Arrow arrays (nested included).

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Decimal128Type, Decimal256Type, Decimal32Type, Decimal64Type, Float32Type,
    Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type, UInt64Type,
    UInt8Type,
};
use arrow_array::{Array, ArrowPrimitiveType, PrimitiveArray};
use arrow_buffer::NullBuffer;
use arrow_schema::{DataType, TimeUnit};

use crate::error::{KernelError, Result};
use crate::strings::{Bytes, Texts};
use crate::{decimal, floats, temporal, text};

/// A column (or a nested child) ready to write the canonical text of any of its values.
pub struct Column<'a> {
    nulls: Option<NullBuffer>,
    all_null: bool,
    kind: Kind<'a>,
}

enum Kind<'a> {
    Null,
    Bool(&'a arrow_array::BooleanArray),
    Int(Ints<'a>),
    F32(&'a [f32]),
    F64(&'a [f64]),
    Text(Texts<'a>),
    /// Texts already canonical (a column the Python path wrote): copied as they are.
    Raw(Bytes<'a>),
    Binary(Bytes<'a>),
    Date(&'a [i32]),
    Timestamp {
        values: &'a [i64],
        unit: TimeUnit,
        zoned: bool,
    },
    Decimal {
        values: Decimals<'a>,
        scale: i32,
    },
    List {
        offsets: Offsets<'a>,
        items: Box<Column<'a>>,
    },
    Struct(Vec<(Vec<u8>, Column<'a>)>),
    Map {
        offsets: &'a [i32],
        keys: Keys<'a>,
        values: Box<Column<'a>>,
    },
}

enum Ints<'a> {
    I8(&'a [i8]),
    I16(&'a [i16]),
    I32(&'a [i32]),
    I64(&'a [i64]),
    U8(&'a [u8]),
    U16(&'a [u16]),
    U32(&'a [u32]),
    U64(&'a [u64]),
}

enum Decimals<'a> {
    D32(&'a [i32]),
    D64(&'a [i64]),
    D128(&'a [i128]),
    D256(&'a PrimitiveArray<Decimal256Type>),
}

enum Offsets<'a> {
    Narrow(&'a [i32]),
    Wide(&'a [i64]),
    Fixed { size: usize, base: usize },
}

enum Keys<'a> {
    Text(Texts<'a>),
    Signed(Vec<i64>),
    Unsigned(&'a [u64]),
}

fn values<T: ArrowPrimitiveType>(array: &dyn Array) -> &[T::Native] {
    array.as_primitive::<T>().values()
}

impl<'a> Column<'a> {
    /// The writer of `array`'s values; `raw` marks a string column of texts already canonical.
    pub fn new(array: &'a dyn Array, raw: bool) -> Result<Column<'a>> {
        let kind = if raw {
            match array.data_type() {
                DataType::Utf8 => Kind::Raw(Bytes::string(array.as_string::<i32>())),
                DataType::LargeUtf8 => Kind::Raw(Bytes::large_string(array.as_string::<i64>())),
                other => return Err(unsupported(&format!("written texts of type {other}"))),
            }
        } else {
            kind_of(array)?
        };
        let all_null = matches!(kind, Kind::Null);
        Ok(Column {
            nulls: array.logical_nulls(),
            all_null,
            kind,
        })
    }

    /// True when value `i` is null (left out of an object, `null` in a list).
    #[inline]
    pub fn is_null(&self, i: usize) -> bool {
        self.all_null || self.nulls.as_ref().is_some_and(|nulls| nulls.is_null(i))
    }

    /// Appends value `i`'s text, or `null` (as a list item or map value writes a null).
    #[inline]
    fn write_or_null(&self, i: usize, out: &mut Vec<u8>) -> Result<()> {
        if self.is_null(i) {
            out.extend_from_slice(b"null");
            Ok(())
        } else {
            self.write(i, out)
        }
    }

    /// Appends the canonical text of value `i`, which is not null.
    pub fn write(&self, i: usize, out: &mut Vec<u8>) -> Result<()> {
        match &self.kind {
            Kind::Null => out.extend_from_slice(b"null"),
            Kind::Bool(array) => {
                out.extend_from_slice(if array.value(i) { b"true" } else { b"false" })
            }
            Kind::Int(ints) => write_int(ints, i, out),
            Kind::F32(values) => floats::write_f32(values[i], out),
            Kind::F64(values) => floats::write_f64(values[i], out),
            Kind::Text(texts) => text::write_json_string(texts.at(i)?, out),
            Kind::Raw(bytes) => out.extend_from_slice(bytes.at(i)),
            Kind::Binary(bytes) => text::write_base64(bytes.at(i), out),
            Kind::Date(days) => temporal::write_date(i64::from(days[i]), out)?,
            Kind::Timestamp {
                values,
                unit,
                zoned,
            } => temporal::write_micros(temporal::to_micros(values[i], *unit)?, *zoned, out)?,
            Kind::Decimal { values, scale } => write_decimal(values, *scale, i, out),
            Kind::List { offsets, items } => write_list(offsets, items, i, out)?,
            Kind::Struct(fields) => write_struct(fields, i, out)?,
            Kind::Map {
                offsets,
                keys,
                values,
            } => write_map(offsets, keys, values, i, out)?,
        }
        Ok(())
    }
}

fn unsupported(what: &str) -> KernelError {
    KernelError::Unsupported(what.to_string())
}

fn kind_of(array: &dyn Array) -> Result<Kind<'_>> {
    Ok(match array.data_type() {
        DataType::Null => Kind::Null,
        DataType::Boolean => Kind::Bool(array.as_boolean()),
        DataType::Int8 => Kind::Int(Ints::I8(values::<Int8Type>(array))),
        DataType::Int16 => Kind::Int(Ints::I16(values::<Int16Type>(array))),
        DataType::Int32 => Kind::Int(Ints::I32(values::<Int32Type>(array))),
        DataType::Int64 => Kind::Int(Ints::I64(values::<Int64Type>(array))),
        DataType::UInt8 => Kind::Int(Ints::U8(values::<UInt8Type>(array))),
        DataType::UInt16 => Kind::Int(Ints::U16(values::<UInt16Type>(array))),
        DataType::UInt32 => Kind::Int(Ints::U32(values::<UInt32Type>(array))),
        DataType::UInt64 => Kind::Int(Ints::U64(values::<UInt64Type>(array))),
        DataType::Float32 => Kind::F32(values::<Float32Type>(array)),
        DataType::Float64 => Kind::F64(values::<Float64Type>(array)),
        DataType::Utf8 => Kind::Text(Texts::new(Bytes::string(array.as_string::<i32>()))),
        DataType::LargeUtf8 => {
            Kind::Text(Texts::new(Bytes::large_string(array.as_string::<i64>())))
        }
        DataType::Binary => Kind::Binary(Bytes::binary(array.as_binary::<i32>())),
        DataType::LargeBinary => Kind::Binary(Bytes::large_binary(array.as_binary::<i64>())),
        DataType::Date32 => Kind::Date(values::<Date32Type>(array)),
        DataType::Timestamp(unit, zone) => Kind::Timestamp {
            values: timestamp_values(array, *unit),
            unit: *unit,
            zoned: zone.as_deref().is_some_and(|z| !z.is_empty()),
        },
        DataType::Decimal32(_, scale) => {
            decimal_kind(Decimals::D32(values::<Decimal32Type>(array)), *scale)
        }
        DataType::Decimal64(_, scale) => {
            decimal_kind(Decimals::D64(values::<Decimal64Type>(array)), *scale)
        }
        DataType::Decimal128(_, scale) => {
            decimal_kind(Decimals::D128(values::<Decimal128Type>(array)), *scale)
        }
        DataType::Decimal256(_, scale) => {
            decimal_kind(Decimals::D256(array.as_primitive()), *scale)
        }
        DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(_, _) => {
            list_kind(array)?
        }
        DataType::Struct(_) => struct_kind(array)?,
        DataType::Map(_, _) => map_kind(array)?,
        other => return Err(unsupported(&format!("the type {other}"))),
    })
}

fn timestamp_values(array: &dyn Array, unit: TimeUnit) -> &[i64] {
    use arrow_array::types::{
        TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
        TimestampSecondType,
    };
    match unit {
        TimeUnit::Second => values::<TimestampSecondType>(array),
        TimeUnit::Millisecond => values::<TimestampMillisecondType>(array),
        TimeUnit::Microsecond => values::<TimestampMicrosecondType>(array),
        TimeUnit::Nanosecond => values::<TimestampNanosecondType>(array),
    }
}

fn decimal_kind(values: Decimals<'_>, scale: i8) -> Kind<'_> {
    Kind::Decimal {
        values,
        scale: i32::from(scale),
    }
}

fn list_kind(array: &dyn Array) -> Result<Kind<'_>> {
    let (offsets, items) = match array.data_type() {
        DataType::List(_) => {
            let list = array.as_list::<i32>();
            (
                Offsets::Narrow(list.value_offsets()),
                list.values().as_ref(),
            )
        }
        DataType::LargeList(_) => {
            let list = array.as_list::<i64>();
            (Offsets::Wide(list.value_offsets()), list.values().as_ref())
        }
        _ => {
            let list = array.as_fixed_size_list();
            let size = list.value_length() as usize;
            let base = if list.is_empty() {
                0
            } else {
                list.value_offset_at(0)
            };
            (Offsets::Fixed { size, base }, list.values().as_ref())
        }
    };
    Ok(Kind::List {
        offsets,
        items: Box::new(Column::new(items, false)?),
    })
}

fn struct_kind(array: &dyn Array) -> Result<Kind<'_>> {
    let structs = array.as_struct();
    let mut fields = Vec::with_capacity(structs.num_columns());
    for (field, child) in structs.fields().iter().zip(structs.columns()) {
        fields.push((
            member_head(field.name().as_bytes()),
            Column::new(child.as_ref(), false)?,
        ));
    }
    Ok(Kind::Struct(fields))
}

fn map_kind(array: &dyn Array) -> Result<Kind<'_>> {
    let map = array.as_map();
    let keys = map.keys().as_ref();
    if keys.null_count() > 0 {
        return Err(KernelError::Value("a map key is null".to_string()));
    }
    let keys = match keys.data_type() {
        DataType::Utf8 => Keys::Text(Texts::new(Bytes::string(keys.as_string::<i32>()))),
        DataType::LargeUtf8 => Keys::Text(Texts::new(Bytes::large_string(keys.as_string::<i64>()))),
        DataType::Int8 => Keys::Signed(widen(values::<Int8Type>(keys))),
        DataType::Int16 => Keys::Signed(widen(values::<Int16Type>(keys))),
        DataType::Int32 => Keys::Signed(widen(values::<Int32Type>(keys))),
        DataType::Int64 => Keys::Signed(values::<Int64Type>(keys).to_vec()),
        DataType::UInt8 => Keys::Signed(widen(values::<UInt8Type>(keys))),
        DataType::UInt16 => Keys::Signed(widen(values::<UInt16Type>(keys))),
        DataType::UInt32 => Keys::Signed(widen(values::<UInt32Type>(keys))),
        DataType::UInt64 => Keys::Unsigned(values::<UInt64Type>(keys)),
        other => return Err(unsupported(&format!("map keys of type {other}"))),
    };
    Ok(Kind::Map {
        offsets: map.value_offsets(),
        keys,
        values: Box::new(Column::new(map.values().as_ref(), false)?),
    })
}

fn widen<T: Copy + Into<i64>>(values: &[T]) -> Vec<i64> {
    values.iter().map(|&v| v.into()).collect()
}

fn write_int(ints: &Ints<'_>, i: usize, out: &mut Vec<u8>) {
    match ints {
        Ints::I8(v) => text::write_integer(v[i], out),
        Ints::I16(v) => text::write_integer(v[i], out),
        Ints::I32(v) => text::write_integer(v[i], out),
        Ints::I64(v) => text::write_integer(v[i], out),
        Ints::U8(v) => text::write_integer(v[i], out),
        Ints::U16(v) => text::write_integer(v[i], out),
        Ints::U32(v) => text::write_integer(v[i], out),
        Ints::U64(v) => text::write_integer(v[i], out),
    }
}

fn write_decimal(values: &Decimals<'_>, scale: i32, i: usize, out: &mut Vec<u8>) {
    let mut buffer = itoa::Buffer::new();
    let unscaled = match values {
        Decimals::D32(v) => buffer.format(v[i]),
        Decimals::D64(v) => buffer.format(v[i]),
        Decimals::D128(v) => buffer.format(v[i]),
        Decimals::D256(array) => {
            decimal::write_decimal(&array.value(i).to_string(), scale, out);
            return;
        }
    };
    decimal::write_decimal(unscaled, scale, out);
}

fn write_list(
    offsets: &Offsets<'_>,
    items: &Column<'_>,
    i: usize,
    out: &mut Vec<u8>,
) -> Result<()> {
    let (start, end) = match *offsets {
        Offsets::Narrow(o) => (o[i] as usize, o[i + 1] as usize),
        Offsets::Wide(o) => (o[i] as usize, o[i + 1] as usize),
        Offsets::Fixed { size, base } => (base + i * size, base + (i + 1) * size),
    };
    out.push(b'[');
    for item in start..end {
        if item > start {
            out.push(b',');
        }
        items.write_or_null(item, out)?;
    }
    out.push(b']');
    Ok(())
}

/// `,"name":`, the text written before a member's value (the first member written skips the
/// comma, so each member costs one copy).
pub fn member_head(name: &[u8]) -> Vec<u8> {
    let mut head = Vec::with_capacity(name.len() + 4);
    head.push(b',');
    text::write_json_string(name, &mut head);
    head.push(b':');
    head
}

/// Appends `{"name":value,...}` of row `i` of `fields` (each with its `member_head`), null
/// members left out: a struct's value, and a whole row's line.
pub fn write_struct(fields: &[(Vec<u8>, Column<'_>)], i: usize, out: &mut Vec<u8>) -> Result<()> {
    out.push(b'{');
    let mut comma = 1; // bytes of the head to skip: the comma, until a member is written
    for (head, column) in fields {
        if column.is_null(i) {
            continue;
        }
        out.extend_from_slice(&head[comma..]);
        comma = 0;
        column.write(i, out)?;
    }
    out.push(b'}');
    Ok(())
}

fn write_map(
    offsets: &[i32],
    keys: &Keys<'_>,
    values: &Column<'_>,
    i: usize,
    out: &mut Vec<u8>,
) -> Result<()> {
    let mut order: Vec<usize> = (offsets[i] as usize..offsets[i + 1] as usize).collect();
    // A stable sort: entries with equal keys keep their order, as the spec's sorted() does.
    match keys {
        Keys::Text(texts) => order.sort_by(|&x, &y| texts.bytes.at(x).cmp(texts.bytes.at(y))),
        Keys::Signed(v) => order.sort_by_key(|&x| v[x]),
        Keys::Unsigned(v) => order.sort_by_key(|&x| v[x]),
    }
    out.push(b'{');
    for (n, &entry) in order.iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        match keys {
            Keys::Text(texts) => text::write_json_string(texts.at(entry)?, out),
            Keys::Signed(v) => write_quoted_integer(v[entry], out),
            Keys::Unsigned(v) => write_quoted_integer(v[entry], out),
        }
        out.push(b':');
        values.write_or_null(entry, out)?;
    }
    out.push(b'}');
    Ok(())
}

fn write_quoted_integer<I: itoa::Integer>(value: I, out: &mut Vec<u8>) {
    out.push(b'"');
    text::write_integer(value, out);
    out.push(b'"');
}
