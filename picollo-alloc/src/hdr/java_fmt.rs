//! Numbers as HdrHistogram's Java tools print them (`String.format(Locale.US, "%w.df", x)`),
//! shared by the `.hgrm` writer and the interval-log writer. A leaf.

use core::fmt::Write as _;

/// Appends `x` as Java's `%{width}.{decimals}f` prints it (`Locale.US`): the shortest decimal
/// representation of the double, rounded half up at `decimals`, right-aligned in `width`.
pub(crate) fn java_fixed(out: &mut String, x: f64, width: usize, decimals: usize) {
    let mut s = String::new();
    if x.is_nan() {
        s.push_str("NaN");
    } else if x.is_infinite() {
        s.push_str(if x > 0.0 { "Infinity" } else { "-Infinity" });
    } else {
        if x.is_sign_negative() {
            s.push('-');
        }
        // Shortest round-trip digits: "d.ddde-N".
        let sci = format!("{:e}", x.abs());
        let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
        let exp: i64 = exp.parse().unwrap_or(0);
        let mut digits: Vec<u8> = mantissa.bytes().filter(u8::is_ascii_digit).collect();
        // value = 0.d0 d1 d2 ... × 10^point
        let mut point = exp + 1;
        let keep = point + decimals as i64;
        if keep < 0 {
            digits.clear();
        } else if (keep as usize) < digits.len() {
            let k = keep as usize;
            let round_up = digits[k] >= b'5';
            digits.truncate(k);
            if round_up {
                let mut i = k;
                loop {
                    if i == 0 {
                        digits.insert(0, b'1');
                        point += 1;
                        break;
                    }
                    i -= 1;
                    if digits[i] == b'9' {
                        digits[i] = b'0';
                    } else {
                        digits[i] += 1;
                        break;
                    }
                }
            }
        }
        let digit = |i: i64| -> char {
            if i >= 0 && (i as usize) < digits.len() {
                digits[i as usize] as char
            } else {
                '0'
            }
        };
        if point <= 0 {
            s.push('0');
        } else {
            (0..point).for_each(|i| s.push(digit(i)));
        }
        if decimals > 0 {
            s.push('.');
            (0..decimals as i64).for_each(|i| s.push(digit(point + i)));
        }
    }
    let _ = write!(out, "{s:>width$}");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixed(x: f64, decimals: usize) -> String {
        let mut s = String::new();
        java_fixed(&mut s, x, 0, decimals);
        s
    }

    #[test]
    fn java_rounding() {
        assert_eq!(fixed(20.095, 2), "20.10"); // half up on the shortest digits
        assert_eq!(fixed(0.0, 3), "0.000");
        assert_eq!(fixed(1.0, 0), "1");
        assert_eq!(fixed(0.5, 0), "1");
        assert_eq!(fixed(0.0006, 3), "0.001");
        assert_eq!(fixed(0.0004, 3), "0.000");
        assert_eq!(fixed(9.9996, 3), "10.000");
        assert_eq!(fixed(999.9999, 2), "1000.00");
        assert_eq!(fixed(2543.615, 3), "2543.615");
        assert_eq!(fixed(1.0 / (1.0 - 0.1), 2), "1.11");
        assert_eq!(fixed(0.999969482421875, 12), "0.999969482422");
        assert_eq!(fixed(1.8446744073709552e19, 3), "18446744073709552000.000");
        assert_eq!(fixed(1e-20, 3), "0.000");
        assert_eq!(fixed(f64::INFINITY, 2), "Infinity");
        let mut s = String::new();
        java_fixed(&mut s, 0.285, 12, 3);
        assert_eq!(s, "       0.285");
    }
}
