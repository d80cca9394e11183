//! Persistent memory (spec 002 §6): plain Markdown files a person can edit by hand.
//!
//! `files` says where the memory files live and keeps them out of `git status`; `format`
//! parses and prints entries (one list item or one `###` block, its metadata in a trailing
//! `<!-- id:… when:… scope:… why:"…" src:… -->` comment). Every reader of memory — loading,
//! `/memory`, `/forget`, `memory-get`, memory-search — goes through these two modules.

pub mod files;
pub mod format;

pub use files::{Kind, Layout, MemoryFile, Scope, memory_files};
pub use format::{Entry, Meta, parse};
