//! The request view of a conversation (seed 000 behaviour 10): older tool results stubbed
//! in batches, the durable history untouched, and [`RequestCache`], which builds the main
//! loop's growing requests from it incrementally (DESIGN §4: requests are append-only, so
//! only the messages added since the last request are viewed, sanitized and serialized).

use crate::history::{History, HistoryStamp};
use crate::{ChatRequest, Incremental, tool_search};
use std::collections::{HashMap, VecDeque};
use yuyao_protocol::{Message, MessageRole, ToolCall};

pub const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;
pub const DEFAULT_COMPACTION_THRESHOLD: f64 = 0.8;
/// Tool results of the last `RECENT_TURNS` user turns are kept whole…
const RECENT_TURNS: usize = 2;
/// …and so are the `RECENT_RESULTS` most recent ones; older results are stubbed.
const RECENT_RESULTS: usize = 10;
/// A result this short is cheaper to keep than to stub.
const STUB_MIN_CHARS: usize = 600;
const STUB_HEAD_CHARS: usize = 200;
/// Old results are stubbed in one batch once they add up to this share of the compaction
/// budget: the request's prefix changes at these few points only (a provider's prompt cache
/// then reuses everything before the newest messages), not at every step.
const STUB_BATCH_SHARE: f64 = 0.25;
/// The batch threshold never falls below this (a tiny configured window).
const STUB_BATCH_MIN_CHARS: usize = 16_000;

/// One tool result replaced by a stub in the request view.
#[derive(Debug, Clone)]
pub struct Stub {
    pub tool: String,
    pub call_id: String,
    pub raw_chars: usize,
    pub stub_chars: usize,
}

/// Characters of old, unstubbed results that make the next stub batch.
pub fn stub_batch_chars(context_window: u64, threshold: f64) -> usize {
    let budget_chars = context_window as f64 * threshold * 4.0;
    ((budget_chars * STUB_BATCH_SHARE) as usize).max(STUB_BATCH_MIN_CHARS)
}

fn stubbable(m: &Message) -> Option<usize> {
    (m.role == MessageRole::Tool)
        .then(|| text_chars(m))
        .filter(|n| *n > STUB_MIN_CHARS)
}

/// Characters of a message's text (`m.text()`), without a copy of it.
fn text_chars(m: &Message) -> usize {
    match &m.content {
        Some(yuyao_protocol::Content::Text(t)) => t.chars().count(),
        Some(c) => c.text().chars().count(),
        None => 0,
    }
}

/// Does `history[p]` start a turn? Notes the core appends ([settings], [intent],
/// [verification], rule files, hook context, …) are user messages too, but they arrive
/// mid-turn (after a tool result) or right beside the prompt; counting them as turns would
/// age the recent results early. So: the first user message of a run of user messages that
/// follows a final answer (or opens the history); after a tool result, only a message that
/// does not read like a note (a prompt typed after an interrupted turn).
fn is_prompt(history: &[Message], p: usize) -> bool {
    let m = &history[p];
    if m.role != MessageRole::User {
        return false;
    }
    match history[..p]
        .iter()
        .rev()
        .find(|x| x.role != MessageRole::System)
    {
        None => true,
        Some(prev) => match prev.role {
            MessageRole::User => false,
            MessageRole::Assistant => prev.tool_calls.is_empty(),
            _ => !m.text().trim_start().starts_with('['),
        },
    }
}

/// Where stubbing stops: results before this index are stubbed. A pure function of the
/// history, replayed message by message as the history grew: a result becomes "old" once it
/// is outside the last `RECENT_TURNS` turns or the `RECENT_RESULTS` most recent results, and
/// once the old, unstubbed ones exceed `batch_chars`, everything before the latest step's
/// results is stubbed at once — so the mark only moves at those points, and a longer history
/// never un-stubs anything. Stubbing the recent results too at a batch is what makes the
/// batch cheap for a prompt cache: the request diverges at the first new stub, and whatever
/// stays whole after it is sent again uncached (10 × 14 KB outputs cost 140 KB per batch);
/// the model has already seen and acted on those results, and each stub says how to get its
/// result back. Between batches the recent results grow back to whole ones.
fn stub_mark(history: &[Message], batch_chars: usize) -> usize {
    let mut replay = StubReplay::default();
    replay.run(history, history.len(), batch_chars);
    replay.mark
}

/// [`stub_mark`]'s replay after `next` messages of the history: what it needs of them (the
/// last turns' prompts, the last results, the old results not counted yet), so a growing
/// history is replayed from where the last request left off.
#[derive(Debug, Clone, Default, PartialEq)]
struct StubReplay {
    next: usize,
    /// The last `RECENT_TURNS` prompts.
    prompts: VecDeque<usize>,
    /// The last `RECENT_RESULTS` results.
    results: VecDeque<usize>,
    /// Stubbable results not counted yet: (position, characters).
    sizes: VecDeque<(usize, usize)>,
    mark: usize,
    counted: usize,
    pending: usize,
    /// Just after the latest assistant message that called tools: where the latest step's
    /// results begin.
    step_start: usize,
}

impl StubReplay {
    /// Replays `history[self.next..to]`.
    fn run(&mut self, history: &[Message], to: usize, batch_chars: usize) {
        while self.next < to.min(history.len()) {
            self.step(history, batch_chars);
        }
    }

    fn step(&mut self, history: &[Message], batch_chars: usize) {
        let p = self.next;
        let m = &history[p];
        if is_prompt(history, p) {
            self.prompts.push_back(p);
            if self.prompts.len() > RECENT_TURNS {
                self.prompts.pop_front();
            }
        }
        if m.role == MessageRole::Assistant && !m.tool_calls.is_empty() {
            self.step_start = p + 1;
        }
        if let Some(n) = stubbable(m) {
            self.sizes.push_back((p, n));
        }
        if m.role == MessageRole::Tool {
            self.results.push_back(p);
            if self.results.len() > RECENT_RESULTS {
                self.results.pop_front();
            }
        }
        let turn_start = if self.prompts.len() == RECENT_TURNS {
            self.prompts[0]
        } else {
            0
        };
        let recent_from = if self.results.len() == RECENT_RESULTS {
            self.results[0]
        } else {
            0
        };
        let old_before = turn_start.max(recent_from);
        if old_before > self.counted {
            while let Some(&(q, n)) = self.sizes.front()
                && q < old_before
            {
                if q >= self.mark {
                    self.pending += n;
                }
                self.sizes.pop_front();
            }
            self.counted = old_before;
        }
        if self.pending > batch_chars {
            self.mark = old_before.max(self.step_start);
            self.pending = 0;
        }
        self.next += 1;
    }
}

/// `history[i]` as the request view sends it: a stub when it is an old result (`i < mark`).
/// `names` holds the tool names of the calls in `history[from..i]` (the latest call of an id
/// wins); a result whose call came before `from` finds it by a walk back.
fn view_message<'h>(
    history: &'h [Message],
    i: usize,
    mark: usize,
    from: usize,
    names: &mut HashMap<&'h str, &'h str>,
) -> (Message, Option<Stub>) {
    let m = &history[i];
    if i >= mark {
        return (m.clone(), None);
    }
    for c in &m.tool_calls {
        names.insert(c.id.as_str(), c.name.as_str());
    }
    let Some(chars) = stubbable(m) else {
        return (m.clone(), None);
    };
    let text = m.text();
    let id = m.tool_call_id.clone().unwrap_or_default();
    let tool = names
        .get(id.as_str())
        .copied()
        .or_else(|| {
            history[..from]
                .iter()
                .rev()
                .find_map(|x| x.tool_calls.iter().rev().find(|c| c.id == id))
                .map(|c| c.name.as_str())
        })
        .unwrap_or("tool")
        .to_string();
    let head: String = text.chars().take(STUB_HEAD_CHARS).collect();
    let stub = format!(
        "[older {tool} result shortened to save context ({chars} characters); it began:\n{head}\n… run the tool again if you need the rest]"
    );
    let record = Stub {
        tool,
        call_id: id.clone(),
        raw_chars: chars,
        stub_chars: stub.chars().count(),
    };
    (Message::tool(id, stub), Some(record))
}

/// The history as it is sent: tool results older than the recent turns become short stubs,
/// in batches (see [`stub_mark`]). The durable history is untouched.
pub fn request_view(history: &[Message], batch_chars: usize) -> (Vec<Message>, Vec<Stub>) {
    let mark = stub_mark(history, batch_chars);
    // Tool names by call id, borrowed, and only where a stub can need them (a result refers
    // to a call before it).
    let mut names = HashMap::new();
    let mut stubs = Vec::new();
    let mut out = Vec::with_capacity(history.len());
    for i in 0..history.len() {
        let (m, stub) = view_message(history, i, mark, 0, &mut names);
        stubs.extend(stub);
        out.push(m);
    }
    (out, stubs)
}

/// The session's requests as they grow (yuyao-core's `Session::next_request_cached`): the history's messages
/// up to a checkpoint, viewed (stubs, repo maps) and sanitized and serialized once
/// ([`Incremental`]). The checkpoint is a [`HistoryStamp`]: any rewrite of the
/// history (compaction, /undo, a rewind, a resume, a clear) gives it a new identity, which
/// starts the cache over, and so do a stub batch and a change of the repo-map notes; an
/// unchanged identity means only appends happened, so only the new tail is looked at.
#[derive(Default)]
pub struct RequestCache {
    /// The history at the checkpoint: its first `seen.len` messages are settled.
    seen: Option<HistoryStamp>,
    batch_chars: usize,
    /// The live repo-map notes it was built with (where, text).
    notes: Vec<(usize, String)>,
    /// The stub mark's replay of the settled messages.
    replay: StubReplay,
    /// The stub mark the settled messages were viewed with.
    mark: usize,
    sanitized: Incremental,
    /// The `tool-search` calls of the settled messages, in order: the deferred schemas they
    /// loaded go with every request ([`tool_search`]).
    searches: Vec<ToolCall>,
}

impl RequestCache {
    /// The request for `history` with the repo-map `notes` (where, text: each goes just
    /// before the message at its place) and the tool schemas `(sent, deferred)` (all but its
    /// stream and effort, which the caller sets): equal to one pass of [`request_view`],
    /// the notes and [`tool_search::with_loaded`].
    pub fn request(
        &mut self,
        history: &History,
        notes: &[(usize, &str)],
        system: &str,
        batch_chars: usize,
        (sent, deferred): (Vec<serde_json::Value>, &[serde_json::Value]),
    ) -> ChatRequest {
        let valid = self.batch_chars == batch_chars
            && self.notes.len() == notes.len()
            && self
                .notes
                .iter()
                .zip(notes)
                .all(|(a, b)| a.0 == b.0 && a.1 == b.1)
            && self
                .seen
                .is_some_and(|seen| history.appended_since(seen).is_some());
        if !valid {
            self.start_over(history, batch_chars, notes);
        }
        let mut replay = self.replay.clone();
        replay.run(history, history.len(), batch_chars);
        if replay.mark != self.mark && self.seen.is_some_and(|s| s.count() > 0) {
            // A stub batch: the settled view changed.
            self.start_over(history, batch_chars, notes);
            replay = self.replay.clone();
            replay.run(history, history.len(), batch_chars);
        }
        let mark = replay.mark;
        self.mark = mark;
        // The new checkpoint: the last place where what follows is not a tool result (a
        // result belongs with the call before it), before the last message.
        let h = self.seen.map_or(0, |s| s.count());
        let at = |i: usize| notes.iter().any(|n| n.0 == i);
        let next = (h + 1..history.len())
            .rev()
            .find(|&i| at(i) || history[i].role != MessageRole::Tool)
            .unwrap_or(h);
        if next > h {
            let settled = view_items(history, h, next, mark, notes, false);
            self.sanitized.settle(settled);
            self.searches.extend(
                tool_calls(&history[h..next])
                    .filter(|c| tool_search::is_search(c))
                    .cloned(),
            );
            self.seen = Some(history.stamp_at(next));
            self.replay.run(history, next, batch_chars);
        }
        let tools = tool_search::with_loaded_by(
            sent,
            deferred,
            self.searches.iter().chain(tool_calls(&history[next..])),
        );
        let rest = view_items(history, next, history.len(), mark, notes, true);
        self.sanitized.request(system, rest, tools, false, None)
    }

    /// How many messages of the history are settled (viewed, sanitized and serialized once).
    pub fn settled(&self) -> usize {
        self.seen.map_or(0, |s| s.count())
    }

    fn start_over(&mut self, history: &History, batch_chars: usize, notes: &[(usize, &str)]) {
        *self = RequestCache {
            seen: Some(history.stamp_at(0)),
            batch_chars,
            notes: notes.iter().map(|(at, t)| (*at, t.to_string())).collect(),
            ..Default::default()
        };
    }
}

/// The tool calls of `messages` (those of assistant messages), in order.
fn tool_calls(messages: &[Message]) -> impl Iterator<Item = &ToolCall> {
    messages
        .iter()
        .filter(|m| m.role == MessageRole::Assistant)
        .flat_map(|m| m.tool_calls.iter())
}

/// The request view of `history[from..to]` (stubs before `mark`), each repo-map note just
/// before the message it was placed at (as yuyao-repomap's `Maps::insert_into` places them), and with `end`, the notes
/// placed after the last message too.
fn view_items(
    history: &[Message],
    from: usize,
    to: usize,
    mark: usize,
    notes: &[(usize, &str)],
    end: bool,
) -> Vec<Message> {
    let mut names = HashMap::new();
    let mut out = Vec::with_capacity(to - from + 1);
    let notes_at = |i: usize, out: &mut Vec<Message>| {
        for (_, text) in notes.iter().filter(|n| n.0 == i) {
            out.push(Message::user(*text));
        }
    };
    for i in from..to {
        notes_at(i, &mut out);
        out.push(view_message(history, i, mark, from, &mut names).0);
    }
    if end {
        notes_at(to, &mut out);
    }
    out
}

/// Estimated tokens of a whole request (messages and tool schemas).
pub fn request_tokens(req: &ChatRequest) -> u64 {
    let tools: usize = req
        .tools
        .iter()
        .map(|t| t.to_string().chars().count())
        .sum();
    tokens(req.message_chars() + tools)
}

/// Tokens estimated for `chars` characters (4 characters a token).
pub fn tokens(chars: usize) -> u64 {
    (chars as u64).div_ceil(4)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(h: &mut Vec<Message>, k: usize, chars: usize) {
        let mut a = Message::assistant("");
        a.tool_calls = vec![ToolCall {
            id: format!("c{k}"),
            name: "read".into(),
            arguments: "{}".into(),
        }];
        h.push(a);
        h.push(Message::tool(format!("c{k}"), "x".repeat(chars)));
    }

    #[test]
    fn notes_appended_mid_turn_do_not_count_as_turns() {
        let mut h = vec![Message::system("s"), Message::user("[settings] mode: yolo")];
        h.push(Message::user("print the files"));
        for k in 0..4 {
            step(&mut h, k, 5000);
            h.push(Message::user("[intent] state a reason before each batch"));
        }
        let prompts: Vec<usize> = (0..h.len()).filter(|&p| is_prompt(&h, p)).collect();
        assert_eq!(
            prompts,
            vec![1],
            "one turn: its prompt run starts at the settings note"
        );
        // One turn only: every result is within the last two turns, nothing is stubbed.
        assert!(request_view(&h, 4000).1.is_empty());
        h.push(Message::assistant("done"));
        h.push(Message::user("next task"));
        assert!(is_prompt(&h, h.len() - 1));
        // A prompt typed after an interrupted turn (its last message a tool result).
        step(&mut h, 9, 10);
        h.push(Message::user("stop, do this instead"));
        assert!(is_prompt(&h, h.len() - 1));
    }

    #[test]
    fn old_results_are_stubbed_recent_ones_kept() {
        let mut h = Vec::new();
        for turn in 0..3 {
            h.push(Message::user(format!("task {turn}")));
            step(&mut h, turn, 5000);
            h.push(Message::assistant("ok"));
        }
        // A batch as small as one result: the first turn's result is stubbed at once.
        let (view, stubs) = request_view(&h, 4000);
        assert_eq!(stubs.len(), 1);
        assert_eq!(stubs[0].call_id, "c0");
        assert!(view[2].text().len() < 600);
        assert_eq!(view[6].text().len(), 5000);
        assert_eq!(h[2].text().len(), 5000, "the durable history is untouched");
        // Below the batch threshold nothing is stubbed yet.
        assert!(request_view(&h, 6000).1.is_empty());
    }

    /// Over a long turn, each request's messages extend the previous request's, except at
    /// the few steps where a batch of old results is stubbed; nothing is ever un-stubbed.
    #[test]
    fn stubs_come_in_batches_and_requests_stay_append_only_between_them() {
        let batch = stub_batch_chars(DEFAULT_CONTEXT_WINDOW, DEFAULT_COMPACTION_THRESHOLD);
        let mut h = vec![Message::user("task")];
        let mut prev: Vec<Message> = Vec::new();
        let mut prev_stubs = 0;
        let mut rewrites = Vec::new();
        for k in 0..60 {
            step(&mut h, k, 14_000);
            let (view, stubs) = request_view(&h, batch);
            if view[..prev.len()] != prev[..] {
                rewrites.push(k);
                assert!(
                    stubs.len() > prev_stubs + 1,
                    "a batch, not one result: step {k}"
                );
            }
            assert!(stubs.len() >= prev_stubs, "nothing is un-stubbed");
            prev_stubs = stubs.len();
            prev = view;
        }
        assert!(
            (2..=8).contains(&rewrites.len()),
            "60 steps of 14 KB results rewrite the prefix a few times: {rewrites:?}"
        );
        let whole = |view: &[Message]| {
            view.iter()
                .filter(|m| m.role == MessageRole::Tool && m.text().len() == 14_000)
                .count()
        };
        // At a batch only the latest step's result stays whole, so the bytes sent again after
        // the divergence point are the new stubs and that one result, not ten whole results.
        let mut h = vec![Message::user("task")];
        let mut prev: Vec<Message> = Vec::new();
        for k in 0..60 {
            step(&mut h, k, 14_000);
            let (view, _) = request_view(&h, batch);
            if view[..prev.len()] != prev[..] {
                assert_eq!(whole(&view), 1, "step {k}");
                let same = view.iter().zip(&prev).take_while(|(a, b)| a == b).count();
                let resent: usize = view[same..].iter().map(|m| m.text().len()).sum();
                assert!(
                    resent < 14_000 + 40 * 600,
                    "step {k}: {resent} chars resent"
                );
            }
            // Between batches the recent results grow back to whole ones.
            assert!(whole(&view) <= RECENT_RESULTS + batch / 14_000 + 1);
            prev = view;
        }
        assert!(whole(&prev) >= 1);
    }

    #[test]
    fn settings_notes_do_not_start_a_turn() {
        let mut h = vec![Message::user("task")];
        step(&mut h, 0, 5000);
        h.push(Message::user("[settings] mode changed"));
        step(&mut h, 1, 5000);
        h.push(Message::user("[settings] role changed"));
        step(&mut h, 2, 5000);
        assert!(request_view(&h, 1000).1.is_empty());
    }
}
