//! Reading the user's words, free of any session: a slash command's arguments split
//! shell-style (`words`), and whether a request asks for a change or only an answer
//! (`task_kind`, seed 002 §9 "Submitted must be earned", seed 000's completion check).

pub mod task_kind;
pub mod words;
