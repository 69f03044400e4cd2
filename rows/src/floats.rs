//! Doubles and floats as Java's `Double.toString` / `Float.toString` write them (rows-v1).
//!
//! The digits are the shortest that read back (zmij), laid out as Java does: plain decimals for
//! 1e-3 <= |x| < 1e7, else `d.dddE<n>`; where the shortest form has a single digit, Java writes
//! the nearest two-digit decimal that still reads back (`4.9E-324`). NaN and the infinities are
//! JSON strings. The Python path (`canonical.py`) is the specification this module follows.

use std::io::Write;

const PLAIN_LOW: f64 = 1e-3;
const PLAIN_HIGH: f64 = 1e7;

/// Significant digits (no leading or trailing zeros) and the decimal point's place:
/// the value is `0.<digits> * 10^point`.
struct Shortest {
    digits: [u8; 24],
    len: usize,
    point: i32,
}

impl Shortest {
    /// Reads a positive number's text as zmij or Rust's `{:e}` writes it (`123.45`, `1e-7`,
    /// `4.9e-324`).
    fn parse(text: &str) -> Shortest {
        let (mantissa, exponent) = match text.split_once('e') {
            Some((m, e)) => (m, e.parse::<i32>().expect("an exponent is an integer")),
            None => (text, 0),
        };
        let whole = mantissa.split('.').next().unwrap_or("");
        let mut shortest = Shortest {
            digits: [0; 24],
            len: 0,
            point: whole.len() as i32 + exponent,
        };
        for &byte in mantissa.as_bytes().iter().filter(|b| b.is_ascii_digit()) {
            if shortest.len == 0 && byte == b'0' {
                shortest.point -= 1; // a leading zero moves the point, not the digits
                continue;
            }
            shortest.digits[shortest.len] = byte;
            shortest.len += 1;
        }
        while shortest.len > 1 && shortest.digits[shortest.len - 1] == b'0' {
            shortest.len -= 1;
        }
        if shortest.len == 0 {
            shortest.digits[0] = b'0';
            shortest.len = 1;
        }
        shortest
    }

    fn digits(&self) -> &[u8] {
        &self.digits[..self.len]
    }
}

/// Appends a float64 value's canonical text.
pub fn write_f64(x: f64, out: &mut Vec<u8>) {
    if let Some(text) = special_text(x) {
        out.extend_from_slice(text);
        return;
    }
    let mut buffer = zmij::Buffer::new();
    if (PLAIN_LOW..PLAIN_HIGH).contains(&x.abs()) {
        match hundredths(x) {
            Some(n) => write_hundredths(n, out),
            // zmij writes this range as Java does: positional, ".0" after a whole number.
            None => crate::text::put(out, buffer.format_finite(x).as_bytes()),
        }
        return;
    }
    let magnitude = x.abs();
    let shortest = Shortest::parse(buffer.format_finite(magnitude));
    write_java(magnitude, shortest, x.is_sign_negative(), out, |near| {
        near.parse::<f64>().ok() == Some(magnitude)
    });
}

/// `x * 100` when `x` (in the plain range) is the double nearest a decimal of at most two
/// places, as amounts of money are. That decimal is then `x`'s shortest round-trip text: any
/// other decimal that reads back as `x` lies within half an ulp (under 1e-9 here) of it, so it
/// has more places, hence more digits.
#[inline]
fn hundredths(x: f64) -> Option<i64> {
    // Adding and taking away 1.5 * 2^52 rounds to a whole number (|x * 100| < 2^51 here)
    // without a call to libm's round().
    const ROUND: f64 = 6_755_399_441_055_744.0;
    let n = (x * 100.0 + ROUND) - ROUND;
    (n / 100.0 == x).then_some(n as i64)
}

/// The eight decimal digits of `n` (below 10^8), most significant first, as ASCII in a
/// little-endian word, without a division loop: each lane splits in two by a multiply and a
/// shift (x / 100 = x * 10486 >> 20 below 10^4, x / 10 = x * 103 >> 10 below 100). Also the
/// digits as numbers (0 to 9 per byte), whose trailing zero bits count the leading zeros.
#[inline]
fn eight_digits(n: u32) -> (u64, u64) {
    let n = u64::from(n);
    let fours = (n / 10_000) | ((n % 10_000) << 32);
    let hundreds = ((fours * 10_486) >> 20) & 0x0000_007F_0000_007F;
    let pairs = hundreds | ((fours - hundreds * 100) << 16);
    let tens = ((pairs * 103) >> 10) & 0x000F_000F_000F_000F;
    let digits = tens | ((pairs - tens * 10) << 8);
    (digits + 0x3030_3030_3030_3030, digits)
}

/// Appends `n / 100` as Java writes it: the whole part, then one or two places (`12.0`,
/// `12.3`, `-0.05`). Built in one register without a branch on the digits (their count is
/// what varies from value to value, and a branch on it mispredicts), stored at once.
#[inline]
fn write_hundredths(n: i64, out: &mut Vec<u8>) {
    let magnitude = n.unsigned_abs(); // below 1e9 in the plain range: a whole part below 1e7
    let (whole, part) = ((magnitude / 100) as u32, (magnitude % 100) as u8);
    let (ascii, digits) = eight_digits(whole);
    let leading_zeros = (digits.trailing_zeros() / 8).min(7) as usize;
    let count = 8 - leading_zeros;
    let (tens, ones) = (part / 10, part % 10);
    let places = [b'.', b'0' + tens, b'0' + ones];
    let text = u128::from(ascii >> (8 * leading_zeros))
        | (u128::from(u32::from_le_bytes([places[0], places[1], places[2], 0])) << (8 * count));
    let len = count + 2 + usize::from(ones != 0);
    let negative = usize::from(n < 0);
    let text = (text << (8 * negative)) | (u128::from(b'-') * negative as u128);
    let start = out.len();
    out.extend_from_slice(&text.to_le_bytes());
    out.truncate(start + len + negative);
}

/// Appends a float32 value's canonical text (Java's `Float.toString`).
pub fn write_f32(x: f32, out: &mut Vec<u8>) {
    if let Some(text) = special_text(f64::from(x)) {
        out.extend_from_slice(text);
        return;
    }
    let mut buffer = zmij::Buffer::new();
    if (PLAIN_LOW..PLAIN_HIGH).contains(&f64::from(x.abs())) {
        out.extend_from_slice(buffer.format_finite(x).as_bytes());
        return;
    }
    let magnitude = x.abs();
    let shortest = Shortest::parse(buffer.format_finite(magnitude));
    // The spec reads the two-digit candidate as a double, then rounds it to a float.
    write_java(
        f64::from(magnitude),
        shortest,
        x.is_sign_negative(),
        out,
        |near| near.parse::<f64>().ok().map(|v| v as f32) == Some(magnitude),
    );
}

/// The text of NaN, the infinities and the zeros; `None` for every other value.
fn special_text(x: f64) -> Option<&'static [u8]> {
    if x.is_nan() {
        Some(b"\"NaN\"")
    } else if x.is_infinite() {
        Some(if x > 0.0 {
            b"\"Infinity\""
        } else {
            b"\"-Infinity\""
        })
    } else if x == 0.0 {
        Some(if x.is_sign_negative() {
            b"-0.0"
        } else {
            b"0.0"
        })
    } else {
        None
    }
}

/// Java's `d.dddE<n>` of a value outside the plain range, from its shortest digits.
fn write_java(
    magnitude: f64,
    shortest: Shortest,
    negative: bool,
    out: &mut Vec<u8>,
    reads_back: impl Fn(&str) -> bool,
) {
    if negative {
        out.push(b'-');
    }
    let mut digits = shortest.digits().to_vec();
    let mut power = shortest.point - 1;
    if digits.len() == 1 {
        // Java writes at least two digits: the nearest two-digit decimal, when it reads back.
        let near = format!("{magnitude:.1e}");
        if reads_back(&near) {
            let two = Shortest::parse(&near);
            digits = two.digits().to_vec();
            power = two.point - 1;
        }
    }
    out.push(digits[0]);
    out.push(b'.');
    if digits.len() > 1 {
        out.extend_from_slice(&digits[1..]);
    } else {
        out.push(b'0');
    }
    out.push(b'E');
    write!(out, "{power}").expect("writing to a Vec cannot fail");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn double(x: f64) -> String {
        let mut out = Vec::new();
        write_f64(x, &mut out);
        String::from_utf8(out).unwrap()
    }

    fn single(x: f32) -> String {
        let mut out = Vec::new();
        write_f32(x, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn plain_range() {
        assert_eq!(double(1.0), "1.0");
        assert_eq!(double(-1.5), "-1.5");
        assert_eq!(double(0.001), "0.001");
        assert_eq!(double(9999999.0), "9999999.0");
        assert_eq!(double(123.456), "123.456");
        assert_eq!(double(0.1 + 0.2), "0.30000000000000004");
    }

    /// The plain range's text as zmij writes it, the path every value took before amounts of
    /// two places had their own.
    fn zmij_text(x: f64) -> String {
        zmij::Buffer::new().format_finite(x).to_string()
    }

    #[test]
    fn amounts_of_two_places_are_written_as_zmij_writes_them() {
        let mut state = 20_261_206u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..200_000 {
            let cents = (next() % 2_000_000_000) as i64 - 1_000_000_000;
            for x in [cents as f64 / 100.0, (cents % 100_000) as f64 / 100.0] {
                if x != 0.0 && (PLAIN_LOW..PLAIN_HIGH).contains(&x.abs()) {
                    assert_eq!(double(x), zmij_text(x), "{cents} hundredths");
                }
            }
            let other = f64::from_bits(next() >> 2) % 1e7;
            if other != 0.0 && other >= PLAIN_LOW {
                assert_eq!(double(other), zmij_text(other), "{other:e}");
            }
        }
        for x in [
            0.01,
            0.1,
            0.5,
            1.0,
            9_999_999.99,
            1234.5,
            -0.05,
            100.07,
            0.29,
            1.005,
        ] {
            assert_eq!(double(x), zmij_text(x), "{x}");
        }
    }

    #[test]
    fn eight_digits_of_every_number_below_ten_to_the_eighth_as_formatting_writes_them() {
        let step = if cfg!(debug_assertions) { 97 } else { 1 };
        for n in (0..100_000_000u32)
            .step_by(step)
            .chain([99_999_999, 10_000_000, 9_999])
        {
            let (ascii, digits) = eight_digits(n);
            assert_eq!(ascii.to_le_bytes(), *format!("{n:08}").as_bytes(), "{n}");
            assert_eq!(digits + 0x3030_3030_3030_3030, ascii);
        }
    }

    #[test]
    fn scientific_outside_the_plain_range() {
        assert_eq!(double(1e7), "1.0E7");
        assert_eq!(double(1e-4), "1.0E-4");
        assert_eq!(double(1.2345e-7), "1.2345E-7");
        assert_eq!(double(f64::MAX), "1.7976931348623157E308");
        assert_eq!(double(1e300), "1.0E300");
    }

    #[test]
    fn java_two_digit_rule_for_subnormals() {
        assert_eq!(double(5e-324), "4.9E-324");
        assert_eq!(double(1e-323), "9.9E-324");
        assert_eq!(double(-5e-324), "-4.9E-324");
    }

    #[test]
    fn specials() {
        assert_eq!(double(f64::NAN), "\"NaN\"");
        assert_eq!(double(f64::NEG_INFINITY), "\"-Infinity\"");
        assert_eq!(double(-0.0), "-0.0");
        assert_eq!(single(0.0), "0.0");
    }

    #[test]
    fn floats_at_their_own_precision() {
        assert_eq!(single(0.1), "0.1");
        assert_eq!(single(1e10), "1.0E10");
        assert_eq!(single(f32::MAX), "3.4028235E38");
        assert_eq!(single(f32::from_bits(1)), "1.4E-45");
    }
}
