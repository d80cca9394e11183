//! `--role architect`: a two-model flow like aider's architect/editor. The architect model
//! (`architect.model`, default the session's model) plans the change read-only — the policy
//! runs its calls under the read-only `ask` role; the editor model (`architect.editor_model`,
//! default the session's model) then turns that plan into edits with the file tools. Both
//! phases are ordinary turns of the loop (every call visible, every cost added to the
//! session's), announced with the model each uses.

use crate::session::{Session, TurnSummary};
use tokio_util::sync::CancellationToken;
use yuyao_protocol::{Message, NoticeLevel, Role};

const PLAN_NOTE: &str = "[architect phase] Plan the change only: read what you need (your tools are read-only now), then answer with a concise, numbered plan of the edits — which files, what to change and why. Do not try to edit anything.";

impl Session {
    fn architect_setting(&self, key: &str) -> Option<String> {
        self.config
            .get(key)
            .and_then(|v| v.as_str().map(str::to_string))
            .filter(|s| !s.trim().is_empty())
    }

    /// The turn of the architect role: plan (read-only, architect model), then edit (editor
    /// model). The session's model and role are what they were afterwards.
    pub(crate) async fn run_architect(&self, token: &CancellationToken) -> TurnSummary {
        let current = self.model_name().unwrap_or_default();
        let planner = self
            .architect_setting("architect.model")
            .unwrap_or_else(|| current.clone());
        let editor = self
            .architect_setting("architect.editor_model")
            .unwrap_or_else(|| current.clone());
        let saved = {
            let mut st = self.lock();
            let saved = (st.model_override.clone(), st.policy.role);
            st.model_override = Some(planner.clone());
            st.policy.role = Role::Ask;
            st.push(Message::user(PLAN_NOTE));
            saved
        };
        self.notice(
            NoticeLevel::Info,
            format!("architect: {planner} plans the change (read-only)"),
        );
        // The plan is not the final answer: --json-schema applies to the editor's.
        let format = crate::feature::answer_format();
        if let Some(f) = format {
            (f.suspend)(self, true);
        }
        let plan = self.run_turn(token).await;
        if let Some(f) = format {
            (f.suspend)(self, false);
        }
        let result = if plan.status != "completed" || plan.text.trim().is_empty() {
            plan
        } else {
            {
                let mut st = self.lock();
                st.model_override = Some(editor.clone());
                st.policy.role = Role::Execute;
                // A new phase under another role: features forget what the read-only
                // phase was refused (that role working as designed).
                for phase in crate::feature::hooks(|f| f.new_phase) {
                    phase(&mut st);
                }
                st.push(Message::user(format!(
                    "[editor phase] Implement this plan now with the file tools, then report what you changed:\n\n{}",
                    plan.text.trim()
                )));
            }
            self.notice(
                NoticeLevel::Info,
                format!("architect: {editor} makes the edits"),
            );
            self.run_turn(token).await
        };
        let mut st = self.lock();
        st.model_override = saved.0;
        st.policy.role = saved.1;
        result
    }
}
