//! The file formats extensions and instructions come in, read without running anything:
//! hook declarations in both shapes users have (`hooks`), Markdown with YAML frontmatter
//! (`frontmatter`: custom commands, rule files, agents, skills), and instruction files read
//! the way the `read` tool reads (`instruction_files`). Trust, running hooks and loading
//! are `yuyao-core`'s (`extension_trust`, `hook_run`, …).

pub mod frontmatter;
pub mod hooks;
pub mod instruction_files;
