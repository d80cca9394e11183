//! The file formats extensions and instructions come in, read without running anything:
//! hook declarations in both shapes users have (`hooks`), Markdown with YAML frontmatter
//! (`frontmatter`: custom commands, rule files, agents, skills), instruction files read the
//! way the `read` tool reads (`instruction_files`), the convention files a prompt carries with
//! their `@path` imports (`conventions`), and the preference rules compiled from instruction
//! and memory lines into refusals of shell commands (`preference_rules`). Trust, running hooks
//! and loading are `yuyao-core`'s (`extension_trust`, `hook_run`, …).

pub mod conventions;
pub mod frontmatter;
pub mod hooks;
pub mod instruction_files;
pub mod preference_rules;
