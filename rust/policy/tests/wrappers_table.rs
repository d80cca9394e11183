//! Deny rules in every spelling (DESIGN §5), row by row: wrappers parsed exactly (a table per
//! wrapper), programs that run programs, bash features that hide code, shells fed code,
//! scripts read from the working directory, the three spellings of a deny rule, ask rules,
//! allow rules that need a full match, and `Edit`/`Read` path rules judging shell commands.

use std::path::Path;
use yuyao_policy::{Action, Policy, Rule, Verdict, segments, segments_in};
use yuyao_protocol::{Mode, NetworkAccess, Role, SandboxLevel};

/// `None`: undetermined (never permitted).
const PROGRAMS: &[(&str, Option<&[&str]>)] = &[
    // env: -S / --split-string is a command line; options exactly.
    ("env -S 'rm x'", Some(&["rm"])),
    ("env -S'rm x'", Some(&["rm"])),
    ("env --split-string='rm x'", Some(&["rm"])),
    ("env --split-string 'rm -f x' y", Some(&["rm"])),
    ("env -iS 'rm x'", Some(&["rm"])),
    ("env -S 'A=1 rm x'", Some(&["rm"])),
    ("env -u HOME -C /tmp rm x", Some(&["rm"])),
    ("env --unset=HOME rm x", Some(&["rm"])),
    ("env --chdir /tmp rm x", Some(&["rm"])),
    ("env - rm x", Some(&["rm"])),
    ("env -0", Some(&["env"])),
    ("env", Some(&["env"])),
    ("env -S '$X'", None),
    ("env -S 'rm x; ls'", None),
    ("env --bogus rm x", None),
    // timeout: DURATION is an operand; `--` ends options.
    ("timeout -- 5 rm x", Some(&["rm"])),
    ("timeout -s KILL 5 rm x", Some(&["rm"])),
    ("timeout -sKILL 5 rm x", Some(&["rm"])),
    ("timeout --signal=KILL 5 rm x", Some(&["rm"])),
    ("timeout --sig KILL 5 rm x", Some(&["rm"])),
    ("timeout -k 1 -s 9 5 rm x", Some(&["rm"])),
    ("timeout --preserve-status 5 rm x", Some(&["rm"])),
    ("timeout -v 5s rm -rf d", Some(&["rm"])),
    ("timeout -x 5 rm x", None),
    // xargs: optional-argument options do not eat the program.
    ("ls | xargs -i rm {}", Some(&["ls", "rm"])),
    ("ls | xargs -i{} rm {}", Some(&["ls", "rm"])),
    ("ls | xargs --replace rm {}", Some(&["ls", "rm"])),
    ("ls | xargs --replace={} rm {}", Some(&["ls", "rm"])),
    ("ls | xargs -l rm", Some(&["ls", "rm"])),
    ("ls | xargs -l1 rm", Some(&["ls", "rm"])),
    ("ls | xargs -e rm", Some(&["ls", "rm"])),
    ("ls | xargs -eEOF rm", Some(&["ls", "rm"])),
    ("ls | xargs -E EOF rm", Some(&["ls", "rm"])),
    ("ls | xargs -0 -n1 -P4 rm", Some(&["ls", "rm"])),
    ("ls | xargs -I {} sh -c 'rm {}'", Some(&["ls", "rm"])),
    ("ls | xargs --max-args=1 rm", Some(&["ls", "rm"])),
    ("ls | xargs -r rm -f", Some(&["ls", "rm"])),
    ("xargs -a list.txt rm", Some(&["rm"])),
    ("ls | xargs", Some(&["ls", "echo"])),
    ("ls | xargs -J % rm", None),
    // shells: -c in every spelling.
    ("bash -c -- 'rm x'", Some(&["rm"])),
    ("bash -xc 'rm x'", Some(&["rm"])),
    ("bash -ec 'rm x'", Some(&["rm"])),
    ("bash -o pipefail -c 'rm x'", Some(&["rm"])),
    ("bash -O extglob -c 'rm x'", Some(&["rm"])),
    ("bash --norc --noprofile -c 'rm x'", Some(&["rm"])),
    ("sh -c 'rm x' sh arg", Some(&["rm"])),
    ("bash -c 'rm \"$1\"' _ f", Some(&["rm"])),
    ("fish -c 'rm x'", Some(&["rm"])),
    ("zsh -fc 'rm x'", Some(&["rm"])),
    ("bash --rcfile x -c ls", None),
    ("bash -c \"$CMD\"", None),
    ("bash -i -c 'rm x'", None),
    ("bash --version", Some(&["bash"])),
    // nice, stdbuf, ionice
    ("nice -n 5 rm x", Some(&["rm"])),
    ("nice -5 rm x", Some(&["rm"])),
    ("nice -n5 rm x", Some(&["rm"])),
    ("nice --adjustment=5 rm x", Some(&["rm"])),
    ("nice --adjustment 5 rm x", Some(&["rm"])),
    ("stdbuf -oL rm x", Some(&["rm"])),
    ("stdbuf -o L rm x", Some(&["rm"])),
    ("stdbuf --output=L rm x", Some(&["rm"])),
    ("stdbuf -i0 -o0 -e0 rm x", Some(&["rm"])),
    ("ionice -c 3 rm x", Some(&["rm"])),
    ("ionice -c3 -n7 rm x", Some(&["rm"])),
    ("ionice -t -c 2 rm x", Some(&["rm"])),
    ("ionice -p 123", Some(&["ionice"])),
    // command, exec, builtin
    ("command -p rm x", Some(&["rm"])),
    ("command -v rm", Some(&["command"])),
    ("command -V rm", Some(&["command"])),
    ("exec -a name rm x", Some(&["rm"])),
    ("exec -c rm x", Some(&["rm"])),
    ("exec -la foo rm x", Some(&["rm"])),
    ("builtin eval 'rm x'", None),
    ("command eval 'rm x'", None),
    // setsid, taskset, flock, chrt
    ("setsid rm x", Some(&["rm"])),
    ("setsid -f rm x", Some(&["rm"])),
    ("setsid --fork rm x", Some(&["rm"])),
    ("taskset 0x1 rm x", Some(&["rm"])),
    ("taskset -c 0,1 rm x", Some(&["rm"])),
    ("taskset --cpu-list 0 rm x", Some(&["rm"])),
    ("taskset -p 1 123", Some(&["taskset"])),
    ("flock /tmp/l rm x", Some(&["rm"])),
    ("flock -n /tmp/l rm x", Some(&["rm"])),
    ("flock -w 5 /tmp/l rm x", Some(&["rm"])),
    ("flock -c 'rm x' /tmp/l", Some(&["rm"])),
    ("flock /tmp/l -c 'rm x'", Some(&["rm"])),
    ("flock --command 'rm x' /tmp/l", Some(&["rm"])),
    ("flock 9", Some(&["flock"])),
    ("flock -x 9", Some(&["flock"])),
    ("chrt -f 10 rm x", Some(&["rm"])),
    ("chrt --rr 5 rm x", Some(&["rm"])),
    ("chrt -b 0 rm x", Some(&["rm"])),
    ("chrt -p 123", Some(&["chrt"])),
    // nsenter, unshare, chroot
    ("nsenter -t 1 -m rm x", Some(&["rm"])),
    ("nsenter --target 1 --mount --uts rm x", Some(&["rm"])),
    ("nsenter -t 1 -m", None),
    ("unshare -r rm x", Some(&["rm"])),
    ("unshare --map-root-user --net rm x", Some(&["rm"])),
    ("unshare --mount-proc -fp rm x", Some(&["rm"])),
    ("unshare -n", None),
    ("chroot /srv rm x", Some(&["rm"])),
    ("chroot --userspec=a:b /srv rm x", Some(&["rm"])),
    ("chroot /srv", None),
    // sudo, doas, su, runuser
    ("sudo rm x", Some(&["rm"])),
    ("sudo -u root rm x", Some(&["rm"])),
    ("sudo -uroot rm x", Some(&["rm"])),
    ("sudo --user=root rm x", Some(&["rm"])),
    ("sudo -E -H rm x", Some(&["rm"])),
    ("sudo -- rm x", Some(&["rm"])),
    ("sudo --preserve-env=PATH rm x", Some(&["rm"])),
    ("sudo --preserve-env rm x", Some(&["rm"])),
    ("sudo -s 'rm x'", Some(&["rm"])),
    ("sudo -e f", Some(&["sudoedit"])),
    ("sudo FOO=1 rm x", Some(&["rm"])),
    ("sudo GIT_PAGER='rm x' git log", Some(&["rm", "git"])),
    ("sudo BASH_ENV=x bash -c ls", None),
    ("timeout 5 A=1 rm x", None),
    ("sudo -l", Some(&["sudo"])),
    ("sudo -s", None),
    ("sudo -i", None),
    ("doas rm x", Some(&["rm"])),
    ("doas -u root rm x", Some(&["rm"])),
    ("doas -s", None),
    ("su -c 'rm x'", Some(&["rm"])),
    ("su root -c 'rm x'", Some(&["rm"])),
    ("su - root -c 'rm x'", Some(&["rm"])),
    ("su -l -c 'rm x' root", Some(&["rm"])),
    ("su --command='rm x'", Some(&["rm"])),
    ("su", None),
    ("su root", None),
    ("runuser -u nobody -- rm x", Some(&["rm"])),
    ("runuser -u nobody rm x", Some(&["rm"])),
    ("runuser -l nobody -c 'rm x'", Some(&["rm"])),
    // script, busybox, watch, parallel, ssh, systemd-run
    ("script -c 'rm x' /dev/null", Some(&["rm"])),
    ("script -qc 'rm x' log", Some(&["rm"])),
    ("script --command 'rm x'", Some(&["rm"])),
    ("script", None),
    ("script log.txt", None),
    ("busybox rm x", Some(&["rm"])),
    ("busybox sh -c 'rm x'", Some(&["rm"])),
    ("busybox --list", Some(&["busybox"])),
    ("watch rm x", Some(&["rm"])),
    ("watch 'rm x'", Some(&["rm"])),
    ("watch -n 1 'ls; rm x'", Some(&["ls", "rm"])),
    ("watch -x rm x", Some(&["rm"])),
    ("watch -d -n1 rm x", Some(&["rm"])),
    ("parallel rm ::: a b", Some(&["rm"])),
    ("parallel -j2 'rm {}' ::: a b", Some(&["rm"])),
    ("ls | parallel rm", Some(&["ls", "rm"])),
    ("parallel", None),
    ("ssh host rm x", Some(&["rm"])),
    ("ssh -p 22 host rm x", Some(&["rm"])),
    ("ssh host -p 22 rm x", Some(&["rm"])),
    ("ssh host 'rm x'", Some(&["rm"])),
    ("ssh -t host 'cd /x && rm y'", Some(&["cd", "rm"])),
    ("ssh host", Some(&["ssh"])),
    ("ssh -o ProxyCommand='rm x' host", Some(&["rm", "ssh"])),
    ("ssh -F cfg host", None),
    ("systemd-run --user rm x", Some(&["rm"])),
    ("systemd-run -p Nice=5 --unit x rm x", Some(&["rm"])),
    ("systemd-run --scope -- rm x", Some(&["rm"])),
    ("systemd-run -S", None),
    // programs that run a program named in an option
    ("rg --pre rm foo", Some(&["rm", "rg"])),
    ("rg --pre=rm foo", Some(&["rm", "rg"])),
    ("rg --pre ./x.sh foo", Some(&["x.sh", "rg"])),
    ("rg --hostname-bin=rm foo", Some(&["rm", "rg"])),
    ("rg --pre $X foo", None),
    ("find . -execdir sh -c 'rm x' \\;", Some(&["rm", "find"])),
    ("find . -ok rm {} +", Some(&["rm", "find"])),
    ("fd -x rm", Some(&["rm", "fd"])),
    ("fd -e txt --exec rm {}", Some(&["rm", "fd"])),
    ("fd --exec-batch rm", Some(&["rm", "fd"])),
    (
        "tar --checkpoint=1 --checkpoint-action=exec='rm x' -cf a.tar d",
        Some(&["rm", "tar"]),
    ),
    ("tar --to-command='rm x' -xf a.tar", Some(&["rm", "tar"])),
    ("tar --to-command 'rm x' -xf a.tar", Some(&["rm", "tar"])),
    (
        "tar --use-compress-program=rm -cf a d",
        Some(&["rm", "tar"]),
    ),
    ("tar --use-compress-prog=rm -cf a d", Some(&["rm", "tar"])),
    ("tar -I rm -cf a d", Some(&["rm", "tar"])),
    ("tar -Irm -cf a d", Some(&["rm", "tar"])),
    ("tar --info-script='rm x' -cf a d", Some(&["rm", "tar"])),
    ("tar -cIf rm a d", None),
    ("tar cIf rm a d", None),
    ("tar -czf a.tgz d", Some(&["tar"])),
    ("git -c alias.x='!rm y' x", Some(&["rm", "git"])),
    ("git -c alias.st=push st", None),
    ("git -c core.pager='rm x' log", Some(&["rm", "git"])),
    ("git -c core.editor=vim commit", Some(&["vim", "git"])),
    ("git -c diff.x.textconv='rm y' diff", Some(&["rm", "git"])),
    ("git -c core.fsmonitor='rm x' status", Some(&["rm", "git"])),
    ("git -c core.fsmonitor=false status", Some(&["git"])),
    ("git -c core.hooksPath=h commit", None),
    ("git -c include.path=x status", None),
    ("git --config-env=core.pager=X log", None),
    ("git -c user.name=x commit -m y", Some(&["git"])),
    ("trap 'rm x' EXIT", Some(&["rm", "trap"])),
    ("trap -- 'rm x' EXIT", Some(&["rm", "trap"])),
    ("trap - EXIT", Some(&["trap"])),
    ("trap '' INT", Some(&["trap"])),
    ("trap -l", Some(&["trap"])),
    ("trap \"$X\" EXIT", None),
    ("mapfile -C 'rm x' arr < f", None),
    ("readarray -C f -c 1 a", None),
    ("mapfile -t lines < f", Some(&["mapfile"])),
    // nohup, time, fakeroot, firejail, strace, ltrace, gdb, valgrind, …
    ("nohup rm x &", Some(&["rm"])),
    ("time -p rm x", Some(&["rm"])),
    ("/usr/bin/time -v rm x", Some(&["rm"])),
    ("/usr/bin/time -o t.txt rm x", Some(&["rm"])),
    ("fakeroot rm x", Some(&["rm"])),
    ("fakeroot -- rm x", Some(&["rm"])),
    ("fakeroot", None),
    ("firejail --quiet --net=none rm x", Some(&["rm"])),
    ("firejail", None),
    ("strace -f -o log rm x", Some(&["rm"])),
    ("strace -e trace=open rm x", Some(&["rm"])),
    ("strace -p 1", Some(&["strace"])),
    ("ltrace -o f rm x", Some(&["rm"])),
    ("gdb --args rm x", Some(&["rm"])),
    ("gdb -ex 'shell rm x' prog", None),
    ("gdb prog", Some(&["gdb"])),
    ("valgrind --leak-check=full rm x", Some(&["rm"])),
    ("valgrind -q rm x", Some(&["rm"])),
    ("catchsegv rm x", Some(&["rm"])),
    ("dbus-run-session -- rm x", Some(&["rm"])),
    ("dbus-run-session --config-file=x rm x", Some(&["rm"])),
    ("sg grp -c 'rm x'", Some(&["rm"])),
    ("sg grp 'rm x'", Some(&["rm"])),
    ("sg - grp -c 'rm x'", Some(&["rm"])),
    ("newgrp grp", None),
    (
        "nice timeout 5 sudo -u x env A=1 stdbuf -oL rm y",
        Some(&["rm"]),
    ),
    ("sudo sh -c 'timeout 3 xargs -i rm {}'", Some(&["rm"])),
    // bash features that run hidden code
    ("hash -p /bin/rm ls", None),
    ("hash", Some(&["hash"])),
    ("alias ls=rm", None),
    ("shopt -s expand_aliases", None),
    ("enable -f x.so y", None),
    ("enable -n echo", None),
    ("complete -C 'rm x' ls", None),
    ("fc -s", None),
    ("bind -x '\"\\C-x\": rm y'", None),
    ("echo $((x))", None),
    ("echo $((a[$i]))", None),
    ("echo $((1+2*3))", Some(&["echo"])),
    ("echo $[x]", None),
    ("[[ $x -eq 0 ]]", None),
    ("[[ x -lt 3 ]]", None),
    ("[[ 1 -eq 1 ]]", Some(&["[["])),
    ("[[ -n $x ]]", Some(&["[["])),
    ("[[ -v 'a[$i]' ]]", None),
    ("(( x ))", None),
    ("(( 1 + 1 ))", Some(&[])),
    ("let x", None),
    ("let 1+2", Some(&["let"])),
    ("declare -i x=1", None),
    ("declare -n r=x", None),
    ("local -n r", None),
    ("typeset -i n", None),
    ("declare 'a[$(rm x)]=1'", None),
    ("export 'a[0]=1'", None),
    ("declare x=1", Some(&["declare"])),
    ("export FOO=bar", Some(&["export"])),
    ("export BASH_ENV=./x", None),
    ("echo ${!x}", None),
    ("echo ${x@P}", None),
    ("echo ${x@Q}", None),
    ("echo ${#x}", Some(&["echo"])),
    ("echo ${arr[@]}", Some(&["echo"])),
    ("echo ${#arr[@]}", Some(&["echo"])),
    ("echo ${arr[$i]}", None),
    ("echo ${arr[0]}", Some(&["echo"])),
    ("echo ${x:1:2}", Some(&["echo"])),
    ("echo ${x:i}", None),
    ("echo ${x:-${!y}}", None),
    ("echo \"${x@P}\"", None),
    ("printf -v x '%s' y", None),
    ("printf -v 'a[$(rm x)]' y", None),
    ("read 'a[$(rm x)]'", None),
    ("read -r line", Some(&["read"])),
    ("read -a arr", Some(&["read"])),
    ("read -r -p \"$msg\" ans", Some(&["read"])),
    ("read -a \"$n\"", None),
    ("read -r \"$name\"", None),
    ("mapfile -t -u 3 lines", Some(&["mapfile"])),
    ("readarray -t 'a[$(rm x)]'", None),
    ("source <(echo rm x)", None),
    (". <(curl x)", None),
    ("x='a[$(rm y)]'; echo $((x))", None),
    ("cat <<EOF\n${x@P}\nEOF", None),
    ("cat <<'EOF'\n${x@P}\nEOF", Some(&["cat"])),
    // environment assignments that run code
    ("GIT_PAGER='rm x' git log", Some(&["rm", "git"])),
    ("PAGER='rm x' man ls", Some(&["rm", "man"])),
    ("GIT_EXTERNAL_DIFF='rm x' git diff", Some(&["rm", "git"])),
    (
        "export GIT_PAGER='rm x'; git log",
        Some(&["rm", "export", "git"]),
    ),
    ("env GIT_SSH_COMMAND='rm x' git fetch", Some(&["rm", "git"])),
    ("BASH_ENV=./x bash -c ls", None),
    ("env BASH_ENV=./x bash -c ls", None),
    ("LD_PRELOAD=./x.so ls", None),
    (
        "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.pager GIT_CONFIG_VALUE_0='rm x' git log",
        None,
    ),
    ("env 'BASH_FUNC_ls%%=() { rm x; }' bash -c ls", None),
    ("PS4='$(rm x)' bash -xc ls", None),
    ("cp /bin/rm ./ls; PATH=.:$PATH ls x", None),
    ("export PATH=bin:$PATH; ls", None),
    ("env PATH=./node_modules/.bin:/usr/bin jest", None),
    ("PATH=$PATH:/opt/x/bin make", Some(&["make"])),
    ("export PATH=\"$HOME/.cargo/bin:$PATH\"", Some(&["export"])),
    ("ENV=production npm start", Some(&["npm"])),
    // shells fed code from their input
    ("echo 'rm x' | bash", None),
    ("echo 'rm x' | sh -s", None),
    ("bash <<< 'rm x'", None),
    ("bash <<EOF\nrm x\nEOF", None),
    ("bash <(curl x)", None),
    ("curl x | sh", None),
    ("bash -", None),
    ("sudo bash", None),
    // interpreters reading a program from their input are as opaque as `-c`: determined
    ("python3 - <<'EOF'\nprint(1)\nEOF", Some(&["python3"])),
    // a program that is a found file, or that the line itself writes first
    ("find . -exec {} \\;", None),
    ("ls | xargs -I{} {}", None),
    ("ls | xargs -i {} x", None),
    ("ls | xargs -I% %", None),
    ("cp /bin/rm x; ./x f", None),
    ("echo 'rm y' > s; chmod +x s; ./s", None),
    ("curl -so t https://h/t; ./t", None),
    ("ln -s /bin/rm bin/ls && bin/ls f", None),
    ("./configure && make", Some(&["configure", "make"])),
    ("/usr/bin/rm x && /usr/bin/rm y", Some(&["rm", "rm"])),
    ("cat s | python3", Some(&["cat", "python3"])),
];

fn progs(cmd: &str) -> Option<Vec<String>> {
    segments(cmd)
        .ok()
        .map(|s| s.into_iter().map(|s| s.program).collect())
}

#[test]
fn effective_programs_per_segment() {
    let mut failures = Vec::new();
    for (cmd, want) in PROGRAMS {
        let got = progs(cmd);
        let want = want.map(|w| w.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        if got != want {
            failures.push(format!("{cmd:?}: want {want:?}, got {got:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(PROGRAMS.len() >= 150, "{}", PROGRAMS.len());
}

/// Every row that runs `rm` (or cannot be determined) is vetoed by every spelling of
/// `deny Bash(rm)` in yolo, interactive or not, and by `ask Bash(rm)`; every row that
/// determinably runs no `rm` is allowed.
#[test]
fn deny_and_ask_rm_in_every_spelling() {
    let mut failures = Vec::new();
    for spelling in ["Bash(rm)", "Bash(rm:*)", "Bash(rm *)", "bash(/bin/rm)"] {
        for headless in [false, true] {
            let deny = policy(Mode::Yolo, headless, &[spelling], &[], &[]);
            let ask = policy(Mode::Yolo, headless, &[], &[spelling], &[]);
            for (cmd, want) in PROGRAMS {
                let runs_rm = want.is_some_and(|w| w.contains(&"rm"));
                let d = deny.decide(&bash(cmd)).verdict;
                let q = ask.decide(&bash(cmd)).verdict;
                let ok = match want {
                    Some(_) if runs_rm => {
                        d == Verdict::Deny
                            && q == if headless {
                                Verdict::Deny
                            } else {
                                Verdict::Ask
                            }
                    }
                    Some(_) => d == Verdict::Allow && q == Verdict::Allow,
                    // Undetermined: never allowed; denied outright when `rm` is visible.
                    None => {
                        d != Verdict::Allow
                            && q != Verdict::Allow
                            && (!cmd.contains("rm") || d == Verdict::Deny)
                    }
                };
                if !ok {
                    failures.push(format!(
                        "{spelling} headless={headless} {cmd:?}: deny {d:?}, ask {q:?}"
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn bash(cmd: &str) -> Action {
    Action {
        tool: "bash".into(),
        command: Some(cmd.into()),
        paths: vec![],
    }
}

fn policy(mode: Mode, headless: bool, deny: &[&str], ask: &[&str], allow: &[&str]) -> Policy {
    policy_at(Path::new("/proj"), mode, headless, deny, ask, allow)
}

fn policy_at(
    root: &Path,
    mode: Mode,
    headless: bool,
    deny: &[&str],
    ask: &[&str],
    allow: &[&str],
) -> Policy {
    let mut p = Policy::new(mode, Role::Execute, root);
    p.headless = headless;
    // The OS sandbox is not under test here.
    p.sandbox = SandboxLevel::FullAccess;
    p.network = NetworkAccess::On;
    p.deny = deny.iter().map(|r| Rule::parse(r).unwrap()).collect();
    p.ask = ask.iter().map(|r| Rule::parse(r).unwrap()).collect();
    p.allow = allow.iter().map(|r| Rule::parse(r).unwrap()).collect();
    p
}

#[test]
fn the_three_spellings_and_their_siblings() {
    for spelling in ["Bash(rm)", "Bash(rm:*)", "Bash(rm *)"] {
        let p = policy(Mode::Yolo, false, &[spelling], &[], &[]);
        for (cmd, want) in [
            ("rm", Verdict::Deny),
            ("rm -- f", Verdict::Deny),
            ("rm -rf /", Verdict::Deny),
            ("ls | xargs rm", Verdict::Deny),
            ("/bin/rm f", Verdict::Deny),
            ("\\rm f", Verdict::Deny),
            ("r''m f", Verdict::Deny),
            ("echo $(rm x)", Verdict::Deny),
            ("rm $(ls)", Verdict::Deny),
            ("rm *.o", Verdict::Deny),
            ("eval 'r''m x'", Verdict::Deny),
            ("$'\\x72m' x", Verdict::Deny),
            ("$'\\162\\155' x", Verdict::Deny),
            ("eval $'\\u0072m x'", Verdict::Deny),
            ("r{m,} x", Verdict::Deny),
            ("{rm,x} y", Verdict::Deny),
            ("$X x", Verdict::Ask),
            ("echo rm", Verdict::Allow),
            ("grep 'rm ' f", Verdict::Allow),
            ("git rm x", Verdict::Allow),
            ("rmdir d", Verdict::Allow),
            ("format c", Verdict::Allow),
        ] {
            assert_eq!(p.decide(&bash(cmd)).verdict, want, "{spelling}: {cmd}");
        }
    }
    // Patterns with arguments veto unless the arguments are known to miss.
    let p = policy(
        Mode::Yolo,
        false,
        &["Bash(rm -rf:*)", "Bash(git push:*)"],
        &[],
        &[],
    );
    for (cmd, want) in [
        ("rm -rf x", Verdict::Deny),
        ("rm $FLAGS x", Verdict::Deny),
        ("rm -f x", Verdict::Allow),
        ("git push", Verdict::Deny),
        ("git -C . -c k=v --no-pager push", Verdict::Deny),
        (
            "git --git-dir=.git --work-tree . push origin",
            Verdict::Deny,
        ),
        ("git -p push", Verdict::Deny),
        ("git --unknown-global push", Verdict::Deny),
        ("git $SUB origin", Verdict::Deny),
        ("sudo git push", Verdict::Deny),
        ("git log --grep push", Verdict::Allow),
        ("git -C . status", Verdict::Allow),
        ("git --version", Verdict::Allow),
    ] {
        assert_eq!(p.decide(&bash(cmd)).verdict, want, "{cmd}");
    }
    // Global options of other programs with subcommands.
    let p = policy(
        Mode::Yolo,
        false,
        &[
            "Bash(cargo publish:*)",
            "Bash(npm publish:*)",
            "Bash(docker rm:*)",
            "Bash(kubectl delete:*)",
        ],
        &[],
        &[],
    );
    for (cmd, want) in [
        ("cargo +nightly publish", Verdict::Deny),
        ("cargo -q --locked publish", Verdict::Deny),
        ("npm --prefix x publish", Verdict::Deny),
        ("npm -g --silent publish", Verdict::Deny),
        ("docker -H tcp://h rm c", Verdict::Deny),
        ("docker --context x rm c", Verdict::Deny),
        ("kubectl -n prod delete pod x", Verdict::Deny),
        ("kubectl --namespace=prod delete pod x", Verdict::Deny),
        ("cargo +nightly build", Verdict::Allow),
        ("npm --prefix x test", Verdict::Allow),
        ("docker -H h ps", Verdict::Allow),
        ("kubectl -n prod get pods", Verdict::Allow),
    ] {
        assert_eq!(p.decide(&bash(cmd)).verdict, want, "{cmd}");
    }
    // A wrapper named by a rule is vetoed too.
    let p = policy(Mode::Yolo, false, &["Bash(sudo)", "Bash(ssh)"], &[], &[]);
    for cmd in [
        "sudo ls",
        "sudo -u x sh -c 'ls'",
        "ssh host ls",
        "ssh host",
        "timeout 3 sudo ls",
    ] {
        assert_eq!(p.decide(&bash(cmd)).verdict, Verdict::Deny, "{cmd}");
    }
}

#[test]
fn shell_rules_cover_monitor() {
    let r = Rule::parse("Bash(rm)").unwrap();
    assert!(r.covers_tool("monitor"));
    let r = Rule::parse("Monitor(rm)").unwrap();
    assert!(r.covers_tool("bash"));
    assert!(Rule::parse("bash").unwrap().covers_tool("monitor"));
    assert!(!Rule::parse("monitor").unwrap().covers_tool("bash"));
    assert!(!Rule::parse("Bash(rm)").unwrap().covers_tool("write"));
    let p = policy(Mode::Yolo, true, &["Bash(rm)"], &[], &[]);
    for cmd in ["rm x", "tail -f log | xargs rm", "watch rm x"] {
        let a = Action {
            tool: "monitor".into(),
            command: Some(cmd.into()),
            paths: vec![],
        };
        assert_eq!(p.decide(&a).verdict, Verdict::Deny, "{cmd}");
    }
}

#[test]
fn allow_needs_a_full_literal_match() {
    let p = policy(
        Mode::Ask,
        false,
        &[],
        &[],
        &["Bash(git push:*)", "Bash(rm *)"],
    );
    for (cmd, want) in [
        ("git push", Verdict::Allow),
        ("git push origin main", Verdict::Allow),
        ("timeout 60 git push", Verdict::Allow),
        ("rm", Verdict::Allow),
        ("rm -rf build", Verdict::Allow),
        ("git -C . push", Verdict::Ask),
        ("git -c core.sshCommand=x push", Verdict::Ask),
        ("git pushy", Verdict::Ask),
        ("git $X", Verdict::Ask),
        ("git push && touch x", Verdict::Ask),
        ("git push $(touch x)", Verdict::Ask),
        ("sudo git push", Verdict::Ask),
        ("ssh host git push", Verdict::Ask),
        ("sh -c 'git push'", Verdict::Ask),
        ("git status", Verdict::Allow),
    ] {
        assert_eq!(p.decide(&bash(cmd)).verdict, want, "{cmd}");
    }
}

#[test]
fn edit_rules_judge_what_the_shell_writes() {
    let p = policy(Mode::Yolo, true, &["Edit(/src/**)"], &[], &[]);
    let mut failures = Vec::new();
    for (cmd, want) in [
        ("sed -i s/a/b/ src/a.py", Verdict::Deny),
        ("sed -i.bak s/a/b/ src/a.py", Verdict::Deny),
        ("sed -Ei s/a/b/ src/a.py", Verdict::Deny),
        ("sed --in-place=.bak -e s/a/b/ src/a.py", Verdict::Deny),
        ("echo x > src/a.py", Verdict::Deny),
        ("echo x >> src/a.py", Verdict::Deny),
        ("cat x &> src/a.py", Verdict::Deny),
        ("cp x src/a.py", Verdict::Deny),
        ("cp x src", Verdict::Deny),
        ("cp -t src x", Verdict::Deny),
        ("mv src/a.py b", Verdict::Deny),
        ("rm src/a.py", Verdict::Deny),
        ("rm ./src/../src/a.py", Verdict::Deny),
        ("rm /proj/src/a.py", Verdict::Deny),
        ("touch src/new.py", Verdict::Deny),
        ("mkdir src/d", Verdict::Deny),
        ("tee src/a.py < x", Verdict::Deny),
        ("dd if=x of=src/a.py", Verdict::Deny),
        ("truncate -s0 src/a.py", Verdict::Deny),
        ("chmod +x src/a.py", Verdict::Deny),
        ("chown me src/a.py", Verdict::Deny),
        ("ln -sf x src/a.py", Verdict::Deny),
        ("install -m644 x src/a.py", Verdict::Deny),
        ("xxd x src/a.py", Verdict::Deny),
        ("sort -o src/a.py x", Verdict::Deny),
        ("git checkout -- src/a.py", Verdict::Deny),
        ("git restore src/a.py", Verdict::Deny),
        ("git restore --source HEAD~1 src/a.py", Verdict::Deny),
        ("cd src && rm a.py", Verdict::Deny),
        ("cd lib; cd ../src; rm a.py", Verdict::Deny),
        ("pushd src && rm a.py", Verdict::Deny),
        ("sudo rm src/a.py", Verdict::Deny),
        ("sh -c 'sed -i s/x/y/ src/a.py'", Verdict::Deny),
        (
            "find . -name '*.py' -exec sed -i s/a/b/ {} +",
            Verdict::Allow,
        ),
        // fail closed: a known writer whose paths cannot be determined
        ("rm src/*.py", Verdict::Deny),
        ("rm $F", Verdict::Deny),
        ("cd $D && rm a.py", Verdict::Deny),
        ("git stash", Verdict::Deny),
        ("git checkout main", Verdict::Deny),
        // not a write to src/
        ("sed -i s/a/b/ lib/a.py", Verdict::Allow),
        ("sed s/a/b/ src/a.py", Verdict::Allow),
        ("cat src/a.py", Verdict::Allow),
        ("echo x > lib/a.py", Verdict::Allow),
        ("cp src/a.py lib/", Verdict::Allow),
        ("grep x src/a.py", Verdict::Allow),
        ("ls src", Verdict::Allow),
        ("rm lib/*.o", Verdict::Deny),
        ("git checkout -- lib/a.py", Verdict::Allow),
        // a directory whose tree holds protected paths
        ("rm -rf src", Verdict::Deny),
        ("rm -r .", Verdict::Deny),
        ("mv src old", Verdict::Deny),
        ("git checkout -- .", Verdict::Deny),
        ("git restore src", Verdict::Deny),
        ("chmod -R 700 src", Verdict::Deny),
        ("cp -r lib src", Verdict::Deny),
        ("tar xf a.tar", Verdict::Deny),
        ("rm -rf build lib", Verdict::Allow),
        ("rm -rf src2", Verdict::Allow),
        ("mkdir -p build/src", Verdict::Allow),
        ("tar czf out.tgz lib", Verdict::Allow),
    ] {
        let got = p.decide(&bash(cmd)).verdict;
        if got != want {
            failures.push(format!("{cmd:?}: want {want:?}, got {got:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn read_rules_judge_what_the_shell_reads_and_writes() {
    let p = policy(Mode::Yolo, true, &["Read(/secret/**)"], &[], &[]);
    let mut failures = Vec::new();
    for (cmd, want) in [
        ("cat secret/k", Verdict::Deny),
        ("cat < secret/k", Verdict::Deny),
        ("head -n 1 secret/k", Verdict::Deny),
        ("tail secret/k", Verdict::Deny),
        ("less secret/k", Verdict::Deny),
        ("grep x secret/k", Verdict::Deny),
        ("grep -e x secret/k", Verdict::Deny),
        ("rg x secret/k", Verdict::Deny),
        ("cp secret/k /tmp/x", Verdict::Deny),
        ("base64 secret/k", Verdict::Deny),
        ("xxd secret/k", Verdict::Deny),
        ("od -c secret/k", Verdict::Deny),
        ("strings secret/k", Verdict::Deny),
        ("sed -n 1p secret/k", Verdict::Deny),
        ("awk '{print}' secret/k", Verdict::Deny),
        ("echo x > secret/k", Verdict::Deny),
        ("cat secret/*", Verdict::Deny),
        ("grep -r x .", Verdict::Deny),
        ("grep -R x secret", Verdict::Deny),
        ("rg x .", Verdict::Deny),
        ("cp -r secret /tmp/s", Verdict::Deny),
        ("tar czf /tmp/a.tgz secret", Verdict::Deny),
        ("tar -c -f /tmp/a.tar .", Verdict::Deny),
        ("grep -r x lib", Verdict::Allow),
        ("tar czf a.tgz lib", Verdict::Allow),
        ("grep x lib/a.py", Verdict::Allow),
        ("cat README.md", Verdict::Allow),
        ("ls secret", Verdict::Allow),
        ("grep secret README.md", Verdict::Allow),
        ("echo secret/k", Verdict::Allow),
    ] {
        let got = p.decide(&bash(cmd)).verdict;
        if got != want {
            failures.push(format!("{cmd:?}: want {want:?}, got {got:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn home_and_absolute_path_rules_on_the_shell() {
    let home = std::env::var("HOME").unwrap_or_default();
    let p = policy(
        Mode::Yolo,
        true,
        &[
            "Read(~/.ssh/**)",
            "Read(//etc/shadow)",
            "Edit(/src/sub/a.py)",
        ],
        &[],
        &[],
    );
    for (cmd, want) in [
        ("cat ~/.ssh/id_rsa".to_string(), Verdict::Deny),
        ("cp ~/.ssh/id_rsa x".to_string(), Verdict::Deny),
        (format!("base64 {home}/.ssh/config"), Verdict::Deny),
        ("cat /etc/shadow".to_string(), Verdict::Deny),
        ("cd /etc && cat shadow".to_string(), Verdict::Deny),
        ("cd src; cd sub; rm a.py".to_string(), Verdict::Deny),
        (
            "cd src/sub/.. && sed -i s/a/b/ sub/a.py".to_string(),
            Verdict::Deny,
        ),
        ("cat /etc/hostname".to_string(), Verdict::Allow),
        ("cd src; rm a.py".to_string(), Verdict::Allow),
    ] {
        assert_eq!(p.decide(&bash(&cmd)).verdict, want, "{cmd}");
    }
}

#[test]
fn scripts_are_read_from_the_working_directory() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("s.sh"), "#!/bin/sh\nset -e\nrm x\nls\n").unwrap();
    std::fs::write(root.join("ok.sh"), "echo hi\nls -la\n").unwrap();
    std::fs::write(root.join("nested.sh"), "bash -c 'rm y'\n").unwrap();
    std::fs::write(root.join("fn.sh"), "f() { rm x; }\nf\n").unwrap();
    std::fs::write(root.join("big.sh"), "echo x\n".repeat(12_000)).unwrap();
    std::fs::create_dir(root.join("sub")).unwrap();
    std::fs::write(root.join("sub/t.sh"), "ls\n").unwrap();
    let progs_in = |cmd: &str| -> Option<Vec<String>> {
        segments_in(cmd, Some(root))
            .ok()
            .map(|s| s.into_iter().map(|s| s.program).collect())
    };
    let v = |w: &[&str]| Some(w.iter().map(|s| s.to_string()).collect::<Vec<_>>());
    assert_eq!(progs_in("bash s.sh"), v(&["set", "rm", "ls", "bash"]));
    assert_eq!(progs_in("sh ./s.sh arg"), v(&["set", "rm", "ls", "sh"]));
    assert_eq!(progs_in("source s.sh"), v(&["set", "rm", "ls", "source"]));
    assert_eq!(progs_in(". s.sh"), v(&["set", "rm", "ls", "."]));
    assert_eq!(progs_in("bash -e ok.sh"), v(&["echo", "ls", "bash"]));
    assert_eq!(progs_in("bash nested.sh"), v(&["rm", "bash"]));
    assert_eq!(progs_in("timeout 5 bash ok.sh"), v(&["echo", "ls", "bash"]));
    assert_eq!(progs_in("bash sub/t.sh"), v(&["ls", "bash"]));
    for cmd in [
        "bash missing.sh",
        "bash fn.sh",
        "bash big.sh",
        "echo 'rm x' > ok.sh; bash ok.sh",
        "cp s.sh ok.sh && bash ok.sh",
        "tar xf a.tar && bash ok.sh",
        "cd sub && bash t.sh",
        "bash $S",
        "bash /dev/stdin",
    ] {
        assert_eq!(progs_in(cmd), None, "{cmd}");
    }
    // No working directory: scripts cannot be read.
    assert_eq!(segments("bash ok.sh").ok(), None);
    // Policy::decide reads scripts from the project root.
    let p = policy_at(root, Mode::Yolo, true, &["Bash(rm)"], &[], &[]);
    assert_eq!(p.decide(&bash("bash s.sh")).verdict, Verdict::Deny);
    assert_eq!(p.decide(&bash("source s.sh")).verdict, Verdict::Deny);
    assert_eq!(p.decide(&bash("bash ok.sh")).verdict, Verdict::Allow);
    assert_eq!(p.decide(&bash("bash missing.sh")).verdict, Verdict::Deny);
}
