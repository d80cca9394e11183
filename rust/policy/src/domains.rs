//! Domain rules of the web tools: `WebFetch(domain:example.com)` in the allow or deny list.
//!
//! A rule's domain matches the host itself and every subdomain (`domain:example.com` covers
//! `docs.example.com`); `domain:*.example.com` covers the subdomains only. A deny rule that
//! matches refuses the URL; when allow rules exist for the tool, a host none of them matches
//! is refused too (the allow list becomes the only hosts reachable). The tool checks every
//! URL it requests against these rules — the first one and each redirect hop — since the
//! policy sees only the URL the model asked for.
//!
//! Rules compare addresses, not spellings: an address is read in every form a resolver
//! accepts (`2130706433`, `0x7f000001`, `0177.0.0.1`, `[::ffff:127.0.0.1]`) and compared in
//! one canonical form, and every loopback address or name (127.0.0.0/8, `::1`, `localhost`)
//! is one host to a deny rule that names any of them. A host name is also judged by the
//! addresses it resolves to when the connection is made ([`HostRules::check_resolved`]): a
//! name that resolves to a denied address is denied.

use crate::rules::{Pattern, Rule};
use std::net::{IpAddr, Ipv4Addr};

/// Tools whose rules name domains.
pub const DOMAIN_TOOLS: &[&str] = &["web-fetch", "browser"];

/// The domain of a rule's inner text for a web tool (`domain:example.com`), `None` for any
/// other tool; an error for a web tool rule that names no domain.
pub fn parse_rule_domain(tool: &str, inner: &str) -> Result<Option<String>, String> {
    if tool == "web-search" {
        return Err(format!(
            "invalid rule 'WebSearch({inner})': web-search rules name no domain; allow or deny the tool as WebSearch"
        ));
    }
    if !DOMAIN_TOOLS.contains(&tool) {
        return Ok(None);
    }
    let Some(d) = inner.strip_prefix("domain:") else {
        return Err(format!(
            "invalid rule '{inner}' for {tool}: write it as WebFetch(domain:example.com)"
        ));
    };
    let d = d.trim().trim_end_matches('.').to_ascii_lowercase();
    let bare = d.strip_prefix("*.").unwrap_or(&d);
    // An IPv6 address is written in brackets (`domain:[::1]`).
    if let Some(v6) = bare.strip_prefix('[').and_then(|b| b.strip_suffix(']'))
        && v6.parse::<std::net::Ipv6Addr>().is_ok()
        && !d.starts_with("*.")
    {
        return Ok(Some(d));
    }
    if bare.is_empty()
        || bare.contains(['/', ' ', ':', '*', '@', '?', '#'])
        || bare.starts_with('.')
    {
        return Err(format!(
            "invalid domain '{d}' in a {tool} rule: a host name such as example.com or *.example.com"
        ));
    }
    Ok(Some(d))
}

/// A host as rules compare it: an address in one canonical form, or a lowercase name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostKey {
    Addr(IpAddr),
    Name(String),
}

impl HostKey {
    /// Reads a URL host or a rule domain: brackets, case and a trailing dot do not count; an
    /// address in any spelling becomes its canonical form (IPv4-mapped IPv6 is IPv4).
    pub fn of(host: &str) -> HostKey {
        let h = host.trim().trim_end_matches('.').to_ascii_lowercase();
        let bare = h.trim_start_matches('[').trim_end_matches(']');
        match bare
            .parse::<IpAddr>()
            .ok()
            .or_else(|| parse_ipv4_any(bare).map(IpAddr::V4))
        {
            Some(ip) => HostKey::Addr(canonical_ip(ip)),
            None => HostKey::Name(bare.to_string()),
        }
    }

    /// A loopback address (127.0.0.0/8, `::1`) or name (`localhost`, `*.localhost`).
    pub fn is_loopback(&self) -> bool {
        match self {
            HostKey::Addr(ip) => ip.is_loopback(),
            HostKey::Name(n) => n == "localhost" || n.ends_with(".localhost"),
        }
    }
}

/// IPv4-mapped IPv6 addresses (`::ffff:a.b.c.d`) reach the IPv4 host: they are that host.
pub fn canonical_ip(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// An IPv4 address in any form `inet_aton` accepts: one to four parts, each decimal, octal
/// (`0177`) or hexadecimal (`0x7f`), the last one filling the remaining bytes
/// (`2130706433`, `127.1`).
pub fn parse_ipv4_any(s: &str) -> Option<Ipv4Addr> {
    let parts: Vec<&str> = s.split('.').collect();
    if parts.is_empty() || parts.len() > 4 {
        return None;
    }
    let mut nums = Vec::with_capacity(parts.len());
    for p in &parts {
        let (digits, radix) = if let Some(h) = p.strip_prefix("0x").or_else(|| p.strip_prefix("0X"))
        {
            (h, 16)
        } else if p.len() > 1 && p.starts_with('0') {
            (&p[1..], 8)
        } else {
            (*p, 10)
        };
        if p.is_empty() || (digits.is_empty() && radix != 16) {
            return None;
        }
        let n = if digits.is_empty() {
            0
        } else {
            u64::from_str_radix(digits, radix).ok()?
        };
        nums.push(n);
    }
    let (last, head) = nums.split_last()?;
    if head.iter().any(|n| *n > 255) || *last >= 1u64 << (8 * (5 - nums.len())) {
        return None;
    }
    let mut v: u32 = 0;
    for (i, n) in head.iter().enumerate() {
        v |= (*n as u32) << (24 - 8 * i);
    }
    Some(Ipv4Addr::from(v | *last as u32))
}

/// Whether `host` is covered by the rule domain `pattern`: the same address in any spelling,
/// or the name and its subdomains.
pub fn host_matches(pattern: &str, host: &str) -> bool {
    if let Some(base) = pattern.strip_prefix("*.") {
        return match HostKey::of(host) {
            HostKey::Name(h) => h.len() > base.len() && h.ends_with(&format!(".{base}")),
            HostKey::Addr(_) => false,
        };
    }
    match (HostKey::of(pattern), HostKey::of(host)) {
        (HostKey::Addr(p), HostKey::Addr(h)) => p == h,
        (HostKey::Name(p), HostKey::Name(h)) => h == p || h.ends_with(&format!(".{p}")),
        _ => false,
    }
}

/// Whether a deny rule's domain covers `host`: as [`host_matches`], and every loopback
/// address or name when the rule names one (they all reach this machine).
fn deny_matches(pattern: &str, host: &str) -> bool {
    host_matches(pattern, host)
        || !pattern.starts_with("*.")
            && HostKey::of(pattern).is_loopback()
            && HostKey::of(host).is_loopback()
}

/// The domain rules in force for one tool, as (rule text, domain) pairs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostRules {
    pub allow: Vec<(String, String)>,
    pub deny: Vec<(String, String)>,
}

impl HostRules {
    /// Collects the domain rules about `tool` from the allow (and granted) and deny lists.
    pub fn for_tool<'a>(
        tool: &str,
        allow: impl Iterator<Item = &'a Rule>,
        deny: impl Iterator<Item = &'a Rule>,
    ) -> HostRules {
        let pick = |r: &Rule| match (&r.tool, &r.pattern) {
            (Some(t), Some(Pattern::Domain(d))) if *t == tool => Some((r.text.clone(), d.clone())),
            _ => None,
        };
        HostRules {
            allow: allow.filter_map(pick).collect(),
            deny: deny.filter_map(pick).collect(),
        }
    }

    /// Whether a request to `host` may go; the refusal names the rule.
    pub fn check(&self, host: &str) -> Result<(), String> {
        if let Some((text, _)) = self.deny.iter().find(|(_, d)| deny_matches(d, host)) {
            return Err(format!("{host} is denied by rule {text}"));
        }
        if !self.allow.is_empty() && !self.allow.iter().any(|(_, d)| host_matches(d, host)) {
            let rules: Vec<&str> = self.allow.iter().map(|(t, _)| t.as_str()).collect();
            return Err(format!(
                "{host} is not among the allowed domains ({}); add an allow rule for it to fetch it",
                rules.join(", ")
            ));
        }
        Ok(())
    }

    /// Whether a connection to `host` may use the addresses it resolved to: none may be
    /// denied (a name that resolves to a denied address, loopback or private, is that
    /// address). Allow rules judge the name, already checked by [`HostRules::check`].
    pub fn check_resolved(&self, host: &str, addrs: &[IpAddr]) -> Result<(), String> {
        for ip in addrs {
            let ip = canonical_ip(*ip).to_string();
            if let Some((text, _)) = self.deny.iter().find(|(_, d)| deny_matches(d, &ip)) {
                return Err(format!(
                    "{host} resolves to {ip}, which is denied by rule {text}"
                ));
            }
        }
        Ok(())
    }

    /// Whether no deny rule is in force (nothing to resolve a name for).
    pub fn denies_nothing(&self) -> bool {
        self.deny.is_empty()
    }
}

impl crate::Policy {
    /// The domain rules in force for `tool` (allow, granted and deny lists).
    pub fn host_rules(&self, tool: &str) -> HostRules {
        HostRules::for_tool(
            tool,
            self.allow.iter().chain(&self.granted),
            self.deny.iter(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_network_switch_refuses_the_web_tools_but_not_the_browser() {
        use crate::{Action, Policy, Verdict};
        use yuyao_protocol::{Mode, NetworkAccess, Role};
        let mut p = Policy::new(Mode::Plan, Role::Execute, std::path::Path::new("/ws"));
        let act = |tool: &str| Action {
            tool: tool.into(),
            command: None,
            paths: Vec::new(),
        };
        for tool in ["web-fetch", "web-search"] {
            let d = p.decide(&act(tool));
            assert_eq!(d.verdict, Verdict::Deny, "{tool}");
            assert!(d.reason.contains("--network on"), "{}", d.reason);
        }
        // Loopback only, enforced inside Chromium; read-only, so plan mode allows it.
        assert_eq!(p.decide(&act("browser")).verdict, Verdict::Allow);
        p.network = NetworkAccess::On;
        assert_eq!(p.decide(&act("web-fetch")).verdict, Verdict::Allow);
        p.deny.push(Rule::parse("WebFetch").unwrap());
        assert_eq!(p.decide(&act("web-fetch")).verdict, Verdict::Deny);
        p.deny
            .push(Rule::parse("WebFetch(domain:evil.test)").unwrap());
        assert!(p.host_rules("web-fetch").check("evil.test").is_err());
        assert!(p.host_rules("browser").check("evil.test").is_ok());
    }

    #[test]
    fn domains_cover_their_subdomains() {
        assert!(host_matches("example.com", "example.com"));
        assert!(host_matches("example.com", "Docs.Example.com."));
        assert!(!host_matches("example.com", "badexample.com"));
        assert!(!host_matches("example.com", "example.com.evil.net"));
        assert!(host_matches("*.example.com", "a.example.com"));
        assert!(!host_matches("*.example.com", "example.com"));
    }

    #[test]
    fn addresses_match_in_every_spelling() {
        for spelling in [
            "127.0.0.1",
            "[::ffff:127.0.0.1]",
            "[::ffff:7f00:1]",
            "2130706433",
            "0x7f000001",
            "0177.0.0.1",
            "0x7f.1",
            "127.1",
            "127.0.0.1.",
        ] {
            assert!(host_matches("127.0.0.1", spelling), "{spelling}");
        }
        assert!(!host_matches("127.0.0.1", "127.0.0.2"));
        assert!(!host_matches("127.0.0.1", "1270.0.0.1"));
        assert!(host_matches("10.1.2.3", "0xa010203"));
        assert_eq!(parse_ipv4_any("256.0.0.1"), None);
        assert_eq!(parse_ipv4_any("08.0.0.1"), None);
        assert_eq!(parse_ipv4_any("example"), None);
        assert!(!host_matches("example.com", "[::1]"));
        assert!(Rule::parse("WebFetch(domain:[::1])").is_ok());
    }

    #[test]
    fn a_loopback_deny_covers_all_of_loopback_and_resolved_names() {
        let none: [Rule; 0] = [];
        for rule in ["localhost", "127.0.0.1", "[::1]"] {
            let deny = [Rule::parse(&format!("WebFetch(domain:{rule})")).unwrap()];
            let r = HostRules::for_tool("web-fetch", none.iter(), deny.iter());
            for host in [
                "localhost",
                "app.localhost",
                "127.0.0.1",
                "127.9.9.9",
                "[::1]",
                "[::ffff:127.0.0.1]",
                "[::ffff:7f00:1]",
                "2130706433",
                "0177.0.0.1",
            ] {
                assert!(r.check(host).is_err(), "{rule} {host}");
            }
            assert!(r.check("example.com").is_ok());
            let lo: IpAddr = "127.0.0.1".parse().unwrap();
            let mapped: IpAddr = "::ffff:127.0.0.1".parse().unwrap();
            assert!(r.check_resolved("evil.test", &[lo]).is_err());
            assert!(r.check_resolved("evil.test", &[mapped]).is_err());
            let public: IpAddr = "93.184.216.34".parse().unwrap();
            assert!(r.check_resolved("example.com", &[public]).is_ok());
        }
        // Allow rules stay exact: allowing localhost does not allow 127.0.0.1.
        let allow = [Rule::parse("WebFetch(domain:localhost)").unwrap()];
        let r = HostRules::for_tool("web-fetch", allow.iter(), none.iter());
        assert!(r.check("127.0.0.1").is_err());
        let private = [Rule::parse("WebFetch(domain:10.0.0.5)").unwrap()];
        let r = HostRules::for_tool("web-fetch", none.iter(), private.iter());
        let ip: IpAddr = "10.0.0.5".parse().unwrap();
        assert!(r.check_resolved("intranet.test", &[ip]).is_err());
    }

    #[test]
    fn rules_parse_and_decide() {
        let allow = [Rule::parse("WebFetch(domain:docs.rs)").unwrap()];
        let deny = [Rule::parse("WebFetch(domain:evil.test)").unwrap()];
        let r = HostRules::for_tool("web-fetch", allow.iter(), deny.iter());
        assert!(r.check("docs.rs").is_ok());
        assert!(r.check("crates.docs.rs").is_ok());
        assert!(
            r.check("evil.test")
                .unwrap_err()
                .contains("WebFetch(domain:evil.test)")
        );
        assert!(r.check("other.org").unwrap_err().contains("not among"));
        let none = HostRules::for_tool("browser", allow.iter(), deny.iter());
        assert!(none.check("other.org").is_ok());
        assert!(Rule::parse("WebFetch(example.com)").is_err());
        assert!(Rule::parse("WebFetch(domain:a/b)").is_err());
        assert!(Rule::parse("WebFetch").is_ok());
        assert!(Rule::parse("WebSearch(domain:x.org)").is_err());
        assert!(Rule::parse("Browser(domain:*.test)").is_ok());
    }
}
