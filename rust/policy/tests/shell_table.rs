//! Table-driven suite for the shell adjudicator: effective program names per segment
//! (bypass attempts, wrappers, nesting, mentions, malformed input) and the decisions that
//! follow from them under deny / ask / allow rules and the read-only allow-list.

use std::path::Path;
use yuyao_policy::{Action, Policy, Rule, Verdict, readonly, segments};
use yuyao_protocol::{Mode, Role};

/// `None`: undetermined (never permitted).
const PROGRAMS: &[(&str, Option<&[&str]>)] = &[
    // plain and quoted
    ("ls", Some(&["ls"])),
    ("ls -la /tmp", Some(&["ls"])),
    ("  ls   -la  ", Some(&["ls"])),
    ("'ls' -la", Some(&["ls"])),
    ("\"ls\"", Some(&["ls"])),
    ("l's' x", Some(&["ls"])),
    ("to\"\"uch a", Some(&["touch"])),
    ("to''uch a", Some(&["touch"])),
    ("\\rm x", Some(&["rm"])),
    ("r\\m x", Some(&["rm"])),
    ("\"r\"m x", Some(&["rm"])),
    ("$'rm' x", Some(&["rm"])),
    ("/bin/rm x", Some(&["rm"])),
    ("/usr/bin/rm -rf /", Some(&["rm"])),
    ("./script.sh", Some(&["script.sh"])),
    ("../bin/tool --flag", Some(&["tool"])),
    // separators
    ("ls; rm x", Some(&["ls", "rm"])),
    ("ls && rm x", Some(&["ls", "rm"])),
    ("ls || rm x", Some(&["ls", "rm"])),
    ("ls | rm x", Some(&["ls", "rm"])),
    ("ls |& rm x", Some(&["ls", "rm"])),
    ("ls & rm x", Some(&["ls", "rm"])),
    ("ls\nrm x", Some(&["ls", "rm"])),
    ("ls;rm x", Some(&["ls", "rm"])),
    ("ls&&rm x", Some(&["ls", "rm"])),
    ("ls||rm x", Some(&["ls", "rm"])),
    ("ls|rm x", Some(&["ls", "rm"])),
    ("a; b; c; d", Some(&["a", "b", "c", "d"])),
    ("a | b | c", Some(&["a", "b", "c"])),
    ("ls \\\n -la", Some(&["ls"])),
    // groups and subshells
    ("(rm x)", Some(&["rm"])),
    ("(cd a; rm x)", Some(&["cd", "rm"])),
    ("( ( rm x ) )", Some(&["rm"])),
    ("{ rm x; }", Some(&["rm"])),
    ("{ ls; rm x; } | cat", Some(&["ls", "rm", "cat"])),
    ("! rm x", Some(&["rm"])),
    // substitutions
    ("echo $(rm x)", Some(&["rm", "echo"])),
    ("echo `rm x`", Some(&["rm", "echo"])),
    ("echo \"$(rm x)\"", Some(&["rm", "echo"])),
    ("echo $(echo $(rm x))", Some(&["rm", "echo", "echo"])),
    ("cat <(rm x)", Some(&["rm", "cat"])),
    ("tee >(rm x)", Some(&["rm", "tee"])),
    ("x=$(rm y)", Some(&["rm"])),
    ("echo $((1+2))", Some(&["echo"])),
    ("echo ${HOME}", Some(&["echo"])),
    ("echo $HOME $1 $@ $?", Some(&["echo"])),
    // compound commands
    ("if true; then rm x; fi", Some(&["true", "rm"])),
    ("if ls; then :; else rm x; fi", Some(&["ls", ":", "rm"])),
    ("while true; do rm x; done", Some(&["true", "rm"])),
    ("until false; do rm x; done", Some(&["false", "rm"])),
    ("for f in a b; do rm $f; done", Some(&["rm"])),
    ("for f in a b\ndo\nrm $f\ndone", Some(&["rm"])),
    // wrappers
    ("env rm x", Some(&["rm"])),
    ("env A=1 B=2 rm x", Some(&["rm"])),
    ("env -i rm x", Some(&["rm"])),
    ("env -u HOME rm x", Some(&["rm"])),
    ("command rm x", Some(&["rm"])),
    ("command -v rm", Some(&["command"])),
    ("command -p rm x", Some(&["rm"])),
    ("builtin cd x", Some(&["cd"])),
    ("exec rm x", Some(&["rm"])),
    ("nice rm x", Some(&["rm"])),
    ("nice -n 10 rm x", Some(&["rm"])),
    ("nohup rm x", Some(&["rm"])),
    ("timeout 5 rm x", Some(&["rm"])),
    ("timeout -s KILL 5 rm x", Some(&["rm"])),
    ("timeout --kill-after=1 5 rm x", Some(&["rm"])),
    ("stdbuf -o0 rm x", Some(&["rm"])),
    ("stdbuf -oL -eL rm x", Some(&["rm"])),
    ("time rm x", Some(&["rm"])),
    ("sudo rm x", Some(&["rm"])),
    ("sudo -u root rm x", Some(&["rm"])),
    ("doas rm x", Some(&["rm"])),
    ("xargs rm", Some(&["rm"])),
    ("xargs -n 1 rm", Some(&["rm"])),
    ("xargs -I{} rm {}", Some(&["rm"])),
    ("xargs", Some(&["echo"])),
    ("A=1 rm x", Some(&["rm"])),
    ("A=1 B=\"2 3\" rm x", Some(&["rm"])),
    ("nice timeout 3 env A=1 command rm x", Some(&["rm"])),
    ("/usr/bin/env rm x", Some(&["rm"])),
    ("/usr/bin/nice -n 1 /bin/rm x", Some(&["rm"])),
    // shells with -c
    ("sh -c 'rm x'", Some(&["rm"])),
    ("bash -c 'rm x'", Some(&["rm"])),
    ("zsh -c 'rm x'", Some(&["rm"])),
    ("dash -c 'rm x'", Some(&["rm"])),
    ("bash -lc 'rm x'", Some(&["rm"])),
    ("bash -e -c 'rm x'", Some(&["rm"])),
    ("sh -c \"ls && rm x\"", Some(&["ls", "rm"])),
    ("sh -c 'sh -c \"rm x\"'", Some(&["rm"])),
    ("env sh -c 'r\"\"m x'", Some(&["rm"])),
    // A script is read from the working directory; without one (or when missing) it is
    // undetermined. A shell without a script reads commands from its input: undetermined.
    ("bash script.sh", None),
    ("sh", None),
    // commands in argument position
    ("find . -exec rm {} \\;", Some(&["rm", "find"])),
    ("find . -exec rm {} +", Some(&["rm", "find"])),
    ("find . -execdir rm {} \\;", Some(&["rm", "find"])),
    ("find . -ok rm {} \\;", Some(&["rm", "find"])),
    (
        "find . -name '*.o' -exec /bin/rm -f {} \\;",
        Some(&["rm", "find"]),
    ),
    ("find . -exec sh -c 'rm x' \\;", Some(&["rm", "find"])),
    // mentions are not executions
    ("grep 'rm ' f.txt", Some(&["grep"])),
    ("grep \"rm -rf\" f.txt", Some(&["grep"])),
    ("echo rm", Some(&["echo"])),
    ("echo 'sudo rm -rf /'", Some(&["echo"])),
    ("printf 'rm\\n'", Some(&["printf"])),
    ("git commit -m 'rm old files'", Some(&["git"])),
    ("cat rm.txt", Some(&["cat"])),
    ("ls rm", Some(&["ls"])),
    ("echo '$(rm x)'", Some(&["echo"])),
    ("echo \\$(rm x)", None),
    ("ls)", None),
    ("(ls))", None),
    ("echo a (b)", None),
    ("echo a\\(b\\)", Some(&["echo"])),
    ("echo '(a)'", Some(&["echo"])),
    ("echo '`rm x`'", Some(&["echo"])),
    ("echo 'a; rm x'", Some(&["echo"])),
    ("echo a # ; rm x", Some(&["echo"])),
    // redirections
    ("ls > out.txt", Some(&["ls"])),
    ("ls >> out.txt", Some(&["ls"])),
    ("ls 2> err.txt", Some(&["ls"])),
    ("ls &> all.txt", Some(&["ls"])),
    ("ls 2>&1", Some(&["ls"])),
    ("ls > /dev/null 2>&1", Some(&["ls"])),
    ("cat < in.txt", Some(&["cat"])),
    ("cat <<< 'rm x'", Some(&["cat"])),
    ("cat <<EOF\nrm x\nEOF", Some(&["cat"])),
    ("cat <<'EOF'\n$(rm x)\nEOF", Some(&["cat"])),
    ("cat <<-EOF\n\trm x\n\tEOF", Some(&["cat"])),
    ("> f", Some(&[":"])),
    // undetermined
    ("echo 'a", None),
    ("echo \"a", None),
    ("echo `a", None),
    ("echo $(a", None),
    ("(ls", None),
    ("$CMD x", None),
    ("${CMD} x", None),
    ("$(echo rm) x", None),
    ("`echo rm` x", None),
    ("\"$CMD\" x", None),
    ("r*m x", None),
    ("eval rm x", None),
    ("eval 'ls'", None),
    ("source ./x.sh", None),
    (". venv/bin/activate && pytest -q", None),
    (". ./x.sh", None),
    ("f() { rm x; }", None),
    ("function f { rm x; }", None),
    ("case x in a) rm x;; esac", None),
    ("coproc rm x", None),
    ("cat <<EOF\n$(rm x)\nEOF", None),
    ("cat <<EOF\nunterminated", None),
    ("sh -c", None),
    ("echo a \\", None),
    ("ls > ", None),
    ("sh -c 'echo \"a'", None),
    ("echo $(echo 'a)", None),
    ("i\"\"f x", None),
    // bypasses through expansions the lexer does not evaluate
    ("{rm,x} y", None),
    ("r{m,} x", None),
    ("command {rm,x}", None),
    ("env r{m,} x", None),
    ("env $X y", None),
    ("nice -n 1 $X", None),
    ("$'\\x72m' x", None),
    ("$'\\162m' x", None),
    ("echo ${x:-$(rm y)}", None),
    ("echo $(( $(rm y) + 1 ))", None),
    ("echo ${x:-`rm y`}", None),
    ("echo {a,b}", Some(&["echo"])),
    ("echo {} x", Some(&["echo"])),
    ("echo ${x:-default}", Some(&["echo"])),
    ("echo $((1 + 2))", Some(&["echo"])),
];

fn progs(cmd: &str) -> Option<Vec<String>> {
    segments(cmd)
        .ok()
        .map(|s| s.into_iter().map(|s| s.program).collect())
}

#[test]
fn effective_programs_table() {
    let mut failures = Vec::new();
    for (cmd, want) in PROGRAMS {
        let got = progs(cmd);
        let want = want.map(|w| w.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        if got != want {
            failures.push(format!("{cmd:?}: want {want:?}, got {got:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Generated rows: every wrapper around every destructive program, behind every separator.
#[test]
fn generated_wrapper_separator_matrix() {
    let wrappers = [
        "",
        "env ",
        "env A=1 ",
        "command ",
        "exec ",
        "nice ",
        "nice -n 5 ",
        "nohup ",
        "timeout 9 ",
        "stdbuf -o0 ",
        "time ",
        "sudo ",
        "B=2 ",
        "/usr/bin/env ",
    ];
    let programs = ["rm", "touch", "mv", "chmod", "curl"];
    let spellings = |p: &str| {
        vec![
            p.to_string(),
            format!("\\{p}"),
            format!("'{p}'"),
            format!("{}\"\"{}", &p[..1], &p[1..]),
            format!("/usr/bin/{p}"),
        ]
    };
    let templates = [
        "{}",
        "ls && {}",
        "ls; {}",
        "ls | {}",
        "false || {}",
        "({})",
        "echo $({})",
        "sh -c '{}'",
    ];
    let mut n = 0;
    for w in wrappers {
        for p in programs {
            for sp in spellings(p) {
                for t in templates {
                    let inner = format!("{w}{sp} arg");
                    let cmd = t.replace("{}", &inner);
                    let got = progs(&cmd).unwrap_or_else(|| panic!("undetermined: {cmd:?}"));
                    assert!(got.iter().any(|g| g == p), "{cmd:?} -> {got:?}");
                    n += 1;
                }
            }
        }
    }
    assert!(n >= 2000, "{n}");
}

fn bash(cmd: &str) -> Action {
    Action {
        tool: "bash".into(),
        command: Some(cmd.into()),
        paths: vec![],
    }
}

fn policy(mode: Mode, headless: bool, deny: &[&str], ask: &[&str], allow: &[&str]) -> Policy {
    let mut p = Policy::new(mode, Role::Execute, Path::new("/proj"));
    p.headless = headless;
    // The OS sandbox is not under test here.
    p.sandbox = yuyao_protocol::SandboxLevel::FullAccess;
    p.network = yuyao_protocol::NetworkAccess::On;
    p.deny = deny.iter().map(|r| Rule::parse(r).unwrap()).collect();
    p.ask = ask.iter().map(|r| Rule::parse(r).unwrap()).collect();
    p.allow = allow.iter().map(|r| Rule::parse(r).unwrap()).collect();
    p
}

#[test]
fn deny_rule_decisions() {
    let p = policy(
        Mode::Yolo,
        true,
        &["Bash(rm)", "Bash(git push:*)"],
        &[],
        &[],
    );
    for (cmd, want) in [
        ("rm x", Verdict::Deny),
        ("ls && rm x", Verdict::Deny),
        ("ls | xargs rm", Verdict::Deny),
        ("sh -c 'r\"\"m x'", Verdict::Deny),
        ("find . -delete -exec rm {} +", Verdict::Deny),
        ("echo $(rm x)", Verdict::Deny),
        ("git push origin main", Verdict::Deny),
        ("git push", Verdict::Deny),
        ("cd a && git push --force", Verdict::Deny),
        ("git pull", Verdict::Allow),
        ("git log --grep push", Verdict::Allow),
        ("grep 'rm ' f", Verdict::Allow),
        ("echo rm", Verdict::Allow),
        ("touch x", Verdict::Allow),
        // undetermined with deny rules in force: refused when nobody can confirm
        ("$X x", Verdict::Deny),
        ("eval rm x", Verdict::Deny),
        ("echo 'unbalanced", Verdict::Deny),
    ] {
        assert_eq!(p.decide(&bash(cmd)).verdict, want, "{cmd}");
    }
    let interactive = policy(Mode::Yolo, false, &["Bash(rm)"], &[], &[]);
    assert_eq!(interactive.decide(&bash("$X x")).verdict, Verdict::Ask);
    assert_eq!(interactive.decide(&bash("rm x")).verdict, Verdict::Deny);
    // Undetermined is never permitted, rules or not: a confirmation even in yolo.
    let bare = policy(Mode::Yolo, false, &[], &[], &[]);
    assert_eq!(bare.decide(&bash("eval \"$X\"")).verdict, Verdict::Ask);
    let unattended = policy(Mode::Yolo, true, &[], &[], &[]);
    assert_eq!(unattended.decide(&bash("$X y")).verdict, Verdict::Deny);
    assert_eq!(unattended.decide(&bash("make")).verdict, Verdict::Allow);
}

#[test]
fn ask_and_allow_rule_decisions() {
    let p = policy(
        Mode::Ask,
        false,
        &[],
        &["Bash(git push:*)"],
        &["Bash(npm install:*)", "Bash(make)"],
    );
    for (cmd, want) in [
        ("npm install", Verdict::Allow),
        ("npm install left-pad", Verdict::Allow),
        ("make", Verdict::Allow),
        ("make && npm install", Verdict::Allow),
        ("make && cat x", Verdict::Allow),
        ("make && touch x", Verdict::Ask),
        ("npm run build", Verdict::Ask),
        ("git push", Verdict::Ask),
        ("ls", Verdict::Allow),
        ("ls > out", Verdict::Ask),
    ] {
        assert_eq!(p.decide(&bash(cmd)).verdict, want, "{cmd}");
    }
    // Ask rules veto even in yolo.
    let y = policy(Mode::Yolo, false, &[], &["Bash(git push:*)"], &[]);
    assert_eq!(y.decide(&bash("ls; git push")).verdict, Verdict::Ask);
    assert_eq!(y.decide(&bash("git status")).verdict, Verdict::Allow);
}

#[test]
fn read_only_allow_list_table() {
    let ro = |c: &str| {
        segments(c)
            .map(|s| s.iter().all(readonly::segment_is_read_only))
            .unwrap_or(false)
    };
    for c in [
        "ls",
        "ls -la | head",
        "cat a b | wc -l",
        "rg foo src",
        "grep -rn x .",
        "sed -n 1,10p f",
        "find . -name '*.rs'",
        "head -5 f; tail -5 f",
        "git status",
        "git log --oneline -5",
        "git diff HEAD~1",
        "git show HEAD:f",
        "git -C sub status",
        "git branch",
        "git branch -a",
        "cargo check",
        "cargo test -p x",
        "cargo clippy",
        "npm test",
        "cd src && ls",
        "ls 2>&1",
        "ls 2>/dev/null",
        "jq . f.json",
        "stat f",
        "which git",
        "echo hi",
        "printf 'x\\n'",
        "wc -l f",
        "sort f | uniq -c",
        "pwd",
        "command -v git",
        "env",
    ] {
        assert!(ro(c), "should be read-only: {c}");
    }
    for c in [
        "rm x",
        "touch x",
        "ls > out",
        "ls >> out",
        "sed -i s/a/b/ f",
        "sed --in-place s/a/b/ f",
        "find . -delete",
        "find . -exec rm {} +",
        "git push",
        "git commit -m x",
        "git branch new",
        "git -c core.pager=x log",
        "git log --output=f",
        "cargo build",
        "npm install",
        "echo $(ls)",
        "ls; rm x",
        "ls && make",
        "python script.py",
        "awk '{system(\"rm x\")}' f",
        "sort -o f f",
        "fd -x rm",
        "env rm x",
        "date -s 2020-01-01",
        "$X",
        "echo 'unbalanced",
        "mkdir d",
        "cp a b",
        "mv a b",
        "chmod +x f",
    ] {
        assert!(!ro(c), "should not be read-only: {c}");
    }
}

#[test]
fn plan_mode_decisions() {
    let p = policy(Mode::Plan, false, &[], &[], &["Bash(rm)"]);
    assert_eq!(p.decide(&bash("ls | head")).verdict, Verdict::Allow);
    assert_eq!(p.decide(&bash("rm x")).verdict, Verdict::Deny);
    assert_eq!(p.decide(&bash("$X")).verdict, Verdict::Deny);
    assert_eq!(
        p.decide(&bash("git status; touch x")).verdict,
        Verdict::Deny
    );
}

#[test]
fn sensitive_reads_need_a_name() {
    let mut p = policy(Mode::Yolo, true, &[], &[], &[]);
    for c in [
        "cat .env",
        "head -3 config/.env.local",
        "less ~/.ssh/id_rsa",
        "cp ~/.aws/credentials /tmp/x",
        "grep TOKEN .env",
        "docker run --env-file=.env img",
        "base64 server.key",
    ] {
        assert_eq!(p.decide(&bash(c)).verdict, Verdict::Deny, "{c}");
    }
    for c in [
        "ls .env",
        "echo .env",
        "cat .env.example",
        "cat README.md",
        "cat ~/.ssh/id_rsa.pub",
    ] {
        assert_eq!(p.decide(&bash(c)).verdict, Verdict::Allow, "{c}");
    }
    p.mentioned.push("/proj/.env".into());
    assert_eq!(p.decide(&bash("cat .env")).verdict, Verdict::Allow);
    let read = |path: &str| Action {
        tool: "read".into(),
        command: None,
        paths: vec![path.into()],
    };
    assert_eq!(p.decide(&read("/proj/.env")).verdict, Verdict::Allow);
    assert_eq!(p.decide(&read("/proj/a/.env")).verdict, Verdict::Deny);
    p.headless = false;
    assert_eq!(p.decide(&read("/proj/a/.env")).verdict, Verdict::Ask);
}

#[test]
fn table_size() {
    assert!(PROGRAMS.len() >= 150, "{}", PROGRAMS.len());
}

/// Everyday agent commands must stay determined (no false "undetermined" from the grammar).
#[test]
fn everyday_commands_are_determined() {
    let mut failures = Vec::new();
    for c in [
        "cargo test 2>&1 | tail -20",
        "python -m pytest -q tests/test_x.py -k name",
        "git diff --stat HEAD~3",
        "npm run build",
        "ls -la && cat README.md",
        "grep -rn \"foo\" src/ | head -50",
        "for f in a b c; do echo $f; done",
        "echo \"a\\\"b\"",
        "cd /tmp && make -j2",
        "export PATH=$PATH:/x && cargo build",
        "FOO=bar python x.py",
        "[ -f x ] && echo yes",
        "[[ -n \"$x\" ]] && echo set",
        "test -d build || mkdir build",
        "python3 - <<'EOF'\nprint(1)\nEOF",
        "sed -n '1,20p' file.txt",
        "awk '{print $1}' f",
        "find . -name '*.rs' | xargs wc -l",
        "echo $((1+2))",
        "git log --format='%H %s' -3",
        "jq '.x | .y' f.json",
        "curl -s https://example.com | head",
        "sleep 1 &",
        "cat file | while read line; do echo \"$line\"; done",
        "if [ -d x ]; then rm -r x; fi",
        "echo \"$(date)\"",
        "git commit -am 'fix: handle (edge) case'",
        "mkdir -p a/b && touch a/b/c",
        "pip install -e . >/dev/null 2>&1",
        "cat > f.txt <<EOF\nhello\nEOF",
        "diff <(sort a) <(sort b)",
        "echo ok # a comment",
        "ls\n\ncat x\n",
        "git status --short; git stash list",
        "rustc --version; cargo --version",
        "timeout 60 cargo test --workspace",
        "node -e 'console.log(1)'",
        "bash -c 'echo hi'",
        "unset X; echo done",
        "local_var=1; echo $local_var",
    ] {
        if let Err(e) = segments(c) {
            failures.push(format!("{c:?}: {e}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

mod properties {
    use proptest::prelude::*;
    use yuyao_policy::segments;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// Arbitrary input never panics (it is either segments or undetermined).
        #[test]
        fn never_panics(s in "\\PC{0,80}") {
            let _ = segments(&s);
        }

        /// Shell-ish noise never panics either.
        #[test]
        fn never_panics_on_shell_noise(s in "[a-z $`'\"(){};|&<>\\\\\n=*?\\[\\]#!-]{0,60}") {
            let _ = segments(&s);
        }

        /// Splitting a program name with empty quotes or a backslash does not change it.
        #[test]
        fn quote_splitting_keeps_the_program(p in "[a-z]{2,8}", cut in 1usize..8, kind in 0usize..3) {
            // Reserved words spelled with quotes are commands to bash but keywords to the
            // lexer; the grammar check turns that disagreement into "undetermined".
            prop_assume!(!["if", "then", "else", "elif", "fi", "do", "done", "while", "until",
                "for", "in", "case", "esac", "select", "function", "time", "coproc"]
                .contains(&p.as_str()));
            // Wrappers run their operand (`nice x` runs `x`), and builtins that run hidden
            // code (`fc`, `let`, `enable`, `eval`) are undetermined whatever their spelling.
            prop_assume!(!yuyao_policy::shell::is_wrapper(&p));
            prop_assume!(!["eval", "fc", "let", "enable"].contains(&p.as_str()));
            // Line editors run the commands of their input: undetermined under any spelling.
            prop_assume!(!["ex", "ed", "red"].contains(&p.as_str()));
            let cut = cut.min(p.len() - 1);
            let (a, b) = p.split_at(cut);
            // The grammar reads a reserved word before a quote (`if""a`) as the keyword: the
            // line is then undetermined (the safe side), not the program.
            prop_assume!(!["if", "fi", "do", "in", "for", "case", "done", "then", "else", "elif",
                "esac", "while", "until", "select", "function", "time", "coproc", "!"]
                .contains(&a));
            let spelled = match kind {
                0 => format!("{a}\"\"{b} x"),
                1 => format!("{a}''{b} x"),
                _ => format!("{a}\\{b} x"),
            };
            let got = segments(&spelled).map(|s| s.into_iter().map(|s| s.program).collect::<Vec<_>>());
            prop_assert_eq!(got, Ok(vec![p.clone()]));
        }
    }
}
