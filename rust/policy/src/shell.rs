//! A conservative bash lexer: splits a command line into the segments that will execute and
//! computes each segment's effective program name (after quote removal, wrapper stripping
//! and path prefixes). Anything it cannot fully account for is `Undetermined`, which the
//! policy never permits — it never falls back to splitting on whitespace.
//!
//! Wrappers (programs that run another program: `env`, `timeout`, `sudo`, `flock`, `ssh`, …)
//! are parsed exactly, from a per-wrapper table of options (`WRAPPERS`): options that take
//! an argument, optional (attached) arguments, bundled short options, `--opt=value`, unique
//! long-option prefixes and `--`. An option the table does not know makes the line
//! undetermined. Command strings handed to a shell (`sh -c`, `su -c`, `env -S`, `watch`,
//! `ssh host …`, `git -c alias.x=!…`, `tar --to-command=…`) are parsed as command lines, and
//! each is confirmed by the bash grammar (`trap 'cmd' SIG` too). Programs that run a program
//! named in an option keep their own segment beside it (`find -exec`, `fd -x`, `rg --pre`,
//! `tar -I`, `git -c core.pager=…`; command-valued variables such as `GIT_PAGER=…`).
//!
//! Bash features that run code the lexer cannot see are undetermined: `eval`, `fc`,
//! aliases, `hash -p`, `enable`, `complete -C`, arithmetic on names or subscripts (`$((x))`,
//! `[[ $x -eq 0 ]]`, `(( x ))`, `let`, `declare -i`, `${a[$i]}`, `${x:i}`), `${!x}`,
//! `${x@P}`, `printf -v`, `declare -n` and subscripted names, `mapfile -C`, variables that
//! make a shell run code (`BASH_ENV`, `PS4`, `BASH_FUNC_*`, `LD_PRELOAD`, `GIT_CONFIG_*`),
//! a `PATH` with relative folders, a program that is a found file (`{}`) or a file the line
//! writes first, and a shell reading commands from its input (`… | bash`, `bash <<EOF`,
//! `bash -s`, `source <(…)`). Interpreters reading a program from their input
//! (`python3 - <<EOF`) are as opaque as `python3 -c`: determined, as that program.
//!
//! A script run by `bash f`/`source f`/`. f` is read from the working directory given to
//! [`segments_in`] and its commands join the line's segments; a missing, unreadable or
//! larger than 64 KiB script, one named elsewhere on the line, one run after a `cd`, or on a
//! line that also runs a program able to write it (`cp`, `tar`, `git`, `curl`, …) is
//! undetermined. A script executed directly (`./s.sh`) is a program like any other.

use std::path::{Path, PathBuf};

/// One executable segment: the effective program and its arguments (quotes removed).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Segment {
    pub program: String,
    pub args: Vec<String>,
    /// Output is redirected to a file (not `/dev/null` nor another descriptor).
    pub writes_file: bool,
    /// The segment was produced by a command substitution or process substitution.
    pub substituted: bool,
    /// Environment assignments for this program (`PATH=. ls`, `env GIT_DIR=x git …`), as
    /// written after quote removal: `NAME=value`.
    pub assignments: Vec<String>,
    /// Parallel to `args`: the argument's value is only known at run time (an expansion,
    /// a glob, brace expansion).
    pub computed: Vec<bool>,
    /// Wrappers stripped to reach `program`, outermost first (`sudo`, `timeout`, `sh`, …).
    pub wrappers: Vec<String>,
    /// Output redirection targets (`> f`, `>> f`, `&> f`, `<> f`), each with whether its
    /// name is computed at run time. `/dev/null` and descriptors are not listed.
    pub outputs: Vec<(String, bool)>,
    /// Input redirection sources (`< f`), each with whether its name is computed.
    pub inputs: Vec<(String, bool)>,
    /// The program word as written after quote removal (`./ls`, `/usr/bin/git`): `program`
    /// is only its last component.
    pub program_path: String,
    /// Per argument: its text is not what the program receives (it holds an expansion, whose
    /// computed part the text omits, or a glob or brace list that may become several words).
    /// One more `true` than there are arguments: words are appended at run time (`xargs`).
    pub dynamic_args: Vec<bool>,
}

impl Segment {
    /// `program arg1 arg2 …`, the text rules are matched against.
    pub fn command_line(&self) -> String {
        let mut s = self.program.clone();
        for a in &self.args {
            s.push(' ');
            s.push_str(a);
        }
        s
    }

    /// Whether argument `i` is computed at run time.
    pub fn arg_computed(&self, i: usize) -> bool {
        self.computed.get(i).copied().unwrap_or(false)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Undetermined(pub String);

impl std::fmt::Display for Undetermined {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot determine what this command runs: {}", self.0)
    }
}

/// Parses `cmd` into its executable segments. Scripts it runs (`bash f`, `source f`) cannot
/// be read without a working directory: they are undetermined; see [`segments_in`].
pub fn segments(cmd: &str) -> Result<Vec<Segment>, Undetermined> {
    segments_in(cmd, None)
}

/// Parses `cmd` as run in `cwd`: a script the line runs (`bash s.sh`, `. s.sh`) that exists
/// before the command is read and its commands join the segments; a missing, unreadable or
/// oversized (> 64 KiB) script, or one the line itself may write, is undetermined.
pub fn segments_in(cmd: &str, cwd: Option<&Path>) -> Result<Vec<Segment>, Undetermined> {
    let mut cx = Cx {
        cwd: cwd.map(Path::to_path_buf),
        line: cmd,
        out: Vec::new(),
        script_bytes: 0,
        scripts: 0,
        cd_seen: false,
        git_config_moved: false,
        stdin_fed: false,
    };
    cx.parse(cmd, false, 0, &[])?;
    cx.out = apply_shell_assignments(std::mem::take(&mut cx.out));
    if let Some(why) = cx
        .out
        .iter()
        .find_map(|s| git_alias_from_elsewhere(s, cx.git_config_moved || cx.cd_seen))
    {
        return undetermined(why);
    }
    // A second, independent reading by the bash grammar must agree (DESIGN §5).
    crate::bash_tree::confirm(cmd, &cx.out)?;
    if cx.scripts > 0
        && let Some(s) = cx
            .out
            .iter()
            .find(|s| BULK_WRITERS.contains(&s.program.as_str()))
    {
        return undetermined(format!(
            "the line runs a script and '{}', which may write that script first",
            s.program
        ));
    }
    Ok(cx.out)
}

/// `for PATH in .; do ls; done` (and assignments before a command string) set shell variables
/// that the other commands of the line then run with (`./ls`). The lexer records them as
/// placeholder segments (see [`SETS_VARIABLES`]); their assignments are added to every segment
/// of the line (before ones too: `$(…)` segments are read first but may run later), and the
/// placeholders go.
fn apply_shell_assignments(segs: Vec<Segment>) -> Vec<Segment> {
    let (set, mut run): (Vec<Segment>, Vec<Segment>) = segs
        .into_iter()
        .partition(|s| s.program_path == SETS_VARIABLES);
    let shell: Vec<String> = set.into_iter().flat_map(|s| s.assignments).collect();
    if !shell.is_empty() {
        for s in &mut run {
            s.assignments.splice(0..0, shell.iter().cloned());
        }
    }
    run
}

/// A placeholder for shell variables set by a line (see [`apply_shell_assignments`]).
fn shell_assignment(assignments: Vec<String>) -> Segment {
    Segment {
        assignments,
        program_path: SETS_VARIABLES.into(),
        ..Segment::default()
    }
}

/// The `program_path` of a placeholder: no word of a command line contains a NUL.
const SETS_VARIABLES: &str = "\0sets variables";

const MAX_DEPTH: usize = 8;
const MAX_SCRIPT: u64 = 64 * 1024;
const MAX_SCRIPTS_TOTAL: usize = 256 * 1024;

/// Programs that can create or rewrite files without naming them: a script run later in the
/// same line could be their output.
const BULK_WRITERS: &[&str] = &[
    "tar", "unzip", "7z", "git", "curl", "wget", "rsync", "scp", "patch", "cpio", "cp", "mv", "ln",
    "install", "dd", "tee", "sed", "gunzip", "bunzip2", "unxz", "zstd", "ar",
];

/// A word after quote removal and whether its value is computed at run time.
type W = (String, bool);

#[derive(Debug, Clone, PartialEq)]
enum Redir {
    /// `> f`, `>> f`, `>| f`, `&> f`, `>& f`, `<> f`.
    Out(String, bool),
    /// `< f`.
    In(String, bool),
    /// Here-documents, here-strings and descriptor duplications.
    Other,
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Word { text: String, dynamic: bool },
    Op(&'static str),
    Redirect(Redir),
}

fn undetermined<T>(why: impl Into<String>) -> Result<T, Undetermined> {
    Err(Undetermined(why.into()))
}

struct Cx<'a> {
    cwd: Option<PathBuf>,
    /// The whole command line (for the "script written by the line itself" check).
    line: &'a str,
    out: Vec<Segment>,
    script_bytes: usize,
    scripts: usize,
    cd_seen: bool,
    /// The line changes where git reads its configuration (`HOME=…`, `XDG_CONFIG_HOME=…`,
    /// `GIT_DIR=…`, also through `export`): an alias may come from a file the agent wrote.
    git_config_moved: bool,
    /// The command being read gets its input from the line (a pipe, `<`, a here-document):
    /// an editor reads the keystrokes it runs from there.
    stdin_fed: bool,
}

const KEYWORDS: &[&str] = &[
    "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!", "{", "}", "time",
];

/// Shells whose `-c STRING` is a command line and whose script operand is a file to read.
const SHELLS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "mksh", "yash", "ash", "fish",
];

/// Variables whose value is a command some program runs (`GIT_PAGER='rm x' git log`): the
/// value is parsed as a command line.
const COMMAND_VARS: &[&str] = &[
    "GIT_PAGER",
    "PAGER",
    "GIT_EDITOR",
    "EDITOR",
    "VISUAL",
    "GIT_SEQUENCE_EDITOR",
    "GIT_SSH_COMMAND",
    "GIT_SSH",
    "GIT_EXTERNAL_DIFF",
    "GIT_ASKPASS",
    "SSH_ASKPASS",
    "GIT_PROXY_COMMAND",
    "MANPAGER",
    "SYSTEMD_PAGER",
    "LESSOPEN",
    "LESSCLOSE",
    "BROWSER",
];

/// Variables that make a shell or the loader run code nobody wrote on the line.
const HIDDEN_VARS: &[&str] = &[
    "BASH_ENV",
    "PS0",
    "PS1",
    "PS2",
    "PS3",
    "PS4",
    "PROMPT_COMMAND",
    "SHELLOPTS",
    "BASHOPTS",
    "LD_PRELOAD",
    "LD_AUDIT",
    "GIT_CONFIG_COUNT",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_SYSTEM",
    "GIT_CONFIG",
    "GIT_EXEC_PATH",
    "GIT_TEMPLATE_DIR",
];

impl Cx<'_> {
    fn parse(
        &mut self,
        cmd: &str,
        substituted: bool,
        depth: usize,
        wrappers: &[String],
    ) -> Result<(), Undetermined> {
        if depth > MAX_DEPTH {
            return undetermined("nesting is too deep");
        }
        let mut lx = Lexer {
            chars: cmd.chars().collect(),
            pos: 0,
            subs: Vec::new(),
            heredocs: Vec::new(),
        };
        let toks = lx.tokens()?;
        for sub in std::mem::take(&mut lx.subs) {
            self.parse(&sub, true, depth + 1, wrappers)?;
        }
        let mut words: Vec<W> = Vec::new();
        let mut redirs: Vec<Redir> = Vec::new();
        let mut parens = 0usize;
        // Every command of a command string reads the input its shell was given; a command
        // after `|` reads the one before it.
        let inherited = self.stdin_fed;
        let mut fed = inherited;
        for t in toks {
            match t {
                Tok::Word { text, dynamic } => words.push((text, dynamic)),
                Tok::Redirect(r) => redirs.push(r),
                Tok::Op("(") => {
                    // A subshell opens only where a command starts (`echo \$(x)` is a syntax error).
                    if !words.is_empty() {
                        return undetermined("unexpected '(' after a word");
                    }
                    parens += 1;
                }
                Tok::Op(")") => {
                    if parens == 0 {
                        return undetermined("unbalanced ')'");
                    }
                    parens -= 1;
                    let (w, r) = (std::mem::take(&mut words), std::mem::take(&mut redirs));
                    self.stdin_fed = fed;
                    self.simple(w, r, substituted, depth, wrappers)?;
                }
                Tok::Op(op) => {
                    let (w, r) = (std::mem::take(&mut words), std::mem::take(&mut redirs));
                    self.stdin_fed = fed;
                    self.simple(w, r, substituted, depth, wrappers)?;
                    fed = inherited || matches!(op, "|" | "|&");
                }
            }
        }
        if parens != 0 {
            return undetermined("unbalanced '('");
        }
        self.stdin_fed = fed;
        let last = self.simple(words, redirs, substituted, depth, wrappers);
        self.stdin_fed = inherited;
        last
    }

    /// Parses a command string some program hands to a shell, confirmed by the grammar too.
    fn parse_string(
        &mut self,
        s: &W,
        substituted: bool,
        depth: usize,
        wrappers: &[String],
    ) -> Result<(), Undetermined> {
        if s.1 {
            return undetermined(format!(
                "the command string '{}' is computed at run time",
                s.0
            ));
        }
        self.parse(&s.0, substituted, depth + 1, wrappers)?;
        crate::bash_tree::confirm(&s.0, &self.out)
    }

    fn simple(
        &mut self,
        words: Vec<W>,
        redirs: Vec<Redir>,
        substituted: bool,
        depth: usize,
        wrappers: &[String],
    ) -> Result<(), Undetermined> {
        let mut i = 0;
        while i < words.len() && KEYWORDS.contains(&words[i].0.as_str()) && !words[i].1 {
            // The `time` keyword takes `-p` (and `--`).
            if words[i].0 == "time" {
                while words
                    .get(i + 1)
                    .is_some_and(|w| matches!(w.0.as_str(), "-p" | "--"))
                {
                    i += 1;
                }
            }
            i += 1;
        }
        let mut assignments: Vec<String> = Vec::new();
        while i < words.len() && is_assignment(&words[i].0) {
            self.check_assignment(&words[i], substituted, depth, wrappers)?;
            assignments.push(words[i].0.clone());
            i += 1;
        }
        let mut seg = Segment {
            substituted,
            ..Segment::default()
        };
        for r in &redirs {
            match r {
                Redir::Out(t, d) => {
                    if !matches!(t.as_str(), "/dev/null" | "/dev/stdout" | "/dev/stderr") {
                        seg.writes_file = true;
                        seg.outputs.push((t.clone(), *d));
                    }
                }
                Redir::In(t, d) => seg.inputs.push((t.clone(), *d)),
                Redir::Other => {}
            }
        }
        let Some((first, _)) = words.get(i) else {
            if seg.writes_file || !seg.inputs.is_empty() {
                // `> file` alone truncates a file; `< file` alone opens one.
                seg.program = ":".into();
                seg.program_path = ":".into();
                seg.assignments = assignments;
                self.out.push(seg);
            } else if !assignments.is_empty() {
                self.out.push(shell_assignment(assignments));
            }
            return Ok(());
        };
        match first.as_str() {
            // `for x in a b` runs nothing itself; it sets `x` for the loop body.
            "for" | "select" => {
                if let Some((name, _)) = words.get(i + 1)
                    && is_assignment(&format!("{name}="))
                {
                    self.out.push(shell_assignment(vec![format!("{name}=")]));
                }
                return Ok(());
            }
            "case" | "function" | "coproc" | "eval" => {
                return undetermined(format!(
                    "'{first}' is beyond what yuyao's shell lexer accounts for"
                ));
            }
            _ => {}
        }
        let mut argv: Vec<W> = words[i..].to_vec();
        let mut wraps: Vec<String> = wrappers.to_vec();
        if argv[0].1 {
            return undetermined(format!(
                "the program name '{}' is computed at run time",
                argv[0].0
            ));
        }
        let Some(rest) = self.unwrap(argv, &mut assignments, &mut wraps, substituted, depth)?
        else {
            // A command string, parsed as its own segments; `BASH_ENV=./x bash -c 'ls'`: they
            // run with these assignments.
            if !assignments.is_empty() {
                self.out.push(shell_assignment(assignments));
            }
            return Ok(());
        };
        argv = rest;
        if argv.is_empty() {
            if !assignments.is_empty() {
                self.out.push(shell_assignment(assignments));
            }
            return Ok(());
        }
        // Wrappers only remove leading words: a computed program (`env $X`) is undetermined.
        if argv[0].1 {
            return undetermined(format!(
                "the program name '{}' is computed at run time",
                argv[0].0
            ));
        }
        let program = basename(&argv[0].0);
        if program.is_empty() {
            return undetermined("empty program name");
        }
        if argv[0]
            .0
            .contains(|c: char| c.is_whitespace() || "()<>|;&$`'\"\\".contains(c))
        {
            // Only a word reached through a wrapper can be spelled so (`rg --pre='(rm)'`):
            // a name that reads as shell syntax is not what it seems.
            return undetermined(format!(
                "the program name '{}' reads as shell syntax",
                argv[0].0
            ));
        }
        if argv[0].0.contains("{}") {
            return undetermined("the program is a file name found at run time (`{}`)");
        }
        if is_assignment(&argv[0].0) {
            // `timeout 5 A=1 cmd` runs a program literally named `A=1`: not what it reads as.
            return undetermined(format!("'{}' after a wrapper is not a program", argv[0].0));
        }
        if argv[0].0.contains('/') && self.written_before(&program) {
            return undetermined(format!(
                "the program {} may be written by this line before it runs",
                argv[0].0
            ));
        }
        let args: Vec<W> = argv[1..].to_vec();
        let fed = self.stdin_fed || redirs.iter().any(|r| !matches!(r, Redir::Out(..)));
        if let Some(why) = crate::shell_programs::runs_commands(&program, &args, fed) {
            return undetermined(why);
        }
        self.hidden_code(&program, &args, substituted, depth, &wraps)?;
        self.inner_programs(&program, &args, substituted, depth, &wraps)?;
        if matches!(program.as_str(), "cd" | "pushd" | "popd") {
            self.cd_seen = true;
        }
        if matches!(program.as_str(), "source" | ".") {
            match args.first() {
                Some(script) => self.run_script(script, substituted, depth, &wraps)?,
                None => return undetermined("`source` without a file"),
            }
        }
        seg.program = program;
        seg.program_path = argv[0].0.clone();
        seg.args = args.iter().map(|a| a.0.clone()).collect();
        seg.computed = args.iter().map(|a| a.1).collect();
        seg.dynamic_args = seg.computed.clone();
        // `… | xargs sort` appends words read at run time: one more computed argument.
        if wraps.iter().any(|w| w == "xargs") {
            seg.dynamic_args.push(true);
        }
        seg.assignments = assignments;
        seg.wrappers = wraps;
        self.out.push(seg);
        Ok(())
    }

    /// Whether a segment seen so far may write a file named `base` (`cp /bin/rm x; ./x`).
    fn written_before(&self, base: &str) -> bool {
        let names = |w: &str| w == base || w.ends_with(&format!("/{base}"));
        self.out.iter().any(|s| {
            let p = segment_paths(s);
            p.unknown_writes
                || p.writes.iter().any(|(w, c)| *c || names(w))
                || (BULK_WRITERS.contains(&s.program.as_str())
                    && s.args.iter().any(|a| a.contains(base)))
        })
    }

    /// Environment assignments that run code: command-valued variables are parsed, variables
    /// that make a shell or the loader run hidden code are undetermined.
    fn check_assignment(
        &mut self,
        w: &W,
        substituted: bool,
        depth: usize,
        wrappers: &[String],
    ) -> Result<(), Undetermined> {
        let Some((name, value)) = w.0.split_once('=') else {
            return Ok(());
        };
        let name = name.trim_end_matches('+');
        if name.contains('[') {
            return undetermined("an assignment to an array subscript (evaluated arithmetically)");
        }
        if GIT_CONFIG_PLACES.contains(&name) {
            self.git_config_moved = true;
        }
        if HIDDEN_VARS.contains(&name)
            || name.starts_with("BASH_FUNC_")
            || name.starts_with("GIT_CONFIG_KEY_")
            || name.starts_with("GIT_CONFIG_VALUE_")
        {
            return undetermined(format!("setting {name} makes programs run hidden code"));
        }
        if name == "PATH"
            && value
                .split(':')
                .any(|e| !e.is_empty() && !e.starts_with('/') && !e.starts_with('~'))
        {
            // `PATH=.:$PATH ls` runs whatever file named `ls` the folder holds.
            return undetermined(
                "a PATH with relative folders (a program name may run a local file)",
            );
        }
        if COMMAND_VARS.contains(&name) {
            let v = value.trim_start_matches(['|', '!']);
            if w.1 {
                return undetermined(format!("{name} is a command computed at run time"));
            }
            if !v.trim().is_empty() {
                self.parse_string(&(v.to_string(), false), substituted, depth, wrappers)?;
            }
        }
        Ok(())
    }

    /// Reads and parses a script the line runs (`bash f`, `source f`).
    fn run_script(
        &mut self,
        w: &W,
        substituted: bool,
        depth: usize,
        wrappers: &[String],
    ) -> Result<(), Undetermined> {
        let name = &w.0;
        if w.1 {
            return undetermined(format!("the script name '{name}' is computed at run time"));
        }
        if name == "-" || name.starts_with("/dev/") || name.starts_with("/proc/") {
            return undetermined(format!("the script {name} is not a file yuyao can read"));
        }
        let Some(cwd) = &self.cwd else {
            return undetermined(format!(
                "the script {name} cannot be read (no working directory)"
            ));
        };
        if self.cd_seen {
            return undetermined(format!(
                "the script {name} runs after a directory change on the same line"
            ));
        }
        let path = cwd.join(name);
        let base = basename(name);
        if self.line.matches(base.as_str()).count() > 1 {
            return undetermined(format!(
                "the script {name} is named elsewhere on the line, which may write it first"
            ));
        }
        let meta = std::fs::metadata(&path)
            .map_err(|_| Undetermined(format!("the script {name} does not exist")))?;
        if !meta.is_file() || meta.len() > MAX_SCRIPT {
            return undetermined(format!(
                "the script {name} is not a regular file of at most 64 KiB"
            ));
        }
        let text = std::fs::read_to_string(&path)
            .map_err(|_| Undetermined(format!("the script {name} cannot be read as text")))?;
        self.script_bytes += text.len();
        if self.script_bytes > MAX_SCRIPTS_TOTAL {
            return undetermined("the scripts this line runs are too large to adjudicate");
        }
        self.scripts += 1;
        self.parse_string(&(text, false), substituted, depth, wrappers)
    }

    /// Bash features that run code the lexer cannot see (hidden like `eval`).
    fn hidden_code(
        &mut self,
        program: &str,
        args: &[W],
        substituted: bool,
        depth: usize,
        wrappers: &[String],
    ) -> Result<(), Undetermined> {
        let hidden = |why: &str| undetermined(format!("`{program}` {why}"));
        let opt_has = |c: char| {
            args.iter()
                .any(|a| a.0.starts_with('-') && !a.0.starts_with("--") && a.0.contains(c))
        };
        match program {
            "eval" | "coproc" | "fc" => hidden("runs code built at run time"),
            "hash" if opt_has('p') => hidden("-p makes a name run another program"),
            "alias" if args.iter().any(|a| a.0.contains('=')) => {
                hidden("defines an alias (code that runs under another name)")
            }
            "unalias" | "alias" => Ok(()),
            "shopt"
                if args
                    .iter()
                    .any(|a| a.0 == "expand_aliases" || a.0 == "extdebug") =>
            {
                hidden("turns on hidden code (aliases or debug traps)")
            }
            "enable" if !args.is_empty() => hidden("loads or swaps builtins"),
            "bind" if opt_has('x') => hidden("-x binds a command"),
            "complete" | "compgen" if opt_has('C') || opt_has('F') => {
                hidden("-C/-F runs a command or function")
            }
            "let" => {
                for a in args {
                    arith_ok(&a.0)?;
                    if a.1 {
                        return hidden("evaluates computed arithmetic");
                    }
                }
                Ok(())
            }
            "declare" | "typeset" | "local" | "readonly" | "export" => {
                for a in args {
                    if a.0.starts_with(['-', '+']) {
                        if a.0.contains('i') || a.0.contains('n') {
                            return hidden("-i/-n evaluate names or arithmetic later");
                        }
                        continue;
                    }
                    let name = a.0.split('=').next().unwrap_or("");
                    if name.contains('[') || a.1 && !a.0.contains('=') {
                        return hidden("with a subscript or a computed name evaluates arithmetic");
                    }
                    if a.0.contains('=') {
                        self.check_assignment(a, substituted, depth, wrappers)?;
                    } else if HIDDEN_VARS.contains(&name) {
                        return hidden("exports a variable that runs hidden code");
                    }
                }
                Ok(())
            }
            "printf" if args.iter().any(|a| a.0.starts_with("-v")) => {
                hidden("-v assigns to a name that may be evaluated (subscripts)")
            }
            "read" | "mapfile" | "readarray" => {
                if program != "read" && opt_has('C') {
                    return hidden("-C runs a callback");
                }
                // Variable names (operands, and `read -a NAME`) with a subscript or computed
                // at run time are evaluated; option values such as `-p "$prompt"` are not.
                let (valued, named) = if program == "read" {
                    ("dinNptu", "a")
                } else {
                    ("dnOsucC", "")
                };
                let mut k = 0;
                while k < args.len() {
                    let a = &args[k];
                    let mut name = None;
                    if a.0.starts_with('-') && a.0.len() > 1 && !a.1 {
                        let last = a.0.chars().last().unwrap_or('-');
                        if a.0.len() == 2 && (valued.contains(last) || named.contains(last)) {
                            k += 1;
                            if named.contains(last) {
                                name = args.get(k);
                            }
                        }
                    } else {
                        name = Some(a);
                    }
                    if name.is_some_and(|n| n.0.contains('[') || n.1) {
                        return hidden("assigns to a subscript or computed name");
                    }
                    k += 1;
                }
                Ok(())
            }
            "[[" => {
                let ops = ["-eq", "-ne", "-lt", "-le", "-gt", "-ge"];
                for (k, a) in args.iter().enumerate() {
                    if !a.1 && ops.contains(&a.0.as_str()) {
                        for side in [k.checked_sub(1), Some(k + 1)].into_iter().flatten() {
                            match args.get(side) {
                                Some((t, false)) if t.trim().parse::<i64>().is_ok() => {}
                                _ => return hidden("evaluates its operands arithmetically"),
                            }
                        }
                    }
                    if a.0 == "-v" && args.get(k + 1).is_some_and(|n| n.0.contains('[') || n.1) {
                        return hidden("-v with a subscript evaluates arithmetic");
                    }
                }
                Ok(())
            }
            "test" | "[" => {
                for (k, a) in args.iter().enumerate() {
                    if a.0 == "-v" && args.get(k + 1).is_some_and(|n| n.0.contains('[') || n.1) {
                        return hidden("-v with a subscript evaluates arithmetic");
                    }
                }
                Ok(())
            }
            "trap" => {
                // `trap 'cmd' SIG` runs cmd later: it is adjudicated like the line.
                let args = match args.first() {
                    Some(a) if a.0 == "--" && !a.1 => &args[1..],
                    _ => args,
                };
                match args.first() {
                    Some(a) if a.0 == "-" || a.0.starts_with('-') && !a.1 => Ok(()),
                    Some(a) if args.len() >= 2 => {
                        if a.0.is_empty() && !a.1 {
                            return Ok(());
                        }
                        self.parse_string(a, substituted, depth, wrappers)
                    }
                    _ => Ok(()),
                }
            }
            _ => Ok(()),
        }
    }

    /// Programs that run a program named in an option or operand, and stay a segment
    /// themselves (`find -exec`, `rg --pre`, `tar --to-command`, `git -c alias.x=!…`).
    fn inner_programs(
        &mut self,
        program: &str,
        args: &[W],
        substituted: bool,
        depth: usize,
        wrappers: &[String],
    ) -> Result<(), Undetermined> {
        let mut wraps = wrappers.to_vec();
        wraps.push(program.to_string());
        match program {
            "find" => {
                let mut k = 0;
                while k < args.len() {
                    if matches!(args[k].0.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir") {
                        let end = args[k + 1..]
                            .iter()
                            .position(|a| a.0 == ";" || a.0 == "+")
                            .map_or(args.len(), |p| k + 1 + p);
                        let inner: Vec<W> = args[k + 1..end].to_vec();
                        if !inner.is_empty() {
                            self.simple(inner, Vec::new(), substituted, depth + 1, &wraps)?;
                        }
                        k = end;
                    }
                    k += 1;
                }
            }
            "fd" | "fdfind" => {
                if let Some(k) = args
                    .iter()
                    .position(|a| matches!(a.0.as_str(), "-x" | "-X" | "--exec" | "--exec-batch"))
                {
                    let end = args[k + 1..]
                        .iter()
                        .position(|a| a.0 == ";")
                        .map_or(args.len(), |p| k + 1 + p);
                    let inner: Vec<W> = args[k + 1..end].to_vec();
                    self.simple(inner, Vec::new(), substituted, depth + 1, &wraps)?;
                }
            }
            "rg" => {
                for (k, a) in args.iter().enumerate() {
                    for opt in ["--pre", "--hostname-bin"] {
                        let val = if a.0 == opt {
                            args.get(k + 1).cloned()
                        } else {
                            a.0.strip_prefix(opt)
                                .and_then(|v| v.strip_prefix('='))
                                .map(|v| (v.to_string(), a.1))
                        };
                        if let Some(v) = val {
                            // A program file, run with each searched file as argument.
                            if v.1 || v.0.is_empty() || v.0.contains(['=', ' ', '\t', '\n']) {
                                return undetermined(format!(
                                    "`rg {opt}` names a program yuyao cannot tell apart"
                                ));
                            }
                            self.simple(vec![v], Vec::new(), substituted, depth + 1, &wraps)?;
                        }
                    }
                }
            }
            "tar" => self.tar_programs(args, substituted, depth, &wraps)?,
            "git" => self.git_programs(args, substituted, depth, &wraps)?,
            "sudoedit" => {}
            _ => {}
        }
        Ok(())
    }

    fn tar_programs(
        &mut self,
        args: &[W],
        substituted: bool,
        depth: usize,
        wraps: &[String],
    ) -> Result<(), Undetermined> {
        // Long options whose value is a command tar runs (through a shell).
        const CMD_OPTS: &[&str] = &[
            "--to-command",
            "--use-compress-program",
            "--info-script",
            "--new-volume-script",
            "--rsh-command",
        ];
        for (k, a) in args.iter().enumerate() {
            let t = a.0.as_str();
            if k == 0 && !t.starts_with('-') && (t.contains('I') || t.contains('F')) {
                return undetermined("tar's old-style options with I/F run a program");
            }
            if let Some(v) = t.strip_prefix("--checkpoint-action=") {
                if let Some(c) = v.strip_prefix("exec=") {
                    self.parse_string(&(c.to_string(), a.1), substituted, depth, wraps)?;
                } else if a.1 {
                    return undetermined("a computed tar checkpoint action");
                }
                continue;
            }
            if t.starts_with("--") {
                let (name, val) = match t.split_once('=') {
                    Some((n, v)) => (n, Some((v.to_string(), a.1))),
                    None => (t, None),
                };
                // Unique prefixes are accepted by tar's option parser.
                if name.len() > 4 && CMD_OPTS.iter().any(|o| o.starts_with(name)) {
                    let v = val.or_else(|| args.get(k + 1).cloned());
                    match v {
                        Some(v) => self.parse_string(&v, substituted, depth, wraps)?,
                        None => return undetermined("a tar program option without a value"),
                    }
                }
                continue;
            }
            if t.starts_with('-') && (t.contains('I') || t.contains('F')) {
                let v = if t.len() == 2 {
                    args.get(k + 1).cloned()
                } else if t.starts_with("-I") || t.starts_with("-F") {
                    Some((t[2..].to_string(), a.1))
                } else {
                    return undetermined("tar's -I/-F bundled with other options");
                };
                match v {
                    Some(v) => self.parse_string(&v, substituted, depth, wraps)?,
                    None => return undetermined("tar -I/-F without a program"),
                }
            }
        }
        Ok(())
    }

    fn git_programs(
        &mut self,
        args: &[W],
        substituted: bool,
        depth: usize,
        wraps: &[String],
    ) -> Result<(), Undetermined> {
        let mut k = 0;
        while k < args.len() {
            let a = &args[k];
            let kv = if a.0 == "-c" {
                k += 1;
                args.get(k).cloned()
            } else if let Some(v) = a.0.strip_prefix("-c") {
                Some((v.to_string(), a.1))
            } else if a.0.starts_with("--config-env") {
                return undetermined("git --config-env takes configuration from a variable");
            } else if !a.0.starts_with('-') {
                break; // the subcommand
            } else {
                None
            };
            k += 1;
            let Some((kv, dynamic)) = kv else { continue };
            let (key, value) = kv.split_once('=').unwrap_or((kv.as_str(), "true"));
            let key = key.to_ascii_lowercase();
            if dynamic {
                return undetermined("a computed git -c setting");
            }
            if key.starts_with("alias.") {
                match value.strip_prefix('!') {
                    Some(c) => {
                        self.parse_string(&(c.to_string(), false), substituted, depth, wraps)?
                    }
                    None => {
                        return undetermined(format!(
                            "git -c {key} renames a subcommand, which rules cannot follow"
                        ));
                    }
                }
                continue;
            }
            if git_key_runs_code(&key) {
                if matches!(key.as_str(), "core.hookspath")
                    || key.starts_with("include")
                    || key == "core.fsmonitor" && !matches!(value, "true" | "false")
                {
                    if key == "core.fsmonitor" {
                        let c = value.to_string();
                        self.parse_string(&(c, false), substituted, depth, wraps)?;
                        continue;
                    }
                    return undetermined(format!("git -c {key} runs code from a file"));
                }
                if key == "core.fsmonitor" {
                    continue;
                }
                let c = value.trim_start_matches('!').to_string();
                if !c.trim().is_empty() {
                    self.parse_string(&(c, false), substituted, depth, wraps)?;
                }
            }
        }
        Ok(())
    }
}

/// Variables that change which configuration files git reads (the global one from `HOME` or
/// `XDG_CONFIG_HOME`, the repository's from `GIT_DIR`).
const GIT_CONFIG_PLACES: &[&str] = &["HOME", "XDG_CONFIG_HOME", "GIT_DIR", "GIT_COMMON_DIR"];

/// git's own subcommands (`git help -a`): any other name is an alias or a `git-NAME` program.
const GIT_BUILTINS: &[&str] = &[
    "add",
    "am",
    "annotate",
    "apply",
    "archive",
    "bisect",
    "blame",
    "branch",
    "bugreport",
    "bundle",
    "cat-file",
    "check-attr",
    "check-ignore",
    "check-mailmap",
    "check-ref-format",
    "checkout",
    "checkout-index",
    "cherry",
    "cherry-pick",
    "clean",
    "clone",
    "column",
    "commit",
    "commit-graph",
    "commit-tree",
    "config",
    "count-objects",
    "credential",
    "describe",
    "diagnose",
    "diff",
    "diff-files",
    "diff-index",
    "diff-tree",
    "difftool",
    "fetch",
    "fetch-pack",
    "filter-branch",
    "fmt-merge-msg",
    "for-each-ref",
    "for-each-repo",
    "format-patch",
    "fsck",
    "gc",
    "get-tar-commit-id",
    "grep",
    "hash-object",
    "help",
    "hook",
    "index-pack",
    "init",
    "interpret-trailers",
    "log",
    "ls-files",
    "ls-remote",
    "ls-tree",
    "mailinfo",
    "mailsplit",
    "maintenance",
    "merge",
    "merge-base",
    "merge-file",
    "merge-index",
    "merge-tree",
    "mergetool",
    "mktag",
    "mktree",
    "multi-pack-index",
    "mv",
    "name-rev",
    "notes",
    "pack-objects",
    "pack-refs",
    "patch-id",
    "prune",
    "prune-packed",
    "pull",
    "push",
    "range-diff",
    "read-tree",
    "rebase",
    "reflog",
    "refs",
    "remote",
    "repack",
    "replace",
    "replay",
    "request-pull",
    "rerere",
    "reset",
    "restore",
    "rev-list",
    "rev-parse",
    "revert",
    "rm",
    "send-pack",
    "shortlog",
    "show",
    "show-branch",
    "show-index",
    "show-ref",
    "sparse-checkout",
    "stage",
    "stash",
    "status",
    "stripspace",
    "submodule",
    "switch",
    "symbolic-ref",
    "tag",
    "unpack-file",
    "unpack-objects",
    "update-index",
    "update-ref",
    "update-server-info",
    "var",
    "verify-commit",
    "verify-pack",
    "verify-tag",
    "version",
    "whatchanged",
    "worktree",
    "write-tree",
];

/// Why a git segment may run an alias the line cannot show: its subcommand is not git's own
/// nor defined on the line (`-c alias.x=…`), and the configuration it comes from may be a
/// file the agent wrote — the line moved `HOME`/`XDG_CONFIG_HOME`/`GIT_DIR` (`moved`, or on
/// the segment), changed folder (`moved`), or points git elsewhere (`-C`, `--git-dir`). An
/// alias starting with `!` runs a shell command.
fn git_alias_from_elsewhere(s: &Segment, moved: bool) -> Option<String> {
    if s.program != "git" {
        return None;
    }
    let mut moved = moved
        || s.assignments.iter().any(|a| {
            a.split_once('=')
                .is_some_and(|(n, _)| GIT_CONFIG_PLACES.contains(&n))
        });
    let mut defined = Vec::new();
    let mut k = 0;
    while k < s.args.len() {
        let a = s.args[k].as_str();
        if s.arg_computed(k) {
            return Some("git with a computed subcommand or option".into());
        }
        match a {
            "-c" => {
                k += 1;
                if let Some(name) = s.args.get(k).and_then(|v| v.strip_prefix("alias.")) {
                    defined.push(name.split('=').next().unwrap_or("").to_ascii_lowercase());
                }
            }
            "-C" | "--git-dir" | "--work-tree" | "--namespace" | "--exec-path" => {
                moved |= a != "--namespace";
                k += 1;
            }
            _ if a.starts_with("--git-dir=") || a.starts_with("-C") => moved = true,
            _ if a.starts_with('-') => {}
            sub => {
                let known = GIT_BUILTINS.contains(&sub) || defined.iter().any(|d| d == sub);
                return (!known && moved).then(|| {
                    format!(
                        "`git {sub}` is not a git command: an alias from a configuration this line points git at (`!` aliases run shell commands)"
                    )
                });
            }
        }
        k += 1;
    }
    None
}

/// Git configuration keys whose value is a command git runs.
fn git_key_runs_code(key: &str) -> bool {
    const EXACT: &[&str] = &[
        "core.pager",
        "core.editor",
        "core.sshcommand",
        "core.fsmonitor",
        "core.askpass",
        "core.gitproxy",
        "core.hookspath",
        "diff.external",
        "sequence.editor",
        "credential.helper",
        "gpg.program",
        "interactive.difffilter",
        "web.browser",
        "include.path",
    ];
    const SUFFIX: &[&str] = &[
        ".textconv",
        ".command",
        ".cmd",
        ".driver",
        ".clean",
        ".smudge",
        ".process",
        ".program",
        ".helper",
        ".uploadpack",
        ".receivepack",
        ".proxy",
        ".path",
    ];
    EXACT.contains(&key)
        || key.starts_with("pager.")
        || key.starts_with("includeif.")
        || SUFFIX.iter().any(|s| key.ends_with(s))
}

/// Arithmetic with only literal numbers and operators is determined; any name, expansion,
/// subscript or quote inside is evaluated by bash (and can run `a[$(cmd)]`): undetermined.
fn arith_ok(inner: &str) -> Result<(), Undetermined> {
    if inner
        .chars()
        .all(|c| c.is_ascii_digit() || c.is_whitespace() || "+-*/%<>=!&|^~?:(),".contains(c))
    {
        Ok(())
    } else {
        undetermined("arithmetic on names or expansions (bash evaluates them as code)")
    }
}

/// Checks the inside of `${…}`: indirect expansion, `@` transformations, arithmetic
/// subscripts and offsets, and nested substitutions hide code.
fn check_param(inner: &str) -> Result<(), Undetermined> {
    no_hidden_substitution(inner)?;
    if inner.starts_with('!') {
        return undetermined("indirect expansion ${!…}");
    }
    let body = if inner.len() > 1 {
        inner.strip_prefix('#').unwrap_or(inner)
    } else {
        inner
    };
    let b: Vec<char> = body.chars().collect();
    let mut k = 0;
    if b.first()
        .is_some_and(|c| c.is_ascii_alphabetic() || *c == '_')
    {
        while b
            .get(k)
            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == '_')
        {
            k += 1;
        }
    } else if b.first().is_some_and(char::is_ascii_digit) {
        while b.get(k).is_some_and(char::is_ascii_digit) {
            k += 1;
        }
    } else if b.first().is_some_and(|c| "@*#?$!-".contains(*c)) {
        k = 1;
    }
    if b.get(k) == Some(&'[') {
        let close = b[k..].iter().position(|c| *c == ']').map(|p| k + p);
        let Some(close) = close else {
            return undetermined("an unbalanced subscript in ${…}");
        };
        let sub: String = b[k + 1..close].iter().collect();
        if !(sub == "@" || sub == "*" || (!sub.is_empty() && arith_ok(&sub).is_ok())) {
            return undetermined("an array subscript evaluated as arithmetic");
        }
        k = close + 1;
    }
    let rest: String = b[k.min(b.len())..].iter().collect();
    if rest.starts_with('@') {
        return undetermined("a ${…@…} transformation (may run prompt expansion)");
    }
    if let Some(r) = rest.strip_prefix(':')
        && !r.starts_with(['-', '=', '?', '+'])
    {
        // `${x:off:len}`: offset and length are arithmetic.
        arith_ok(r)?;
    }
    check_expansions_in(&rest)
}

/// Checks every `${…}`, `$((…))` and `$[…]` inside `text` (nested ones, here-documents).
fn check_expansions_in(text: &str) -> Result<(), Undetermined> {
    if text.contains("$[") {
        return undetermined("`$[…]` arithmetic");
    }
    let mut rest = text;
    while let Some(i) = rest.find("$((") {
        let after = &rest[i + 3..];
        let end = after.find("))").unwrap_or(after.len());
        arith_ok(&after[..end])?;
        rest = &after[end..];
    }
    let mut rest = text;
    while let Some(i) = rest.find("${") {
        let after = &rest[i + 2..];
        let mut depth = 1;
        let mut end = after.len();
        for (j, c) in after.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = j;
                        break;
                    }
                }
                _ => {}
            }
        }
        check_param(&after[..end])?;
        rest = &after[end..];
    }
    Ok(())
}

/// `${x:-$(cmd)}` and `$(( $(cmd) ))` run `cmd`; the lexer does not descend into them.
fn no_hidden_substitution(inner: &str) -> Result<(), Undetermined> {
    if inner.contains("$(") || inner.contains('`') || inner.contains("<(") || inner.contains(">(") {
        return undetermined("a command substitution inside ${…} or $((…))");
    }
    Ok(())
}

fn is_assignment(w: &str) -> bool {
    match w.split_once('=') {
        Some((name, _)) => {
            let name = name.strip_suffix('+').unwrap_or(name);
            !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit())
        }
        None => false,
    }
}

fn basename(p: &str) -> String {
    p.rsplit('/').next().unwrap_or(p).to_string()
}

/// How one wrapper's options are parsed (getopt-style, as the program itself does).
struct Spec {
    name: &'static str,
    /// Short options that take an argument (attached `-sKILL` or the next word).
    short_arg: &'static str,
    /// Short options whose argument is optional and only attached (`xargs -i{}`).
    short_opt: &'static str,
    /// Short options without an argument.
    short_flag: &'static str,
    /// Long options that take an argument (`--signal=KILL` or `--signal KILL`).
    long_arg: &'static [&'static str],
    /// Long options whose argument is optional and only after `=` (`--replace[=R]`).
    long_opt: &'static [&'static str],
    long_flag: &'static [&'static str],
    /// Options may follow operands (GNU permutation: `su user -c cmd`).
    permute: bool,
    /// Every `--name` / `--name=value` word is one option (firejail, valgrind).
    any_long: bool,
}

const fn spec(name: &'static str) -> Spec {
    Spec {
        name,
        short_arg: "",
        short_opt: "",
        short_flag: "",
        long_arg: &[],
        long_opt: &[],
        long_flag: &["help", "version"],
        permute: false,
        any_long: false,
    }
}

/// The option table of every wrapper (a program that runs another program).
const WRAPPERS: &[Spec] = &[
    Spec {
        short_arg: "uCS",
        short_flag: "i0v",
        long_arg: &["unset", "chdir", "split-string"],
        long_opt: &["block-signal", "default-signal", "ignore-signal"],
        long_flag: &[
            "ignore-environment",
            "null",
            "debug",
            "list-signal-handling",
            "help",
            "version",
        ],
        ..spec("env")
    },
    Spec {
        short_arg: "sk",
        short_flag: "vfp",
        long_arg: &["signal", "kill-after"],
        long_flag: &[
            "verbose",
            "foreground",
            "preserve-status",
            "help",
            "version",
        ],
        ..spec("timeout")
    },
    Spec {
        short_arg: "n",
        long_arg: &["adjustment"],
        ..spec("nice")
    },
    Spec {
        short_arg: "ioe",
        long_arg: &["input", "output", "error"],
        ..spec("stdbuf")
    },
    Spec {
        short_arg: "cnpPuU",
        short_flag: "t",
        long_arg: &["class", "classdata", "pid", "pgid", "uid"],
        long_flag: &["ignore", "help", "version"],
        ..spec("ionice")
    },
    Spec {
        short_arg: "TPD",
        short_flag: "abdefimoprRv",
        long_arg: &["sched-runtime", "sched-period", "sched-deadline"],
        long_flag: &[
            "all-tasks",
            "batch",
            "deadline",
            "ext",
            "fifo",
            "idle",
            "max",
            "other",
            "pid",
            "rr",
            "reset-on-fork",
            "verbose",
            "help",
            "version",
        ],
        ..spec("chrt")
    },
    Spec {
        short_flag: "acpe",
        long_flag: &["all-tasks", "cpu-list", "pid", "help", "version"],
        ..spec("taskset")
    },
    Spec {
        short_arg: "wEc",
        short_flag: "sxenouFvh",
        long_arg: &["timeout", "conflict-exit-code", "command"],
        long_flag: &[
            "shared",
            "exclusive",
            "nonblock",
            "nb",
            "close",
            "unlock",
            "no-fork",
            "verbose",
            "help",
            "version",
        ],
        ..spec("flock")
    },
    Spec {
        short_flag: "cfw",
        long_flag: &["ctty", "fork", "wait", "help", "version"],
        ..spec("setsid")
    },
    spec("nohup"),
    Spec {
        short_arg: "of",
        short_flag: "pavq",
        long_arg: &["output", "format"],
        long_flag: &[
            "append",
            "verbose",
            "quiet",
            "portability",
            "help",
            "version",
        ],
        ..spec("time")
    },
    Spec {
        short_flag: "pvV",
        long_flag: &[],
        ..spec("command")
    },
    Spec {
        long_flag: &[],
        ..spec("builtin")
    },
    Spec {
        short_arg: "a",
        short_flag: "cl",
        long_flag: &[],
        ..spec("exec")
    },
    Spec {
        short_arg: "aCcDgpRrtTUu",
        short_opt: "h",
        short_flag: "ABbEeHiKklNnPSsVv",
        long_arg: &[
            "user",
            "group",
            "chdir",
            "close-from",
            "host",
            "prompt",
            "role",
            "type",
            "other-user",
            "command-timeout",
            "chroot",
            "auth-type",
        ],
        long_opt: &["preserve-env"],
        long_flag: &[
            "askpass",
            "background",
            "bell",
            "edit",
            "help",
            "set-home",
            "login",
            "remove-timestamp",
            "reset-timestamp",
            "non-interactive",
            "preserve-groups",
            "stdin",
            "shell",
            "version",
            "validate",
            "list",
        ],
        ..spec("sudo")
    },
    Spec {
        short_arg: "uCa",
        short_flag: "nsL",
        long_flag: &[],
        ..spec("doas")
    },
    Spec {
        short_arg: "cgGsw",
        short_flag: "flmpP",
        long_arg: &[
            "command",
            "session-command",
            "group",
            "supp-group",
            "shell",
            "whitelist-environment",
        ],
        long_flag: &[
            "login",
            "preserve-environment",
            "pty",
            "fast",
            "help",
            "version",
        ],
        permute: true,
        ..spec("su")
    },
    Spec {
        short_arg: "cgGswu",
        short_flag: "flmpP",
        long_arg: &[
            "command",
            "session-command",
            "group",
            "supp-group",
            "shell",
            "whitelist-environment",
            "user",
        ],
        long_flag: &[
            "login",
            "preserve-environment",
            "pty",
            "fast",
            "help",
            "version",
        ],
        permute: true,
        ..spec("runuser")
    },
    Spec {
        short_arg: "cEIOBTm",
        short_opt: "t",
        short_flag: "aefqhV",
        long_arg: &[
            "command",
            "echo",
            "log-in",
            "log-out",
            "log-io",
            "log-timing",
            "logging-format",
        ],
        long_opt: &["timing"],
        long_flag: &[
            "append", "return", "flush", "force", "quiet", "help", "version",
        ],
        permute: true,
        ..spec("script")
    },
    Spec {
        short_arg: "nq",
        short_opt: "d",
        short_flag: "bcCegprtwx",
        long_arg: &["interval", "equexit"],
        long_opt: &["differences"],
        long_flag: &[
            "beep", "color", "no-color", "errexit", "chgexit", "exec", "precise", "no-title",
            "no-wrap", "no-rerun", "help", "version",
        ],
        ..spec("watch")
    },
    Spec {
        short_arg: "BbcDEeFIiJLlmOoPpQRSWw",
        short_flag: "46AaCfGgKkMNnqsTtVvXxYy",
        long_flag: &[],
        ..spec("ssh")
    },
    Spec {
        short_arg: "upEMH",
        short_flag: "drtPGqS",
        long_arg: &[
            "unit",
            "property",
            "setenv",
            "machine",
            "host",
            "description",
            "slice",
            "uid",
            "gid",
            "nice",
            "working-directory",
            "service-type",
            "on-active",
            "on-boot",
            "on-startup",
            "on-unit-active",
            "on-unit-inactive",
            "on-calendar",
            "timer-property",
            "path-property",
            "socket-property",
            "json",
        ],
        long_flag: &[
            "user",
            "system",
            "scope",
            "remain-after-exit",
            "pty",
            "pipe",
            "collect",
            "quiet",
            "wait",
            "no-block",
            "no-ask-password",
            "same-dir",
            "send-sighup",
            "shell",
            "on-clock-change",
            "on-timezone-change",
            "slice-inherit",
            "help",
            "version",
        ],
        ..spec("systemd-run")
    },
    Spec {
        short_arg: "tSGN",
        short_opt: "muinpUCTrwW",
        short_flag: "aFZe",
        long_arg: &["target", "setuid", "setgid"],
        long_opt: &[
            "mount", "uts", "ipc", "net", "pid", "user", "cgroup", "time", "root", "wd", "wdns",
        ],
        long_flag: &[
            "all",
            "no-fork",
            "follow-context",
            "preserve-credentials",
            "keep-caps",
            "env",
            "user-parent",
            "help",
            "version",
        ],
        ..spec("nsenter")
    },
    Spec {
        short_arg: "RwSGl",
        short_flag: "muinpUCTfrc",
        long_arg: &[
            "root",
            "wd",
            "setuid",
            "setgid",
            "propagation",
            "setgroups",
            "map-user",
            "map-group",
            "map-users",
            "map-groups",
            "monotonic",
            "boottime",
        ],
        long_opt: &[
            "mount",
            "uts",
            "ipc",
            "net",
            "pid",
            "user",
            "cgroup",
            "time",
            "mount-proc",
            "kill-child",
            "mount-binfmt",
        ],
        long_flag: &[
            "fork",
            "map-root-user",
            "map-current-user",
            "map-auto",
            "keep-caps",
            "help",
            "version",
        ],
        ..spec("unshare")
    },
    Spec {
        long_arg: &["userspec", "groups"],
        long_flag: &["skip-chdir", "help", "version"],
        ..spec("chroot")
    },
    Spec {
        short_arg: "lsib",
        short_flag: "uhv",
        long_arg: &["lib", "faked"],
        long_flag: &["unknown-is-real", "help", "version"],
        ..spec("fakeroot")
    },
    Spec {
        short_arg: "abeEIoOpPsSuUX",
        short_flag: "AcCdDfFhikqrtTvVwxyzZnY",
        long_arg: &[
            "output",
            "trace",
            "signal",
            "status",
            "abbrev",
            "verbose",
            "raw",
            "read",
            "write",
            "fault",
            "inject",
            "attach",
            "user",
            "env",
            "trace-path",
            "string-limit",
            "columns",
            "summary-sort-by",
            "decode-fds",
            "quiet",
            "seccomp-bpf",
        ],
        long_flag: &[
            "follow-forks",
            "output-separately",
            "summary-only",
            "summary",
            "help",
            "version",
        ],
        ..spec("strace")
    },
    Spec {
        short_arg: "aAeFlnopsuwxD",
        short_flag: "bcCfhiLrStTV",
        long_arg: &["output", "library", "indent", "align"],
        long_flag: &["demangle", "help", "version"],
        ..spec("ltrace")
    },
    Spec {
        short_flag: "qvhd",
        any_long: true,
        ..spec("valgrind")
    },
    Spec {
        any_long: true,
        ..spec("firejail")
    },
    spec("catchsegv"),
    Spec {
        long_arg: &["config-file", "dbus-daemon"],
        ..spec("dbus-run-session")
    },
    Spec {
        short_arg: "aEdILnPs",
        short_opt: "eil",
        short_flag: "0rtpxo",
        long_arg: &[
            "arg-file",
            "delimiter",
            "max-args",
            "max-procs",
            "max-chars",
            "process-slot-var",
        ],
        long_opt: &["eof", "replace", "max-lines"],
        long_flag: &[
            "null",
            "no-run-if-empty",
            "verbose",
            "interactive",
            "exit",
            "open-tty",
            "show-limits",
            "help",
            "version",
        ],
        ..spec("xargs")
    },
    Spec {
        long_flag: &["list", "list-full", "install", "help"],
        ..spec("busybox")
    },
    Spec {
        short_arg: "jnIEsS",
        short_flag: "kqvXm0u",
        long_arg: &[
            "jobs",
            "max-args",
            "halt",
            "delimiter",
            "max-replace-args",
            "joblog",
            "timeout",
        ],
        long_flag: &[
            "keep-order",
            "will-cite",
            "null",
            "quote",
            "tag",
            "bar",
            "eta",
            "dry-run",
            "line-buffer",
            "ungroup",
            "verbose",
            "help",
            "version",
        ],
        ..spec("parallel")
    },
    Spec {
        long_flag: &["help", "version"],
        ..spec("sg")
    },
    spec("newgrp"),
    Spec {
        short_flag: "qn",
        long_flag: &["args", "quiet", "silent", "nx", "nh", "help", "version"],
        ..spec("gdb")
    },
    Spec {
        short_arg: "u",
        short_flag: "f",
        ..spec("sudoedit")
    },
    Spec {
        short_flag: "dhV",
        long_arg: &[
            "ambient-caps",
            "inh-caps",
            "bounding-set",
            "ruid",
            "euid",
            "rgid",
            "egid",
            "reuid",
            "regid",
            "groups",
            "securebits",
            "pdeathsig",
            "selinux-label",
            "apparmor-profile",
            "landlock-access",
            "landlock-rule",
            "seccomp-filter",
        ],
        long_flag: &[
            "dump",
            "nnp",
            "no-new-privs",
            "clear-groups",
            "keep-groups",
            "init-groups",
            "reset-env",
            "help",
            "version",
        ],
        ..spec("setpriv")
    },
    Spec {
        // Each resource option takes an optional attached limit (`-n1024`, `--nofile=1024`).
        short_arg: "po",
        short_opt: "cdefilmnqrstuvxy",
        short_flag: "hV",
        long_arg: &["pid", "output"],
        long_opt: &[
            "core",
            "data",
            "nice",
            "fsize",
            "sigpending",
            "memlock",
            "rss",
            "nofile",
            "msgqueue",
            "rtprio",
            "stack",
            "cpu",
            "nproc",
            "as",
            "locks",
            "rttime",
        ],
        long_flag: &["noheadings", "raw", "verbose", "help", "version"],
        ..spec("prlimit")
    },
];

/// Programs that run another program given on their command line (the lexer strips them
/// and adjudicates the inner program): the wrapper table, the shells, and programs that
/// keep their own segment while running others (`find -exec`, `rg --pre`, `tar`, `git -c`).
pub fn is_wrapper(name: &str) -> bool {
    WRAPPERS.iter().any(|s| s.name == name)
        || SHELLS.contains(&name)
        || matches!(
            name,
            "find" | "fd" | "fdfind" | "rg" | "tar" | "git" | "trap" | "source" | "."
        )
}

/// A wrapper's command line after its options: the options seen and the remaining words.
struct Parsed {
    opts: Vec<(String, Option<W>)>,
    operands: Vec<W>,
}

impl Parsed {
    fn has(&self, names: &[&str]) -> bool {
        self.opts.iter().any(|(n, _)| names.contains(&n.as_str()))
    }
    fn value(&self, names: &[&str]) -> Option<&W> {
        self.opts
            .iter()
            .rev()
            .find(|(n, _)| names.contains(&n.as_str()))
            .and_then(|(_, v)| v.as_ref())
    }
}

/// Parses `args` with `s`'s table. Stops at the first operand after `keep_opts` operands
/// (options may follow those), or at `--`.
fn getopt(s: &Spec, args: &[W], keep_opts: usize) -> Result<Parsed, Undetermined> {
    let unknown =
        |o: &str| undetermined(format!("`{}` option '{o}' is not in yuyao's table", s.name));
    let mut p = Parsed {
        opts: Vec::new(),
        operands: Vec::new(),
    };
    let mut k = 0;
    while k < args.len() {
        let (a, dynamic) = (&args[k].0, args[k].1);
        let opts_allowed = s.permute || p.operands.len() <= keep_opts;
        if !opts_allowed {
            p.operands.extend_from_slice(&args[k..]);
            break;
        }
        if a == "--" && !dynamic {
            p.operands.extend_from_slice(&args[k + 1..]);
            break;
        }
        if !a.starts_with('-') || a == "-" {
            p.operands.push(args[k].clone());
            if !s.permute && p.operands.len() > keep_opts {
                p.operands.extend_from_slice(&args[k + 1..]);
                break;
            }
            k += 1;
            continue;
        }
        if dynamic {
            return undetermined(format!("a computed option of `{}`", s.name));
        }
        if s.any_long && a.starts_with("--") {
            p.opts.push((a.clone(), None));
            k += 1;
            continue;
        }
        if let Some(long) = a.strip_prefix("--") {
            let (name, val) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (long, None),
            };
            let all = s.long_arg.iter().chain(s.long_opt).chain(s.long_flag);
            let exact = all.clone().find(|o| **o == name);
            let hits: Vec<&&str> = all.filter(|o| o.starts_with(name)).collect();
            let full = match (exact, hits.as_slice()) {
                (Some(e), _) => *e,
                (None, [one]) => **one,
                _ => return unknown(a),
            };
            if s.long_arg.contains(&full) {
                let v = match val {
                    Some(v) => (v, false),
                    None => {
                        k += 1;
                        match args.get(k) {
                            Some(v) => v.clone(),
                            None => return undetermined(format!("`{}` {a} needs a value", s.name)),
                        }
                    }
                };
                p.opts.push((format!("--{full}"), Some(v)));
            } else if s.long_opt.contains(&full) {
                p.opts.push((format!("--{full}"), val.map(|v| (v, false))));
            } else {
                if val.is_some() {
                    return unknown(a);
                }
                p.opts.push((format!("--{full}"), None));
            }
            k += 1;
            continue;
        }
        // A cluster of short options.
        let chars: Vec<char> = a[1..].chars().collect();
        if s.name == "nice" && chars.iter().all(char::is_ascii_digit) {
            p.opts
                .push(("-n".into(), Some((a[1..].to_string(), false))));
            k += 1;
            continue;
        }
        let mut j = 0;
        while j < chars.len() {
            let c = chars[j];
            let rest: String = chars[j + 1..].iter().collect();
            if s.short_arg.contains(c) {
                let v = if rest.is_empty() {
                    k += 1;
                    match args.get(k) {
                        Some(v) => v.clone(),
                        None => return undetermined(format!("`{}` -{c} needs a value", s.name)),
                    }
                } else {
                    (rest, false)
                };
                p.opts.push((format!("-{c}"), Some(v)));
                break;
            } else if s.short_opt.contains(c) {
                p.opts
                    .push((format!("-{c}"), (!rest.is_empty()).then_some((rest, false))));
                break;
            } else if s.short_flag.contains(c) {
                p.opts.push((format!("-{c}"), None));
                j += 1;
            } else {
                return unknown(&format!("-{c}"));
            }
        }
        k += 1;
    }
    Ok(p)
}

impl Cx<'_> {
    /// Strips wrappers so the effective program is the one really executed. Returns `None`
    /// when the command is a string some wrapper hands to a shell (already parsed).
    fn unwrap(
        &mut self,
        mut argv: Vec<W>,
        assignments: &mut Vec<String>,
        wraps: &mut Vec<String>,
        substituted: bool,
        depth: usize,
    ) -> Result<Option<Vec<W>>, Undetermined> {
        loop {
            let Some(first) = argv.first() else {
                return Ok(Some(argv));
            };
            if first.1 {
                return Ok(Some(argv));
            }
            let name = basename(&first.0);
            if SHELLS.contains(&name.as_str()) {
                return self.shell(argv, wraps, substituted, depth);
            }
            let Some(s) = WRAPPERS.iter().find(|s| s.name == name) else {
                return Ok(Some(argv));
            };
            let args = &argv[1..];
            // ssh takes options after its host operand too.
            let pre = usize::from(name == "ssh");
            let p = getopt(s, args, pre)?;
            let shell_without_command =
                || undetermined(format!("`{name}` without a command starts a shell"));
            let info_only = p.has(&["--help", "--version"]);
            let mut rest: Vec<W> = p.operands.clone();
            match name.as_str() {
                "env" => {
                    if let Some(split) = p.value(&["-S", "--split-string"]) {
                        let mut words = split_string(split)?;
                        words.extend(rest);
                        rest = words;
                    }
                    while let Some(a) = rest.first() {
                        if a.0 == "-" && !a.1 {
                            rest.remove(0);
                        } else if a.0.contains('=') && !a.0.starts_with('=') {
                            let a = rest.remove(0);
                            self.check_assignment(&a, substituted, depth, wraps)?;
                            assignments.push(a.0);
                        } else {
                            break;
                        }
                    }
                    if rest.is_empty() {
                        return Ok(Some(argv)); // `env` prints the environment
                    }
                }
                "command" if p.has(&["-v", "-V"]) => return Ok(Some(argv)),
                "timeout" | "chroot" => {
                    if rest.is_empty() {
                        return Ok(Some(argv));
                    }
                    rest.remove(0);
                    if rest.is_empty() && name == "chroot" {
                        return shell_without_command();
                    }
                }
                "taskset" => {
                    if p.has(&["-p", "--pid"]) {
                        return Ok(Some(argv));
                    }
                    if !rest.is_empty() {
                        rest.remove(0);
                    }
                }
                "chrt" => {
                    if p.has(&["-p", "--pid", "-m", "--max"]) {
                        return Ok(Some(argv));
                    }
                    if !rest.is_empty() {
                        rest.remove(0);
                    }
                }
                "ionice" if p.has(&["-p", "-P", "-u", "--pid", "--pgid", "--uid"]) => {
                    return Ok(Some(argv));
                }
                // `setpriv --dump` and `prlimit --pid PID` run nothing.
                "setpriv" if p.has(&["-d", "--dump"]) => return Ok(Some(argv)),
                "prlimit" if p.has(&["-p", "--pid"]) => return Ok(Some(argv)),
                "flock" => {
                    if let Some(c) = p.value(&["-c", "--command"]) {
                        wraps.push(name);
                        self.parse_string(&c.clone(), substituted, depth, wraps)?;
                        return Ok(None);
                    }
                    if rest.len() >= 2 && matches!(rest[1].0.as_str(), "-c" | "--command") {
                        let Some(c) = rest.get(2).cloned() else {
                            return undetermined("`flock FILE -c` without a command");
                        };
                        wraps.push(name);
                        self.parse_string(&c, substituted, depth, wraps)?;
                        return Ok(None);
                    }
                    if rest.len() <= 1 {
                        return Ok(Some(argv)); // `flock FD`
                    }
                    rest.remove(0);
                }
                "sudo" | "doas" => {
                    // `sudo VAR=value cmd` sets the variable for cmd, like env.
                    while rest.first().is_some_and(|a| !a.1 && is_assignment(&a.0)) {
                        let a = rest.remove(0);
                        self.check_assignment(&a, substituted, depth, wraps)?;
                        assignments.push(a.0);
                    }
                    if p.has(&["-e", "--edit"]) {
                        let mut v = vec![("sudoedit".to_string(), false)];
                        v.extend(rest);
                        return Ok(Some(v));
                    }
                    let shell = p.has(&["-s", "-i", "--shell", "--login"]);
                    if rest.is_empty() {
                        if shell {
                            return shell_without_command();
                        }
                        return Ok(Some(argv));
                    }
                    if shell {
                        // `sudo -s cmd …` hands the words, joined, to the user's shell.
                        wraps.push(name);
                        let joined = join_words(&rest);
                        self.parse_string(&joined, substituted, depth, wraps)?;
                        return Ok(None);
                    }
                }
                "su" | "runuser" => {
                    if let Some(c) = p.value(&["-c", "--command", "--session-command"]) {
                        wraps.push(name);
                        self.parse_string(&c.clone(), substituted, depth, wraps)?;
                        return Ok(None);
                    }
                    if info_only {
                        return Ok(Some(argv));
                    }
                    if name == "runuser" && p.has(&["-u", "--user"]) && !rest.is_empty() {
                        // `runuser -u USER -- cmd …`
                    } else {
                        return shell_without_command();
                    }
                }
                "script" => {
                    if let Some(c) = p.value(&["-c", "--command"]) {
                        wraps.push(name);
                        self.parse_string(&c.clone(), substituted, depth, wraps)?;
                        return Ok(None);
                    }
                    if info_only {
                        return Ok(Some(argv));
                    }
                    return shell_without_command();
                }
                "watch" => {
                    if rest.is_empty() {
                        return Ok(Some(argv));
                    }
                    if !p.has(&["-x", "--exec"]) {
                        // watch hands its operands, joined, to `sh -c`.
                        wraps.push(name);
                        let joined = join_words(&rest);
                        self.parse_string(&joined, substituted, depth, wraps)?;
                        return Ok(None);
                    }
                }
                "ssh" => {
                    for (o, v) in &p.opts {
                        if o == "-F" {
                            return undetermined(
                                "ssh -F reads a configuration that may run commands",
                            );
                        }
                        if o == "-o"
                            && let Some(v) = v
                        {
                            let lower = v.0.to_ascii_lowercase();
                            for key in ["proxycommand", "localcommand", "knownhostscommand"] {
                                if let Some(c) = lower.strip_prefix(key) {
                                    let c = c.trim_start_matches([' ', '=']);
                                    let at = v.0.len() - c.len();
                                    let cmd = (v.0[at..].to_string(), v.1);
                                    self.parse_string(&cmd, substituted, depth, wraps)?;
                                }
                            }
                        }
                    }
                    if rest.len() <= 1 || p.has(&["-s", "-N"]) {
                        return Ok(Some(argv));
                    }
                    // The remote command: its words, joined, go to the remote shell.
                    wraps.push(name);
                    let joined = join_words(&rest[1..]);
                    self.parse_string(&joined, substituted, depth, wraps)?;
                    return Ok(None);
                }
                "systemd-run" => {
                    if p.has(&["-S", "--shell"]) {
                        return shell_without_command();
                    }
                    if rest.is_empty() {
                        return Ok(Some(argv));
                    }
                }
                "nsenter" | "unshare" | "fakeroot" | "firejail" | "newgrp" if rest.is_empty() => {
                    if info_only {
                        return Ok(Some(argv));
                    }
                    return shell_without_command();
                }
                "newgrp" => return shell_without_command(),
                "sg" => {
                    // `sg [-] GROUP [-c] COMMAND`
                    let mut r = rest.clone();
                    if r.first().is_some_and(|a| a.0 == "-") {
                        r.remove(0);
                    }
                    if r.is_empty() {
                        return Ok(Some(argv));
                    }
                    r.remove(0);
                    if r.first().is_some_and(|a| a.0 == "-c") {
                        r.remove(0);
                    }
                    if r.is_empty() {
                        return shell_without_command();
                    }
                    wraps.push(name);
                    let joined = join_words(&r);
                    self.parse_string(&joined, substituted, depth, wraps)?;
                    return Ok(None);
                }
                "busybox" => {
                    if rest.is_empty() {
                        return Ok(Some(argv));
                    }
                }
                "parallel" => {
                    let end = rest
                        .iter()
                        .position(|a| a.0.starts_with(":::"))
                        .unwrap_or(rest.len());
                    if end == 0 {
                        return undetermined(
                            "`parallel` without a command reads commands from its input",
                        );
                    }
                    wraps.push(name);
                    let joined = join_words(&rest[..end]);
                    self.parse_string(&joined, substituted, depth, wraps)?;
                    return Ok(None);
                }
                "gdb" => {
                    // gdb's own options; only `--args PROGRAM …` is followed.
                    let words: Vec<&str> = args.iter().map(|a| a.0.as_str()).collect();
                    let own = words
                        .iter()
                        .position(|w| *w == "--args")
                        .unwrap_or(words.len());
                    if words[..own].iter().any(|w| {
                        let w = w.trim_start_matches('-');
                        matches!(w, "ex" | "iex" | "x" | "ix" | "batch" | "p" | "pid")
                            || w.starts_with("eval-command")
                            || w.starts_with("init-eval-command")
                            || w.starts_with("command")
                            || w.starts_with("init-command")
                    }) {
                        return undetermined("gdb runs debugger commands (-ex/-x)");
                    }
                    match words.iter().position(|w| *w == "--args") {
                        Some(k) => rest = args[k + 1..].to_vec(),
                        None => return Ok(Some(argv)),
                    }
                }
                "xargs" => {
                    let replace = p
                        .opts
                        .iter()
                        .find(|(n, _)| matches!(n.as_str(), "-I" | "-i" | "--replace"))
                        .map(|(_, v)| v.as_ref().map_or("{}".to_string(), |v| v.0.clone()));
                    if let (Some(r), Some(first)) = (replace, rest.first())
                        && !r.is_empty()
                        && first.0.contains(r.as_str())
                    {
                        return undetermined("xargs runs a program named by its input");
                    }
                    if rest.is_empty() {
                        wraps.push(name);
                        return Ok(Some(vec![("echo".into(), false)]));
                    }
                }
                _ => {
                    if rest.is_empty() {
                        return Ok(Some(argv));
                    }
                }
            }
            if rest.is_empty() {
                return Ok(Some(argv));
            }
            wraps.push(name);
            argv = rest;
        }
    }

    /// `sh -c STRING` is parsed as a command line; `sh FILE` reads FILE; a shell reading
    /// commands from its input (`echo x | bash`, `bash <<EOF`, `bash -s`) is undetermined.
    fn shell(
        &mut self,
        argv: Vec<W>,
        wraps: &mut Vec<String>,
        substituted: bool,
        depth: usize,
    ) -> Result<Option<Vec<W>>, Undetermined> {
        let name = basename(&argv[0].0);
        let mut command = false;
        let mut stdin = false;
        let mut k = 1;
        while k < argv.len() {
            let (a, dynamic) = (&argv[k].0, argv[k].1);
            if dynamic && a.starts_with(['-', '+']) {
                return undetermined(format!("a computed option of `{name}`"));
            }
            if a == "--" || a == "-" {
                k += 1;
                break;
            }
            if let Some(long) = a.strip_prefix("--") {
                match long {
                    "help" | "version" => return Ok(Some(argv)),
                    "login" | "noprofile" | "norc" | "posix" | "restricted" | "verbose"
                    | "noediting" | "debugger" | "dump-strings" | "dump-po-strings"
                    | "no-config" | "private" => {}
                    "command" if name == "fish" => command = true,
                    "rcfile" | "init-file" => {
                        return undetermined(format!("`{name} --{long}` runs another file"));
                    }
                    _ => {
                        return undetermined(format!(
                            "`{name}` option '{a}' is not in yuyao's table"
                        ));
                    }
                }
                k += 1;
                continue;
            }
            if a.starts_with('-') || a.starts_with('+') && a.len() > 1 {
                let cluster: Vec<char> = a[1..].chars().collect();
                let mut takes = 0;
                for c in cluster {
                    match c {
                        'c' => command = true,
                        's' => stdin = true,
                        'i' => return undetermined(format!("`{name} -i` is interactive")),
                        'o' | 'O' => takes += 1,
                        'a' | 'b' | 'e' | 'f' | 'h' | 'k' | 'l' | 'm' | 'n' | 'p' | 'r' | 't'
                        | 'u' | 'v' | 'x' | 'B' | 'C' | 'D' | 'E' | 'H' | 'P' | 'T' | 'y' | 'q' => {
                        }
                        _ => {
                            return undetermined(format!(
                                "`{name}` option '-{c}' is not in yuyao's table"
                            ));
                        }
                    }
                }
                k += 1 + takes;
                continue;
            }
            break;
        }
        let operands = argv.get(k..).unwrap_or(&[]);
        if command {
            let Some(script) = operands.first() else {
                return undetermined("`-c` without a command string");
            };
            wraps.push(name);
            self.parse_string(script, substituted, depth, wraps)?;
            return Ok(None);
        }
        if stdin || operands.is_empty() {
            return undetermined(format!(
                "`{name}` reads the commands it runs from its input, which yuyao cannot see"
            ));
        }
        let mut inner = wraps.clone();
        inner.push(name);
        self.run_script(&operands[0], substituted, depth, &inner)?;
        Ok(Some(argv))
    }
}

/// `env -S STRING`: split into words as env does (quotes honoured); escapes and variables
/// are undetermined.
fn split_string(s: &W) -> Result<Vec<W>, Undetermined> {
    if s.1 || s.0.contains(['$', '\\']) {
        return undetermined("`env -S` with escapes or variables");
    }
    let mut lx = Lexer {
        chars: s.0.chars().collect(),
        pos: 0,
        subs: Vec::new(),
        heredocs: Vec::new(),
    };
    let mut out = Vec::new();
    let toks = lx.tokens()?;
    if !lx.subs.is_empty() || !lx.heredocs.is_empty() {
        return undetermined("`env -S` string with shell syntax env does not understand");
    }
    for t in toks {
        match t {
            Tok::Word { text, dynamic } => out.push((text, dynamic)),
            _ => return undetermined("`env -S` string with shell operators"),
        }
    }
    Ok(out)
}

/// Words joined with spaces, as a program handing them to `sh -c` does.
fn join_words(ws: &[W]) -> W {
    let text = ws
        .iter()
        .map(|w| w.0.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    (text, ws.iter().any(|w| w.1))
}

struct Lexer {
    chars: Vec<char>,
    pos: usize,
    subs: Vec<String>,
    heredocs: Vec<(String, bool, bool)>, // delimiter, strip tabs, expands
}

impl Lexer {
    fn peek(&self, off: usize) -> Option<char> {
        self.chars.get(self.pos + off).copied()
    }

    fn tokens(&mut self) -> Result<Vec<Tok>, Undetermined> {
        let mut toks = Vec::new();
        loop {
            // Skip blanks and line continuations.
            while let Some(c) = self.peek(0) {
                if c == ' ' || c == '\t' || c == '\r' {
                    self.pos += 1;
                } else if c == '\\' && self.peek(1) == Some('\n') {
                    self.pos += 2;
                } else {
                    break;
                }
            }
            let Some(c) = self.peek(0) else { break };
            match c {
                '#' => {
                    while self.peek(0).is_some_and(|c| c != '\n') {
                        self.pos += 1;
                    }
                }
                '\n' => {
                    self.pos += 1;
                    self.read_heredoc_bodies()?;
                    toks.push(Tok::Op(";"));
                }
                '(' if self.peek(1) == Some('(')
                    && matches!(toks.last(), None | Some(Tok::Op(_))) =>
                {
                    // `(( expr ))`: an arithmetic command.
                    self.pos += 2;
                    let inner = self.balanced(')')?;
                    if self.peek(0) != Some(')') {
                        return undetermined("`((` without `))`");
                    }
                    self.pos += 1;
                    arith_ok(&inner)?;
                }
                ';' | '&' | '|' | '(' | ')' => {
                    let two: String = [Some(c), self.peek(1)].iter().flatten().collect();
                    let op = match two.as_str() {
                        "&&" => "&&",
                        "||" => "||",
                        ";;" => return undetermined("`;;` (case syntax)"),
                        "|&" => "|&",
                        "&>" => {
                            self.pos += 2;
                            if self.peek(0) == Some('>') {
                                self.pos += 1;
                            }
                            toks.push(self.redirect_target()?);
                            continue;
                        }
                        _ => match c {
                            ';' => ";",
                            '&' => "&",
                            '|' => "|",
                            '(' => "(",
                            _ => ")",
                        },
                    };
                    self.pos += op.len();
                    toks.push(Tok::Op(op));
                }
                '<' | '>' => {
                    if self.peek(1) == Some('(') {
                        // Process substitution runs a command list.
                        self.pos += 2;
                        let inner = self.balanced(')')?;
                        self.subs.push(inner);
                        toks.push(Tok::Word {
                            text: "/dev/fd/63".into(),
                            dynamic: true,
                        });
                        continue;
                    }
                    toks.push(self.redirect()?);
                }
                _ => {
                    let (text, dynamic) = self.word()?;
                    // `2>file`: a number directly before a redirection is a descriptor.
                    if matches!(self.peek(0), Some('<' | '>'))
                        && !text.is_empty()
                        && text.chars().all(|c| c.is_ascii_digit())
                    {
                        toks.push(self.redirect()?);
                        continue;
                    }
                    // `f() { … }` defines a function: out of scope for the lexer.
                    if self.peek(0) == Some('(') && self.peek(1) == Some(')') {
                        return undetermined("function definitions");
                    }
                    toks.push(Tok::Word { text, dynamic });
                }
            }
        }
        if !self.heredocs.is_empty() {
            return undetermined("here-document without its body");
        }
        Ok(toks)
    }

    fn redirect(&mut self) -> Result<Tok, Undetermined> {
        let c = self.peek(0).unwrap_or('>');
        self.pos += 1;
        if c == '<' {
            if self.peek(0) == Some('<') {
                self.pos += 1;
                if self.peek(0) == Some('<') {
                    // Here-string: the word is data.
                    self.pos += 1;
                    self.skip_blanks();
                    self.word()?;
                    return Ok(Tok::Redirect(Redir::Other));
                }
                let strip = self.peek(0) == Some('-');
                if strip {
                    self.pos += 1;
                }
                self.skip_blanks();
                let start = self.pos;
                let (delim, _) = self.word()?;
                let raw: String = self.chars[start..self.pos].iter().collect();
                let expands = !raw.contains('\'') && !raw.contains('"') && !raw.contains('\\');
                self.heredocs.push((delim, strip, expands));
                return Ok(Tok::Redirect(Redir::Other));
            }
            if self.peek(0) == Some('&') {
                self.pos += 1;
                self.skip_blanks();
                self.word()?;
                return Ok(Tok::Redirect(Redir::Other));
            }
            if self.peek(0) == Some('>') {
                // `<> f` opens f for reading and writing.
                self.pos += 1;
                return self.redirect_target();
            }
            self.skip_blanks();
            let (target, dynamic) = self.word()?;
            if target.is_empty() && !dynamic {
                return undetermined("redirection without a source");
            }
            return Ok(Tok::Redirect(Redir::In(target, dynamic)));
        }
        // `>`, `>>`, `>|`, `>&`
        if matches!(self.peek(0), Some('>' | '|')) {
            self.pos += 1;
        }
        if self.peek(0) == Some('&') {
            self.pos += 1;
            self.skip_blanks();
            let (target, dynamic) = self.word()?;
            let to_fd = !dynamic && (target.chars().all(|c| c.is_ascii_digit()) || target == "-");
            if to_fd {
                return Ok(Tok::Redirect(Redir::Other));
            }
            return Ok(Tok::Redirect(Redir::Out(target, dynamic)));
        }
        self.redirect_target()
    }

    fn redirect_target(&mut self) -> Result<Tok, Undetermined> {
        self.skip_blanks();
        let (target, dynamic) = self.word()?;
        if target.is_empty() && !dynamic {
            return undetermined("redirection without a target");
        }
        Ok(Tok::Redirect(Redir::Out(target, dynamic)))
    }

    fn skip_blanks(&mut self) {
        while matches!(self.peek(0), Some(' ' | '\t')) {
            self.pos += 1;
        }
    }

    fn read_heredoc_bodies(&mut self) -> Result<(), Undetermined> {
        for (delim, strip, expands) in std::mem::take(&mut self.heredocs) {
            loop {
                if self.pos >= self.chars.len() {
                    return undetermined(format!("here-document '{delim}' is not terminated"));
                }
                let start = self.pos;
                while self.peek(0).is_some_and(|c| c != '\n') {
                    self.pos += 1;
                }
                let line: String = self.chars[start..self.pos].iter().collect();
                if self.peek(0) == Some('\n') {
                    self.pos += 1;
                }
                let cmp = if strip {
                    line.trim_start_matches('\t')
                } else {
                    &line
                };
                if cmp == delim {
                    break;
                }
                if expands && (line.contains("$(") || line.contains('`')) {
                    return undetermined("command substitution inside a here-document");
                }
                if expands {
                    check_expansions_in(&line)?;
                }
            }
        }
        Ok(())
    }

    /// Reads one word; returns its text with quotes removed and whether it contains an
    /// expansion whose value is only known at run time.
    fn word(&mut self) -> Result<(String, bool), Undetermined> {
        let mut text = String::new();
        let mut dynamic = false;
        let mut brace = false;
        let mut glob = false;
        while let Some(c) = self.peek(0) {
            match c {
                ' ' | '\t' | '\n' | '\r' | ';' | '&' | '|' | '(' | ')' | '<' | '>' => break,
                '\'' => {
                    self.pos += 1;
                    loop {
                        match self.peek(0) {
                            None => return undetermined("unbalanced single quote"),
                            Some('\'') => {
                                self.pos += 1;
                                break;
                            }
                            Some(ch) => {
                                text.push(ch);
                                self.pos += 1;
                            }
                        }
                    }
                }
                '"' => {
                    self.pos += 1;
                    loop {
                        match self.peek(0) {
                            None => return undetermined("unbalanced double quote"),
                            Some('"') => {
                                self.pos += 1;
                                break;
                            }
                            Some('\\') => {
                                match self.peek(1) {
                                    Some(n @ ('"' | '\\' | '$' | '`')) => text.push(n),
                                    Some('\n') => {}
                                    Some(n) => {
                                        text.push('\\');
                                        text.push(n);
                                    }
                                    None => return undetermined("unbalanced double quote"),
                                }
                                self.pos += 2;
                            }
                            Some('$') => dynamic |= self.dollar(&mut text)?,
                            Some('`') => {
                                self.backtick()?;
                                dynamic = true;
                            }
                            Some(ch) => {
                                text.push(ch);
                                self.pos += 1;
                            }
                        }
                    }
                }
                '\\' => match self.peek(1) {
                    None => return undetermined("trailing backslash"),
                    Some('\n') => self.pos += 2,
                    Some(n) => {
                        text.push(n);
                        self.pos += 2;
                    }
                },
                '$' => dynamic |= self.dollar(&mut text)?,
                '`' => {
                    self.backtick()?;
                    dynamic = true;
                }
                _ => {
                    if matches!(c, '*' | '?' | '[') {
                        glob = true;
                    }
                    if c == '{' {
                        brace = true;
                    }
                    text.push(c);
                    self.pos += 1;
                }
            }
        }
        // Brace expansion (`{rm,x}`, `r{m,}`, `{a..c}`) makes other words than it reads as.
        if brace && text.contains('}') && (text.contains(',') || text.contains("..")) {
            dynamic = true;
        }
        // Globs expand to file names, only known at run time; `[` and `[[` are the test
        // commands, not patterns.
        if glob && !matches!(text.as_str(), "[" | "[[") {
            dynamic = true;
        }
        Ok((text, dynamic))
    }

    /// Handles `$…` at the cursor. Returns whether the word became dynamic.
    fn dollar(&mut self, text: &mut String) -> Result<bool, Undetermined> {
        match self.peek(1) {
            Some('(') if self.peek(2) == Some('(') => {
                self.pos += 3;
                let inner = self.balanced(')')?;
                if self.peek(0) == Some(')') {
                    self.pos += 1;
                }
                no_hidden_substitution(&inner)?;
                arith_ok(&inner)?;
                Ok(true)
            }
            Some('[') => undetermined("`$[…]` arithmetic"),
            Some('(') => {
                self.pos += 2;
                let inner = self.balanced(')')?;
                self.subs.push(inner);
                Ok(true)
            }
            Some('{') => {
                self.pos += 2;
                let inner = self.balanced('}')?;
                check_param(&inner)?;
                Ok(true)
            }
            Some(c) if c.is_ascii_alphanumeric() || "_@*#?$!-".contains(c) => {
                self.pos += 1;
                if c.is_ascii_alphabetic() || c == '_' {
                    while self
                        .peek(0)
                        .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
                    {
                        self.pos += 1;
                    }
                } else {
                    self.pos += 1;
                }
                Ok(true)
            }
            Some('\'') => {
                // `$'…'`: literal unless it has escapes (`$'\x72m'` is `rm`): then computed.
                let mut k = self.pos + 2;
                let mut escapes = false;
                while let Some(c) = self.chars.get(k) {
                    match c {
                        '\\' => {
                            escapes = true;
                            k += 2;
                        }
                        '\'' => break,
                        _ => k += 1,
                    }
                }
                if k >= self.chars.len() {
                    return undetermined("unbalanced $' quote");
                }
                if escapes {
                    self.pos = k + 1;
                    Ok(true)
                } else {
                    self.pos += 1;
                    Ok(false)
                }
            }
            Some('"') => {
                // `$"…"`: a translated string, quoted like "…".
                self.pos += 1;
                Ok(false)
            }
            _ => {
                text.push('$');
                self.pos += 1;
                Ok(false)
            }
        }
    }

    fn backtick(&mut self) -> Result<(), Undetermined> {
        self.pos += 1;
        let mut inner = String::new();
        loop {
            match self.peek(0) {
                None => return undetermined("unbalanced backtick"),
                Some('`') => {
                    self.pos += 1;
                    break;
                }
                Some('\\') if self.peek(1).is_some() => {
                    inner.push(self.peek(1).unwrap_or(' '));
                    self.pos += 2;
                }
                Some(c) => {
                    inner.push(c);
                    self.pos += 1;
                }
            }
        }
        self.subs.push(inner);
        Ok(())
    }

    /// Reads up to the matching `close`, respecting quotes and nesting; the cursor ends after it.
    fn balanced(&mut self, close: char) -> Result<String, Undetermined> {
        let open = if close == ')' { '(' } else { '{' };
        let mut depth = 1;
        let start = self.pos;
        while let Some(c) = self.peek(0) {
            match c {
                '\\' => self.pos += 1,
                '\'' => {
                    self.pos += 1;
                    while self.peek(0).is_some_and(|c| c != '\'') {
                        self.pos += 1;
                    }
                }
                '"' => {
                    self.pos += 1;
                    while let Some(d) = self.peek(0) {
                        if d == '\\' {
                            self.pos += 1;
                        } else if d == '"' {
                            break;
                        }
                        self.pos += 1;
                    }
                }
                _ if c == open => depth += 1,
                _ if c == close => {
                    depth -= 1;
                    if depth == 0 {
                        let inner: String = self.chars[start..self.pos].iter().collect();
                        self.pos += 1;
                        return Ok(inner);
                    }
                }
                _ => {}
            }
            self.pos += 1;
        }
        undetermined(format!("unbalanced '{open}'"))
    }
}

/// The files a segment reads and writes, as far as the lexer can tell (each with whether
/// its name is computed at run time: a glob or an expansion).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SegmentPaths {
    pub reads: Vec<(String, bool)>,
    pub writes: Vec<(String, bool)>,
    /// The program writes files it does not name (`git checkout BRANCH`, `git stash`, …).
    pub unknown_writes: bool,
    /// The written paths may be directories whose whole tree is written (`rm -r`, `mv`,
    /// `cp -r`, `chmod -R`, `git checkout -- DIR`).
    pub recursive_writes: bool,
    /// The read paths may be directories read recursively (`grep -r`, `rg`, `cp -r`, `tar c`).
    pub recursive_reads: bool,
}

/// Operands of `args` (words that are not options), skipping the values of `with_value`
/// options; everything after `--` is an operand.
fn operands(s: &Segment, with_value: &[&str]) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let mut k = 0;
    let mut opts = true;
    while k < s.args.len() {
        let (a, c) = (&s.args[k], s.arg_computed(k));
        if opts && a == "--" {
            opts = false;
        } else if opts && a.starts_with('-') && a.len() > 1 && !c {
            if with_value.contains(&a.as_str()) {
                k += 1;
            }
        } else {
            out.push((a.clone(), c));
        }
        k += 1;
    }
    out
}

/// The value of option `short`/`long` (`-t DIR`, `-tDIR`, `--target-directory=DIR`).
fn option_value(s: &Segment, short: &str, long: &str) -> Option<(String, bool)> {
    for (k, a) in s.args.iter().enumerate() {
        if a == short || a == long {
            return s
                .args
                .get(k + 1)
                .map(|v| (v.clone(), s.arg_computed(k + 1)));
        }
        if let Some(v) = a.strip_prefix(&format!("{long}=")) {
            return Some((v.to_string(), s.arg_computed(k)));
        }
        if short.len() == 2
            && let Some(v) = a.strip_prefix(short)
            && !v.is_empty()
            && !a.starts_with("--")
        {
            return Some((v.to_string(), s.arg_computed(k)));
        }
    }
    None
}

/// The paths a segment reads and writes: redirections, and the operands of programs known
/// to read (`cat`, `head`, `grep` paths, `sed`/`awk` files, `cp` sources, …) or write (`sed
/// -i`, `tee`, `cp`/`mv`/`install`/`ln` targets, `rm`, `touch`, `mkdir`, `truncate`,
/// `chmod`, `chown`, `dd of=`, `git checkout -- p`, `git restore p`). Programs outside these
/// lists contribute only their redirections.
pub fn segment_paths(s: &Segment) -> SegmentPaths {
    let mut p = SegmentPaths {
        reads: s.inputs.clone(),
        writes: s.outputs.clone(),
        ..SegmentPaths::default()
    };
    let ops = |with_value: &[&str]| operands(s, with_value);
    // A short-option cluster or long option among the arguments (before `--`).
    let flag = |short: &[char], long: &[&str]| {
        s.args.iter().take_while(|a| *a != "--").any(|a| {
            if let Some(l) = a.strip_prefix("--") {
                long.contains(&l)
            } else {
                a.starts_with('-') && a[1..].chars().any(|c| short.contains(&c))
            }
        })
    };
    p.recursive_writes = match s.program.as_str() {
        "rm" => flag(&['r', 'R'], &["recursive"]),
        "cp" => flag(&['r', 'R', 'a'], &["recursive", "archive"]),
        "chmod" | "chown" | "chgrp" => flag(&['R'], &["recursive"]),
        "mv" | "git" => true,
        _ => false,
    };
    p.recursive_reads = match s.program.as_str() {
        "grep" | "egrep" | "fgrep" => flag(&['r', 'R'], &["recursive", "dereference-recursive"]),
        "cp" => p.recursive_writes,
        "rg" | "tar" => true,
        _ => false,
    };
    match s.program.as_str() {
        "rm" | "rmdir" | "unlink" | "shred" => p.writes.extend(ops(&["-n", "-s"])),
        "touch" => p
            .writes
            .extend(ops(&["-d", "-t", "-r", "--date", "--reference"])),
        "mkdir" => p.writes.extend(ops(&["-m", "--mode"])),
        "truncate" => p.writes.extend(ops(&["-s", "-r", "--size", "--reference"])),
        "chmod" | "chown" | "chgrp" => {
            let o = ops(&[]);
            let skip = usize::from(!s.args.iter().any(|a| a.starts_with("--reference")));
            p.writes.extend(o.into_iter().skip(skip));
        }
        "tee" => p.writes.extend(ops(&[])),
        "cp" | "mv" | "install" | "ln" => {
            let with_value = [
                "-t",
                "-S",
                "-m",
                "-o",
                "-g",
                "--suffix",
                "--target-directory",
                "--mode",
                "--owner",
                "--group",
            ];
            let mut o = ops(&with_value);
            if s.program == "install" && s.args.iter().any(|a| a == "-d" || a == "--directory") {
                p.writes.extend(o);
                return p;
            }
            let target = match option_value(s, "-t", "--target-directory") {
                Some(t) => Some(t),
                None => o.pop(),
            };
            if let Some((t, tc)) = target {
                for (src, sc) in &o {
                    let base = src.rsplit('/').find(|x| !x.is_empty()).unwrap_or(src);
                    p.writes
                        .push((format!("{}/{}", t.trim_end_matches('/'), base), tc || *sc));
                }
                p.writes.push((t, tc));
            }
            match s.program.as_str() {
                "mv" => p.writes.extend(o),
                "ln" => {}
                _ => p.reads.extend(o),
            }
        }
        "tar" => {
            let first = s.args.first().map(String::as_str).unwrap_or("");
            let mode = |c: char, long: &str| {
                (!first.starts_with('-') && first.contains(c)) || flag(&[c], &[long])
            };
            if mode('x', "extract") || mode('x', "get") {
                p.unknown_writes = true;
            } else if mode('c', "create") || mode('r', "append") || mode('u', "update") {
                let with_value = [
                    "-f",
                    "-C",
                    "-T",
                    "-X",
                    "-b",
                    "-g",
                    "-N",
                    "-V",
                    "--file",
                    "--directory",
                ];
                let mut o = ops(&with_value);
                if !first.starts_with('-') && !o.is_empty() {
                    o.remove(0); // the old-style option cluster
                    if first.contains('f') && !o.is_empty() {
                        p.writes.push(o.remove(0));
                    }
                }
                if let Some(f) = option_value(s, "-f", "--file") {
                    p.writes.push(f);
                }
                p.reads.extend(o);
            }
        }
        "dd" => {
            for (k, a) in s.args.iter().enumerate() {
                if let Some(v) = a.strip_prefix("of=") {
                    p.writes.push((v.to_string(), s.arg_computed(k)));
                } else if let Some(v) = a.strip_prefix("if=") {
                    p.reads.push((v.to_string(), s.arg_computed(k)));
                }
            }
        }
        "sed" => {
            let in_place = s.args.iter().any(|a| {
                a.starts_with("--in-place")
                    || (a.starts_with('-') && !a.starts_with("--") && a.contains('i'))
            });
            let explicit_script = s.args.iter().any(|a| {
                a == "-e" || a == "-f" || a.starts_with("--expression") || a.starts_with("--file")
            });
            let mut o = ops(&["-e", "-f", "-l", "--expression", "--file", "--line-length"]);
            if !explicit_script && !o.is_empty() {
                o.remove(0);
            }
            if in_place {
                p.writes.extend(o.iter().cloned());
            }
            p.reads.extend(o);
        }
        "awk" | "gawk" | "mawk" | "nawk" => {
            let explicit_script = s.args.iter().any(|a| a == "-f" || a.starts_with("--file"));
            let mut o = ops(&[
                "-f",
                "-v",
                "-F",
                "-i",
                "--file",
                "--assign",
                "--field-separator",
                "--include",
            ]);
            if !explicit_script && !o.is_empty() {
                o.remove(0);
            }
            p.reads
                .extend(o.into_iter().filter(|(w, c)| *c || !w.contains('=')));
        }
        "grep" | "egrep" | "fgrep" | "zgrep" => {
            let explicit = s.args.iter().any(|a| {
                a == "-e" || a == "-f" || a.starts_with("--regexp") || a.starts_with("--file")
            });
            let mut o = ops(&[
                "-e",
                "-f",
                "-m",
                "-A",
                "-B",
                "-C",
                "-d",
                "-D",
                "--regexp",
                "--file",
                "--max-count",
                "--label",
            ]);
            if !explicit && !o.is_empty() {
                o.remove(0);
            }
            p.reads.extend(o);
        }
        "rg" => {
            let explicit = s.args.iter().any(|a| {
                a == "-e" || a == "-f" || a.starts_with("--regexp") || a.starts_with("--file")
            });
            let mut o = ops(&[
                "-e",
                "-f",
                "-g",
                "-t",
                "-T",
                "-m",
                "-A",
                "-B",
                "-C",
                "-j",
                "-M",
                "-E",
                "-r",
                "-d",
                "--regexp",
                "--file",
                "--glob",
                "--iglob",
                "--type",
                "--type-not",
                "--max-count",
                "--threads",
                "--max-columns",
                "--encoding",
                "--pre",
                "--pre-glob",
                "--sort",
                "--sortr",
                "--color",
                "--colors",
                "--replace",
                "--max-depth",
                "--context",
                "--before-context",
                "--after-context",
                "--type-add",
                "--max-filesize",
            ]);
            if !explicit && !o.is_empty() {
                o.remove(0);
            }
            p.reads.extend(o);
        }
        "cat" | "tac" | "nl" | "less" | "more" | "base64" | "base32" | "strings" | "hexdump"
        | "file" | "md5sum" | "sha1sum" | "sha256sum" | "wc" => {
            p.reads
                .extend(ops(&["-w", "-n", "-t", "-e", "-s", "-b", "-i", "-v"]));
        }
        "head" | "tail" => p
            .reads
            .extend(ops(&["-n", "-c", "--lines", "--bytes", "-s", "--pid"])),
        "od" => p.reads.extend(ops(&["-A", "-j", "-N", "-t", "-w", "-S"])),
        "xxd" | "uniq" => {
            let mut o = ops(&["-l", "-s", "-c", "-g", "-o", "-f", "-w", "-n"]);
            if o.len() >= 2 {
                p.writes.push(o.remove(1));
            }
            p.reads.extend(o);
        }
        "sort" => {
            if let Some(out) = option_value(s, "-o", "--output") {
                p.writes.push(out);
            }
            p.reads.extend(ops(&[
                "-o",
                "-k",
                "-t",
                "-S",
                "-T",
                "--output",
                "--key",
                "--field-separator",
            ]));
        }
        "git" => {
            let mut k = 0;
            while k < s.args.len() && s.args[k].starts_with('-') {
                k += if matches!(
                    s.args[k].as_str(),
                    "-C" | "-c" | "--git-dir" | "--work-tree"
                ) {
                    2
                } else {
                    1
                };
            }
            let sub = s.args.get(k).map(String::as_str).unwrap_or("");
            let rest: Vec<(String, bool)> = (k + 1..s.args.len())
                .map(|i| (s.args[i].clone(), s.arg_computed(i)))
                .collect();
            let after_dashes = || -> Vec<(String, bool)> {
                match rest.iter().position(|a| a.0 == "--") {
                    Some(i) => rest[i + 1..].to_vec(),
                    None => Vec::new(),
                }
            };
            let plain = |r: &[(String, bool)]| -> Vec<(String, bool)> {
                let mut out = Vec::new();
                let mut skip = false;
                for a in r {
                    if skip {
                        skip = false;
                    } else if a.0 == "-s" || a.0 == "--source" || a.0 == "-m" {
                        skip = true;
                    } else if !a.0.starts_with('-') || a.1 {
                        out.push(a.clone());
                    }
                }
                out
            };
            match sub {
                "checkout" => {
                    let d = after_dashes();
                    if d.is_empty() {
                        p.unknown_writes |= rest.iter().any(|a| !a.0.starts_with('-') || a.1);
                    } else {
                        p.writes.extend(d);
                    }
                }
                "restore" | "rm" | "mv" => p.writes.extend(plain(&rest)),
                "switch" | "reset" | "stash" | "pull" | "merge" | "rebase" | "apply" | "am"
                | "cherry-pick" | "revert" | "clean" => p.unknown_writes = true,
                _ => {}
            }
        }
        _ => {}
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    fn progs(cmd: &str) -> Vec<String> {
        segments(cmd)
            .unwrap()
            .into_iter()
            .map(|s| s.program)
            .collect()
    }

    #[test]
    fn effective_program_names() {
        assert_eq!(progs("to\"\"uch a"), ["touch"]);
        assert_eq!(progs("/usr/bin/rm -rf x"), ["rm"]);
        assert_eq!(progs("env A=1 nice -n 5 timeout 10 rm x"), ["rm"]);
        assert_eq!(progs("sh -c 'cd a && rm b'"), ["cd", "rm"]);
        assert_eq!(progs("ls | xargs rm"), ["ls", "rm"]);
        assert_eq!(progs("find . -name x -exec rm {} \\;"), ["rm", "find"]);
        assert_eq!(progs("echo $(rm x)"), ["rm", "echo"]);
        assert_eq!(progs("(cd a; r\\m b) || true"), ["cd", "rm", "true"]);
        assert_eq!(progs("grep \"rm \" f.txt"), ["grep"]);
        assert_eq!(progs("A=1 B=2 make"), ["make"]);
        assert_eq!(progs("if true; then ls; fi"), ["true", "ls"]);
        assert_eq!(progs("cat <<'EOF' > f\nrm -rf /\nEOF\nls"), ["cat", "ls"]);
    }

    #[test]
    fn undetermined_cases() {
        for cmd in [
            "echo 'a",
            "echo \"a",
            "$CMD x",
            "eval rm x",
            "f() { rm x; }",
            "echo `rm",
        ] {
            assert!(segments(cmd).is_err(), "{cmd}");
        }
    }

    #[test]
    fn setpriv_and_prlimit_run_their_command() {
        assert_eq!(progs("setpriv --nnp --reuid=1000 -- rm x"), ["rm"]);
        assert_eq!(progs("prlimit --nofile=64 -n1024:2048 rm x"), ["rm"]);
        assert_eq!(progs("prlimit --pid 42"), ["prlimit"]);
        assert_eq!(progs("setpriv --dump"), ["setpriv"]);
    }

    #[test]
    fn editors_fed_by_the_line_and_aliases_from_moved_configs_are_undetermined() {
        for cmd in [
            "echo ':!rm x' | vim f",
            "vim f <<< ':!rm x'",
            "echo x | bash -c 'true; vim f'",
            "HOME=$PWD git x",
            "export HOME=.; git x",
            "env XDG_CONFIG_HOME=/tmp/c git x",
            "git -C sub x",
            "cd sub && git x",
            "git --git-dir=planted x",
        ] {
            assert!(segments(cmd).is_err(), "{cmd}");
        }
        for cmd in [
            "vim f",
            "echo x | cat; vim f",
            "git x",
            "HOME=$PWD git status",
            "git -C sub log -1",
            "HOME=. git -c alias.x='!echo hi' x",
        ] {
            assert!(segments(cmd).is_ok(), "{cmd}");
        }
    }

    #[test]
    fn redirections_are_seen() {
        let s = segments("ls > out.txt 2>&1").unwrap();
        assert!(s[0].writes_file);
        let s = segments("ls 2>&1 >/dev/null").unwrap();
        assert!(!s[0].writes_file);
    }
}
