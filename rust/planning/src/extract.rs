//! `<proposed_plan>` blocks in the model's output: removed from the live transcript as the
//! text streams (a tag may be split across any number of deltas), and taken from the whole
//! reply once it is complete.

const OPEN: &str = "<proposed_plan>";
const CLOSE: &str = "</proposed_plan>";

/// Filters streamed text: what is outside plan blocks passes through; a suffix that could be
/// the start of a tag is held back until the next delta decides it.
#[derive(Default)]
pub struct StreamFilter {
    held: String,
    inside: bool,
    /// Plan text seen since the last [`StreamFilter::take_plan`] (for `plan_delta` events).
    plan: String,
    /// A plan block was seen in this reply.
    pub saw_plan: bool,
}

/// The longest suffix of `s` that is a proper prefix of `tag` (case-insensitive).
fn partial_tag_suffix(s: &str, tag: &str) -> usize {
    let lower = s.to_ascii_lowercase();
    (1..tag.len())
        .rev()
        .find(|&n| {
            n <= lower.len()
                && lower.is_char_boundary(lower.len() - n)
                && tag.starts_with(&lower[lower.len() - n..])
        })
        .unwrap_or(0)
}

fn find_ci(hay: &str, needle: &str) -> Option<usize> {
    hay.to_ascii_lowercase().find(needle)
}

impl StreamFilter {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds a delta; returns the text to show now.
    pub fn push(&mut self, delta: &str) -> String {
        self.held.push_str(delta);
        let mut out = String::new();
        loop {
            let tag = if self.inside { CLOSE } else { OPEN };
            match find_ci(&self.held, tag) {
                Some(i) => {
                    if !self.inside {
                        out.push_str(&self.held[..i]);
                        self.saw_plan = true;
                    } else {
                        self.plan.push_str(&self.held[..i]);
                    }
                    self.held.drain(..i + tag.len());
                    self.inside = !self.inside;
                }
                None => {
                    let keep = partial_tag_suffix(&self.held, tag);
                    let cut = self.held.len() - keep;
                    if !self.inside {
                        out.push_str(&self.held[..cut]);
                    } else {
                        self.plan.push_str(&self.held[..cut]);
                    }
                    self.held.drain(..cut);
                    return out;
                }
            }
        }
    }

    /// The plan text streamed since the last call.
    pub fn take_plan(&mut self) -> String {
        std::mem::take(&mut self.plan)
    }

    /// The end of the reply: a held partial tag was text after all (never inside a block).
    pub fn finish(&mut self) -> String {
        let rest = std::mem::take(&mut self.held);
        if self.inside { String::new() } else { rest }
    }
}

/// The plan blocks of a complete reply (an unterminated block runs to the end).
pub fn plans(text: &str) -> Vec<String> {
    let lower = text.to_ascii_lowercase();
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(i) = lower[at..].find(OPEN) {
        let start = at + i + OPEN.len();
        let end = lower[start..].find(CLOSE).map(|j| start + j);
        out.push(text[start..end.unwrap_or(text.len())].trim().to_string());
        match end {
            Some(e) => at = e + CLOSE.len(),
            None => break,
        }
    }
    out
}

/// The reply without its plan blocks (what the transcript shows).
pub fn strip(text: &str) -> String {
    let mut f = StreamFilter::new();
    let mut out = f.push(text);
    out.push_str(&f.finish());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_split_anywhere_are_removed() {
        let whole = "Here it is.\n<proposed_plan>\n# T\nbody < x\n</proposed_plan>\nBye <b>";
        for split in 1..whole.len() {
            if !whole.is_char_boundary(split) {
                continue;
            }
            let mut f = StreamFilter::new();
            let mut shown = f.push(&whole[..split]);
            shown.push_str(&f.push(&whole[split..]));
            shown.push_str(&f.finish());
            assert_eq!(shown, "Here it is.\n\nBye <b>", "split at {split}");
            assert!(f.saw_plan);
        }
        // One character at a time.
        let mut f = StreamFilter::new();
        let shown: String = whole.chars().map(|c| f.push(&c.to_string())).collect();
        assert_eq!(shown + &f.finish(), "Here it is.\n\nBye <b>");
        assert_eq!(plans(whole), vec!["# T\nbody < x".to_string()]);
    }
}
