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

    /// The bytes of value `i`, checked to be UTF-8.
    #[inline]
    pub fn text_at(&self, i: usize) -> Result<&'a [u8]> {
        let bytes = self.at(i);
        match std::str::from_utf8(bytes) {
            Ok(_) => Ok(bytes),
            Err(error) => Err(KernelError::Value(format!(
                "a string value is not valid UTF-8: {error}"
            ))),
        }
    }
}
