//! The extension boundary (DESIGN §8) lists every project file that can start a process or
//! widen permissions; the kinds this crate's features read (plugin manifests, custom
//! commands, skills that pre-approve tools) are listed once the features are registered, as
//! the program that assembles yuyao registers them.

use yuyao_core::extension_trust::{project_files, shown};

fn write(project: &std::path::Path, rel: &str, text: &str) {
    let f = project.join(rel);
    std::fs::create_dir_all(f.parent().unwrap()).unwrap();
    std::fs::write(&f, text).unwrap();
}

#[test]
fn the_features_extension_files_are_under_trust() {
    assert!(yuyao_core::register_features(
        &[],
        yuyao_extensions::FEATURES
    ));
    let d = tempfile::tempdir().unwrap();
    let home = d.path().join("home");
    let project = d.path().join("proj");
    std::fs::create_dir_all(project.join(".git")).unwrap();
    write(
        &project,
        ".yuyao/commands/git/commit.md",
        "run !{git status}\n",
    );
    write(&project, ".claude/commands/x.md", "x\n");
    write(&project, "plugins/p/plugin.json", r#"{"name": "p"}"#);
    write(
        &project,
        ".yuyao/skills/s/SKILL.md",
        "---\nname: s\ndescription: d\nallowed-tools: bash\n---\nbody\n",
    );
    let listed: Vec<String> = project_files(&home, &project)
        .iter()
        .map(|f| shown(&project, f))
        .collect();
    for want in [
        ".yuyao/commands/git/commit.md",
        ".claude/commands/x.md",
        "plugins/p/plugin.json",
        ".yuyao/skills/s/SKILL.md",
    ] {
        assert!(listed.iter().any(|l| l == want), "{want} not in {listed:?}");
    }
}
