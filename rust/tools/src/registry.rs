//! The tool registry: advertised schemas and dispatch by any accepted spelling.

use crate::{Tool, browser, exec, fs, jobs, media, notebook, patch, search, web};
use serde_json::{Value, json};
use yuyao_protocol::canonical_tool_name;

pub struct Registry {
    tools: Vec<Box<dyn Tool>>,
}

/// A parsed tool call: the canonical name and the decoded arguments.
pub struct ToolCallSpec {
    pub name: &'static str,
    pub args: Value,
}

impl Default for Registry {
    fn default() -> Self {
        Registry {
            tools: vec![
                Box::new(exec::Bash),
                Box::new(fs::Read),
                Box::new(fs::Write),
                Box::new(fs::Edit),
                Box::new(fs::MultiEdit),
                Box::new(patch::ApplyPatch),
                Box::new(notebook::NotebookEdit),
                Box::new(media::ReadMedia),
                Box::new(web::fetch::WebFetch),
                Box::new(web::search::WebSearch),
                Box::new(browser::Browser),
                Box::new(search::Grep),
                Box::new(search::Glob),
                Box::new(jobs::Monitor),
                Box::new(jobs::BgList),
                Box::new(jobs::BgOutput),
                Box::new(jobs::BgStop),
            ],
        }
    }
}

impl Registry {
    pub fn get(&self, name: &str) -> Option<&dyn Tool> {
        let canon = canonical_tool_name(name)?;
        self.tools
            .iter()
            .find(|t| t.name() == canon)
            .map(|t| t.as_ref())
    }

    pub fn names(&self) -> Vec<&'static str> {
        self.tools.iter().map(|t| t.name()).collect()
    }

    /// One-line descriptions for `/tools`.
    pub fn describe(&self) -> Vec<(&'static str, &'static str)> {
        self.tools
            .iter()
            .map(|t| (t.name(), t.description()))
            .collect()
    }

    /// OpenAI `tools` entries for the tools `keep` accepts.
    pub fn schemas(&self, keep: impl Fn(&str) -> bool) -> Vec<Value> {
        self.tools
            .iter()
            .filter(|t| keep(t.name()))
            .map(|t| {
                json!({
                    "type": "function",
                    "function": {
                        "name": t.name(),
                        "description": t.description(),
                        "parameters": t.parameters(),
                    }
                })
            })
            .collect()
    }
}

/// Decodes a call's argument text. Empty means `{}`; anything but a JSON object is an error
/// that tells the model what went wrong.
pub fn parse_arguments(raw: &str) -> Result<Value, String> {
    if raw.trim().is_empty() {
        return Ok(json!({}));
    }
    match serde_json::from_str::<Value>(raw) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(other) => Err(format!(
            "tool arguments must be a JSON object, got: {}",
            other.to_string().chars().take(200).collect::<String>()
        )),
        Err(e) => Err(format!(
            "tool arguments are not valid JSON ({e}); send a JSON object with the documented parameters"
        )),
    }
}
