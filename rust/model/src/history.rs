//! A session's conversation as a list that knows whether it was only appended to: the
//! identity the request cache checks instead of comparing the whole history (DESIGN §4).

use yuyao_protocol::Message;

/// The conversation of a session (yuyao-core's `State::history`). Between rewrites it only grows
/// (DESIGN §4: requests are append-only), and the request cache ([`crate::RequestCache`]) relies on it:
/// [`History::push`] and [`History::extend`] append; every other change — a replacement,
/// a truncation, an edit of a message in place — goes through a method that gives the
/// history a new [`History::stamp`] identity, so a cache that saw `(id, len)` knows the
/// first `len` messages are untouched exactly when the id is the same, without comparing
/// them. Ids come from one process-wide counter: no two values (a clone, a default, a
/// replacement) ever share one, so a history swapped for another is never taken for it.
#[derive(Debug)]
pub struct History {
    messages: Vec<Message>,
    id: u64,
}

/// The identity of a [`History`] and its length when the stamp was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HistoryStamp {
    id: u64,
    len: usize,
}

impl HistoryStamp {
    /// How many messages the history had.
    pub fn count(&self) -> usize {
        self.len
    }
}

fn fresh_history_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

impl Default for History {
    fn default() -> Self {
        History::from(Vec::new())
    }
}

impl Clone for History {
    /// A copy with an identity of its own: the copy and the original may grow apart.
    fn clone(&self) -> Self {
        History::from(self.messages.clone())
    }
}

impl From<Vec<Message>> for History {
    fn from(messages: Vec<Message>) -> Self {
        History {
            messages,
            id: fresh_history_id(),
        }
    }
}

impl std::ops::Deref for History {
    type Target = [Message];
    fn deref(&self) -> &[Message] {
        &self.messages
    }
}

impl History {
    /// Appends a message (the only change that keeps the identity).
    pub fn push(&mut self, m: Message) {
        self.messages.push(m);
    }

    /// Appends messages.
    pub fn extend(&mut self, ms: impl IntoIterator<Item = Message>) {
        self.messages.extend(ms);
    }

    /// The identity and the current length.
    pub fn stamp(&self) -> HistoryStamp {
        HistoryStamp {
            id: self.id,
            len: self.messages.len(),
        }
    }

    /// The stamp of the first `len` messages as they are now (a checkpoint within them).
    pub fn stamp_at(&self, len: usize) -> HistoryStamp {
        HistoryStamp {
            id: self.id,
            len: len.min(self.messages.len()),
        }
    }

    /// The messages appended since `stamp` was taken, or `None` when the history was
    /// rewritten since (or the stamp is another history's).
    pub fn appended_since(&self, stamp: HistoryStamp) -> Option<&[Message]> {
        (stamp.id == self.id && stamp.len <= self.messages.len())
            .then(|| &self.messages[stamp.len..])
    }

    /// The messages, for a change other than an append: the history takes a new identity.
    pub fn rewrite(&mut self) -> &mut Vec<Message> {
        self.id = fresh_history_id();
        &mut self.messages
    }

    /// Replaces every message.
    pub fn replace(&mut self, messages: Vec<Message>) {
        *self.rewrite() = messages;
    }

    /// Removes every message.
    pub fn clear(&mut self) {
        self.rewrite().clear();
    }

    /// Keeps the first `len` messages.
    pub fn truncate(&mut self, len: usize) {
        if len < self.messages.len() {
            self.rewrite().truncate(len);
        }
    }

    /// Removes and returns the messages from `at` on.
    pub fn split_off(&mut self, at: usize) -> Vec<Message> {
        self.rewrite().split_off(at)
    }

    /// The messages, as an owned list.
    pub fn into_vec(self) -> Vec<Message> {
        self.messages
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn three() -> History {
        History::from(vec![
            Message::user("a"),
            Message::assistant("b"),
            Message::user("c"),
        ])
    }

    /// The request cache trusts an unchanged identity to mean "only appended since": every
    /// other way to change a history must give it a new one. Each change below ends with as
    /// many messages as before or more, so a path that kept the identity would pass for an
    /// append.
    #[test]
    fn every_change_but_an_append_gives_the_history_a_new_identity() {
        let more = || vec![Message::user("x"), Message::assistant("y")];
        type Change = fn(&mut History, Vec<Message>);
        let changes: [(&str, Change); 9] = [
            ("rewrite", |h, _| h.rewrite()[1] = Message::assistant("B")),
            ("replace", |h, more| {
                let mut all = h.to_vec();
                all[0] = Message::user("A");
                all.extend(more);
                h.replace(all)
            }),
            ("clear", |h, more| {
                h.clear();
                h.extend(more.clone());
                h.extend(more);
            }),
            ("truncate", |h, more| {
                h.truncate(1);
                h.extend(more);
            }),
            ("split_off", |h, more| {
                let _ = h.split_off(2);
                h.extend(more);
            }),
            ("clone", |h, _| *h = h.clone()),
            ("default", |h, more| {
                *h = History::default();
                h.extend(more.clone());
                h.extend(more);
            }),
            ("from", |h, _| *h = History::from(h.to_vec())),
            ("swap", |h, _| {
                let mut other = three();
                std::mem::swap(h, &mut other);
            }),
        ];
        for (name, change) in changes {
            let mut h = three();
            let before = h.stamp();
            change(&mut h, more());
            assert!(h.len() >= 3, "{name}");
            assert_eq!(h.appended_since(before), None, "{name}");
            // A checkpoint inside the history is noticed the same way.
            let mut h = three();
            let inside = h.stamp_at(2);
            change(&mut h, more());
            assert_eq!(h.appended_since(inside), None, "{name} (checkpoint)");
        }
    }

    #[test]
    fn appends_keep_the_identity_and_show_as_the_tail() {
        let mut h = three();
        let before = h.stamp();
        let inside = h.stamp_at(1);
        h.push(Message::user("d"));
        h.extend([Message::assistant("e")]);
        h.truncate(10); // longer than the history: nothing removed
        let tail: Vec<String> = h
            .appended_since(before)
            .unwrap()
            .iter()
            .map(|m| m.text())
            .collect();
        assert_eq!(tail, ["d", "e"]);
        assert_eq!(h.appended_since(inside).map(<[Message]>::len), Some(4));
        assert_eq!(h.stamp_at(99).count(), 5);
    }
}
