//! `/flow:<name>`: a skill whose SKILL.md holds a flow graph runs node by node. The graph is a
//! fenced block, either ```` ```flow ```` with YAML
//!
//! ```yaml
//! start: test            # default: the first node
//! max_steps: 8           # node runs before the flow stops (default 20)
//! nodes:
//!   test: Run the test suite and say "pass" or "fail".
//!   fix: {prompt: Fix the failing test.}
//!   ship: Write the release note.
//! edges:
//!   - {from: test, to: ship, when: pass}
//!   - {from: test, to: fix, when: fail}
//!   - {from: fix, to: test}
//! ```
//!
//! or ```` ```mermaid ```` / ```` ```flow ```` holding a `flowchart` (`A[prompt] -->|cond| B`,
//! `A -- cond --> B`, `A --> B`; the first node named is the start). Each node is one turn;
//! where a node's edges have conditions, the answer is asked to end with one of them and the
//! branch is the condition found in its last line (else anywhere in it, as whole words), the
//! unconditional edge otherwise. A node without outgoing edges ends the flow. A graph that
//! names an unknown node or has no start is refused before any turn.

#[allow(unused_imports)]
use crate::session_ext::*;

use regex::Regex;
use serde_json::{Value, json};
use std::sync::LazyLock;
use yuyao_core::{CoreError, Session};
use yuyao_protocol::NoticeLevel;

pub const DEFAULT_MAX_STEPS: usize = 20;

#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub id: String,
    pub prompt: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Edge {
    pub from: String,
    pub to: String,
    pub when: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Flow {
    pub start: String,
    pub nodes: Vec<Node>,
    pub edges: Vec<Edge>,
    pub max_steps: usize,
}

/// The fenced graph block of a body, if any: (language, text).
fn block(body: &str) -> Option<(String, String)> {
    let mut lines = body.lines();
    while let Some(l) = lines.next() {
        let t = l.trim();
        let Some(lang) = t.strip_prefix("```") else {
            continue;
        };
        let lang = lang.trim().to_ascii_lowercase();
        let mut text = String::new();
        for l in lines.by_ref() {
            if l.trim().starts_with("```") {
                break;
            }
            text.push_str(l);
            text.push('\n');
        }
        let first = text
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or("");
        let mermaid = first.starts_with("flowchart") || first.starts_with("graph ");
        if lang == "flow" || (lang == "mermaid" && mermaid) {
            return Some((lang, text));
        }
    }
    None
}

pub fn has_block(body: &str) -> bool {
    block(body).is_some()
}

/// The flow of a skill body: `Ok(None)` without a graph block, `Err` for a bad graph.
pub fn parse(body: &str) -> Result<Option<Flow>, String> {
    let Some((_, text)) = block(body) else {
        return Ok(None);
    };
    let first = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let flow = if first.starts_with("flowchart") || first.starts_with("graph ") {
        parse_mermaid(&text)?
    } else {
        parse_yaml(&text)?
    };
    validate(&flow)?;
    Ok(Some(flow))
}

fn text_of(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn parse_yaml(text: &str) -> Result<Flow, String> {
    let y: serde_yaml_ng::Value = serde_yaml_ng::from_str(text).map_err(|e| {
        let line = e.location().map(|l| l.line()).unwrap_or(1);
        format!("line {line} of the flow block: invalid YAML ({e})")
    })?;
    let v = serde_json::to_value(&y).map_err(|e| e.to_string())?;
    let mut nodes = Vec::new();
    match v.get("nodes") {
        Some(Value::Object(m)) => {
            for (id, n) in m {
                let prompt = match n {
                    Value::Object(o) => o.get("prompt").and_then(text_of).unwrap_or_default(),
                    other => text_of(other).unwrap_or_default(),
                };
                nodes.push(Node {
                    id: id.clone(),
                    prompt,
                });
            }
        }
        Some(Value::Array(a)) => {
            for n in a {
                let id = n.get("id").and_then(text_of).ok_or("a node has no id")?;
                let prompt = n.get("prompt").and_then(text_of).unwrap_or_default();
                nodes.push(Node { id, prompt });
            }
        }
        _ => return Err("the flow has no nodes (a `nodes:` mapping or list)".into()),
    }
    let mut edges = Vec::new();
    if let Some(Value::Array(a)) = v.get("edges") {
        for e in a {
            let get = |k: &[&str]| k.iter().find_map(|k| e.get(*k).and_then(text_of));
            let from = get(&["from", "source"]).ok_or("an edge has no `from`")?;
            let to = get(&["to", "target"]).ok_or("an edge has no `to`")?;
            let when = get(&["when", "if", "condition", "on"]).filter(|w| !w.trim().is_empty());
            edges.push(Edge { from, to, when });
        }
    }
    let start = v
        .get("start")
        .and_then(text_of)
        .or_else(|| nodes.first().map(|n| n.id.clone()))
        .unwrap_or_default();
    let max_steps = v
        .get("max_steps")
        .or_else(|| v.get("max-steps"))
        .and_then(Value::as_u64)
        .map(|n| n as usize)
        .unwrap_or(DEFAULT_MAX_STEPS);
    Ok(Flow {
        start,
        nodes,
        edges,
        max_steps,
    })
}

static ARROW: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\s*(?:-->\s*\|([^|]*)\||--\s+([^-][^>]*?)\s+-->|-\.->|==>|-->)\s*").expect("regex")
});
static NODE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^([A-Za-z0-9_]+)\s*(.*)$").expect("regex"));

/// `A[text]`, `A(text)`, `A{text}`, `A((text))`, `A([text])`, `A` → (id, text).
fn mermaid_node(tok: &str) -> Result<(String, String), String> {
    let tok = tok.trim().trim_end_matches(';').trim();
    let c = NODE
        .captures(tok)
        .ok_or_else(|| format!("cannot read the node '{tok}'"))?;
    let id = c[1].to_string();
    let text = c[2]
        .trim()
        .trim_start_matches(['[', '(', '{', '>', '/'])
        .trim_end_matches([']', ')', '}', '/'])
        .trim()
        .trim_matches('"')
        .to_string();
    Ok((id, text))
}

fn parse_mermaid(text: &str) -> Result<Flow, String> {
    let mut nodes: Vec<Node> = Vec::new();
    let mut edges = Vec::new();
    let add = |id: String, t: String, nodes: &mut Vec<Node>| match nodes
        .iter_mut()
        .find(|n| n.id == id)
    {
        Some(n) if n.prompt.is_empty() => n.prompt = t,
        Some(_) => {}
        None => nodes.push(Node { id, prompt: t }),
    };
    for (i, line) in text
        .lines()
        .enumerate()
        .skip_while(|(_, l)| l.trim().is_empty())
        .skip(1)
    {
        let l = line.trim();
        if l.is_empty()
            || l.starts_with("%%")
            || [
                "classDef",
                "class ",
                "style ",
                "linkStyle",
                "subgraph",
                "end",
                "direction",
            ]
            .iter()
            .any(|k| l.starts_with(k))
        {
            continue;
        }
        for stmt in l.split(';').map(str::trim).filter(|s| !s.is_empty()) {
            let mut last: Option<String> = None;
            let mut pending: Option<Option<String>> = None;
            let mut pos = 0;
            let at = |e: String| format!("line {} of the flow block: {e}", i + 1);
            for m in ARROW.captures_iter(stmt) {
                let whole = m.get(0).expect("match");
                let (id, t) = mermaid_node(&stmt[pos..whole.start()]).map_err(at)?;
                add(id.clone(), t, &mut nodes);
                if let (Some(from), Some(when)) = (last.take(), pending.take()) {
                    edges.push(Edge {
                        from,
                        to: id.clone(),
                        when,
                    });
                }
                last = Some(id);
                let cond = m
                    .get(1)
                    .or_else(|| m.get(2))
                    .map(|c| c.as_str().trim().trim_matches('"').to_string())
                    .filter(|c| !c.is_empty());
                pending = Some(cond);
                pos = whole.end();
            }
            let (id, t) = mermaid_node(&stmt[pos..]).map_err(at)?;
            add(id.clone(), t, &mut nodes);
            if let (Some(from), Some(when)) = (last, pending) {
                edges.push(Edge { from, to: id, when });
            }
        }
    }
    let start = nodes.first().map(|n| n.id.clone()).unwrap_or_default();
    Ok(Flow {
        start,
        nodes,
        edges,
        max_steps: DEFAULT_MAX_STEPS,
    })
}

fn validate(f: &Flow) -> Result<(), String> {
    let ids: Vec<&str> = f.nodes.iter().map(|n| n.id.as_str()).collect();
    if ids.is_empty() {
        return Err("the flow has no nodes, so no start".into());
    }
    if f.start.is_empty() || !ids.contains(&f.start.as_str()) {
        return Err(format!(
            "no start: the start node '{}' is not a node (nodes: {})",
            f.start,
            ids.join(", ")
        ));
    }
    for e in &f.edges {
        for end in [&e.from, &e.to] {
            if !ids.contains(&end.as_str()) {
                return Err(format!(
                    "the edge {} → {} names an unknown node '{end}' (nodes: {})",
                    e.from,
                    e.to,
                    ids.join(", ")
                ));
            }
        }
    }
    if let Some(n) = f.nodes.iter().find(|n| n.prompt.trim().is_empty()) {
        return Err(format!("the node '{}' has no prompt", n.id));
    }
    if f.max_steps == 0 {
        return Err("max_steps must be at least 1".into());
    }
    Ok(())
}

fn says(text: &str, phrase: &str) -> bool {
    let pattern = format!(r"(?i)(^|[^\w]){}($|[^\w])", regex::escape(phrase.trim()));
    Regex::new(&pattern).is_ok_and(|r| r.is_match(text))
}

/// The edge a node's answer takes: a condition named in its last line, else anywhere in it,
/// else the unconditional edge. `Err` lists the conditions when none applies.
pub fn choose<'a>(edges: &[&'a Edge], answer: &str) -> Result<Option<&'a Edge>, String> {
    if edges.is_empty() {
        return Ok(None);
    }
    let last = answer
        .lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty())
        .unwrap_or("");
    let conditional: Vec<&&Edge> = edges.iter().filter(|e| e.when.is_some()).collect();
    for scope in [last, answer] {
        if let Some(e) = conditional
            .iter()
            .find(|e| says(scope, e.when.as_deref().unwrap_or("")))
        {
            return Ok(Some(e));
        }
    }
    if let Some(e) = edges.iter().find(|e| e.when.is_none()) {
        return Ok(Some(e));
    }
    Err(format!(
        "the answer names none of the branches ({})",
        conditional
            .iter()
            .filter_map(|e| e.when.clone())
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

pub(crate) trait FlowExt {
    fn run_flow_command(&self, name: &str, rest: &str) -> Option<Result<String, CoreError>>;
    fn run_flow(&self, name: &str, args: &str) -> Result<String, CoreError>;
    fn activate_skill_for_flow(&self, skill: &crate::skills::Skill);
}

impl FlowExt for Session {
    /// `/flow:<name> [args]`; `None` when `name` is not `flow:…`.
    fn run_flow_command(&self, name: &str, rest: &str) -> Option<Result<String, CoreError>> {
        let skill_name = name.strip_prefix("flow:")?;
        // A custom command `commands/flow/<x>.md` keeps its name when no skill has it.
        let is_skill = self.skills().iter().any(|s| s.name == skill_name);
        if !is_skill && self.custom_commands().iter().any(|c| c.name == name) {
            return None;
        }
        Some(self.run_flow(skill_name, rest.trim()))
    }

    fn run_flow(&self, name: &str, args: &str) -> Result<String, CoreError> {
        let skills = self.skills();
        let Some(skill) = skills.iter().find(|s| s.name == name.to_ascii_lowercase()) else {
            let flows: Vec<String> = skills
                .iter()
                .filter(|s| s.is_flow())
                .map(|s| format!("/flow:{}", s.name))
                .collect();
            return Err(CoreError::Usage(format!(
                "no skill named '{name}' (flows: {})",
                if flows.is_empty() {
                    "none".into()
                } else {
                    flows.join(", ")
                }
            )));
        };
        let flow = match parse(&skill.body) {
            Ok(Some(f)) => f,
            Ok(None) => {
                return Err(CoreError::Usage(format!(
                    "the skill '{name}' ({}) holds no flow graph (a ```flow block, YAML or a mermaid flowchart); run it with /skill {name}",
                    skill.file.display()
                )));
            }
            Err(e) => {
                return Err(CoreError::Usage(format!(
                    "flow '{name}' ({}): {e}; nothing was run",
                    skill.file.display()
                )));
            }
        };
        if self.is_busy() {
            return Err(CoreError::Usage(format!(
                "/flow:{name} starts turns: send it when the running turn has ended"
            )));
        }
        self.lock().trajectory.record(
            "flow_start",
            json!({"name": name, "file": skill.file, "start": flow.start, "nodes": flow.nodes.len()}),
        );
        let mut current = flow.start.clone();
        let mut path: Vec<String> = Vec::new();
        let mut last_answer = String::new();
        let mut step = 0;
        let outcome = loop {
            if step >= flow.max_steps {
                break Err(format!(
                    "stopped at node '{current}': the cycle bound of {} node runs was reached",
                    flow.max_steps
                ));
            }
            step += 1;
            let node = flow
                .nodes
                .iter()
                .find(|n| n.id == current)
                .expect("validated");
            path.push(current.clone());
            let out: Vec<&Edge> = flow.edges.iter().filter(|e| e.from == current).collect();
            let conds: Vec<String> = out.iter().filter_map(|e| e.when.clone()).collect();
            self.notice(
                NoticeLevel::Info,
                format!(
                    "flow {name} · step {step} · node {current}: {}",
                    node.prompt
                        .lines()
                        .next()
                        .unwrap_or("")
                        .chars()
                        .take(80)
                        .collect::<String>()
                ),
            );
            let mut prompt = format!(
                "[flow {name} · step {step} · node {current}]\n{}",
                node.prompt
            );
            if step == 1 && !args.is_empty() {
                prompt.push_str(&format!("\n\nArguments: {args}"));
            }
            if !conds.is_empty() {
                prompt.push_str(&format!(
                    "\n\nEnd your answer with a last line that is exactly one of: {}.",
                    conds.join(", ")
                ));
            }
            self.expand_next_prompt();
            self.activate_skill_for_flow(skill);
            let answer = match self.chat(&prompt) {
                Ok(a) => a,
                Err(e) => break Err(format!("node '{current}' failed: {e}")),
            };
            let failed = {
                let st = self.lock();
                matches!(
                    st.last_turn.status,
                    "error" | "limits_exceeded" | "interrupted"
                )
            };
            if failed {
                break Err(format!("node '{current}' did not complete"));
            }
            last_answer = answer.clone();
            let next = match choose(&out, &answer) {
                Ok(n) => n,
                Err(e) => break Err(format!("node '{current}': {e}")),
            };
            self.lock().trajectory.record(
                "flow_node",
                json!({"name": name, "node": current, "step": step, "next": next.map(|e| e.to.clone()), "when": next.and_then(|e| e.when.clone())}),
            );
            match next {
                Some(e) => {
                    if let Some(w) = &e.when {
                        self.notice(
                            NoticeLevel::Info,
                            format!("flow {name} · {current} → {} ({w})", e.to),
                        );
                    }
                    current = e.to.clone();
                }
                None => break Ok(()),
            }
        };
        let trail = path.join(" → ");
        self.lock().trajectory.record(
            "flow_end",
            json!({"name": name, "path": path, "ok": outcome.is_ok(), "error": outcome.as_ref().err()}),
        );
        match outcome {
            Ok(()) => {
                let summary = format!("flow {name} done: {trail}");
                self.notice(NoticeLevel::Info, summary.clone());
                Ok(if self.has_handler() {
                    String::new()
                } else {
                    format!("{summary}\n{last_answer}")
                })
            }
            Err(e) => Err(CoreError::Failed(format!(
                "flow {name}: {e} (path: {trail})"
            ))),
        }
    }

    fn activate_skill_for_flow(&self, skill: &crate::skills::Skill) {
        self.activate_skill(skill);
    }
}

/// What this feature adds to a session (feature.rs): a skill's flow as `/flow:<name>`.
pub static FEATURE: yuyao_core::Feature = yuyao_core::Feature {
    name: "flow",
    other_command: Some(|s, name, rest| s.run_flow_command(name, rest)),
    help: Some(|s, name| {
        if name.is_some() {
            return None;
        }
        let flows = s.flow_table();
        if flows.is_empty() {
            return None;
        }
        let mut out = String::from("Flows\n");
        for f in flows {
            let head = format!("/{} [args]", f["name"].as_str().unwrap_or(""));
            out.push_str(&format!(
                "  {head:<30} {}\n",
                f["help"].as_str().unwrap_or("")
            ));
        }
        Some(out)
    }),
    ..yuyao_core::Feature::NONE
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_and_mermaid_graphs() {
        let body = "Intro\n```flow\nstart: test\nnodes:\n  test: Run the tests\n  fix: {prompt: Fix it}\n  ship: Ship it\nedges:\n  - {from: test, to: ship, when: pass}\n  - {from: test, to: fix, when: fail}\n  - {from: fix, to: test}\n```\n";
        let f = parse(body).unwrap().unwrap();
        assert_eq!(f.start, "test");
        assert_eq!(f.nodes.len(), 3);
        assert_eq!(f.edges[1].when.as_deref(), Some("fail"));
        let out: Vec<&Edge> = f.edges.iter().filter(|e| e.from == "test").collect();
        assert_eq!(
            choose(&out, "I ran them.\nfail").unwrap().unwrap().to,
            "fix"
        );
        assert_eq!(choose(&out, "All pass.\nPASS").unwrap().unwrap().to, "ship");
        assert!(choose(&out, "hmm").is_err());
        let m = "```mermaid\nflowchart TD\n  A[Check the build] -->|ok| B[Ship it]\n  A -- broken --> C(Fix the build)\n  C --> A\n```";
        let f = parse(m).unwrap().unwrap();
        assert_eq!(f.start, "A");
        assert_eq!(f.nodes[0].prompt, "Check the build");
        assert_eq!(
            f.edges,
            vec![
                Edge {
                    from: "A".into(),
                    to: "B".into(),
                    when: Some("ok".into())
                },
                Edge {
                    from: "A".into(),
                    to: "C".into(),
                    when: Some("broken".into())
                },
                Edge {
                    from: "C".into(),
                    to: "A".into(),
                    when: None
                },
            ]
        );
        let bad = "```flow\nnodes:\n  a: x\nedges:\n  - {from: a, to: zz}\n```";
        assert!(parse(bad).unwrap_err().contains("unknown node 'zz'"));
        let nostart = "```flow\nstart: q\nnodes:\n  a: x\n```";
        assert!(parse(nostart).unwrap_err().contains("no start"));
        assert!(parse("no graph here").unwrap().is_none());
    }
}
