//! What the web tools and the browser read from the session: the network switch and the
//! `WebFetch(domain:…)` / `Browser(domain:…)` rules of the policy, and the keys
//! `search.provider`, `search.api_key_env`, `browser.executable` (read at every use: synced
//! before every tool call, with the sandbox), and whether the session may only read.

use crate::session::Session;
use yuyao_protocol::NetworkAccess;
use yuyao_tools::web::WebSettings;

pub(crate) fn sync(s: &Session) {
    let (network_on, fetch_rules, browser_rules, read_only) = {
        let st = s.lock();
        (
            st.policy.network == NetworkAccess::On,
            st.policy.host_rules("web-fetch"),
            st.policy.host_rules("browser"),
            st.policy.read_only_reason().is_some(),
        )
    };
    let text = |k: &str| {
        s.config
            .get(k)
            .and_then(|v| v.as_str().map(str::to_string))
            .filter(|v| !v.trim().is_empty())
    };
    let settings = WebSettings {
        network_on,
        fetch_rules,
        browser_rules,
        search_provider: text("search.provider"),
        search_key_env: text("search.api_key_env"),
        browser_executable: text("browser.executable"),
        read_only,
    };
    if let Ok(mut w) = s.ctx.web.lock() {
        *w = settings;
    }
}
