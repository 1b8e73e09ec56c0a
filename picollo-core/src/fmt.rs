//! Allocation-free number formatting shared by every printer: digit grouping as in Picollo's tables
//! (`1,000,000`, `21,696.54`) and trimmed ranks (`99.9`, `9.1914`).

use core::fmt;

/// Writes an unsigned integer with `,` between groups of three digits.
///
/// ```
/// assert_eq!(format!("{}", picollo_core::fmt::Grouped(1234567)), "1,234,567");
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Grouped(pub u64);

impl fmt::Display for Grouped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut buf = [0u8; 32];
        let text = group_digits(self.0 as u128, &mut buf);
        f.pad(text)
    }
}

/// Writes a wide unsigned integer (for example a bucket's exclusive bound `2^64`) grouped.
#[derive(Clone, Copy, Debug)]
pub(crate) struct GroupedWide(pub u128);

impl fmt::Display for GroupedWide {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut buf = [0u8; 56];
        let text = group_digits(self.0, &mut buf);
        f.pad(text)
    }
}

/// Writes a float with a fixed number of decimals and grouped integer digits:
/// `GroupedFloat(21696.544, 2)` prints `21,696.54`. Non-finite values print as `NaN`, `inf`.
#[derive(Clone, Copy, Debug)]
pub struct GroupedFloat(pub f64, pub usize);

impl fmt::Display for GroupedFloat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (v, decimals) = (self.0, self.1.min(12));
        if !v.is_finite() {
            return f.pad(if v.is_nan() {
                "NaN"
            } else if v > 0.0 {
                "inf"
            } else {
                "-inf"
            });
        }
        let scale = 10u128.pow(decimals as u32);
        let magnitude = if v < 0.0 { -v } else { v };
        // Round half away from zero at the requested decimals; saturates far beyond u128.
        let scaled = (magnitude * scale as f64 + 0.5) as u128;
        let (int, frac) = (scaled / scale, scaled % scale);
        let mut out = StackStr::<80>::new();
        if v < 0.0 && scaled != 0 {
            out.push_str("-");
        }
        let mut buf = [0u8; 56];
        out.push_str(group_digits(int, &mut buf));
        if decimals > 0 {
            out.push_str(".");
            let mut digits = [b'0'; 12];
            let mut rest = frac;
            for d in digits[..decimals].iter_mut().rev() {
                *d = b'0' + (rest % 10) as u8;
                rest /= 10;
            }
            out.push_str(core::str::from_utf8(&digits[..decimals]).unwrap_or(""));
        }
        f.pad(out.as_str())
    }
}

/// Writes a rank or percentage with at most `decimals` decimals and trailing zeros removed,
/// as Picollo's tables print ranks: `99.9`, `92.5`, `100`, `9.1914`.
#[derive(Clone, Copy, Debug)]
pub struct Trimmed(pub f64, pub usize);

impl fmt::Display for Trimmed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (v, decimals) = (self.0, self.1.min(12));
        if !v.is_finite() || v.abs() >= 1e18 {
            let mut out = StackStr::<64>::new();
            let _ = fmt::write(&mut out, format_args!("{v}"));
            return f.pad(out.as_str());
        }
        // Round half away from zero on the decimal scaling, as .NET prints ranks (9.19135 is
        // 9.1914 there, while exact binary rounding would give 9.1913).
        let scale = 10u64.pow(decimals as u32);
        let scaled = (v.abs() * scale as f64 + 0.5) as u128;
        let (int, mut frac) = (scaled / scale as u128, (scaled % scale as u128) as u64);
        let mut out = StackStr::<64>::new();
        if v < 0.0 && scaled != 0 {
            out.push_str("-");
        }
        let _ = fmt::write(&mut out, format_args!("{int}"));
        let mut width = decimals;
        while width > 0 && frac % 10 == 0 {
            frac /= 10;
            width -= 1;
        }
        if width > 0 {
            let _ = fmt::write(&mut out, format_args!(".{frac:0width$}"));
        }
        f.pad(out.as_str())
    }
}

fn group_digits(mut v: u128, buf: &mut [u8]) -> &str {
    let mut i = buf.len();
    let mut n = 0;
    loop {
        if n > 0 && n % 3 == 0 {
            i -= 1;
            buf[i] = b',';
        }
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        n += 1;
        if v == 0 {
            break;
        }
    }
    core::str::from_utf8(&buf[i..]).unwrap_or("")
}

/// A fixed-capacity string on the stack; writes past the capacity are truncated.
pub(crate) struct StackStr<const N: usize> {
    buf: [u8; N],
    len: usize,
}

impl<const N: usize> StackStr<N> {
    pub(crate) const fn new() -> Self {
        StackStr {
            buf: [0; N],
            len: 0,
        }
    }
    pub(crate) fn push_str(&mut self, s: &str) {
        let room = N - self.len;
        // Only ASCII is written here, so truncating at any byte keeps valid UTF-8.
        let n = s.len().min(room);
        self.buf[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
    }
    pub(crate) fn as_str(&self) -> &str {
        core::str::from_utf8(&self.buf[..self.len]).unwrap_or("")
    }
}

impl<const N: usize> fmt::Write for StackStr<N> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.push_str(s);
        Ok(())
    }
}

/// `Debug` (and with the `defmt` feature, `defmt::Format`) for a histogram kind `$kind<S, L,
/// W>` under the storage bounds given: one line of layout, window bounds and totals, written
/// once for every kind.
macro_rules! histogram_formats {
    ($kind:ident, $name:literal, $($bounds:tt)*) => {
        impl<S, L, W> core::fmt::Debug for $kind<S, L, W>
        where
            $($bounds)*,
            L: crate::LayoutSpec,
            W: crate::WindowSpec,
        {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                crate::fmt::debug_histogram(f, $name, self)
            }
        }

        #[cfg(feature = "defmt")]
        #[cfg_attr(docsrs, doc(cfg(feature = "defmt")))]
        impl<S, L, W> defmt::Format for $kind<S, L, W>
        where
            $($bounds)*,
            L: crate::LayoutSpec,
            W: crate::WindowSpec,
        {
            fn format(&self, f: defmt::Formatter<'_>) {
                crate::fmt::defmt_histogram(f, $name, self)
            }
        }
    };
}
pub(crate) use histogram_formats;

/// The `Debug` output every histogram kind shares: layout, window bounds, totals.
pub(crate) fn debug_histogram<H: crate::HistogramRead + ?Sized>(
    f: &mut fmt::Formatter<'_>,
    name: &str,
    h: &H,
) -> fmt::Result {
    use crate::ReadExt;
    let layout = h.layout();
    let window = h.window();
    f.debug_struct(name)
        .field("layout", &layout)
        .field("min", &window.min_value(layout))
        .field("max", &window.max_value(layout))
        .field("total", &h.total())
        .field("underflow", &h.underflow())
        .field("overflow", &h.overflow())
        .finish()
}

/// The `defmt::Format` output every histogram kind shares, the `Debug` fields in one line.
#[cfg(feature = "defmt")]
pub(crate) fn defmt_histogram<H: crate::HistogramRead + ?Sized>(
    f: defmt::Formatter<'_>,
    name: &str,
    h: &H,
) {
    use crate::ReadExt;
    let layout = h.layout();
    let window = h.window();
    defmt::write!(
        f,
        "{=str} {{ block_size: {=u64}, min: {=u64}, max: {=u64}, total: {=u64}, underflow: {=u64}, overflow: {=u64} }}",
        name,
        layout.block_size(),
        window.min_value(layout),
        window.max_value(layout),
        h.total(),
        h.underflow(),
        h.overflow()
    )
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::format;

    #[test]
    fn grouping() {
        assert_eq!(format!("{}", Grouped(0)), "0");
        assert_eq!(format!("{}", Grouped(999)), "999");
        assert_eq!(format!("{}", Grouped(1000)), "1,000");
        assert_eq!(
            format!("{}", Grouped(u64::MAX)),
            "18,446,744,073,709,551,615"
        );
        assert_eq!(
            format!("{}", GroupedWide(1u128 << 64)),
            "18,446,744,073,709,551,616"
        );
        assert_eq!(format!("{:>8}", Grouped(1234)), "   1,234");
        assert_eq!(format!("{}", GroupedFloat(21696.544, 2)), "21,696.54");
        assert_eq!(format!("{}", GroupedFloat(-0.001, 2)), "0.00");
        assert_eq!(format!("{}", GroupedFloat(-1234.5, 1)), "-1,234.5");
        assert_eq!(format!("{}", GroupedFloat(f64::NAN, 2)), "NaN");
        assert_eq!(format!("{}", Trimmed(99.9, 4)), "99.9");
        assert_eq!(format!("{}", Trimmed(100.0, 4)), "100");
        assert_eq!(format!("{}", Trimmed(23.67342, 4)), "23.6734");
        assert_eq!(format!("{}", Trimmed(9.19135, 4)), "9.1914");
        assert_eq!(format!("{}", Trimmed(33.271, 4)), "33.271");
        assert_eq!(format!("{}", Trimmed(0.5, 0)), "1");
        assert_eq!(format!("{}", Trimmed(-0.00001, 4)), "0");
    }
}
