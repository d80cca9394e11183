//! Table suite for "read-only means no effect" (DESIGN §5, seed 002 §3.1): every command an audit or the
//! peer-classifier corpus found writing or running something while judged read-only, its
//! siblings, and the everyday inspection forms that must stay allowed. A line is read-only
//! when it is determined and every segment is read-only (undetermined = not read-only).

use std::path::Path;
use yuyao_policy::{Action, Policy, Verdict, readonly, segments};
use yuyao_protocol::{Mode, Role};

fn ro(cmd: &str) -> bool {
    segments(cmd)
        .map(|s| s.iter().all(readonly::segment_is_read_only))
        .unwrap_or(false)
}

/// Commands that write a file, run a program or change the system: never read-only.
const EFFECTS: &[&str] = &[
    // rg runs programs
    "rg --pre rm foo .",
    "rg --pre=./script foo",
    "rg --pre ./script foo",
    "rg --pre-glob '*.pdf' --pre pdftotext x",
    "rg -z foo .",
    "rg -iz foo .",
    "rg --search-zip foo",
    "rg --hostname-bin ./h foo",
    "rg foo *",
    "rg $PAT .",
    // sed writes or runs
    "sed -n 'w f' x",
    "sed -n 'w f'",
    "sed 's/x/y/w f' x",
    "sed 's/x/y/gw f' x",
    "sed 's/x/y/e' x",
    "sed '1e touch m' x",
    "sed -n '/a/W out' x",
    "sed -e p -e 'w out' x",
    "sed --expression='w out' x",
    "sed '$!N; w out' x",
    "sed '/x/{p;w out\n}' x",
    "sed ':a;w out' x",
    "sed 'y/a/b/;e date' x",
    "sed 's|a|b|w out' x",
    "sed --in-place=.bak s/a/b/ f",
    "sed --in-place s/a/b/ f",
    "sed --in-pl s/a/b/ f",
    "sed -i s/a/b/ f",
    "sed -i.bak s/a/b/ f",
    "sed -ni p f",
    "sed -Ei s/a/b/ f",
    "sed -s -i s/a/b/ f",
    "sed -f script.sed f",
    "sed --file=script.sed f",
    "sed -n p *",
    "sed",
    // awk, tee, env -S: never
    "awk '\"cmd\" | getline' f",
    "awk 'BEGIN{print \"x\" | \"tee f\"}'",
    "awk '{print > \"out\"}' f",
    "awk -f repo.awk f",
    "awk '{print $1}' f",
    "gawk '{print}' f",
    "tee f",
    "echo x | tee -a f",
    // find writes or deletes
    "find -fprint0 f",
    "find . -fprint0 /tmp/out",
    "find . -fprint out",
    "find . -fprintf out '%p'",
    "find . -fls out",
    "find . -delete",
    "find . -name x -delete",
    "find . -ok rm {} \\;",
    "find . -okdir rm {} \\;",
    "find . -exec rm {} \\;",
    "find . -exec sed -i s/a/b/ {} +",
    "find . -execdir sh -c 'touch x' \\;",
    "find * -name x",
    "find . -unknownpredicate",
    // sort writes with -o in every spelling
    "sort -o f f",
    "sort -uo f f",
    "sort -uof f",
    "sort --output=f f",
    "sort --output f f",
    "sort --out=f f",
    "sort --compress-program=./x f",
    "sort -T dir f",
    "sort $OPTS f",
    "sort \"-$X\" f",
    "git log \"-$X\"",
    "uniq \"-$X\" in",
    "sort *.txt",
    // uniq / xxd / base64 output operands
    "uniq IN OUT",
    "uniq -c IN OUT",
    "uniq src/*.txt",
    "uniq -- a b",
    "xxd IN OUT",
    "xxd -r IN",
    "xxd -r -p IN OUT",
    "xxd -revert IN",
    "xxd -r -s 100 in out",
    "xxd -s 100 in out",
    "xxd in -p",
    "uniq in -c",
    "base64 in -d",
    "base64 -d in out",
    "base64 -o out in",
    // date / hostname set the system
    "date -s 2020-01-01",
    "date --set=2020-01-01",
    "date 010203042020",
    "hostname newname",
    "hostname -F file",
    "hostname -b x",
    // printf -v assigns (array subscripts run code)
    "printf -v 'a[$(touch m)]' x",
    "printf -v x y",
    "printf -vx y",
    "test -v 'a[$(touch m)]'",
    "[[ x -eq 0 ]]",
    "[ -v 'a[1]' ]",
    // env -S / assignments
    "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0=cmd git status",
    "GIT_EXTERNAL_DIFF=cmd git diff",
    "GIT_PAGER=./p git log",
    "PAGER=./p git log",
    "PATH=.:$PATH ls",
    "PATH=. ls",
    "env PATH=. ls",
    "LD_PRELOAD=./x.so ls",
    "BASH_ENV=./x bash script.sh",
    "ENV=./x ls",
    "EDITOR=./x git log",
    "VISUAL=./x ls",
    "PYTHONPATH=. pip list",
    "NODE_OPTIONS='--require ./x' npm ls",
    "PERL5OPT=-Mx ls",
    "RUBYOPT=-rx ls",
    "IFS=x ls",
    "PS4='$(touch m)' ls",
    "PROMPT_COMMAND=x ls",
    "SHELLOPTS=xtrace ls",
    "BASHOPTS=x ls",
    "LESSOPEN='|./x %s' ls",
    "LESSCLOSE=x ls",
    "HOME=. git status",
    "GIT_DIR=x git log",
    "RIPGREP_CONFIG_PATH=./rc rg foo",
    "FOO=1 ls",
    "PATH=.:$PATH; ls",
    "PATH=.; ls",
    "export PATH=.; ls",
    "ls; PATH=.",
    "PATH=. ; echo $(ls)",
    "for PATH in .; do ls; done",
    "IFS=/; ls",
    "GIT_EXTERNAL_DIFF=./m.sh; git diff",
    "LD_PRELOAD=./x.so; cat f",
    // git forms with effects
    "git -c core.pager=x log",
    "git -c alias.x='!touch m' x",
    "git --config-env=core.pager=X log",
    "git --exec-path=. status",
    "git -p log",
    "git --paginate log",
    "git log --output=f",
    "git diff --output f",
    "git show --out=f",
    "git diff --ext-diff",
    "git log -p --ext-diff",
    "git diff --textconv",
    "git grep --open-files-in-pager=cmd x",
    "git grep --open-files-in=cmd x",
    "git grep -Ocmd x",
    "git grep -nO x",
    "git ls-remote --upload-pack=./x origin",
    "git ls-remote 'ext::sh -c touch% m'",
    "git push",
    "git commit -m x",
    "git checkout x",
    "git reset --hard",
    "git clean -fd",
    "git stash",
    "git stash pop",
    "git stash drop",
    "git branch new",
    "git branch -v new",
    "git branch -d x",
    "git branch -D x",
    "git branch -m a b",
    "git tag v1",
    "git tag -d v1",
    "git tag -a v1 -m x",
    "git config user.name x",
    "git config --global user.name x",
    "git config user.name --all",
    "git config user.name --get",
    "git branch new --list",
    "git tag v2 -l",
    "git config --unset x",
    "git config --edit",
    "git remote add o url",
    "git remote remove o",
    "git remote show origin",
    "git reflog expire --all",
    "git reflog delete HEAD@{0}",
    "git worktree add ../x",
    "git worktree remove x",
    "git fetch",
    "git pull",
    "git help log",
    "git log $X",
    "git diff *",
    "git",
    // tar / unzip other than listing
    "tar -xf x.tar",
    "tar xvf x.tar",
    "tar -cf x.tar .",
    "tar czf x.tgz .",
    "tar -tf x.tar --to-command=sh",
    "tar -tf x.tar --use-compress-program=./x",
    "tar -t -I ./x -f x.tar",
    "tar -tf x.tar --checkpoint-action=exec=./x",
    "tar -tf host:x.tar",
    "tar --list --index-file=out -f x.tar",
    "tar -tf x.tar -g snap",
    "unzip x.zip",
    "unzip -o x.zip",
    "unzip -d out x.zip",
    "unzip -l x.zip -d out",
    // package managers, containers, system tools: changing forms
    "pip install x",
    "pip list --log out",
    "pip list --python ./x",
    "pip3 uninstall x",
    "python -m pip list",
    "python script.py",
    "python3 -c 'print(1)'",
    "uv pip install x",
    "uv pip list --python ./x",
    "uv run x",
    "npm install",
    "npm ci",
    "npm run build",
    "npm exec x",
    "npm version patch",
    "npm outdated",
    "npm view user/repo",
    "npm view git+https://x/y.git",
    "npm view ./local",
    "npm ls --git=./x",
    "npm config set x y",
    "pnpm ls",
    "yarn --version",
    "cargo build",
    "cargo run",
    "cargo install x",
    "cargo tree --config 'build.rustc=\"./x\"'",
    "cargo metadata -Zunstable-options",
    "cargo fmt",
    "top",
    "openssl x509 -in c.pem -out d.pem",
    "openssl x509 -in c.pem -text",
    "openssl x509 -in c.pem -noout -engine ./x.so",
    "openssl req -new -out x",
    "openssl genrsa -out k.pem",
    "sqlite3 db 'select 1'",
    "sqlite3 -readonly db",
    "sqlite3 -readonly db '.shell touch m'",
    "sqlite3 -readonly db 'select 1;\n.output out'",
    "sqlite3 -readonly db \"select writefile('out','x')\"",
    "sqlite3 -readonly db \"select edit('x')\"",
    "sqlite3 -readonly db \"attach 'x.db' as y\"",
    "sqlite3 -readonly db \"select load_extension('./x')\"",
    "sqlite3 -readonly db \"vacuum into 'out.db'\"",
    "sqlite3 -readonly -cmd '.shell touch m' db 'select 1'",
    "sqlite3 -readonly -init x.sql db 'select 1'",
    "ip addr add 10.0.0.1/24 dev eth0",
    "ip route del default",
    "ip link set eth0 down",
    "ip -b cmds.txt",
    "ip -n ns addr",
    "ip addr flush dev eth0",
    "dmesg -c",
    "dmesg -C",
    "dmesg --clear",
    "dmesg -n 1",
    "dmesg -D",
    "kubectl delete pod x",
    "kubectl apply -f x.yaml",
    "kubectl exec x -- ls",
    "kubectl --kubeconfig ./k get pods",
    "kubectl foo",
    "docker run x",
    "docker rm x",
    "docker exec x ls",
    "docker -H ssh://x ps",
    "docker --config . ps",
    "docker image rm x",
    "docker container prune",
    "systemctl restart x",
    "systemctl stop x",
    "systemctl enable x",
    "systemctl -H host status",
    "journalctl --vacuum-size=1M",
    "journalctl --vacuum-t=1d",
    "journalctl --rotate",
    "journalctl --flush",
    "ss -K dst 1.2.3.4",
    "ss -tK",
    "apt install x",
    "apt-cache gencaches",
    "apt-cache -o Dir::Cache=x show y",
    "apt-get install x",
    "dpkg -i x.deb",
    "dpkg -r x",
    "dpkg -l --admindir=x",
    "gh pr checkout 1",
    "gh pr merge 1",
    "gh pr view 1 --web",
    "gh pr view 1 -w",
    "gh api repos/x/y -X DELETE",
    "gh myextension",
    "yq -i '.a = 1' f.yaml",
    "yq --inplace '.a = 1' f.yaml",
    "yq --in-place '.a = 1' f.yaml",
    "yq -s '.a' f.yaml",
    "git submodule update",
    "git notes add -m x",
    "pkill x",
    "nm --plugin ./x.so bin",
    "nm --plug=./x.so bin",
    "kill 1",
    // programs with side effects, pagers, unknowns
    "less f",
    "more f",
    "man ls",
    "ldd ./x",
    "rm x",
    "touch x",
    "mkdir d",
    "cp a b",
    "mv a b",
    "chmod +x f",
    "ln -s a b",
    "truncate -s0 f",
    "dd if=a of=b",
    "make",
    "bash -h",
    "sqlite3 -h",
    "unzip --version",
    "bash script.sh",
    "./script.sh",
    "tree -o out",
    "tree -ao out",
    "file -C -m magic",
    "fd -x rm",
    "fd -X rm",
    "fd --exec rm",
    "fd -Hx rm",
    "fd --exec-batch rm",
    "command rm x",
    // a program named by a path is whatever file is there (a planted `./ls`)
    "./ls",
    "./cat f",
    "bin/grep x",
    "/tmp/x/ls",
    "/usr/bin/../../tmp/x/ls",
    "~/bin/ls",
    "find . -exec ./ls {} \\;",
    "git ls-files | xargs ./cat",
    // xargs appends words read at run time: a planted file `-ofoo` becomes `sort -ofoo`
    "git ls-files | xargs sort",
    "ls | xargs sed -n p",
    "find . | xargs -0 git log",
    "BASH_ENV=./x bash -c ls",
    "env GIT_DIR=x bash -c 'git log'",
    // computed words: the text the lexer shows is not what the program receives
    "F='w out'; sed \"s/a/b/$F\" f",
    "N='1w out\n'; sed -n \"${N}p\" f",
    "for f in *; do sed -n p \"$f\"; done",
    "for f in *; do sort $f; done",
    "sort -o\"$X\" f",
    "git log \"--out$X\"",
    "uniq -- in$X",
    "find . -name *.py",
    "rg -g *.rs foo",
    "xxd in $X",
    "date \"$D\"",
    // redirections and substitutions
    "ls > out",
    "cat f >> out",
    "echo $(touch m)",
    "echo $(rm x)",
    "rm -rf x",
    "cat <(touch m)",
    "ls 2> err",
];

/// Inspection forms that must stay read-only (the usefulness half).
const READ_ONLY: &[&str] = &[
    // git's read-only forms
    "git status",
    "git status --short",
    "git log --oneline -5",
    "git log --format='%H %s' --stat",
    "git log -p -- src",
    "git diff",
    "git diff --stat HEAD~1",
    "git diff --no-ext-diff --cached",
    "git diff --text a b",
    "git show HEAD:f",
    "git blame -L 1,10 f",
    "git grep -n foo",
    "git grep -c foo -- '*.rs'",
    "git ls-files",
    "git ls-tree -r HEAD",
    "git rev-parse --show-toplevel",
    "git describe --tags",
    "git shortlog -sn",
    "git merge-base HEAD main",
    "git name-rev HEAD",
    "git count-objects -v",
    "git var GIT_AUTHOR_IDENT",
    "git show-ref",
    "git diff-tree --no-commit-id -r HEAD",
    "git rev-list --count HEAD",
    "git cat-file -p HEAD",
    "git for-each-ref --format='%(refname)'",
    "git ls-remote origin",
    "git -C sub status",
    "git --no-pager log -3",
    "git branch",
    "git branch --list",
    "git branch --list 'feat*'",
    "git branch -l",
    "git branch -a",
    "git branch -r",
    "git branch -v",
    "git branch -vv",
    "git branch --merged",
    "git branch --merged main",
    "git branch --no-merged main",
    "git branch --contains HEAD",
    "git branch --show-current",
    "git tag",
    "git tag -l",
    "git tag -l 'v1.*'",
    "git tag --list",
    "git tag -n",
    "git stash list",
    "git stash show -p",
    "git remote",
    "git remote -v",
    "git remote get-url origin",
    "git config --get user.name",
    "git config --get-all remote.origin.fetch",
    "git config --list",
    "git config -l --show-origin",
    "git config --global --get user.email",
    "git config get user.name",
    "git config user.name",
    "git config --global user.email",
    "cargo fmt --check",
    "cargo fmt --all -- --check",
    "top -bn1",
    "lsb_release -a",
    "vmstat 1 2",
    "git reflog",
    "git reflog show",
    "git reflog -n 5",
    "git worktree list",
    "git worktree list --porcelain",
    "git --version",
    "git version",
    "GIT_PAGER=cat git log",
    "LC_ALL=C git log",
    // archives
    "tar -tf x.tar",
    "tar tvf x.tar",
    "tar tzvf x.tgz",
    "tar -tzf x.tar.gz",
    "tar --list -f x.tar",
    "tar --list --file=x.tar",
    "tar -tvf x.tar src/",
    "unzip -l x.zip",
    "unzip -lv x.zip",
    "unzip -Z x.zip",
    "unzip -Z1 x.zip",
    "unzip -t x.zip",
    "unzip -p x.zip a.txt",
    // find with a read-only inner program, and searches
    "find . -name '*.py' -exec grep -l x {} \\;",
    "find . -type f -exec cat {} +",
    "find . -name '*.rs' -exec wc -l {} +",
    "find . -exec head -1 {} \\;",
    "find . -execdir ls {} \\;",
    "find . -name '*.rs'",
    "find src -maxdepth 2 -type f -newer x -print0",
    "find . \\( -name a -o -name b \\) -printf '%p\\n'",
    "find -L . -mtime -1 -ls",
    "find . -path ./target -prune -o -name '*.rs' -print",
    "rg foo",
    "rg -n foo src",
    "rg -g '*.rs' foo",
    "rg --glob='*.rs' -i foo",
    "rg -tpy foo",
    "rg -l foo -- *",
    "fd -e rs",
    "fd -H foo src",
    "grep -rn x .",
    "grep foo *.py",
    "egrep 'a|b' f",
    // text processing
    "sed -n 1,10p f",
    "sed -n '/a/,/b/p' f",
    "sed 's/a/b/g' f",
    "sed -E 's/(a)/\\1/' f",
    "sed -e 's/a/b/' -e 's/c/d/' f",
    "sed -n '$p' f",
    "sed '1d;$d' f",
    "sed -n '/^x/{p;q}' f",
    "sed 'y/abc/xyz/' f",
    "sed '/x/a text' f",
    "sed 's/we/ew/' f",
    "sed -n 'l' f",
    "sed '/^$/d' f",
    "sed -n '2~3p' f",
    "sed --sandbox -n p f",
    "sort f",
    "sort -u f",
    "sort -k2,2 -t: -n f",
    "sort -rn --key=3 f",
    "sort f | uniq -c",
    "uniq -c f",
    "uniq",
    "xxd f",
    "xxd -l 64 f",
    "xxd -s 100 -c 16 f",
    "xxd -p f",
    "base64 f",
    "base64 -d f",
    "base64 --decode f",
    "echo aGk= | base64 -d",
    "cat a b | wc -l",
    "head -5 f; tail -5 f",
    "tail -f log",
    "cut -d: -f1 /etc/passwd",
    "tr a-z A-Z < f",
    "nl f",
    "column -t f",
    "od -c f",
    "hexdump -C f",
    "sha256sum f",
    "md5sum f",
    "diff a b",
    "diff -u a b",
    "cmp a b",
    "comm -12 a b",
    "paste a b",
    "fold -w 80 f",
    "expand f",
    "tac f",
    "rev f",
    "strings bin",
    "jq . f.json",
    "jq -r '.a' f.json",
    "tree",
    "tree -L 2 src",
    "tree -I node_modules",
    "file f",
    "stat f",
    "du -sh .",
    "df -h",
    "ls -la",
    "ls $HOME",
    "ls -la | head",
    "wc -l *.rs",
    "cat *",
    // printing and builtins
    "echo hi",
    "printf 'x\\n'",
    "printf '%s\\n' a b",
    "true",
    "false",
    "test -f x",
    "[ -d src ]",
    "[[ -n x ]]",
    "[[ 1 -eq 1 ]]",
    "seq 1 5",
    "sleep 1",
    "basename a/b",
    "dirname a/b",
    "realpath .",
    "readlink -f x",
    "pwd",
    "cd src && ls",
    "pushd src && ls && popd",
    "type ls",
    "command -v git",
    "which git",
    "help cd",
    "env",
    "printenv PATH",
    "uptime",
    "free -m",
    "ps aux",
    "lsof -i",
    "locale",
    "nproc",
    "uname -a",
    "id",
    "whoami",
    "date",
    "date +%s",
    "date -u -d @0",
    "date -Iseconds",
    "hostname",
    "hostname -f",
    // --help / --version alone
    "ls --help",
    "sed --help",
    "sort --version",
    "python --version",
    "python3 -V",
    "node --version",
    "cargo --version",
    "cargo -V",
    "rustc --version",
    "npm --version",
    "npm -v",
    "pip --version",
    "docker --version",
    "kubectl --help",
    "make --version",
    "bash --version",
    // package managers, containers, system tools: inspection forms
    "pip list",
    "pip list --outdated --format=json",
    "pip show requests",
    "pip show -f requests",
    "pip freeze",
    "pip3 list",
    "pip3 freeze --all",
    "uv pip list",
    "uv pip show x",
    "uv pip freeze",
    "npm ls",
    "npm ls --depth=0",
    "npm list --all",
    "npm view react version",
    "npm view @types/node versions --json",
    "npm config get registry",
    "cargo tree",
    "cargo tree -p x --depth 1",
    "cargo metadata --format-version 1 --no-deps",
    "openssl x509 -in c.crt -noout -text",
    "openssl x509 -noout -subject -dates -in c.crt",
    "openssl version",
    "openssl version -a",
    "sqlite3 -readonly db 'select * from t'",
    "sqlite3 -readonly -header -column db 'select count(*) from t'",
    "ip addr",
    "ip a",
    "ip addr show",
    "ip -br addr show dev eth0",
    "ip route",
    "ip route get 1.1.1.1",
    "ip -j link show",
    "ip link",
    "dmesg",
    "dmesg -T",
    "dmesg --level=err,warn",
    "kubectl get pods",
    "kubectl get pods -n kube-system -o wide",
    "kubectl -n x describe pod y",
    "kubectl logs deploy/x --tail=50",
    "kubectl version",
    "kubectl config view",
    "docker ps",
    "docker ps -a",
    "docker images",
    "docker inspect x",
    "docker logs --tail 20 x",
    "docker version",
    "docker image ls",
    "docker container ls -a",
    "systemctl status x",
    "systemctl --user list-units",
    "systemctl is-active x",
    "systemctl",
    "journalctl -u x -n 50 --no-pager",
    "journalctl -b -p err",
    "ss -tlnp",
    "netstat -tlnp",
    "apt list --installed",
    "apt-cache policy x",
    "apt-cache search x",
    "dpkg -l",
    "dpkg -L x",
    "dpkg-query -W -f='${Version}' x",
    "gh pr view 12 --comments",
    "gh pr list",
    "gh pr diff 12",
    "gh issue list -R o/r",
    "gh run list",
    "gh auth status",
    "yq '.a' f.yaml",
    "yq e '.a' f.yaml",
    "git submodule status",
    "git notes list",
    "pgrep -f x",
    "pidof x",
    "getent passwd x",
    "whereis ls",
    "nm -C bin",
    "objdump -d bin",
    "readelf -h bin",
    "tokei",
    "cal",
    // validation commands (run project code; kept for planning, see readonly/mod.rs)
    "cargo check",
    "cargo test -p x",
    "cargo clippy --all-targets",
    "cargo nextest run",
    "npm test",
    "pnpm test",
    "yarn test",
    // lines of several read-only segments
    "git status; git log --oneline -3",
    "cd src && rg foo | head -5",
    "ls 2>&1",
    "ls 2>/dev/null",
    "git diff --stat && git log -1",
    // system paths, literal globs, computed words where harmless
    "/usr/bin/git status",
    "/bin/ls -la",
    "git ls-files '*.rs'",
    "git log --oneline -- *.py",
    "git diff -- $f",
    "rg foo -- src/*.rs",
    "for f in *.py; do head -5 $f; done",
    "for f in *.md; do wc -l \"$f\"; done",
    "grep -n foo $FILE",
    "sort -",
    "tar -tf -",
    "find . -name \"*.py\"",
    "f=src/main.rs; head -20 $f",
    "x=1 ls",
    "for f in a b; do cat $f; done",
    "LANG=C sort f",
    "TZ=UTC date",
    "git ls-files | xargs grep -l foo",
    "find . -name '*.rs' | xargs wc -l",
    "ls | xargs -I{} cat {}",
];

#[test]
fn effects_are_not_read_only() {
    let wrong: Vec<&str> = EFFECTS.iter().copied().filter(|c| ro(c)).collect();
    assert!(wrong.is_empty(), "judged read-only: {wrong:#?}");
}

#[test]
fn inspection_forms_are_read_only() {
    let wrong: Vec<&str> = READ_ONLY.iter().copied().filter(|c| !ro(c)).collect();
    assert!(wrong.is_empty(), "judged not read-only: {wrong:#?}");
}

#[test]
fn table_size() {
    assert!(EFFECTS.len() + READ_ONLY.len() >= 150);
}

/// The sed script reader on its own: the commands that write or run are found wherever they
/// hide, and the everyday scripts pass.
#[test]
fn sed_scripts() {
    let run = |script: &str| ro(&format!("sed -n {} f", shell_quote(script)));
    for s in [
        "w out",
        "1w out",
        "/a/w out",
        "$W out",
        "e",
        "1e touch m",
        "s/a/b/w out",
        "s/a/b/2w out",
        "s/a/b/e",
        "s/a/b/gpe",
        "p;w out",
        "p\nw out",
        "{w out\n}",
        "/x/!w out",
        "1,5w out",
        "0~2w out",
        "\\,x,w out",
        "/a/I w out",
        "b end; w out",
        ":g e",
        ":a;b a e",
        "b a\tw out",
        "t x }w out",
        "r in; w out",
        "s/a\\/b/c/w out",
        "y/a/b/;w out",
        "a text\nw out",
        "1!G;h;$!d;w out",
        "unknown",
        "s/a/b",
    ] {
        assert!(!run(s), "sed script should not be read-only: {s:?}");
    }
    for s in [
        "p",
        "1,10p",
        "s/a/b/g",
        "s/w/e/",
        "s/a/we/2p",
        "/we/p",
        "1!G;h;$!d",
        "$=",
        "/start/,/end/{p}",
        "r in",
        "a text with w and e",
        "s#a#b#gI",
        "y/we/ew/",
        "l 40",
        "q5",
    ] {
        assert!(run(s), "sed script should be read-only: {s:?}");
    }
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

fn bash(cmd: &str) -> Action {
    Action {
        tool: "bash".into(),
        command: Some(cmd.into()),
        paths: vec![],
    }
}

/// Entries of `EFFECTS` the strict list refuses but whose only possible effect the read-only
/// OS sandbox stops (a file write, a temporary file, project code run as the validation
/// commands run it): plan mode and the ask role allow them where that sandbox is enforced.
/// `plan_tables.rs` holds their rows.
const SANDBOX_BOUNDED: &[&str] = &[
    "awk '{print $1}' f",
    "gawk '{print}' f",
    "sort -T dir f",
    "FOO=1 ls",
    "git remote show origin",
    "npm outdated",
    "pnpm ls",
    "yarn --version",
    "man ls",
    "unzip --version",
];

/// The decisions that follow: plan mode, the ask role and headless ask mode deny every
/// effect above and allow the inspection forms.
#[test]
fn read_only_sessions_decide_by_the_table() {
    let project = Path::new("/work/project");
    let policy = |mode, role, headless| {
        let mut p = Policy::new(mode, role, project);
        p.headless = headless;
        // The OS sandbox and network are not under test here.
        p.sandbox = yuyao_protocol::SandboxLevel::FullAccess;
        p.network = yuyao_protocol::NetworkAccess::On;
        p
    };
    let headless = policy(Mode::Ask, Role::Execute, true);
    let sessions = [
        ("plan", policy(Mode::Plan, Role::Execute, false)),
        ("ask role", policy(Mode::Ask, Role::Ask, false)),
    ];
    for (name, p) in &sessions {
        let sandboxed = p.shell_trust() == readonly::Trust::Sandboxed;
        for c in EFFECTS {
            if sandboxed && SANDBOX_BOUNDED.contains(c) {
                continue;
            }
            assert_ne!(
                p.decide(&bash(c)).verdict,
                Verdict::Allow,
                "{name} allowed {c}"
            );
        }
        for c in READ_ONLY {
            assert_eq!(
                p.decide(&bash(c)).verdict,
                Verdict::Allow,
                "{name} refused {c}"
            );
        }
    }
    for c in EFFECTS {
        assert_ne!(
            headless.decide(&bash(c)).verdict,
            Verdict::Allow,
            "headless ask allowed {c}"
        );
    }
}

/// Leaks the read-only check alone cannot see: the lexer reads `env -S 'cmd'` as a command
/// line and makes arithmetic on variables and `@P` expansions undetermined.
#[test]
fn leaks_hidden_from_segments() {
    for c in [
        "env -S 'touch x'",
        "env --split-string='touch x'",
        "x='a[$(touch m)]'; echo $((x))",
        "echo \"${x@P}\"",
    ] {
        assert!(!ro(c), "judged read-only: {c}");
    }
}

mod sed_oracle {
    use super::{ro, shell_quote};
    use proptest::prelude::*;
    use std::process::{Command, Stdio};

    /// Runs GNU sed on empty input; `true` when it accepted the script.
    fn sed_accepts(sandbox: bool, script: &str) -> bool {
        let mut c = Command::new("sed");
        if sandbox {
            c.arg("--sandbox");
        }
        c.args(["-n", "-e", script])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .current_dir(std::env::temp_dir());
        c.status().is_ok_and(|s| s.success())
    }

    fn gnu_sed_has_sandbox() -> bool {
        sed_accepts(true, "p") && !sed_accepts(true, "w /dev/null")
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(600))]

        /// GNU sed's `--sandbox` refuses every script with `w`, `W`, `e`, `s///w`, `s///e`
        /// (and `r`, left out of the alphabet: reading is allowed). Any script sed accepts
        /// that the read-only check passes must pass the sandbox too.
        #[test]
        fn read_only_sed_scripts_pass_gnu_sandbox(
            script in "[pwWesyq0-9$/,;!{}\n\t :abtTlgGhHnNdD=icxzFvQL|\\\\#~+MI.*^]{1,14}"
        ) {
            check(&script)?;
        }

        /// The same with scripts built from real commands, where `w` and `e` hide in
        /// substitution flags, after addresses, in blocks, after labels and text.
        #[test]
        fn read_only_commands_pass_gnu_sandbox(
            parts in proptest::collection::vec((address(), command()), 1..4),
            sep in prop_oneof![Just(";"), Just("\n"), Just(" ; ")],
        ) {
            let script: Vec<String> = parts.into_iter().map(|(a, c)| format!("{a}{c}")).collect();
            check(&script.join(sep))?;
        }
    }

    fn address() -> impl Strategy<Value = String> {
        prop_oneof![
            Just(String::new()),
            Just("1".to_string()),
            Just("$".to_string()),
            Just("/a/".to_string()),
            Just("1,3".to_string()),
            Just("/x/,/y/!".to_string()),
            Just("0~2".to_string()),
            Just("\\,a,I".to_string()),
        ]
    }

    fn command() -> impl Strategy<Value = String> {
        let subst = (
            prop_oneof![Just('/'), Just('|'), Just(','), Just('#')],
            "[a-z]{1,2}",
            "[a-z]{0,2}",
            "[gpIM2]{0,2}(w out|e|W)?",
        )
            .prop_map(|(d, p, r, f)| format!("s{d}{p}{d}{r}{d}{f}"));
        prop_oneof![
            subst,
            Just("p".to_string()),
            Just("d".to_string()),
            Just("w out".to_string()),
            Just("W out".to_string()),
            Just("e".to_string()),
            Just("e date".to_string()),
            Just("y/ab/ba/".to_string()),
            Just("{p}".to_string()),
            Just("{w out\n}".to_string()),
            Just(":a".to_string()),
            Just("b a".to_string()),
            Just("a text w e".to_string()),
            Just("i\\\nw out".to_string()),
            Just("q".to_string()),
            Just("l 5".to_string()),
            Just("=".to_string()),
            Just("# w comment".to_string()),
        ]
    }

    fn check(script: &str) -> Result<(), TestCaseError> {
        prop_assume!(gnu_sed_has_sandbox());
        let judged = ro(&format!("sed -n -e {} f", shell_quote(script)));
        if judged && sed_accepts(false, script) {
            prop_assert!(sed_accepts(true, script), "judged read-only: {script:?}");
        }
        Ok(())
    }
}

/// The effect oracle: option soup for the programs with writing forms; whatever is judged
/// read-only is run (in a scratch directory, on relative names only) and must leave the
/// directory as it was.
mod effect_oracle {
    use super::ro;
    use proptest::prelude::*;
    use std::collections::BTreeMap;
    use std::path::Path;
    use std::process::{Command, Stdio};

    const PROGRAMS: &[(&str, &[&str])] = &[
        (
            "sort",
            &[
                "-o",
                "out",
                "-uo",
                "-uoout",
                "--output=out",
                "--out=out",
                "-u",
                "-n",
                "-r",
                "-k2",
                "-t,",
                "in",
                "-",
                "--",
                "-T",
                ".",
                "--compress-program=touch",
                "-m",
                "--debug",
                "-c",
                "--files0-from=in",
            ],
        ),
        (
            "uniq",
            &[
                "in", "out", "-c", "-d", "-u", "--", "-f", "1", "-s1", "--group", "-i", "-z",
            ],
        ),
        (
            "xxd",
            &[
                "in", "out", "-r", "-p", "-ps", "-s", "1", "-l", "4", "-c", "8", "-revert", "-i",
                "-u", "-b", "--", "-o", "2",
            ],
        ),
        (
            "base64",
            &[
                "in", "out", "-d", "-i", "-w", "0", "--decode", "-o", "--", "--wrap=4",
            ],
        ),
        (
            "sed",
            &[
                "-n",
                "-i",
                "-ni",
                "-Ei",
                "-s",
                "-E",
                "--in-place=.bak",
                "-e",
                "p",
                "'w out'",
                "'s/a/b/w out'",
                "'1e touch m'",
                "in",
                "'s/a/b/'",
                "-f",
                "--",
                "'$p'",
                "-z",
                "'1!G;h;$!d'",
                "'W out'",
            ],
        ),
        (
            "tar",
            &[
                "-t",
                "-x",
                "-f",
                "x.tar",
                "tvf",
                "xf",
                "-v",
                "-c",
                "-O",
                "'--to-command=touch m'",
                "-C",
                ".",
                "--list",
                "--file=x.tar",
                "-k",
            ],
        ),
        (
            "unzip",
            &[
                "-l", "x.zip", "-o", "-d", "out", "-p", "-v", "-Z", "-t", "-q", "-x", "a", "-j",
                "-c", "-n", "-z", "-lv", "-qq",
            ],
        ),
        (
            "sqlite3",
            &[
                "-readonly",
                "db",
                "'select 1'",
                "\"select writefile('out','x')\"",
                "'.shell touch m'",
                "-cmd",
                "'.output out'",
                "\"attach 'y.db' as y\"",
                "'create table t(a)'",
                "-init",
                "in",
                "-safe",
                "\"vacuum into 'v.db'\"",
                "'select * from t'",
                "-json",
                "'.once out'",
                "\"select edit('x')\"",
            ],
        ),
        (
            "find",
            &[
                ".",
                "-name",
                "in",
                "-delete",
                "-fprint",
                "out",
                "-print",
                "-type",
                "f",
                "-exec",
                "cat",
                "touch",
                "m",
                "{}",
                "\\;",
                "-maxdepth",
                "1",
                "-fls",
                "-ok",
                "-printf",
                "%p",
                "-fprint0",
            ],
        ),
    ];

    fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
        let mut out = BTreeMap::new();
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let bytes = std::fs::read(e.path()).unwrap_or_default();
            out.insert(e.file_name().to_string_lossy().into_owned(), bytes);
        }
        out
    }

    /// A fresh copy of the fixture files (made once: `in`, `x.tar`, `x.zip`, `db`).
    fn scratch() -> tempfile::TempDir {
        static TEMPLATE: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
        let template = TEMPLATE.get_or_init(fixture);
        let dir = tempfile::tempdir().expect("a scratch directory");
        for e in std::fs::read_dir(template.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            std::fs::copy(e.path(), dir.path().join(e.file_name())).expect("copy a fixture");
        }
        dir
    }

    fn fixture() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("a scratch directory");
        let p = dir.path();
        std::fs::write(p.join("in"), "a\nb\na\n").expect("write in");
        std::fs::write(p.join("fromtar"), "t\n").expect("write fromtar");
        let made = Command::new("tar")
            .args(["-cf", "x.tar", "fromtar"])
            .current_dir(p)
            .status()
            .is_ok_and(|s| s.success());
        std::fs::remove_file(p.join("fromtar")).expect("remove fromtar");
        assert!(made, "tar is needed for the oracle");
        let zip = "import zipfile; zipfile.ZipFile('x.zip', 'w').writestr('fromzip', 'z')";
        let made = Command::new("python3")
            .args(["-c", zip])
            .current_dir(p)
            .status()
            .is_ok_and(|s| s.success());
        assert!(made, "python3 is needed for the oracle");
        let made = Command::new("sqlite3")
            .args(["db", "create table t(a); insert into t values (1);"])
            .current_dir(p)
            .status()
            .is_ok_and(|s| s.success());
        assert!(made, "sqlite3 is needed for the oracle");
        dir
    }

    const GIT: &[&str] = &[
        "log",
        "diff",
        "show",
        "status",
        "branch",
        "tag",
        "config",
        "stash",
        "reflog",
        "remote",
        "worktree",
        "grep",
        "notes",
        "--output=out",
        "--output",
        "out",
        "-c",
        "'core.pager=touch m'",
        "x",
        "-d",
        "-D",
        "-l",
        "--list",
        "-v",
        "new",
        "HEAD",
        "--",
        "-p",
        "list",
        "show",
        "expire",
        "--all",
        "add",
        "o",
        "url",
        "-C",
        ".",
        "--get",
        "user.name",
        "-O",
        "a",
        "--ext-diff",
        "-m",
        "push",
        "drop",
        "--unset",
        "-a",
        "--merged",
        "--contains",
        "get-url",
        "set-url",
        "--show-current",
        "-n",
        "5",
    ];

    /// Every file under `dir` with its bytes, git's index excepted (git refreshes it).
    fn tree(dir: &Path, prefix: &str, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let name = format!("{prefix}{}", e.file_name().to_string_lossy());
            if name == ".git/index" {
                continue;
            }
            if e.path().is_dir() {
                tree(&e.path(), &format!("{name}/"), out);
            } else {
                out.insert(name, std::fs::read(e.path()).unwrap_or_default());
            }
        }
    }

    fn git_scratch() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("a scratch directory");
        std::fs::write(dir.path().join("a"), "a\n").expect("write a");
        let ok = Command::new("sh")
            .args([
                "-c",
                "git init -q && git add a && git -c user.name=t -c user.email=t@e \
                 commit -qm init && git tag v1 && echo b >> a",
            ])
            .current_dir(dir.path())
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "git is needed for the oracle");
        dir
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        #[test]
        fn judged_read_only_git_has_no_effect(
            picks in proptest::collection::vec(0usize..64, 1..5),
        ) {
            let words: Vec<&str> = picks.iter().map(|i| GIT[i % GIT.len()]).collect();
            let cmd = format!("git {}", words.join(" "));
            if ro(&cmd) {
                let dir = git_scratch();
                let mut before = BTreeMap::new();
                tree(dir.path(), "", &mut before);
                let _ = Command::new("timeout")
                    .args(["5", "bash", "-c", &cmd])
                    .current_dir(dir.path())
                    .env("GIT_PAGER", "cat")
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status();
                let mut after = BTreeMap::new();
                tree(dir.path(), "", &mut after);
                let changed: Vec<&String> = before
                    .keys()
                    .chain(after.keys())
                    .filter(|k| before.get(*k) != after.get(*k))
                    .collect();
                prop_assert!(changed.is_empty(), "effect of {}: {:?}", cmd, changed);
            }
        }

        #[test]
        fn judged_read_only_has_no_effect(
            which in 0..PROGRAMS.len(),
            picks in proptest::collection::vec(0usize..64, 0..5),
        ) {
            let (program, vocab) = PROGRAMS[which];
            let words: Vec<&str> = picks.iter().map(|i| vocab[i % vocab.len()]).collect();
            let cmd = format!("{program} {}", words.join(" "));
            if ro(&cmd) {
                let dir = scratch();
                let before = snapshot(dir.path());
                let _ = Command::new("timeout")
                    .args(["5", "bash", "-c", &cmd])
                    .current_dir(dir.path())
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status();
                let after = snapshot(dir.path());
                let changed: Vec<&String> = before
                    .keys()
                    .chain(after.keys())
                    .filter(|k| before.get(*k) != after.get(*k))
                    .collect();
                prop_assert!(changed.is_empty(), "effect of {}: {:?}", cmd, changed);
            }
        }
    }
}
