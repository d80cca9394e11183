//! The scope contract (seed 000 behaviour 2): the model declares what it will change this turn
//! (`declare-scope`, [`declare`]); from then on every mutating call is checked against it
//! before it runs ([`guard`]). A turn that declared nothing is not guarded.

#[allow(unused_imports)]
use crate::session_ext::*;

pub(crate) mod declare;
pub(crate) mod guard;

use yuyao_core::Session;

/// `scope.guard = false` switches the guard off (declarations are still shown and recorded).
pub(crate) const GUARD_KEY: &str = "scope.guard";

/// What the guard can object to, in the words the user and the model see.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Category {
    OutsideScope,
    Dependency,
    RenameDelete,
    FormattingOnly,
    TestRemoved,
    Size,
}

impl Category {
    pub(crate) fn label(self) -> &'static str {
        match self {
            Category::OutsideScope => "outside the declared scope",
            Category::Dependency => "dependency change",
            Category::RenameDelete => "rename/delete",
            Category::FormattingOnly => "formatting-only rewrite",
            Category::TestRemoved => "removed test",
            Category::Size => "size beyond the declared estimate",
        }
    }

    /// The name a declaration's `allow` list uses for it.
    pub(crate) fn key(self) -> &'static str {
        match self {
            Category::OutsideScope => "outside",
            Category::Dependency => "dependency",
            Category::RenameDelete => "rename-delete",
            Category::FormattingOnly => "formatting",
            Category::TestRemoved => "test-removal",
            Category::Size => "size",
        }
    }

    /// A category an `allow` entry names (several spellings), if any. `outside` and `size`
    /// cannot be allowed this way: the files and the estimate say it.
    pub(crate) fn allowable(word: &str) -> Option<Category> {
        let w: String = word
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric())
            .collect();
        Some(match w.as_str() {
            "dependency" | "dependencies" | "deps" | "install" => Category::Dependency,
            "renamedelete" | "rename" | "delete" | "renameordelete" => Category::RenameDelete,
            "formatting" | "format" | "whitespace" | "formattingonly" => Category::FormattingOnly,
            "testremoval" | "removetest" | "removetests" | "removedtest" | "tests" => {
                Category::TestRemoved
            }
            _ => return None,
        })
    }
}

/// The scope in force this turn and what the guard has let through so far.
#[derive(Default)]
pub(crate) struct Tracker {
    pub declared: Option<declare::Declared>,
    /// Changed lines let through this turn (the size backstop counts the total).
    pub changed_lines: u64,
}

pub(crate) trait ScopeExt {
    fn scope_begin_turn(&self);
}

impl ScopeExt for Session {
    /// A new user turn starts unscoped: a scope covers the turn that declared it.
    fn scope_begin_turn(&self) {
        if let Ok(mut t) = self.listening().scope.lock() {
            *t = Tracker::default();
        }
    }
}
