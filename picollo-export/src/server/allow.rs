//! Client address ranges for the allow-list.

use core::fmt;
use core::str::FromStr;
use std::net::IpAddr;

/// An IP address range: an address and a prefix length (CIDR), such as `10.0.0.0/8`,
/// `192.168.1.7` (one address) or `fd00::/8`.
///
/// An IPv4 client reaching a server bound to an IPv6 address (`::ffff:10.1.2.3`) matches the
/// IPv4 ranges.
///
/// ```
/// use picollo_export::server::IpNet;
///
/// let net: IpNet = "10.0.0.0/8".parse()?;
/// assert!(net.contains("10.20.30.40".parse()?));
/// assert!(net.contains("::ffff:10.1.2.3".parse()?));
/// assert!(!net.contains("11.0.0.1".parse()?));
/// assert!("127.0.0.1".parse::<IpNet>()?.contains("127.0.0.1".parse()?));
/// assert!("10.0.0.0/33".parse::<IpNet>().is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IpNet {
    addr: IpAddr,
    prefix: u8,
}

impl IpNet {
    /// The range of the `prefix` leading bits of `addr`.
    ///
    /// # Errors
    /// When `prefix` is above 32 (IPv4) or 128 (IPv6).
    pub fn new(addr: IpAddr, prefix: u8) -> Result<Self, AddrParseError> {
        let max = if addr.is_ipv4() { 32 } else { 128 };
        if prefix > max {
            return Err(AddrParseError(format!(
                "prefix /{prefix} is longer than the {max} bits of {addr}"
            )));
        }
        Ok(IpNet { addr, prefix })
    }

    /// Whether `ip` is in the range.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        match (self.addr, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

impl fmt::Display for IpNet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

impl From<IpAddr> for IpNet {
    fn from(addr: IpAddr) -> Self {
        IpNet {
            addr,
            prefix: if addr.is_ipv4() { 32 } else { 128 },
        }
    }
}

impl FromStr for IpNet {
    type Err = AddrParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = |why: &str| AddrParseError(format!("{s:?}: {why}; write 10.0.0.0/8 or ::1"));
        let (addr, prefix) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s, None),
        };
        let addr: IpAddr = addr.trim().parse().map_err(|_| bad("not an IP address"))?;
        match prefix {
            None => Ok(addr.into()),
            Some(p) => {
                let p = p.trim().parse().map_err(|_| bad("not a prefix length"))?;
                IpNet::new(addr, p)
            }
        }
    }
}

/// An address range that does not parse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AddrParseError(String);

impl fmt::Display for AddrParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid address range {}", self.0)
    }
}

impl std::error::Error for AddrParseError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        let n = |s: &str| s.parse::<IpNet>().unwrap();
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert!(n("0.0.0.0/0").contains(ip("255.1.2.3")));
        assert!(n("0.0.0.0/0").contains(ip("::ffff:1.2.3.4")));
        assert!(!n("0.0.0.0/0").contains(ip("::1")));
        assert!(n("::/0").contains(ip("::1")));
        assert!(n("192.168.1.0/24").contains(ip("192.168.1.255")));
        assert!(!n("192.168.1.0/24").contains(ip("192.168.2.0")));
        assert!(n("fd00::/8").contains(ip("fdab::1")));
        assert!(!n("fd00::/8").contains(ip("fe80::1")));
        assert!(n("::1").contains(ip("::1")));
        assert_eq!(n("10.1.2.3/8").to_string(), "10.1.2.3/8");
        for bad in [
            "",
            "10.0.0.0/",
            "10.0.0.0/33",
            "::/129",
            "host/8",
            "10.0.0/8",
        ] {
            assert!(bad.parse::<IpNet>().is_err(), "{bad}");
        }
    }
}
