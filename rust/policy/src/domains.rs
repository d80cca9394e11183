//! Domain rules of the web tools: `WebFetch(domain:example.com)` in the allow or deny list.
//!
//! A rule's domain matches the host itself and every subdomain (`domain:example.com` covers
//! `docs.example.com`); `domain:*.example.com` covers the subdomains only. A deny rule that
//! matches refuses the URL; when allow rules exist for the tool, a host none of them matches
//! is refused too (the allow list becomes the only hosts reachable). The tool checks every
//! URL it requests against these rules — the first one and each redirect hop — since the
//! policy sees only the URL the model asked for.

use crate::rules::{Pattern, Rule};

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

/// Whether `host` is covered by the rule domain `pattern`.
pub fn host_matches(pattern: &str, host: &str) -> bool {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    let host = host.trim_start_matches('[').trim_end_matches(']');
    match pattern.strip_prefix("*.") {
        Some(base) => host.len() > base.len() && host.ends_with(&format!(".{base}")),
        None => host == pattern || host.ends_with(&format!(".{pattern}")),
    }
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
        if let Some((text, _)) = self.deny.iter().find(|(_, d)| host_matches(d, host)) {
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
