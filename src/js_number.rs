//! Numbers as JS writes them (`Number.prototype.toString`, the form `JSON.stringify` uses), from the text
//! serde_json writes: for sessions written byte for byte as JS would write them, token estimates measured
//! as `JSON.stringify` would measure them, and numbers in error messages, without linking Rust's own float
//! formatting into the wasm module.

/// A number that serde_json wrote (the shortest digits that read back as it: `1700000000000.0`, `3e-6`,
/// `1.5e-7`, `-0.0`), laid out as JS's `Number.prototype.toString` lays it out (the form `JSON.stringify`
/// uses): `1700000000000`, `0.000003`, `1.5e-7`, `0`; `1e+21` from 21 digits on.
pub(crate) fn js_number(number: &str) -> String {
    let (sign, body) = match number.strip_prefix('-') {
        Some(body) => ("-", body),
        None => ("", number),
    };
    let (mantissa, exponent) = match body.split_once(['e', 'E']) {
        Some((mantissa, exponent)) => (mantissa, exponent.parse::<i32>().unwrap_or(0)),
        None => (body, 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    // The number is 0.DIGITS × 10^point, DIGITS without leading or trailing zeros.
    let all = format!("{whole}{fraction}");
    let digits = all.trim_start_matches('0');
    let point = whole.len() as i32 + exponent - (all.len() - digits.len()) as i32;
    let digits = digits.trim_end_matches('0');
    if digits.is_empty() {
        return "0".into(); // -0 too, as JS writes it
    }
    let k = digits.len() as i32;
    let zeros = |n: i32| "0".repeat(n.max(0) as usize);
    let laid_out = if k <= point && point <= 21 {
        format!("{digits}{}", zeros(point - k))
    } else if 0 < point && point <= 21 {
        let (int, frac) = digits.split_at(point as usize);
        format!("{int}.{frac}")
    } else if -6 < point && point <= 0 {
        format!("0.{}{digits}", zeros(-point))
    } else {
        let e = point - 1;
        let (first, rest) = digits.split_at(1);
        let dot = if rest.is_empty() { "" } else { "." };
        let e_sign = if e >= 0 { "+" } else { "-" };
        format!("{first}{dot}{rest}e{e_sign}{}", e.abs())
    };
    format!("{sign}{laid_out}")
}

/// The length of `js_number(number)`, counted without writing it (the default estimate of compaction
/// measures numbers so, `crate::estimate`).
pub(crate) fn js_number_length(number: &str) -> usize {
    let (sign, body) = match number.strip_prefix('-') {
        Some(body) => (1, body),
        None => (0, number),
    };
    let (mantissa, exponent) = match body.split_once(['e', 'E']) {
        Some((mantissa, exponent)) => (mantissa, exponent.parse::<i32>().unwrap_or(0)),
        None => (body, 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let count = whole.len() + fraction.len();
    let zero = |b: &u8| *b == b'0';
    let leading = whole
        .bytes()
        .chain(fraction.bytes())
        .take_while(zero)
        .count();
    if leading == count {
        return 1; // "0", -0 too
    }
    let trailing = (fraction.bytes().rev().chain(whole.bytes().rev()))
        .take_while(zero)
        .count();
    let k = (count - leading - trailing) as i32;
    let point = whole.len() as i32 + exponent - leading as i32;
    let laid_out = if k <= point && point <= 21 {
        point
    } else if 0 < point && point <= 21 {
        k + 1
    } else if -6 < point && point <= 0 {
        2 - point + k
    } else {
        let e = (point - 1).unsigned_abs();
        let e_digits = e.checked_ilog10().map_or(1, |log| log as i32 + 1);
        k + i32::from(k > 1) + 2 + e_digits
    };
    sign + laid_out as usize
}

/// A number as JS writes it in a message (`NaN`, `Infinity`, `-1`, `0.5`). Through serde_json's float
/// writer: Rust's own float formatting is not linked into the wasm module for error messages.
pub(crate) fn js_display(x: f64) -> String {
    match serde_json::Number::from_f64(x) {
        Some(number) => js_number(&number.to_string()),
        None if x.is_nan() => "NaN".into(),
        None if x > 0.0 => "Infinity".into(),
        None => "-Infinity".into(),
    }
}

/// `sum` kept a number JSON can write: a sum of finite numbers that overflowed (usage over a run, a
/// transcript's token estimate) stays at the largest finite number of its sign, never `Infinity`, which JSON
/// writes as `null` where a number is promised.
pub(crate) fn finite_sum(sum: f64) -> f64 {
    sum.clamp(-f64::MAX, f64::MAX)
}
