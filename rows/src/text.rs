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

/// True for a byte JSON text escapes: below 0x20, the quote and the backslash.
#[inline(always)]
fn needs_escaping(byte: u8) -> bool {
    byte < 0x20 || byte == b'"' || byte == b'\\'
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// The eight bytes of `word` (little-endian) with the high bit set in each byte that may need an
/// escape: below 0x20, '"' or '\\' (the classic "has a zero byte" tests). A byte is flagged
/// wrongly only above a byte rightly flagged, so "none flagged" is exact.
#[inline(always)]
fn flagged_bytes(word: &[u8]) -> u64 {
    let v = u64::from_le_bytes(word.try_into().expect("8 bytes"));
    let zero_byte = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    let below = v.wrapping_sub(ONES * 0x20) & !v & HIGH;
    below | zero_byte(v ^ (ONES * 0x22)) | zero_byte(v ^ (ONES * 0x5C))
}

/// True when some byte of `text` needs an escape, eight bytes at a time (most text needs none).
#[inline]
fn needs_escape(text: &[u8]) -> bool {
    let mut words = text.chunks_exact(8);
    if words.by_ref().any(|word| flagged_bytes(word) != 0) {
        return true;
    }
    if text.len() >= 8 {
        // The last eight bytes as one word (some read twice): no byte-by-byte tail.
        return flagged_bytes(&text[text.len() - 8..]) != 0;
    }
    words.remainder().iter().any(|&b| needs_escaping(b))
}

/// True when one of the first `len` (at most 32) bytes of `window` needs an escape: four words,
/// no branch on the length. A flagged byte at or past `len` is masked out; the word tests can
/// flag a byte wrongly only above a byte rightly flagged, so the answer is exact.
#[inline]
fn window_needs_escape(window: &[u8; 32], len: usize) -> bool {
    let mut flagged = 0;
    for (k, word) in window.chunks_exact(8).enumerate() {
        let bad = flagged_bytes(word);
        let kept = len.saturating_sub(8 * k).min(8) as u32;
        let mask = u64::MAX.checked_shr(64 - 8 * kept).unwrap_or(0);
        flagged |= bad & mask;
    }
    flagged != 0
}

/// Appends `text` (valid UTF-8) as a JSON string literal, as `write_json_string` does, given
/// `window`: the 32 bytes from the text's start where its buffer holds them. A text of at most
/// 32 bytes with nothing to escape is then one fixed-size copy.
#[inline]
pub fn write_json_text(text: &[u8], window: Option<&[u8; 32]>, out: &mut Vec<u8>) {
    match window {
        Some(window) if text.len() <= 32 && !window_needs_escape(window, text.len()) => {
            out.reserve(34);
            out.push(b'"');
            let start = out.len();
            out.extend_from_slice(window);
            out.truncate(start + text.len());
            out.push(b'"');
        }
        _ => write_json_string(text, out),
    }
}

/// Appends `text` (valid UTF-8) as a JSON string literal, quotes included.
#[inline]
pub fn write_json_string(text: &[u8], out: &mut Vec<u8>) {
    if !needs_escape(text) {
        out.reserve(text.len() + 2);
        out.push(b'"');
        put(out, text);
        out.push(b'"');
        return;
    }
    write_escaped(text, out);
}

/// `write_json_string` of a text with something to escape (kept apart: rare in most columns).
/// The bytes between escapes are found eight at a time and copied as runs.
#[inline(never)]
fn write_escaped(text: &[u8], out: &mut Vec<u8>) {
    out.reserve(text.len() + 8);
    out.push(b'"');
    let mut written = 0; // bytes of `text` already in `out`
    let mut at = 0;
    while at + 8 <= text.len() {
        let flagged = flagged_bytes(&text[at..at + 8]);
        if flagged == 0 {
            at += 8;
            continue;
        }
        // The lowest flagged byte is always one to escape (see `flagged_bytes`).
        let special = at + (flagged.trailing_zeros() / 8) as usize;
        put(out, &text[written..special]);
        write_escape(text[special], out);
        written = special + 1;
        at = written;
    }
    for (special, &byte) in text.iter().enumerate().skip(at) {
        if needs_escaping(byte) {
            put(out, &text[written..special]);
            write_escape(byte, out);
            written = special + 1;
        }
    }
    put(out, &text[written..]);
    out.push(b'"');
}

/// Appends the escape of `byte`, one that needs one.
#[inline]
fn write_escape(byte: u8, out: &mut Vec<u8>) {
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
}

/// Appends `bytes`. Those of 4 to 32 bytes go as two overlapping fixed-size copies: a call to
/// memcpy branches on the length, which mispredicts on values of varying length.
#[inline(always)]
pub fn put(out: &mut Vec<u8>, bytes: &[u8]) {
    let n = bytes.len();
    if !(4..=32).contains(&n) {
        out.extend_from_slice(bytes);
        return;
    }
    let start = out.len();
    out.extend_from_slice(&[0u8; 32]);
    let to = &mut out[start..start + 32];
    if n >= 16 {
        to[..16].copy_from_slice(&bytes[..16]);
        to[n - 16..n].copy_from_slice(&bytes[n - 16..]);
    } else if n >= 8 {
        to[..8].copy_from_slice(&bytes[..8]);
        to[n - 8..n].copy_from_slice(&bytes[n - 8..]);
    } else {
        to[..4].copy_from_slice(&bytes[..4]);
        to[n - 4..n].copy_from_slice(&bytes[n - 4..]);
    }
    out.truncate(start + n);
}

/// Appends the first `len` bytes of `padded` by one copy of all its `N` bytes, then a cut: a copy
/// of a varying length is a call to memcpy.
#[inline(always)]
pub fn put_cut<const N: usize>(out: &mut Vec<u8>, padded: &[u8; N], len: usize) {
    let start = out.len();
    out.extend_from_slice(padded);
    out.truncate(start + len);
}

/// Appends an integer's decimal text.
#[inline]
pub fn write_integer<I: itoa::Integer>(value: I, out: &mut Vec<u8>) {
    let mut buffer = itoa::Buffer::new();
    put(out, buffer.format(value).as_bytes());
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
            for len in 1..20 {
                for at in 0..len {
                    let mut text = vec![b'a'; len];
                    text[at] = special;
                    assert!(needs_escape(&text), "{special} at {at} of {len}");
                    assert!(!needs_escape(&text[..at]), "{at} plain bytes");
                }
            }
        }
        assert!(!needs_escape("plain text, é and 😀 too ~".as_bytes()));
    }

    #[test]
    fn a_window_is_judged_as_its_text_alone() {
        for special in [b'"', b'\\', 0x00, 0x1f, 0x20, b'a', 0xC3] {
            for at in 0..32 {
                let mut window = [b'z'; 32];
                window[at] = special;
                window[(at + 7) % 32] = b'"'; // a byte to escape elsewhere, past some lengths
                for len in 0..=32 {
                    let text = &window[..len];
                    assert_eq!(
                        window_needs_escape(&window, len),
                        needs_escape(text),
                        "{special} at {at}, {len} bytes"
                    );
                    let (mut by_window, mut alone) = (Vec::new(), Vec::new());
                    write_json_text(text, Some(&window), &mut by_window);
                    write_json_string(text, &mut alone);
                    assert_eq!(by_window, alone);
                }
            }
        }
    }

    /// The escaped text, one byte at a time: what the word-at-a-time writer must match.
    fn escaped_bytewise(text: &[u8]) -> Vec<u8> {
        let mut out = vec![b'"'];
        for &byte in text {
            match escape_of(byte) {
                Some(escape) => out.extend_from_slice(escape),
                None if byte < 0x20 => out.extend_from_slice(format!("\\u{byte:04X}").as_bytes()),
                None => out.push(byte),
            }
        }
        out.push(b'"');
        out
    }

    #[test]
    fn escapes_are_found_at_every_place_in_and_across_words() {
        for special in [b'"', b'\\', 0x00, 0x08, 0x0A, 0x1f] {
            for len in 1..40 {
                for at in 0..len {
                    for second in [None, Some((at + 1) % len), Some((at + 9) % len)] {
                        let mut text: Vec<u8> = (0..len).map(|k| b'a' + (k % 26) as u8).collect();
                        text[at] = special;
                        if let Some(other) = second {
                            text[other] = b'\\';
                        }
                        let mut out = Vec::new();
                        write_json_string(&text, &mut out);
                        assert_eq!(out, escaped_bytewise(&text), "{special} at {at} of {len}");
                    }
                }
            }
        }
    }

    #[test]
    fn unicode_and_delete_are_raw() {
        assert_eq!(json("é😀\u{7f}\u{2028}"), "\"é😀\u{7f}\u{2028}\"");
    }

    #[test]
    fn put_appends_every_length_whole() {
        let source: Vec<u8> = (0..40).map(|b| b'a' + b % 26).collect();
        for n in 0..=40 {
            let mut out = b"head".to_vec();
            put(&mut out, &source[..n]);
            assert_eq!(&out[..4], b"head");
            assert_eq!(&out[4..], &source[..n], "{n} bytes");
        }
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
