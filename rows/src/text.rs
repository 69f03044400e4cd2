//! JSON text of strings, integers and binary values, written as Jackson writes them.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;

const HEX_UPPER: &[u8; 16] = b"0123456789ABCDEF";

/// The escape of one byte, or `None` when the byte is written as it is.
///
/// Jackson escapes the quote and the backslash, writes five short forms, and `\u00XX` with
/// upper-case hex for every other control character; everything else (UTF-8 included) is raw.
#[inline]
fn escape_of(byte: u8) -> Option<&'static [u8]> {
    match byte {
        b'"' => Some(b"\\\""),
        b'\\' => Some(b"\\\\"),
        0x08 => Some(b"\\b"),
        0x09 => Some(b"\\t"),
        0x0A => Some(b"\\n"),
        0x0C => Some(b"\\f"),
        0x0D => Some(b"\\r"),
        _ => None,
    }
}

/// True when some byte of `text` needs an escape, eight bytes at a time (most text needs none).
#[inline]
fn needs_escape(text: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // The classic "has a zero byte" tests: a byte below 0x20, or equal to '"' or '\\'.
    let zero_byte = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    let mut words = text.chunks_exact(8);
    for word in &mut words {
        let v = u64::from_le_bytes(word.try_into().expect("8 bytes"));
        let below = v.wrapping_sub(ONES * 0x20) & !v & HIGH;
        if below | zero_byte(v ^ (ONES * 0x22)) | zero_byte(v ^ (ONES * 0x5C)) != 0 {
            return true;
        }
    }
    words
        .remainder()
        .iter()
        .any(|&b| b < 0x20 || b == b'"' || b == b'\\')
}

/// Appends `text` (valid UTF-8) as a JSON string literal, quotes included.
pub fn write_json_string(text: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    if !needs_escape(text) {
        out.extend_from_slice(text);
        out.push(b'"');
        return;
    }
    let mut start = 0;
    for (i, &byte) in text.iter().enumerate() {
        if byte >= 0x20 && byte != b'"' && byte != b'\\' {
            continue;
        }
        out.extend_from_slice(&text[start..i]);
        match escape_of(byte) {
            Some(escape) => out.extend_from_slice(escape),
            None => out.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX_UPPER[(byte >> 4) as usize],
                HEX_UPPER[(byte & 0xF) as usize],
            ]),
        }
        start = i + 1;
    }
    out.extend_from_slice(&text[start..]);
    out.push(b'"');
}

/// Appends an integer's decimal text.
#[inline]
pub fn write_integer<I: itoa::Integer>(value: I, out: &mut Vec<u8>) {
    let mut buffer = itoa::Buffer::new();
    out.extend_from_slice(buffer.format(value).as_bytes());
}

/// Appends bytes as standard base64 (with padding) in quotes.
pub fn write_base64(bytes: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    let start = out.len();
    out.resize(start + bytes.len().div_ceil(3) * 4, 0);
    let written = STANDARD
        .encode_slice(bytes, &mut out[start..])
        .expect("the output was sized for the whole encoding");
    out.truncate(start + written);
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(text: &str) -> String {
        let mut out = Vec::new();
        write_json_string(text.as_bytes(), &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn short_escapes_and_specials() {
        assert_eq!(json("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(json("\u{8}\t\n\u{c}\r"), r#""\b\t\n\f\r""#);
    }

    #[test]
    fn other_controls_are_upper_case_hex() {
        assert_eq!(json("\u{1}\u{1f}\u{b}"), r#""\u0001\u001F\u000B""#);
    }

    #[test]
    fn every_position_of_a_special_byte_is_found() {
        for special in [b'"', b'\\', 0x00, 0x1f] {
            for at in 0..19 {
                let mut text = vec![b'a'; 19];
                text[at] = special;
                assert!(needs_escape(&text), "{special} at {at}");
            }
        }
        assert!(!needs_escape("plain text, é and 😀 too ~".as_bytes()));
    }

    #[test]
    fn unicode_and_delete_are_raw() {
        assert_eq!(json("é😀\u{7f}\u{2028}"), "\"é😀\u{7f}\u{2028}\"");
    }

    #[test]
    fn integers() {
        let mut out = Vec::new();
        write_integer(i64::MIN, &mut out);
        out.push(b' ');
        write_integer(u64::MAX, &mut out);
        assert_eq!(out, b"-9223372036854775808 18446744073709551615");
    }

    #[test]
    fn base64_with_padding() {
        for (raw, text) in [
            (&b""[..], "\"\""),
            (b"f", "\"Zg==\""),
            (b"foob", "\"Zm9vYg==\""),
        ] {
            let mut out = Vec::new();
            write_base64(raw, &mut out);
            assert_eq!(String::from_utf8(out).unwrap(), text);
        }
    }
}
