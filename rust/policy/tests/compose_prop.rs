//! Property (DESIGN §5, deny rules in every spelling): random compositions of the forms the adjudicator must see
//! through — nested wrappers from the wrapper table, `;`/`&&`/`|` segments, `$(…)`,
//! `bash -c '…'` at several quoting levels, `xargs`, `find -exec`, strings handed to a shell
//! by `su -c`, `env -S`, `watch`, `ssh`, `flock -c`, `trap`, `git -c alias.x=!…`, hidden
//! code (`eval`, aliases, `${x@P}`, `mapfile -C`) and shells fed code — around a
//! denied program never yield "allowed" under `deny Bash(rm)` in yolo: a refusal, or a
//! confirmation when someone can give it; unattended, always a refusal.

use proptest::prelude::*;
use std::path::Path;
use yuyao_policy::{Action, Policy, Rule, Verdict};
use yuyao_protocol::{Mode, NetworkAccess, Role, SandboxLevel};

/// Spellings of the denied program with arguments (simple commands).
const BASES: &[&str] = &[
    "rm x",
    "rm -rf d",
    "rm -- x",
    "rm",
    "r''m x",
    "r\"\"m x",
    "\\rm x",
    "/bin/rm x",
    "/usr/bin/rm -f x",
    "'rm' x",
];

/// Wrappers written before a simple command (options parsed from the wrapper table).
const PREFIXES: &[&str] = &[
    "env ",
    "env -i ",
    "env A=1 ",
    "env -u HOME ",
    "env - ",
    "timeout 5 ",
    "timeout -s KILL 5 ",
    "timeout -- 5 ",
    "timeout -k1 --signal=9 3s ",
    "nice ",
    "nice -n 5 ",
    "nice -5 ",
    "nice --adjustment=3 ",
    "stdbuf -oL ",
    "stdbuf -i0 -e L ",
    "ionice -c 3 ",
    "ionice -c2 -n7 ",
    "nohup ",
    "time ",
    "time -p ",
    "command ",
    "command -p ",
    "exec -a n ",
    "builtin command ",
    "sudo ",
    "sudo -u root ",
    "sudo -E -- ",
    "doas ",
    "doas -u x ",
    "setsid ",
    "setsid -f ",
    "taskset 0x1 ",
    "taskset -c 0,1 ",
    "flock /tmp/l ",
    "flock -n -w 3 /tmp/l ",
    "chrt -f 10 ",
    "chrt --rr 5 ",
    "nsenter -t 1 -m ",
    "unshare -r ",
    "unshare --net --mount-proc ",
    "chroot /srv ",
    "runuser -u x -- ",
    "busybox ",
    "strace -f -o log ",
    "ltrace ",
    "valgrind -q --tool=memcheck ",
    "fakeroot ",
    "firejail --quiet ",
    "catchsegv ",
    "dbus-run-session -- ",
    "systemd-run --user ",
    "watch -x ",
    "gdb --args ",
    "xargs ",
    "xargs -i ",
    "xargs -0 -n1 -P4 ",
    "xargs -I{} ",
    "A=1 ",
    "/usr/bin/env ",
];

/// Forms that take a command string (`%s` is the quoted inner line).
const STRING_FORMS: &[&str] = &[
    "sh -c %s",
    "bash -c %s",
    "bash -xc %s",
    "bash -c -- %s",
    "bash -o pipefail -c %s",
    "zsh -fc %s",
    "su -c %s",
    "su root -c %s",
    "flock -c %s /tmp/l",
    "flock /tmp/l -c %s",
    "script -qc %s /dev/null",
    "env -S %s",
    "watch %s",
    "watch -n 1 %s",
    "ssh host %s",
    "sg grp -c %s",
    "sudo -s %s",
    "trap %s EXIT",
    "parallel %s ::: a",
    "tar --to-command=%s -xf a.tar",
    "find . -exec sh -c %s \\;",
    "GIT_PAGER=%s git log",
    "git -c core.pager=%s log",
    "rg --pre=%s pattern",
    // hidden code and shells fed code: undetermined, vetoed by the visible program word
    "eval %s",
    "echo %s | bash",
    "bash <<< %s",
    "mapfile -C %s a < f",
    "alias ls=%s; ls",
    "complete -C %s ls",
    "x=%s; echo \"${x@P}\"",
    "declare -n r=%s",
];

/// Shell quoting of `s` at a level: single quotes or double quotes.
fn quote(s: &str, double: bool) -> String {
    if double {
        let mut out = String::from("\"");
        for c in s.chars() {
            if matches!(c, '\\' | '"' | '$' | '`') {
                out.push('\\');
            }
            out.push(c);
        }
        out.push('"');
        out
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// A line and whether it is a simple command (so a prefix wrapper may go before it).
fn line() -> impl Strategy<Value = (String, bool)> {
    let leaf = prop::sample::select(BASES).prop_map(|b| (b.to_string(), true));
    leaf.prop_recursive(5, 48, 2, |inner| {
        prop_oneof![
            // a wrapper before a simple command
            (prop::sample::select(PREFIXES), inner.clone())
                .prop_filter(
                    "prefix wrappers take a simple command",
                    |(_, (_, simple))| *simple
                )
                .prop_map(|(p, (c, _))| (format!("{p}{c}"), true)),
            // a command string handed to a shell, quoted one way or the other
            (
                prop::sample::select(STRING_FORMS),
                inner.clone(),
                any::<bool>()
            )
                .prop_map(|(f, (c, _), dq)| (f.replace("%s", &quote(&c, dq)), true)),
            // `git -c alias.x=!…` runs the alias through a shell
            (inner.clone(), any::<bool>()).prop_map(|((c, _), dq)| (
                format!("git -c {} x", quote(&format!("alias.x=!{c}"), dq)),
                true
            )),
            // substitutions
            inner
                .clone()
                .prop_map(|(c, _)| (format!("echo $({c})"), true)),
            inner
                .clone()
                .prop_map(|(c, _)| (format!("echo \"$({c})\""), true)),
            inner
                .clone()
                .prop_map(|(c, _)| (format!("cat <({c})"), true)),
            // xargs and find -exec run an argv
            inner
                .clone()
                .prop_filter("an argv", |(_, simple)| *simple)
                .prop_map(|(c, _)| (format!("ls | xargs {c}"), false)),
            inner
                .clone()
                .prop_filter("an argv", |(_, simple)| *simple)
                .prop_map(|(c, _)| (format!("find . -name '*.o' -exec {c} {{}} \\;"), true)),
            // segments and compound commands
            (
                inner.clone(),
                prop::sample::select(&["ls && ", "true; ", "cat f | ", "false || ", "ls & "][..])
            )
                .prop_map(|((c, _), sep)| (format!("{sep}{c}"), false)),
            (
                inner.clone(),
                prop::sample::select(&[" && ls", "; echo done", " | cat", " || true"][..])
            )
                .prop_map(|((c, _), sep)| (format!("{c}{sep}"), false)),
            inner.clone().prop_map(|(c, _)| (format!("({c})"), false)),
            inner
                .clone()
                .prop_map(|(c, _)| (format!("{{ {c}; }}"), false)),
            inner
                .clone()
                .prop_map(|(c, _)| (format!("if true; then {c}; fi"), false)),
            inner.prop_map(|(c, _)| (format!("for f in a b; do {c}; done"), false)),
        ]
    })
}

fn policy(headless: bool) -> Policy {
    let mut p = Policy::new(Mode::Yolo, Role::Execute, Path::new("/proj"));
    p.headless = headless;
    p.sandbox = SandboxLevel::FullAccess;
    p.network = NetworkAccess::On;
    p.deny = vec![Rule::parse("Bash(rm)").unwrap()];
    p
}

fn bash(cmd: &str) -> Action {
    Action {
        tool: "bash".into(),
        command: Some(cmd.into()),
        paths: vec![],
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn a_denied_program_is_never_allowed((cmd, _) in line()) {
        let interactive = policy(false).decide(&bash(&cmd));
        prop_assert!(
            matches!(interactive.verdict, Verdict::Deny | Verdict::Ask),
            "{cmd:?} -> {interactive:?}"
        );
        let unattended = policy(true).decide(&bash(&cmd));
        prop_assert_eq!(unattended.verdict, Verdict::Deny, "{:?} -> {:?}", cmd, unattended);
    }
}

/// The generator reaches deep nestings that are still determined (and denied outright):
/// the property is not satisfied by everything being undetermined.
#[test]
fn deep_determined_compositions_are_denied_outright() {
    let p = policy(false);
    for cmd in [
        "sudo -u root timeout -s KILL 5 nice -n 5 env A=1 sh -c 'ls | xargs -i rm {}'",
        "su -c \"bash -xc 'flock /tmp/l -c \\\"rm x\\\"'\"",
        "ssh host 'watch -n 1 \"echo \\$(rm x)\"'",
        "git -c 'alias.x=!sh -c \"rm x\"' x",
        "find . -exec bash -c -- 'env -S \"rm x\"' \\;",
        "trap 'ls && (rm x)' EXIT",
    ] {
        let d = p.decide(&bash(cmd));
        assert_eq!(d.verdict, Verdict::Deny, "{cmd}: {d:?}");
        assert!(d.source.starts_with("deny"), "{cmd}: {d:?}");
    }
}
