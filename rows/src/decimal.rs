//! Decimals as Python's `str(Decimal)` (= Java's `BigDecimal.toString`) writes them.

/// Appends the text of the decimal `unscaled * 10^-scale`, given `unscaled` as its decimal
/// text (an optional `-`, then digits without leading zeros).
pub fn write_decimal(unscaled: &str, scale: i32, out: &mut Vec<u8>) {
    let (negative, digits) = match unscaled.strip_prefix('-') {
        Some(rest) => (true, rest.as_bytes()),
        None => (false, unscaled.as_bytes()),
    };
    if negative {
        out.push(b'-');
    }
    let exponent = -i64::from(scale);
    let left_digits = exponent + digits.len() as i64;
    // Plain notation when the exponent is not positive and the adjusted exponent is >= -6.
    let dot = if exponent <= 0 && left_digits > -6 {
        left_digits
    } else {
        1
    };
    if dot <= 0 {
        out.extend_from_slice(b"0.");
        out.extend(std::iter::repeat_n(b'0', (-dot) as usize));
        out.extend_from_slice(digits);
    } else if dot as usize >= digits.len() {
        out.extend_from_slice(digits);
        out.extend(std::iter::repeat_n(b'0', dot as usize - digits.len()));
    } else {
        out.extend_from_slice(&digits[..dot as usize]);
        out.push(b'.');
        out.extend_from_slice(&digits[dot as usize..]);
    }
    if left_digits != dot {
        let power = left_digits - dot;
        out.push(b'E');
        out.push(if power < 0 { b'-' } else { b'+' });
        crate::text::write_integer(power.unsigned_abs(), out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(unscaled: &str, scale: i32) -> String {
        let mut out = Vec::new();
        write_decimal(unscaled, scale, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn plain_forms() {
        assert_eq!(text("12345", 2), "123.45");
        assert_eq!(text("-5", 3), "-0.005");
        assert_eq!(text("0", 5), "0.00000");
        assert_eq!(text("7", 0), "7");
        assert_eq!(text("1", 6), "0.000001");
    }

    #[test]
    fn exponent_forms() {
        assert_eq!(text("1", 7), "1E-7");
        assert_eq!(text("0", 10), "0E-10");
        assert_eq!(text("123", -2), "1.23E+4");
        assert_eq!(text("0", -2), "0E+2");
        assert_eq!(text("-12", 9), "-1.2E-8");
    }
}
