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
    #[inline(always)]
    pub fn at(&self, i: usize) -> &'a [u8] {
        match *self {
            Bytes::Narrow(offsets, data) => &data[offsets[i] as usize..offsets[i + 1] as usize],
            Bytes::Wide(offsets, data) => &data[offsets[i] as usize..offsets[i + 1] as usize],
        }
    }

    /// The 32 data bytes from value `i`'s start, when the buffer holds them (a window the
    /// writer copies whole, then cuts to the value).
    #[inline(always)]
    pub fn window(&self, i: usize) -> Option<&'a [u8; 32]> {
        let (start, data) = match *self {
            Bytes::Narrow(offsets, data) => (offsets[i] as usize, data),
            Bytes::Wide(offsets, data) => (offsets[i] as usize, data),
        };
        data.get(start..start + 32)?.try_into().ok()
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
    #[inline(always)]
    pub fn at(&self, i: usize) -> Result<&'a [u8]> {
        let value = self.bytes.at(i);
        // An empty value placed inside a character (between a null's cut bytes) fails the
        // two-byte check yet is valid: a value failing it is checked in full, so the answer is
        // always that of checking the value alone.
        let whole_characters = self.span_valid
            && value.first().is_none_or(|&b| !is_continuation(b))
            && self.ends_on_boundary(i);
        if whole_characters || std::str::from_utf8(value).is_ok() {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// What `Texts` says of each value of the data cut at `offsets`: its bytes, or `None`.
    fn read<'a>(bytes: Bytes<'a>, values: usize) -> Vec<Option<&'a [u8]>> {
        let texts = Texts::new(bytes);
        (0..values).map(|i| texts.at(i).ok()).collect()
    }

    /// What a check of each value on its own says (the slow path's answer).
    fn each_checked<'a>(data: &'a [u8], offsets: &[i64]) -> Vec<Option<&'a [u8]>> {
        offsets
            .windows(2)
            .map(|w| &data[w[0] as usize..w[1] as usize])
            .map(|value| std::str::from_utf8(value).is_ok().then_some(value))
            .collect()
    }

    #[test]
    fn a_valid_span_still_refuses_a_value_cut_inside_a_character() {
        let data = "é".as_bytes(); // 0xC3 0xA9
        let texts = Texts::new(Bytes::Narrow(&[0, 1, 2], data));
        assert!(texts.span_valid);
        assert!(texts.at(0).is_err(), "ends inside the character");
        assert!(texts.at(1).is_err(), "starts on a continuation byte");
        assert_eq!(Texts::new(Bytes::Narrow(&[0, 2], data)).at(0), Ok(data));
    }

    #[test]
    fn every_cut_of_valid_text_is_judged_as_a_check_of_each_value_judges_it() {
        let data = "aé😀€\u{7f}b".as_bytes();
        let n = data.len() as i64;
        for first in 0..=n {
            for second in first..=n {
                let offsets = [0, first, second, n];
                let narrow: Vec<i32> = offsets.iter().map(|&o| o as i32).collect();
                let expected = each_checked(data, &offsets);
                assert_eq!(
                    read(Bytes::Narrow(&narrow, data), 3),
                    expected,
                    "{offsets:?}"
                );
                assert_eq!(
                    read(Bytes::Wide(&offsets, data), 3),
                    expected,
                    "{offsets:?}"
                );
            }
        }
    }

    #[test]
    fn an_invalid_span_checks_each_value_on_its_own() {
        let data = b"ok\xFFfine\xC3";
        let offsets = [0, 2, 3, 7, 8];
        let texts = Texts::new(Bytes::Wide(&offsets, data));
        assert!(!texts.span_valid);
        assert_eq!(
            read(Bytes::Wide(&offsets, data), 4),
            each_checked(data, &offsets)
        );
        assert_eq!(texts.at(0), Ok(&b"ok"[..]));
        assert_eq!(texts.at(2), Ok(&b"fine"[..]));
    }

    #[test]
    fn a_slice_is_checked_over_its_own_span_only() {
        // A slice of an array: the values before and after its span are not read, and the
        // continuation byte just past the span's end does not make its last value invalid.
        let data = b"\xFFab\xC3\xA9\xA9";
        let offsets = [1, 2, 5];
        let texts = Texts::new(Bytes::Narrow(&offsets, data));
        assert!(texts.span_valid);
        assert_eq!(texts.at(0), Ok(&b"a"[..]));
        assert_eq!(texts.at(1), Ok("bé".as_bytes()));
    }

    #[test]
    fn an_empty_array_and_empty_values_are_valid() {
        assert!(read(Bytes::Narrow(&[], b""), 0).is_empty());
        assert_eq!(read(Bytes::Narrow(&[0, 0, 0], b""), 2), [Some(&b""[..]); 2]);
        let data = "é".as_bytes();
        // Between the two halves of a character (each a null's bytes, never read as text).
        assert_eq!(
            read(Bytes::Narrow(&[0, 1, 1, 2], data), 3),
            [None, Some(&b""[..]), None]
        );
        assert_eq!(
            read(Bytes::Wide(&[0, 0, 2, 2], data), 3),
            [Some(&b""[..]), Some(data), Some(&b""[..])]
        );
    }
}
