//! Calendar dates without a date crate: enough for `expires` and reports.

/// `YYYY-MM-DD` of a Unix time (UTC), without a date crate.
pub fn civil_date(unix_secs: u64) -> String {
    // Howard Hinnant's days-from-civil, inverted.
    let z = (unix_secs / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

/// `YYYY-MM-DDTHH:MM:SSZ` (ISO 8601, UTC) of a Unix time in nanoseconds.
pub fn iso_datetime(unix_ns: u64) -> String {
    let secs = unix_ns / 1_000_000_000;
    let (hour, minute, second) = (secs % 86_400 / 3600, secs % 3600 / 60, secs % 60);
    format!("{}T{hour:02}:{minute:02}:{second:02}Z", civil_date(secs))
}

/// Serializes a Unix time in nanoseconds as [`iso_datetime`].
pub fn serialize_iso<S: serde::Serializer>(unix_ns: &u64, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&iso_datetime(*unix_ns))
}

/// Whether `text` starts with a real calendar date `YYYY-MM-DD` (so
/// `2024-13-45` and `2023-02-29` are not), followed by nothing, or by a
/// time after `T` or a space.
pub fn is_date_prefix(text: &str) -> bool {
    let b = text.as_bytes();
    let digits = |range: std::ops::Range<usize>| {
        b.get(range.clone()).filter(|d| d.iter().all(u8::is_ascii_digit)).map(|_| text[range].parse::<u32>())
    };
    let (Some(Ok(year)), Some(Ok(month)), Some(Ok(day))) = (digits(0..4), digits(5..7), digits(8..10)) else {
        return false;
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    b[4] == b'-' && b[7] == b'-' && (1..=days).contains(&day) && matches!(b.get(10), None | Some(b'T' | b' '))
}

/// Whether memory that `expires` (`YYYY-MM-DD…`) has expired by `today`
/// (`YYYY-MM-DD`): it is current through its expiry date.
pub fn has_expired(expires: &str, today: &str) -> bool {
    expires.get(..10).unwrap_or(expires) < today
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_real_dates_are_dates() {
        for good in ["2026-12-31", "2024-02-29", "2000-02-29", "2026-01-01T10:00", "2026-06-30 12:00"] {
            assert!(is_date_prefix(good), "{good}");
        }
        for bad in [
            "2024-13-45",
            "2023-02-29",
            "1900-02-29",
            "2026-04-31",
            "2026-00-10",
            "2026-1-1",
            "soon",
            "2026-01-01x",
            "",
        ] {
            assert!(!is_date_prefix(bad), "{bad}");
        }
    }

    #[test]
    fn civil_dates() {
        assert_eq!(civil_date(0), "1970-01-01");
        assert_eq!(civil_date(951_782_400), "2000-02-29");
        assert_eq!(civil_date(1_795_651_018), "2026-11-25");
        assert_eq!(iso_datetime(1_795_651_018_500_000_000), "2026-11-25T23:56:58Z");
    }
}
