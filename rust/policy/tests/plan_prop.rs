//! Property: plan mode's sandboxed read-only list never allows a known-effectful form,
//! however it is combined with the forms the list allows — in a sequence, a pipeline, a
//! command substitution, under `env`, `xargs`, `timeout`, `find -exec`, with a redirection —
//! and the allowed forms stay allowed when combined with each other.

use proptest::prelude::*;
use yuyao_policy::readonly::{self, Trust};
use yuyao_policy::segments;

/// Commands the sandboxed list allows (one of each table row).
const ALLOWED: &[&str] = &[
    "awk '{print $1}' f",
    "awk -F: '$3 > 10 {print $1}' /etc/passwd",
    "ls -la",
    "cat README.md",
    "git status",
    "git branch --remote",
    "git log --oneline -3",
    "rg -n foo src",
    "grep -r bar .",
    "sort -T /tmp -u f",
    "find -x . -name '*.py'",
    "wc -l f",
    "ruff --help",
    "cargo help build",
    "uv pip list",
    "npm outdated",
    "yarn list",
    "pnpm why lodash",
    "pip config list",
    "gh pr list",
    "kubectl get pods",
    "docker ps",
    "aws ec2 describe-instances",
    "gcloud compute instances list",
    "helm list",
    "terraform show",
    "sqlite3 -readonly db 'select 1'",
    "openssl list",
    "man ls",
    "env FOO=bar ls",
];

/// Known-effectful simple commands: each writes, deletes, runs a program the command
/// names, changes a remote system, or waits forever.
const EFFECTS: &[&str] = &[
    "rm x",
    "rm -rf d",
    "touch x",
    "mkdir d",
    "mv a b",
    "cp a b",
    "tee f",
    "sed -i s/a/b/ f",
    "sort -o f x",
    "awk 'BEGIN{system(\"rm x\")}'",
    "awk '{print > \"f\"}' x",
    "awk '{print | \"sh\"}' x",
    "git branch -D x",
    "git commit -m x",
    "git push",
    "git checkout .",
    "npm install",
    "yarn add x",
    "pip install x",
    "uv sync",
    "cargo build",
    "kubectl delete pod x",
    "docker rm x",
    "docker run img",
    "aws s3 rm s3://b/k",
    "gcloud compute instances delete x",
    "helm uninstall x",
    "terraform apply",
    "gh pr merge 1",
    "find . -delete",
    "chmod +x f",
    "dd if=a of=b",
    "curl -o f https://x",
    "python -c 'open(\"f\",\"w\")'",
    "bash -c 'rm x'",
    "less f",
    "vim f",
    "kill 1",
    "rm -rf x --help",
    "strace -o out ls",
];

/// Ways an effect is combined with an allowed command `{a}`.
const COMBINE: &[&str] = &[
    "{a}; {e}",
    "{e}; {a}",
    "{a} && {e}",
    "{a} || {e}",
    "{a} | {e}",
    "{e} | {a}",
    "{a} $({e})",
    "{a} \"$({e})\"",
    "echo `{e}`",
    "X=$({e}) {a}",
    "{a} <({e})",
    "env FOO=1 {e}",
    "env -i {e}",
    "timeout 5 {e}",
    "nice {e}",
    "echo x | xargs {e}",
    "find . -exec {e} \\;",
    "( {a}; {e} )",
    "{ {a}; {e}; }",
    "if {a}; then {e}; fi",
    "for f in *; do {e}; done",
    "{a} > out",
    "{a} >> out",
    "bash -c '{a}; {e}'",
    "sh -c \"{e}\"",
];

fn sandboxed(cmd: &str) -> bool {
    segments(cmd)
        .map(|s| {
            s.iter()
                .all(|s| readonly::segment_is_read_only_under(s, Trust::Sandboxed))
        })
        .unwrap_or(false)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn effects_stay_refused(a in 0..ALLOWED.len(), e in 0..EFFECTS.len(), c in 0..COMBINE.len(), d in 0..COMBINE.len()) {
        // Inside quotes a form quoted alike would end the string early: `bash -c 'x 'y'; rm
        // z'` runs `x y` with `; rm z` as $0, not `rm` (the lexer reads it so, rightly).
        let quoted = |k: usize, text: &str| {
            ['\'', '"'].iter().any(|q| COMBINE[k].contains(*q) && text.contains(*q))
        };
        prop_assume!(!quoted(c, ALLOWED[a]) && !quoted(c, EFFECTS[e]));
        let once = COMBINE[c].replace("{a}", ALLOWED[a]).replace("{e}", EFFECTS[e]);
        prop_assume!(!quoted(d, ALLOWED[a]) && !quoted(d, &once));
        prop_assert!(!sandboxed(&once), "allowed: {once}");
        // Nested once more: the combined line as the effect of another combination.
        let twice = COMBINE[d].replace("{a}", ALLOWED[a]).replace("{e}", &once);
        prop_assert!(!sandboxed(&twice), "allowed: {twice}");
    }

    #[test]
    fn allowed_forms_compose(a in 0..ALLOWED.len(), b in 0..ALLOWED.len(), c in 0..5usize) {
        let line = match c {
            0 => format!("{}; {}", ALLOWED[a], ALLOWED[b]),
            1 => format!("{} && {}", ALLOWED[a], ALLOWED[b]),
            2 => format!("{} | {}", ALLOWED[a], ALLOWED[b]),
            3 => format!("echo \"$({})\"", ALLOWED[a]),
            _ => format!("{} 2>/dev/null || {}", ALLOWED[a], ALLOWED[b]),
        };
        prop_assert!(sandboxed(&line), "refused: {line}");
    }
}

#[test]
fn every_effect_alone_is_refused() {
    let wrong: Vec<&&str> = EFFECTS.iter().filter(|e| sandboxed(e)).collect();
    assert!(wrong.is_empty(), "{wrong:#?}");
    let wrong: Vec<&&str> = ALLOWED.iter().filter(|a| !sandboxed(a)).collect();
    assert!(wrong.is_empty(), "{wrong:#?}");
}
