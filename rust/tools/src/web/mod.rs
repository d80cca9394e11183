//! The web tools: `web-fetch` (fetch.rs) and `web-search` (search.rs), and what they share:
//! the settings the session hands them ([`WebSettings`]), the URL check every request passes
//! (scheme, network switch, domain rules) and the one HTTP path (reqwest with rustls, on a
//! thread of its own with its own small runtime, since tools run inside the turn's runtime).

pub mod fetch;
pub mod search;

use std::future::Future;
use tokio_util::sync::CancellationToken;
use url::Url;
use yuyao_policy::domains::HostRules;

/// What the web tools read from the session, refreshed before every tool call
/// (`yuyao_core` syncs it with the policy and the configuration).
#[derive(Debug, Clone, Default)]
pub struct WebSettings {
    /// `--network on`: web-fetch and web-search may go out; the browser may leave loopback.
    pub network_on: bool,
    /// `WebFetch(domain:…)` rules.
    pub fetch_rules: HostRules,
    /// `Browser(domain:…)` rules.
    pub browser_rules: HostRules,
    /// `search.provider`: `searxng:<url>`, `brave`, `tavily`.
    pub search_provider: Option<String>,
    /// `search.api_key_env`: the variable holding the API provider's key.
    pub search_key_env: Option<String>,
    /// `browser.executable`: the Chromium to run instead of the one found on PATH.
    pub browser_executable: Option<String>,
    /// The session may only read (plan mode, the ask role, the read-only sandbox): the
    /// browser sends no request but GET/HEAD and submits no form.
    pub read_only: bool,
}

/// Redirects followed at most by one fetch.
pub const MAX_REDIRECTS: usize = 5;
/// Bytes read at most from one response body.
pub const MAX_BODY_BYTES: usize = 10 * 1024 * 1024;
/// Whole-request time limit.
pub const TIMEOUT_S: u64 = 30;

/// Whether `host` is a loopback address or name (127.0.0.0/8, ::1, localhost).
/// Any spelling of the address counts (`[::ffff:127.0.0.1]`, `2130706433`).
pub fn is_loopback_host(host: &str) -> bool {
    yuyao_policy::domains::HostKey::of(host).is_loopback()
}

/// The URL check every web-fetch request passes (the first and each redirect hop): http(s)
/// only, the network switched on, the domain rules. Loopback is a host like any other here.
pub fn check_fetch_url(url: &Url, s: &WebSettings) -> Result<(), String> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "{url}: only http and https URLs can be fetched (got {}:)",
            url.scheme()
        ));
    }
    let Some(host) = url.host_str().filter(|h| !h.is_empty()) else {
        return Err(format!("{url} has no host"));
    };
    if !s.network_on {
        return Err(format!(
            "network access is off (--network off): no request was sent to {host}; turn it on with --network on"
        ));
    }
    s.fetch_rules.check(host)
}

/// Runs `fut` to completion on a fresh thread with a current-thread runtime; `None` when the
/// call was cancelled first.
pub fn block_on<F, T>(fut: F, cancel: &CancellationToken) -> Result<T, String>
where
    F: Future<Output = T> + Send,
    T: Send,
{
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| format!("cannot start the HTTP runtime: {e}"))?;
                rt.block_on(async {
                    tokio::select! {
                        v = fut => Ok(v),
                        _ = cancel.cancelled() => Err("cancelled".to_string()),
                    }
                })
            })
            .join()
            .unwrap_or_else(|_| Err("the HTTP thread panicked".into()))
    })
}

/// Resolves host names for the web tools' connections and refuses the ones that resolve to
/// a denied address (`WebFetch(domain:127.0.0.1)` denies a name pointing at loopback): the
/// check and the connection use the same answer, so a name cannot change address between.
struct RuledResolver {
    rules: HostRules,
}

impl reqwest::dns::Resolve for RuledResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let rules = self.rules.clone();
        let host = name.as_str().to_string();
        Box::pin(async move {
            let addrs: Vec<std::net::SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let ips: Vec<std::net::IpAddr> = addrs.iter().map(|a| a.ip()).collect();
            rules
                .check_resolved(&host, &ips)
                .map_err(|e| -> Box<dyn std::error::Error + Send + Sync> { e.into() })?;
            Ok(Box::new(addrs.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// The HTTP client of the web tools: no automatic redirects (each hop is checked), names
/// resolved under the deny rules (`rules`), rustls, a timeout, yuyao's user agent.
pub fn client(rules: &HostRules) -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .dns_resolver(std::sync::Arc::new(RuledResolver {
            rules: rules.clone(),
        }))
        .redirect(reqwest::redirect::Policy::none())
        .timeout(std::time::Duration::from_secs(TIMEOUT_S))
        .connect_timeout(std::time::Duration::from_secs(10))
        .user_agent(concat!("yuyao/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))
}

/// A body read up to `cap` bytes; `true` when more was left unread.
pub async fn read_capped(
    mut resp: reqwest::Response,
    cap: usize,
) -> Result<(Vec<u8>, bool), String> {
    let mut body = Vec::new();
    while let Some(chunk) = resp
        .chunk()
        .await
        .map_err(|e| format!("reading the response failed: {e}"))?
    {
        if body.len() + chunk.len() > cap {
            body.extend_from_slice(&chunk[..cap - body.len()]);
            return Ok((body, true));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, false))
}

/// One line of a request error, without reqwest's nesting.
pub fn describe(e: &reqwest::Error) -> String {
    use std::error::Error as _;
    let mut msg = e.to_string();
    let mut src = e.source();
    while let Some(s) = src {
        msg = format!("{msg}: {s}");
        src = s.source();
    }
    if e.is_timeout() {
        format!("timed out after {TIMEOUT_S} s ({msg})")
    } else {
        msg
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts() {
        for h in [
            "127.0.0.1",
            "127.9.8.7",
            "[::1]",
            "localhost",
            "app.localhost",
        ] {
            assert!(is_loopback_host(h), "{h}");
        }
        for h in ["10.0.0.1", "example.com", "localhost.example.com", "[::2]"] {
            assert!(!is_loopback_host(h), "{h}");
        }
    }

    #[test]
    fn urls_are_checked() {
        let mut s = WebSettings::default();
        let u = Url::parse("http://127.0.0.1:9/x").unwrap();
        assert!(
            check_fetch_url(&u, &s)
                .unwrap_err()
                .contains("network access is off")
        );
        s.network_on = true;
        assert!(check_fetch_url(&u, &s).is_ok());
        let f = Url::parse("file:///etc/passwd").unwrap();
        assert!(check_fetch_url(&f, &s).unwrap_err().contains("only http"));
    }
}
