//! The `task` tool: `{description, prompt, agent?}` runs a sub-agent and returns its final
//! text with a one-line account of what it did. The task calls of one reply run concurrently
//! (at most `agents.max_parallel` at once, default 2); their results keep the call order.

#[allow(unused_imports)]
use crate::session_ext::*;

use super::fork::Running;
use super::run::{ChildResult, run_child};
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;
use yuyao_core::CallOutcome;
use yuyao_core::Session;
use yuyao_protocol::{Event, Mode, ToolCall, canonical_tool_name};
use yuyao_tools::ToolOutput;

const DEFAULT_MAX_PARALLEL: usize = 2;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskArgs {
    #[serde(default)]
    description: String,
    prompt: String,
    #[serde(default, alias = "subagent_type", alias = "agent_type")]
    agent: Option<String>,
}

pub(crate) trait TaskExt {
    fn task_schema(&self) -> Value;
    fn run_task_calls(
        &self,
        calls: &[ToolCall],
        intent: &str,
        token: &CancellationToken,
    ) -> HashMap<String, CallOutcome>;
    fn task_outcome(
        &self,
        call: &ToolCall,
        ok: bool,
        ran: bool,
        writes: bool,
        text: String,
    ) -> CallOutcome;
}

impl TaskExt for Session {
    /// The `task` tool's schema, naming the agents this session can start.
    fn task_schema(&self) -> Value {
        let agents: Vec<String> = self
            .agent_defs()
            .0
            .iter()
            .map(|d| format!("- {}: {}", d.name, d.description))
            .collect();
        json!({
            "type": "function",
            "function": {
                "name": "task",
                "description": format!(
                    "Start a sub-agent: a fresh context (the project's instructions and memory, not this conversation) that works on one self-contained task and returns its final message. Sub-agents are read-only unless their definition says otherwise. Several task calls in one reply run in parallel. Give the prompt everything the sub-agent needs.\nAgents:\n{}",
                    agents.join("\n")
                ),
                "parameters": {
                    "type": "object",
                    "properties": {
                        "description": {"type": "string", "description": "3-7 words: what the sub-agent does"},
                        "prompt": {"type": "string", "description": "the complete task for the sub-agent"},
                        "agent": {"type": "string", "description": "which agent (default: general)"}
                    },
                    "required": ["description", "prompt"]
                }
            }
        })
    }

    /// Runs every `task` call of a reply — concurrently, bounded — before the batch's other
    /// calls; returns their outcomes by call id (the loop keeps the call order).
    fn run_task_calls(
        &self,
        calls: &[ToolCall],
        intent: &str,
        token: &CancellationToken,
    ) -> HashMap<String, CallOutcome> {
        let mut out = HashMap::new();
        if !self.tool_enabled("task") {
            return out;
        }
        let tasks: Vec<&ToolCall> = calls
            .iter()
            .filter(|c| canonical_tool_name(&c.name) == Some("task"))
            .collect();
        if tasks.is_empty() {
            return out;
        }
        struct Job {
            call: ToolCall,
            launch: super::run::Launch,
            prompt: String,
            running: Arc<Running>,
            writes: bool,
            iso: Option<super::isolated::Isolation>,
        }
        let mut jobs: VecDeque<Job> = VecDeque::new();
        for call in tasks {
            self.emit(Event::ToolBegin {
                id: call.id.clone(),
                name: call.name.clone(),
                arguments: call.arguments.clone(),
                intent: intent.to_string(),
            });
            let prepared = serde_json::from_str::<TaskArgs>(&call.arguments)
                .map_err(|e| {
                    format!(
                        "invalid task arguments ({e}); send {{\"description\": \"…\", \"prompt\": \"…\", \"agent\": \"explore\"}}"
                    )
                })
                .and_then(|a| {
                    // The pipeline's adjudication, like any tool (deny and ask rules naming
                    // it, PreToolUse hooks, the decision record, the approval).
                    self.admit_delegated("task", call)?;
                    if a.prompt.trim().is_empty() {
                        return Err("the task's prompt is empty".to_string());
                    }
                    let name = a.agent.clone().unwrap_or_else(|| "general".into());
                    let def = self.agent_def(&name)?;
                    let launch = self.child_launch(&def, &call.id, false, Vec::new())?;
                    Ok((a, launch))
                });
            match prepared {
                Err(e) => {
                    out.insert(
                        call.id.clone(),
                        self.task_outcome(call, false, false, false, e),
                    );
                }
                Ok((a, mut launch)) => {
                    let running = Running::new(
                        &launch.agent_id,
                        &launch.agent,
                        "task",
                        if a.description.is_empty() {
                            &a.prompt
                        } else {
                            &a.description
                        },
                        &call.id,
                    );
                    let writes = launch.opts.mode != Some(Mode::Plan);
                    // A writing sub-agent works in a worktree of its own, not this checkout.
                    let label = format!("task-{}", launch.agent_id);
                    let iso = self.isolate_child(&mut launch, &label);
                    self.family().children_push(running.clone());
                    jobs.push_back(Job {
                        call: call.clone(),
                        launch,
                        prompt: a.prompt,
                        running,
                        writes,
                        iso,
                    });
                }
            }
        }
        if jobs.is_empty() {
            return out;
        }
        let max_parallel = self
            .config()
            .get("agents.max_parallel")
            .and_then(|v| v.as_integer())
            .filter(|n| *n > 0)
            .map(|n| n as usize)
            .unwrap_or(DEFAULT_MAX_PARALLEL);
        let all: Vec<Arc<Running>> = jobs.iter().map(|j| j.running.clone()).collect();
        let workers = max_parallel.min(jobs.len());
        let queue = Mutex::new(jobs);
        type Done = (
            ToolCall,
            bool,
            ChildResult,
            Option<super::isolated::Isolation>,
        );
        let done: Mutex<Vec<Done>> = Mutex::new(Vec::new());
        std::thread::scope(|scope| {
            let mut handles = Vec::new();
            for _ in 0..workers {
                handles.push(scope.spawn(|| {
                    loop {
                        let job = queue.lock().unwrap_or_else(|e| e.into_inner()).pop_front();
                        let Some(job) = job else { break };
                        self.agents().active(1);
                        self.lock().trajectory.record(
                            "subagent_start",
                            json!({"agent_id": job.launch.agent_id, "agent": job.launch.agent,
                                   "call_id": job.call.id, "mode": job.launch.opts.mode,
                                   "tools": job.launch.opts.tools}),
                        );
                        let r = run_child(&job.launch, &job.prompt, &job.running.stop, |s| {
                            job.running.attach(s)
                        });
                        self.agents().active(-1);
                        self.merge_child(r.cost, r.steps, &r.usage);
                        job.running.finish(&r.status, &r.account);
                        done.lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push((job.call, job.writes, r, job.iso));
                    }
                }));
            }
            // This thread watches for Esc: stopping the parent stops its sub-agents.
            while handles.iter().any(|h| !h.is_finished()) {
                if token.is_cancelled() {
                    for r in &all {
                        r.halt();
                    }
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        });
        self.family().children_remove(&all);
        for (call, writes, r, iso) in done.into_inner().unwrap_or_else(|e| e.into_inner()) {
            // Its work comes back to the checkout (after every sibling ended: one at a time).
            let back = iso.map(|iso| self.bring_back(iso, &format!("task {}", call.id)));
            self.lock().trajectory.record(
                "subagent_end",
                json!({"agent_id": call_id_agent(&all, &call.id), "call_id": call.id,
                       "status": r.status, "error": r.error, "cost_usd": r.cost,
                       "steps": r.steps, "trajectory": r.trajectory}),
            );
            let ok = r.status == "completed";
            let agent = all
                .iter()
                .find(|x| x.call_id_is(&call.id))
                .map(|x| format!("{} {}", x.agent, x.id))
                .unwrap_or_default();
            let text = if ok {
                format!("{}\n\n[sub-agent {agent}: {}]", r.text.trim(), r.account)
            } else {
                format!(
                    "The sub-agent did not finish: {} ({}).\n{}\n\n[sub-agent {agent}: {}]",
                    r.status,
                    r.error.unwrap_or_default(),
                    r.text.trim(),
                    r.account
                )
            };
            let text = match back {
                Some(line) => format!("{text}\n{line}"),
                None => text,
            };
            out.insert(
                call.id.clone(),
                self.task_outcome(&call, ok, true, writes, text),
            );
        }
        out
    }

    /// A task's report as its call's result: the same last stages as every call (cap,
    /// redaction, completion facts, trajectory, `ToolEnd`), then PostToolUse hooks' word.
    fn task_outcome(
        &self,
        call: &ToolCall,
        ok: bool,
        ran: bool,
        writes: bool,
        text: String,
    ) -> CallOutcome {
        let mut out = if ok {
            ToolOutput::ok(text)
        } else {
            ToolOutput::err(text)
        };
        if ran {
            let value = yuyao_tools::parse_arguments(&call.arguments).unwrap_or_default();
            let feedback = self.tool_feedback("task", &value, out.ok, &out.text);
            if !feedback.is_empty() {
                out.text = format!("{}\n\n[PostToolUse hook]\n{feedback}", out.text);
            }
        }
        let t0 = std::time::Instant::now();
        self.finish_call(call, out, ran, writes, None, t0, 0)
    }
}

fn call_id_agent(all: &[Arc<Running>], call_id: &str) -> String {
    all.iter()
        .find(|r| r.call_id_is(call_id))
        .map(|r| r.id.clone())
        .unwrap_or_default()
}
