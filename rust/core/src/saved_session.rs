//! A saved session: resuming it at open (`-c/--continue`, `--resume`, `--fork-session`) and
//! the conversation API `/rewind` and the fronts use (checkpoints, rewinding, compacting).

use crate::session::{CoreError, Session};
use serde_json::{Value, json};
use yuyao_protocol::{Message, NoticeLevel, Role};
use yuyao_store::sessions::{self, Replay, SessionLog};

impl Session {
    pub(crate) fn sessions_dir(&self) -> std::path::PathBuf {
        sessions::sessions_dir(&self.paths.home)
    }

    /// At open: resumes the session the options name, if any.
    pub(crate) fn open_saved_session(&self) -> Result<(), CoreError> {
        let o = &self.opts;
        if o.continue_last && o.resume.is_some() {
            return Err(CoreError::Usage(
                "--continue and --resume cannot be used together".into(),
            ));
        }
        if o.fork_session && !o.continue_last && o.resume.is_none() {
            return Err(CoreError::Usage(
                "--fork-session needs --continue or --resume".into(),
            ));
        }
        let dir = self.sessions_dir();
        let id = if o.continue_last {
            let cwd = self.cwd();
            sessions::list_sessions(&dir)
                .into_iter()
                .find(|s| s.cwd == cwd && !s.archived && s.messages > 0)
                .map(|s| s.id)
                .ok_or_else(|| {
                    CoreError::Failed(format!("no previous session in {cwd} to continue"))
                })?
        } else if let Some(r) = &o.resume {
            sessions::resolve_session(&dir, r).map_err(CoreError::Failed)?
        } else {
            return Ok(());
        };
        let (log, warnings) = SessionLog::load(&dir, &id).map_err(CoreError::Failed)?;
        for w in warnings {
            self.notice(NoticeLevel::Warning, w);
        }
        let (log, what) = if o.fork_session {
            let forked = log.fork(&dir, false, None);
            let what = format!("forked session {} from {id}", forked.id());
            (forked, what)
        } else {
            (log, format!("resumed session {id}"))
        };
        let idle = log
            .entries()
            .last()
            .and_then(|e| chrono::DateTime::parse_from_rfc3339(&e.ts).ok())
            .map(|t| (chrono::Local::now().fixed_offset() - t).num_milliseconds() as f64 / 1000.0);
        let replay = log.replay();
        let n = replay.messages.len();
        self.restore_switches(&replay);
        let new_id = log.id().to_string();
        self.install(log, replay.messages);
        {
            let mut st = self.lock();
            st.resumed_idle_s = idle;
            st.trajectory.record(
                "session_resumed",
                json!({"session_id": new_id, "from": id, "messages": n}),
            );
        }
        self.notice(NoticeLevel::Info, format!("{what} ({n} messages)"));
        Ok(())
    }

    /// Role and model recorded in the session, unless a flag says otherwise. The permission
    /// mode is not restored: it is a trust decision of the invocation that resumes (a session
    /// left in yolo must not make a later `-p -c` run unattended in yolo).
    pub(crate) fn restore_switches(&self, r: &Replay) {
        let mut st = self.lock();
        if self.opts.role.is_none()
            && let Some(x) = r.role.as_deref().and_then(|x| x.parse::<Role>().ok())
            && x != Role::Orchestrator
        {
            st.policy.role = x;
        }
        if self.opts.model.name.is_none()
            && let Some(m) = &r.model
        {
            st.model_override = Some(m.clone());
        }
    }

    /// Makes `log` the session's file and `messages` its conversation.
    pub(crate) fn install(&self, log: SessionLog, messages: Vec<Message>) {
        {
            let mut st = self.lock();
            st.sync_log();
            st.logged = messages.len();
            st.history.replace(messages);
            st.log = log;
            st.reset_prefix();
        }
        // Features restore their part (the plan waiting for approval, or the approved one).
        for restored in crate::feature::hooks(|f| f.restored) {
            restored(self);
        }
    }

    /// User prompts on the current path of the session tree, oldest first: `(entry id,
    /// text)`. Every prompt is a checkpoint `/rewind` can return to.
    pub fn conversation_checkpoints(&self) -> Vec<(String, String)> {
        let mut st = self.lock();
        st.sync_log();
        st.log.checkpoints()
    }

    /// Restores the conversation to just before the prompt `entry` (an id from
    /// [`Session::conversation_checkpoints`]); the branch left behind stays in the tree.
    /// Returns the prompt's text (a front may put it back in the input box).
    pub fn rewind_conversation(&self, entry: &str) -> Result<String, CoreError> {
        let mut st = self.lock();
        st.sync_log();
        let text = st.log.rewind_before(entry).map_err(CoreError::Usage)?;
        let messages = st.log.replay().messages;
        st.logged = messages.len();
        st.history.replace(messages);
        st.reset_prefix();
        Ok(text)
    }

    /// Records a checkpoint (e.g. the snapshot taken before a tool batch) in the session tree;
    /// returns the entry id.
    pub fn log_checkpoint(&self, fields: Value) -> String {
        self.lock().log_entry("checkpoint", fields)
    }

    /// Compacts the conversation now (what `/compact` runs; `/rewind`'s "summarize" too).
    pub fn compact_conversation(&self, focus: Option<&str>) -> Result<String, CoreError> {
        crate::compact::compact_command(
            self,
            &focus.map(|f| vec![f.to_string()]).unwrap_or_default(),
        )
    }

    /// The id of the session file in use (changes with `/new`, `/branch`, `/sessions`).
    pub fn session_id(&self) -> String {
        self.lock().log.id().to_string()
    }
}
