//! Deferred tool schemas, the session's side (`yuyao_model::tool_search` holds the rules):
//! which tools this session offers, the `tools.defer` setting, the system prompt the list
//! was fixed in, and the `tool-search` tool itself.

use crate::session::Session;
use serde_json::Value;
use yuyao_model::tool_search;
use yuyao_protocol::{ToolCall, canonical_tool_name};
use yuyao_tools::ToolOutput;

pub(crate) use tool_search::NAME;

impl Session {
    /// `tools.defer` (default on; read at every request, so a change applies to the next).
    fn defer_setting(&self) -> bool {
        self.config
            .get("tools.defer")
            .and_then(|v| v.as_bool())
            .unwrap_or(true)
    }

    /// The offered tools' full schemas split into (sent from the first request, deferred).
    fn raw_split(&self) -> (Vec<Value>, Vec<Value>) {
        let all = self.all_tool_schemas();
        if !self.defer_setting() {
            return (all, Vec::new());
        }
        tool_search::split(all, yuyao_policy::is_mcp_tool)
    }

    /// [`Session::raw_split`] against the conversation's system prompt
    /// ([`tool_search::against_prompt`]).
    pub(crate) fn split_schemas(&self) -> (Vec<Value>, Vec<Value>) {
        let (sent, deferred) = self.raw_split();
        let prompt = self.lock().prefix.as_ref().map(|p| p.system.clone());
        match prompt {
            Some(prompt) => tool_search::against_prompt(sent, deferred, &prompt),
            None => (sent, deferred),
        }
    }

    /// For the system prompt, fixed with it: the "More tools" section
    /// ([`tool_search::listing`]).
    pub(crate) fn deferred_listing(&self) -> String {
        let (_, deferred) = self.raw_split();
        tool_search::listing(&deferred, yuyao_policy::is_mcp_tool)
    }
}

/// A `tool-search` call ([`tool_search::answer`]). `None`: another tool.
pub(crate) fn run_tool(s: &Session, call: &ToolCall) -> Option<ToolOutput> {
    if canonical_tool_name(&call.name) != Some(NAME) {
        return None;
    }
    let (sent, deferred) = s.split_schemas();
    Some(
        match tool_search::answer(call, &sent, &deferred, &s.messages()) {
            Ok(text) => ToolOutput::ok(text),
            Err(text) => ToolOutput::err(text),
        },
    )
}
