//! Byte access to Arrow's string and binary arrays (32- and 64-bit offsets), without trusting
//! the producer's UTF-8.

use arrow_array::{BinaryArray, LargeBinaryArray, LargeStringArray, StringArray};

use crate::error::{KernelError, Result};

/// The offsets and data of a string or binary array, either offset width.
#[derive(Clone, Copy)]
pub enum Bytes<'a> {
    Narrow(&'a [i32], &'a [u8]),
    Wide(&'a [i64], &'a [u8]),
}

impl<'a> Bytes<'a> {
    pub fn string(array: &'a StringArray) -> Self {
        Bytes::Narrow(array.value_offsets(), array.value_data())
    }

    pub fn large_string(array: &'a LargeStringArray) -> Self {
        Bytes::Wide(array.value_offsets(), array.value_data())
    }

    pub fn binary(array: &'a BinaryArray) -> Self {
        Bytes::Narrow(array.value_offsets(), array.value_data())
    }

    pub fn large_binary(array: &'a LargeBinaryArray) -> Self {
        Bytes::Wide(array.value_offsets(), array.value_data())
    }

    /// The bytes of value `i`.
    #[inline]
    pub fn at(&self, i: usize) -> &'a [u8] {
        match *self {
            Bytes::Narrow(offsets, data) => &data[offsets[i] as usize..offsets[i + 1] as usize],
            Bytes::Wide(offsets, data) => &data[offsets[i] as usize..offsets[i + 1] as usize],
        }
    }

    /// The data bytes from the first value's start to the last value's end.
    fn span(&self) -> &'a [u8] {
        match *self {
            Bytes::Narrow(offsets, data) => span(data, offsets.first(), offsets.last()),
            Bytes::Wide(offsets, data) => span(data, offsets.first(), offsets.last()),
        }
    }
}

fn span<'a, O: Copy + TryInto<usize>>(
    data: &'a [u8],
    first: Option<&O>,
    last: Option<&O>,
) -> &'a [u8] {
    let at = |o: Option<&O>| o.and_then(|&v| v.try_into().ok()).unwrap_or(0);
    let (start, end) = (at(first), at(last));
    data.get(start..end).unwrap_or(&[])
}

/// The values of a string array, read as UTF-8 checked once for the whole column where it can.
#[derive(Clone, Copy)]
pub struct Texts<'a> {
    pub bytes: Bytes<'a>,
    /// The whole span is valid UTF-8: a value is then valid exactly when both its ends fall on
    /// character boundaries, a check of two bytes instead of a pass over the value.
    span_valid: bool,
    /// Where the span ends in the data buffer.
    span_end: usize,
}

impl<'a> Texts<'a> {
    pub fn new(bytes: Bytes<'a>) -> Self {
        let span_end = match bytes {
            Bytes::Narrow(offsets, _) => offsets.last().map_or(0, |&o| o as usize),
            Bytes::Wide(offsets, _) => offsets.last().map_or(0, |&o| o as usize),
        };
        Texts {
            bytes,
            span_valid: std::str::from_utf8(bytes.span()).is_ok(),
            span_end,
        }
    }

    /// The bytes of value `i`, checked to be UTF-8.
    #[inline]
    pub fn at(&self, i: usize) -> Result<&'a [u8]> {
        let value = self.bytes.at(i);
        let valid = if self.span_valid {
            value.first().is_none_or(|&b| !is_continuation(b)) && self.ends_on_boundary(i)
        } else {
            std::str::from_utf8(value).is_ok()
        };
        if valid {
            Ok(value)
        } else {
            Err(KernelError::Value(
                "a string value is not valid UTF-8".to_string(),
            ))
        }
    }

    /// True when the byte after value `i` (if any, within the span) starts a character.
    #[inline]
    fn ends_on_boundary(&self, i: usize) -> bool {
        let (end, data) = match self.bytes {
            Bytes::Narrow(offsets, data) => (offsets[i + 1] as usize, data),
            Bytes::Wide(offsets, data) => (offsets[i + 1] as usize, data),
        };
        end == self.span_end || data.get(end).is_none_or(|&b| !is_continuation(b))
    }
}

#[inline]
fn is_continuation(byte: u8) -> bool {
    byte & 0xC0 == 0x80
}
