//! The preference-rule stage of the tool pipeline: the rules in force for a shell command
//! (`yuyao-extension-files` compiles them from `MEMORY.md` entries and instruction files;
//! the memory feature gives its own through `Feature::rules`).

pub(crate) use yuyao_extension_files::preference_rules::*;

use std::path::PathBuf;

impl crate::session::Session {
    /// The rules in force for a shell command: the memory's, and those of the instruction
    /// files the prompt carries (none under `--no-memory`, which leaves AGENTS.md unread).
    pub fn preference_rules(&self) -> Vec<Rule> {
        let mut rules: Vec<Rule> = crate::feature::hooks(|f| f.rules)
            .flat_map(|rules| rules(self))
            .collect();
        if !self.opts.no_memory {
            let files: Vec<PathBuf> =
                crate::prompt::convention_files(&self.paths.project, &self.ctx.cwd())
                    .into_iter()
                    .map(|(p, _)| p)
                    .collect();
            rules.extend(compile_instructions(&files, &self.paths.project));
        }
        rules
    }
}
