//! `web-search {query, max_results?}` through the provider of `search.provider`:
//! `searxng:<url>` (a SearXNG instance's JSON API), `brave` or `tavily` (their APIs, the key
//! read from the variable `search.api_key_env` names). Results are title, URL and snippet.
//!
//! A search provider queries the public web for the agent, so the query leaves the machine
//! even when the provider's endpoint is on loopback: `--network off` refuses web-search
//! whatever the endpoint (the policy before the call, [`search`] again here).

use super::WebSettings;
use crate::args::ToolArgs;
use crate::{Tool, ToolContext, ToolOutput};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use url::Url;
use yuyao_policy::domains::HostRules;

pub const DEFAULT_RESULTS: usize = 8;
pub const MAX_RESULTS: usize = 20;

const NOT_CONFIGURED: &str = "web-search has no provider: set search.provider to searxng:<url of a SearXNG instance with the JSON format enabled>, brave or tavily (e.g. `yuyao config set search.provider searxng:http://127.0.0.1:8888`); for brave and tavily also set search.api_key_env to the name of the environment variable holding the API key (default BRAVE_API_KEY / TAVILY_API_KEY)";

#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub title: String,
    pub url: String,
    pub snippet: String,
}

#[derive(Debug, PartialEq)]
enum Provider {
    Searxng(Url),
    Brave(String),
    Tavily(String),
}

fn provider(s: &WebSettings) -> Result<Provider, String> {
    let raw = s
        .search_provider
        .as_deref()
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .ok_or(NOT_CONFIGURED)?;
    let key = |default: &str| -> Result<String, String> {
        let var = s
            .search_key_env
            .as_deref()
            .filter(|v| !v.trim().is_empty())
            .unwrap_or(default);
        std::env::var(var)
            .ok()
            .filter(|k| !k.trim().is_empty())
            .ok_or_else(|| {
                format!(
                    "search.provider is {raw}, but the environment variable {var} (search.api_key_env) holds no API key"
                )
            })
    };
    if let Some(u) = raw.strip_prefix("searxng:") {
        let url = Url::parse(u.trim())
            .map_err(|e| format!("search.provider {raw:?}: {u:?} is not a valid URL ({e})"))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!(
                "search.provider {raw:?}: the SearXNG URL must be http or https"
            ));
        }
        return Ok(Provider::Searxng(url));
    }
    match raw.to_ascii_lowercase().as_str() {
        "brave" => Ok(Provider::Brave(key("BRAVE_API_KEY")?)),
        "tavily" => Ok(Provider::Tavily(key("TAVILY_API_KEY")?)),
        _ => Err(format!(
            "search.provider {raw:?} is not known. {NOT_CONFIGURED}"
        )),
    }
}

fn field(v: &Value, names: &[&str]) -> String {
    names
        .iter()
        .find_map(|n| v.get(*n).and_then(Value::as_str))
        .unwrap_or("")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

fn hits(list: Option<&Value>, snippet: &[&str], n: usize) -> Vec<Hit> {
    list.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|r| Hit {
                    title: field(r, &["title"]),
                    url: field(r, &["url"]),
                    snippet: field(r, snippet),
                })
                .filter(|h| !h.url.is_empty())
                .take(n)
                .collect()
        })
        .unwrap_or_default()
}

/// Runs the query against the configured provider.
pub fn search(
    query: &str,
    n: usize,
    s: &WebSettings,
    cancel: &CancellationToken,
) -> Result<Vec<Hit>, String> {
    let p = provider(s)?;
    if !s.network_on {
        return Err("network access is off (--network off): the search was not sent; turn it on with --network on".into());
    }
    // The provider is the user's choice: no domain rule judges it.
    let client = super::client(&HostRules::default())?;
    let request = match &p {
        Provider::Searxng(base) => {
            let mut u = base.clone();
            if !u.path().ends_with("/search") {
                let path = format!("{}/search", u.path().trim_end_matches('/'));
                u.set_path(&path);
            }
            u.query_pairs_mut()
                .append_pair("q", query)
                .append_pair("format", "json");
            client.get(u)
        }
        Provider::Brave(key) => client
            .get("https://api.search.brave.com/res/v1/web/search")
            .query(&[("q", query), ("count", &n.to_string())])
            .header("X-Subscription-Token", key)
            .header("Accept", "application/json"),
        Provider::Tavily(key) => client
            .post("https://api.tavily.com/search")
            .bearer_auth(key)
            .json(&json!({"query": query, "max_results": n, "api_key": key})),
    };
    let body: Value = super::block_on(
        async move {
            let resp = request
                .send()
                .await
                .map_err(|e| format!("the search request failed: {}", super::describe(&e)))?;
            let status = resp.status();
            let (bytes, _) = super::read_capped(resp, super::MAX_BODY_BYTES).await?;
            if !status.is_success() {
                let text = String::from_utf8_lossy(&bytes);
                return Err(format!(
                    "the search provider answered HTTP {status}: {}",
                    text.chars().take(300).collect::<String>()
                ));
            }
            serde_json::from_slice::<Value>(&bytes).map_err(|e| {
                format!("the search provider did not answer JSON ({e}); a SearXNG instance needs `json` in search.formats of its settings.yml")
            })
        },
        cancel,
    )??;
    Ok(match p {
        Provider::Searxng(_) => hits(body.get("results"), &["content"], n),
        Provider::Brave(_) => hits(body.pointer("/web/results"), &["description"], n),
        Provider::Tavily(_) => hits(body.get("results"), &["content"], n),
    })
}

pub fn render(query: &str, hits: &[Hit]) -> String {
    if hits.is_empty() {
        return format!("No results for {query:?}.");
    }
    let mut out = format!("Results for {query:?}:\n");
    for (i, h) in hits.iter().enumerate() {
        out.push_str(&format!("\n{}. {}\n   {}\n", i + 1, h.title, h.url));
        if !h.snippet.is_empty() {
            out.push_str(&format!("   {}\n", h.snippet));
        }
    }
    out.push_str("\nRead a result with web-fetch.\n");
    out
}

pub struct WebSearch;

impl Tool for WebSearch {
    fn name(&self) -> &'static str {
        "web-search"
    }
    fn description(&self) -> &'static str {
        "Search the web through the configured provider (search.provider); returns title, URL and snippet per result. Needs --network on. Read a result with web-fetch."
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "max_results": {"type": "integer", "description": "At most this many results (default 8, at most 20)"}
            },
            "required": ["query"]
        })
    }
    fn run_args(
        &self,
        args: &ToolArgs,
        ctx: &ToolContext,
        cancel: &CancellationToken,
    ) -> ToolOutput {
        let ToolArgs::WebSearch(a) = args else {
            return crate::fs::mismatched("web-search", args);
        };
        if a.query.trim().is_empty() {
            return ToolOutput::err("query is empty: give the words to search for");
        }
        let n = match a.max_results {
            None => DEFAULT_RESULTS,
            Some(n) if n < 1 => return ToolOutput::err("max_results must be 1 or more"),
            Some(n) => (n as usize).min(MAX_RESULTS),
        };
        match search(&a.query, n, &ctx.web_settings(), cancel) {
            Ok(h) => ToolOutput::ok(render(&a.query, &h)),
            Err(e) => ToolOutput::err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn providers_and_their_errors() {
        let mut s = WebSettings::default();
        let e = provider(&s).unwrap_err();
        assert!(
            e.contains("search.provider") && e.contains("search.api_key_env"),
            "{e}"
        );
        s.search_provider = Some("searxng:http://127.0.0.1:8888".into());
        assert!(matches!(provider(&s), Ok(Provider::Searxng(_))));
        s.search_provider = Some("brave".into());
        s.search_key_env = Some("YUYAO_TEST_NO_SUCH_VAR".into());
        assert!(provider(&s).unwrap_err().contains("YUYAO_TEST_NO_SUCH_VAR"));
        s.search_provider = Some("bing".into());
        assert!(provider(&s).unwrap_err().contains("not known"));
    }
}
