//! Which enabled tools a request advertises. Every schema is paid for in the first request of
//! a conversation (nothing is cached yet) and again whenever the prefix is rebuilt, so a tool
//! that cannot work in the session's current state is left out of the `tools` array and the
//! prompt's "More tools" list: web-search without a `search.provider`, web-fetch with the network
//! off, the browser when no Chromium can be found. Each appears as soon as its condition
//! holds (the list is computed per request); a call to one that is not offered still runs
//! through the usual path and gets the usual refusal with what would allow it.

use crate::session::Session;
use yuyao_protocol::NetworkAccess;

impl Session {
    /// Whether `name` (an enabled tool) is offered to the model in this state.
    pub(crate) fn tool_offered(&self, name: &str) -> bool {
        let text = |k: &str| {
            self.config
                .get(k)
                .and_then(|v| v.as_str().map(str::to_string))
                .filter(|v| !v.trim().is_empty())
        };
        match name {
            "web-search" => text("search.provider").is_some(),
            "web-fetch" => self.lock().policy.network == NetworkAccess::On,
            "browser" => {
                yuyao_tools::browser::find_executable(text("browser.executable").as_deref()).is_ok()
            }
            _ => true,
        }
    }
}
