//! Dates and timestamps as rows-v1 writes them: `"yyyy-MM-dd"` and
//! `"yyyy-MM-ddTHH:mm:ss.ffffff"` (+ `Z` for an instant), years 1 to 9999 only.

use arrow_schema::TimeUnit;

use crate::text::put_cut;

/// Days from 0001-01-01 to 1970-01-01, and the last day rows-v1 writes (9999-12-31).
const FIRST_DAY: i64 = -719_162;
const LAST_DAY: i64 = 2_932_896;
const MICROS_PER_DAY: i64 = 86_400_000_000;

/// A value rows-v1 cannot write; the caller hands the table to the Python path, which
/// reports it in its own words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutOfRange(pub String);

/// (year, month, day) of a day number counted from 1970-01-01 (proleptic Gregorian), for the
/// days rows-v1 writes (`FIRST_DAY..=LAST_DAY`).
fn civil_from_days(days: i64) -> (u32, u32, u32) {
    // Neri and Schneider's Euclidean affine calendar (2021): unsigned 32-bit arithmetic whose
    // divisions by constants compile to multiplications. Days are shifted by 82 eras of 400
    // years so that every day from year 1 on is a positive count from 0000-03-01.
    const ERAS: u32 = 82;
    const SHIFT: u32 = 719_468 + 146_097 * ERAS;
    let n = (days as i32 as u32).wrapping_add(SHIFT);
    let n1 = 4 * n + 3;
    let century = n1 / 146_097;
    let n2 = (n1 % 146_097) | 3;
    let p2 = 2_939_745u64 * u64::from(n2);
    let year_of_century = (p2 >> 32) as u32;
    let day_of_year = (p2 as u32) / 2_939_745 / 4;
    let n3 = 2141 * day_of_year + 197_913;
    let (month, day) = (n3 >> 16, (n3 & 0xFFFF) / 2141 + 1);
    let january_or_february = day_of_year >= 306;
    let year = 100 * century + year_of_century + u32::from(january_or_february) - 400 * ERAS;
    let month = if january_or_february {
        month - 12
    } else {
        month
    };
    (year, month, day)
}

/// "00" to "99": two digits per lookup instead of a division per digit.
pub(crate) const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// Puts `value` (below 100) as two digits at `at`.
#[inline]
fn put_pair(text: &mut [u8], at: usize, value: u32) {
    let from = 2 * value as usize;
    text[at..at + 2].copy_from_slice(&PAIRS[from..from + 2]);
}

/// Refuses a day number outside the years 1 to 9999.
#[inline]
fn check_day(days: i64) -> Result<(), OutOfRange> {
    if (FIRST_DAY..=LAST_DAY).contains(&days) {
        Ok(())
    } else {
        Err(OutOfRange(format!(
            "day {days} since 1970 is outside the years 1 to 9999"
        )))
    }
}

/// Puts `yyyy-MM-dd` of a day number (checked) at the start of `text`, in place: built on the
/// stack and copied, the ten bytes cost store-forwarding stalls.
#[inline]
fn put_day(text: &mut [u8], days: i64) {
    let (year, month, day) = civil_from_days(days);
    put_pair(text, 0, year / 100);
    put_pair(text, 2, year % 100);
    put_pair(text, 5, month);
    put_pair(text, 8, day);
}

/// Appends a date (days since 1970) as `"yyyy-MM-dd"`.
#[inline]
pub fn write_date(days: i64, out: &mut Vec<u8>) -> Result<(), OutOfRange> {
    check_day(days)?;
    let start = out.len();
    out.extend_from_slice(b"\"0000-00-00\"");
    put_day(&mut out[start + 1..start + 11], days);
    Ok(())
}

/// A timestamp in `unit` as microseconds since 1970, sub-microseconds floored.
pub fn to_micros(value: i64, unit: TimeUnit) -> Result<i64, OutOfRange> {
    let scaled = match unit {
        TimeUnit::Second => value.checked_mul(1_000_000),
        TimeUnit::Millisecond => value.checked_mul(1000),
        TimeUnit::Microsecond => Some(value),
        TimeUnit::Nanosecond => Some(value.div_euclid(1000)),
    };
    scaled.ok_or_else(|| OutOfRange(format!("timestamp {value} {unit:?} overflows microseconds")))
}

/// Appends microseconds since 1970 as `"yyyy-MM-ddTHH:mm:ss.ffffff"`, with `Z` when `zoned`.
#[inline]
pub fn write_micros(micros: i64, zoned: bool, out: &mut Vec<u8>) -> Result<(), OutOfRange> {
    let days = micros.div_euclid(MICROS_PER_DAY);
    check_day(days)?;
    let rest = micros.rem_euclid(MICROS_PER_DAY);
    let (seconds, fraction) = ((rest / 1_000_000) as u32, (rest % 1_000_000) as u32);
    let start = out.len();
    // Both forms padded to one size: one fixed-size copy whichever is written.
    let (template, len) = if zoned {
        (b"\"0000-00-00T00:00:00.000000Z\"\0\0\0", 29)
    } else {
        (b"\"0000-00-00T00:00:00.000000\"\0\0\0\0", 28)
    };
    put_cut(out, template, len);
    let text = &mut out[start..start + 27];
    put_day(&mut text[1..11], days);
    put_pair(text, 12, seconds / 3600);
    put_pair(text, 15, seconds / 60 % 60);
    put_pair(text, 18, seconds % 60);
    put_pair(text, 21, fraction / 10_000);
    put_pair(text, 23, fraction / 100 % 100);
    put_pair(text, 25, fraction % 100);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn micros(value: i64, zoned: bool) -> String {
        let mut out = Vec::new();
        write_micros(value, zoned, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    fn date(days: i64) -> Result<String, OutOfRange> {
        let mut out = Vec::new();
        write_date(days, &mut out)?;
        Ok(String::from_utf8(out).unwrap())
    }

    #[test]
    fn dates_at_both_ends() {
        assert_eq!(date(0).unwrap(), "\"1970-01-01\"");
        assert_eq!(date(FIRST_DAY).unwrap(), "\"0001-01-01\"");
        assert_eq!(date(LAST_DAY).unwrap(), "\"9999-12-31\"");
        assert_eq!(date(11_016).unwrap(), "\"2000-02-29\"");
        assert!(date(FIRST_DAY - 1).is_err());
        assert!(date(LAST_DAY + 1).is_err());
    }

    #[test]
    fn every_day_of_the_years_1_to_9999_against_counting_days() {
        let month_length = |year: u32, month: u32| match month {
            2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
            2 => 28,
            4 | 6 | 9 | 11 => 30,
            _ => 31,
        };
        let (mut year, mut month, mut day) = (1, 1, 1);
        for days in FIRST_DAY..=LAST_DAY {
            assert_eq!(civil_from_days(days), (year, month, day), "day {days}");
            day += 1;
            if day > month_length(year, month) {
                (day, month) = (1, month + 1);
                if month > 12 {
                    (month, year) = (1, year + 1);
                }
            }
        }
        assert_eq!((year, month, day), (10_000, 1, 1));
    }

    #[test]
    fn timestamps_with_and_without_zone() {
        assert_eq!(micros(0, true), "\"1970-01-01T00:00:00.000000Z\"");
        assert_eq!(micros(-1, false), "\"1969-12-31T23:59:59.999999\"");
        let last = (LAST_DAY + 1) * MICROS_PER_DAY - 1;
        assert_eq!(micros(last, true), "\"9999-12-31T23:59:59.999999Z\"");
        assert_eq!(
            micros(FIRST_DAY * MICROS_PER_DAY, false),
            "\"0001-01-01T00:00:00.000000\""
        );
    }

    #[test]
    fn nanoseconds_floor() {
        assert_eq!(to_micros(-1, TimeUnit::Nanosecond).unwrap(), -1);
        assert_eq!(to_micros(1999, TimeUnit::Nanosecond).unwrap(), 1);
        assert!(to_micros(i64::MAX, TimeUnit::Second).is_err());
    }
}
