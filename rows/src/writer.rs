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
    Struct(Vec<(Head, Column<'a>)>),
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
    #[inline(always)]
    pub fn write(&self, i: usize, out: &mut Vec<u8>) -> Result<()> {
        match &self.kind {
            Kind::Null => out.extend_from_slice(b"null"),
            Kind::Bool(array) => write_bool(array.value(i), out),
            Kind::Int(ints) => write_int(ints, i, out),
            Kind::F32(values) => floats::write_f32(values[i], out),
            Kind::F64(values) => floats::write_f64(values[i], out),
            Kind::Text(texts) => text::write_json_text(texts.at(i)?, texts.bytes.window(i), out),
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
            Head::new(field.name().as_bytes()),
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

#[inline(always)]
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

/// `true` or `false` by one copy of five bytes, cut to the word.
#[inline(always)]
fn write_bool(value: bool, out: &mut Vec<u8>) {
    let (text, len) = if value { (b"true ", 4) } else { (b"false", 5) };
    text::put_cut(out, text, len);
}

fn write_decimal(values: &Decimals<'_>, scale: i32, i: usize, out: &mut Vec<u8>) {
    let mut buffer = itoa::Buffer::new();
    let unscaled = match values {
        Decimals::D32(v) => buffer.format(v[i]),
        Decimals::D64(v) => buffer.format(v[i]),
        // Most 128-bit decimals fit 64 bits, whose text is several times quicker to write.
        Decimals::D128(v) => match i64::try_from(v[i]) {
            Ok(narrow) => buffer.format(narrow),
            Err(_) => buffer.format(v[i]),
        },
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
/// comma, so each member costs one copy), padded so that one fixed-size copy writes it.
pub struct Head {
    padded: Vec<u8>,
    len: usize,
}

impl Head {
    pub fn new(name: &[u8]) -> Head {
        let mut padded = Vec::with_capacity(name.len() + 36);
        padded.push(b',');
        text::write_json_string(name, &mut padded);
        padded.push(b':');
        let len = padded.len();
        padded.resize(len + HEAD_COPY, 0);
        Head { padded, len }
    }

    /// Appends the head from byte `from` (1 skips the comma).
    #[inline]
    fn write(&self, from: usize, out: &mut Vec<u8>) {
        let n = self.len - from;
        if n > HEAD_COPY {
            out.extend_from_slice(&self.padded[from..self.len]);
            return;
        }
        let chunk: &[u8; HEAD_COPY] = self.padded[from..from + HEAD_COPY]
            .try_into()
            .expect("the head is padded");
        text::put_cut(out, chunk, n);
    }
}

/// Bytes of a head's one fixed-size copy (a call to memcpy of a varying length costs more).
const HEAD_COPY: usize = 32;

/// Appends `{"name":value,...}` of row `i` of `fields` (each with its `Head`), null
/// members left out: a struct's value, and a whole row's line.
pub fn write_struct(fields: &[(Head, Column<'_>)], i: usize, out: &mut Vec<u8>) -> Result<()> {
    out.push(b'{');
    let mut comma = 1; // bytes of the head to skip: the comma, until a member is written
    for (head, column) in fields {
        if column.is_null(i) {
            continue;
        }
        head.write(comma, out);
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::builder::{
        ArrayBuilder, Int16Builder, Int64Builder, MapBuilder, StringBuilder,
    };
    use arrow_array::types::Int32Type;
    use arrow_array::{
        ArrayRef, BinaryArray, BooleanArray, Date32Array, Decimal128Array, FixedSizeListArray,
        Float64Array, Int32Array, Int64Array, Int8Array, ListArray, NullArray, RecordBatch,
        StringArray, StructArray, Time32SecondArray, TimestampMicrosecondArray,
        TimestampMillisecondArray, UInt64Array,
    };
    use arrow_buffer::NullBuffer;
    use arrow_schema::{Field, Fields};

    use super::*;
    use crate::line::{column_names, Rows};

    /// Each row's canonical line of `batch`, its columns written under their own names.
    fn lines(batch: &RecordBatch) -> Result<Vec<String>> {
        let names = column_names(batch);
        let raw = vec![false; names.len()];
        let rows = Rows::table(batch, &names, &raw)?;
        let mut out = Vec::new();
        (0..rows.len())
            .map(|i| {
                rows.write(i, &mut out)?;
                Ok(String::from_utf8(out.clone()).expect("a line is UTF-8"))
            })
            .collect()
    }

    /// The text of each value of `array` (`null` for a null), as a list item is written.
    fn texts(array: &dyn Array) -> Result<Vec<String>> {
        let column = Column::new(array, false)?;
        (0..array.len())
            .map(|i| {
                let mut out = Vec::new();
                column.write_or_null(i, &mut out)?;
                Ok(String::from_utf8(out).expect("a value's text is UTF-8"))
            })
            .collect()
    }

    /// Three maps: the entries `fill` appends (all in the first), an empty one and a null one
    /// (at `null_at`, 1 or 2).
    fn three_maps<K: ArrayBuilder, V: ArrayBuilder>(
        mut map: MapBuilder<K, V>,
        fill: impl FnOnce(&mut MapBuilder<K, V>),
        null_at: usize,
    ) -> ArrayRef {
        fill(&mut map);
        for i in 0..3 {
            map.append(i != null_at).unwrap();
        }
        Arc::new(map.finish())
    }

    fn map_of_text_keys() -> ArrayRef {
        let map = MapBuilder::new(None, StringBuilder::new(), Int64Builder::new());
        let fill = |map: &mut MapBuilder<StringBuilder, Int64Builder>| {
            for (key, value) in [("b", Some(1)), ("a", None), ("b", Some(0))] {
                map.keys().append_value(key);
                map.values().append_option(value);
            }
        };
        three_maps(map, fill, 2)
    }

    fn map_of_integer_keys() -> ArrayRef {
        let map = MapBuilder::new(None, Int16Builder::new(), StringBuilder::new());
        let fill = |map: &mut MapBuilder<Int16Builder, StringBuilder>| {
            for (key, value) in [(10, "x"), (-1, "y"), (2, "z")] {
                map.keys().append_value(key);
                map.values().append_value(value);
            }
        };
        three_maps(map, fill, 1)
    }

    fn structs() -> ArrayRef {
        let fields = Fields::from(vec![
            Field::new("x", DataType::Int64, true),
            Field::new("y", DataType::Utf8, true),
        ]);
        let x: ArrayRef = Arc::new(Int64Array::from(vec![Some(1), Some(5), None]));
        let y: ArrayRef = Arc::new(StringArray::from(vec![None, Some("p"), Some("q")]));
        let nulls = NullBuffer::from(vec![true, false, true]);
        Arc::new(StructArray::try_new(fields, vec![x, y], Some(nulls)).unwrap())
    }

    /// One column of every kind the kernel writes, with the lines the Python path (the
    /// specification, `arrow_canonical_lines`) gives for the same table.
    #[test]
    fn every_kind_of_column_is_written_as_the_specification_writes_it() {
        let columns: Vec<(&str, ArrayRef)> = vec![
            (
                "b",
                Arc::new(BooleanArray::from(vec![Some(true), None, Some(false)])),
            ),
            (
                "bin",
                Arc::new(BinaryArray::from(vec![Some(&b"f"[..]), Some(b""), None])),
            ),
            (
                "d",
                Arc::new(Date32Array::from(vec![Some(11_016), None, Some(-719_162)])),
            ),
            (
                "dec",
                Arc::new(
                    Decimal128Array::from(vec![Some(12_345), Some(-5), None])
                        .with_precision_and_scale(10, 2)
                        .unwrap(),
                ),
            ),
            (
                "f",
                Arc::new(Float64Array::from(vec![Some(1.5), None, Some(-0.0)])),
            ),
            (
                "i",
                Arc::new(Int8Array::from(vec![Some(-3), Some(7), None])),
            ),
            (
                "l",
                Arc::new(ListArray::from_iter_primitive::<Int32Type, _, _>(vec![
                    Some(vec![Some(1), None, Some(3)]),
                    Some(vec![]),
                    None,
                ])),
            ),
            ("m", map_of_text_keys()),
            ("mi", map_of_integer_keys()),
            ("n", Arc::new(NullArray::new(3))),
            (
                "s",
                Arc::new(StringArray::from(vec![
                    Some("say \"hi\"\n"),
                    None,
                    Some("é😀"),
                ])),
            ),
            ("st", structs()),
            (
                "tn",
                Arc::new(TimestampMillisecondArray::from(vec![
                    Some(0),
                    Some(1),
                    None,
                ])),
            ),
            (
                "ts",
                Arc::new(
                    TimestampMicrosecondArray::from(vec![Some(0), None, Some(-1)])
                        .with_timezone("UTC"),
                ),
            ),
            ("u", Arc::new(UInt64Array::from(vec![u64::MAX, 0, 1]))),
        ];
        let batch = RecordBatch::try_from_iter(columns).unwrap();
        assert_eq!(
            lines(&batch).unwrap(),
            [
                r#"{"b":true,"bin":"Zg==","d":"2000-02-29","dec":123.45,"f":1.5,"i":-3,"l":[1,null,3],"m":{"a":null,"b":1,"b":0},"mi":{"-1":"y","2":"z","10":"x"},"s":"say \"hi\"\n","st":{"x":1},"tn":"1970-01-01T00:00:00.000000","ts":"1970-01-01T00:00:00.000000Z","u":18446744073709551615}"#,
                r#"{"bin":"","dec":-0.05,"i":7,"l":[],"m":{},"tn":"1970-01-01T00:00:00.001000","u":0}"#,
                r#"{"b":false,"d":"0001-01-01","f":-0.0,"mi":{},"s":"é😀","st":{"y":"q"},"ts":"1969-12-31T23:59:59.999999Z","u":1}"#,
            ]
        );
    }

    #[test]
    fn a_row_of_nulls_is_an_empty_object_and_a_name_is_escaped() {
        let batch = RecordBatch::try_from_iter(vec![
            (
                "a\"b",
                Arc::new(Int32Array::from(vec![None, Some(1)])) as ArrayRef,
            ),
            ("c", Arc::new(StringArray::from(vec![None, Some("x")]))),
        ])
        .unwrap();
        assert_eq!(lines(&batch).unwrap(), [r#"{}"#, r#"{"a\"b":1,"c":"x"}"#]);
    }

    #[test]
    fn sliced_lists_read_their_own_items() {
        let list = ListArray::from_iter_primitive::<Int32Type, _, _>(vec![
            Some(vec![Some(1)]),
            Some(vec![Some(2), Some(3)]),
            Some(vec![]),
            Some(vec![None, Some(4)]),
        ]);
        assert_eq!(
            texts(&list.slice(1, 3)).unwrap(),
            ["[2,3]", "[]", "[null,4]"]
        );
        let fixed = FixedSizeListArray::from_iter_primitive::<Int32Type, _, _>(
            vec![
                Some(vec![Some(1), Some(2)]),
                None,
                Some(vec![Some(5), None]),
            ],
            2,
        );
        assert_eq!(texts(&fixed.slice(1, 2)).unwrap(), ["null", "[5,null]"]);
        let strings = StringArray::from(vec!["skipped", "é", "\u{1}"]);
        assert_eq!(
            texts(&strings.slice(1, 2)).unwrap(),
            ["\"é\"", "\"\\u0001\""]
        );
    }

    #[test]
    fn a_raw_column_is_copied_as_it_is() {
        let written = StringArray::from(vec![Some("[1,2]"), None]);
        let column = Column::new(&written, true).unwrap();
        let mut out = Vec::new();
        column.write(0, &mut out).unwrap();
        assert_eq!(out, b"[1,2]");
        assert!(column.is_null(1));
        let not_text = Int32Array::from(vec![1]);
        assert!(matches!(
            Column::new(&not_text, true),
            Err(KernelError::Unsupported(_))
        ));
    }

    #[test]
    fn a_type_the_kernel_does_not_write_is_unsupported() {
        let times = Time32SecondArray::from(vec![1]);
        assert!(matches!(
            Column::new(&times, false),
            Err(KernelError::Unsupported(text)) if text.contains("Time32")
        ));
    }

    #[test]
    fn names_and_raw_flags_not_one_per_column_are_the_callers_error() {
        let batch = RecordBatch::try_from_iter(vec![(
            "a",
            Arc::new(Int32Array::from(vec![1])) as ArrayRef,
        )])
        .unwrap();
        let one = ["a".to_string()];
        let cases = [
            (
                &one[..0],
                &[false][..],
                "(1 columns), got 0 names and 1 raw flags",
            ),
            (
                &one[..],
                &[][..],
                "(1 columns), got 1 names and 0 raw flags",
            ),
        ];
        for (names, raw, said) in cases {
            match Rows::table(&batch, names, raw) {
                Err(KernelError::Arguments(text)) => assert!(text.ends_with(said), "{text}"),
                Err(other) => panic!("not the caller's error: {other}"),
                Ok(_) => panic!("{} names and {} raw flags taken", names.len(), raw.len()),
            }
        }
    }
}
