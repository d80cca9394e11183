//! A conservative bash lexer: splits a command line into the segments that will execute and
//! computes each segment's effective program name (after quote removal, wrapper stripping
//! and path prefixes). Anything it cannot fully account for is `Undetermined`, which the
//! policy never permits — it never falls back to splitting on whitespace.

/// One executable segment: the effective program and its arguments (quotes removed).
#[derive(Debug, Clone, PartialEq, Eq)]
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
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Undetermined(pub String);

impl std::fmt::Display for Undetermined {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot determine what this command runs: {}", self.0)
    }
}

/// Parses `cmd` into its executable segments.
pub fn segments(cmd: &str) -> Result<Vec<Segment>, Undetermined> {
    let mut out = Vec::new();
    parse_into(cmd, false, 0, &mut out)?;
    let out = apply_shell_assignments(out);
    // A second, independent reading by the bash grammar must agree (DESIGN §5).
    crate::bash_tree::confirm(cmd, &out)?;
    Ok(out)
}

/// `PATH=.; ls` and `for PATH in .; do ls; done` set shell variables that the other commands
/// of the line then run with (`./ls`). The lexer records them as placeholder segments (see
/// [`SETS_VARIABLES`]); their assignments are added to every segment of the line (before
/// ones too: `$(…)` segments are read first but may run later), and the placeholders go.
fn apply_shell_assignments(segs: Vec<Segment>) -> Vec<Segment> {
    let (set, mut run): (Vec<Segment>, Vec<Segment>) = segs
        .into_iter()
        .partition(|s| s.program_path == SETS_VARIABLES);
    let shell: Vec<String> = set.into_iter().flat_map(|s| s.assignments).collect();
    for s in &mut run {
        s.assignments.splice(0..0, shell.iter().cloned());
    }
    run
}

/// A placeholder for shell variables set by a line (see [`apply_shell_assignments`]).
fn shell_assignment(assignments: Vec<String>) -> Segment {
    Segment {
        program: String::new(),
        args: Vec::new(),
        writes_file: false,
        substituted: false,
        assignments,
        program_path: SETS_VARIABLES.into(),
        dynamic_args: Vec::new(),
    }
}

/// The `program_path` of a placeholder: no word of a command line contains a NUL.
const SETS_VARIABLES: &str = "\0sets variables";

const MAX_DEPTH: usize = 8;

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Word { text: String, dynamic: bool },
    Op(&'static str),
    Redirect { writes_file: bool },
}

fn undetermined<T>(why: impl Into<String>) -> Result<T, Undetermined> {
    Err(Undetermined(why.into()))
}

fn parse_into(
    cmd: &str,
    substituted: bool,
    depth: usize,
    out: &mut Vec<Segment>,
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
        parse_into(&sub, true, depth + 1, out)?;
    }
    let mut words: Vec<(String, bool)> = Vec::new();
    let mut writes = false;
    let flush = |words: &mut Vec<(String, bool)>, writes: &mut bool, out: &mut Vec<Segment>| {
        let w = std::mem::take(words);
        let wr = std::mem::replace(writes, false);
        simple_command(w, wr, substituted, depth, out)
    };
    let mut parens = 0usize;
    for t in toks {
        match t {
            Tok::Word { text, dynamic } => words.push((text, dynamic)),
            Tok::Redirect { writes_file } => writes |= writes_file,
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
                flush(&mut words, &mut writes, out)?;
            }
            Tok::Op(_) => flush(&mut words, &mut writes, out)?,
        }
    }
    if parens != 0 {
        return undetermined("unbalanced '('");
    }
    flush(&mut words, &mut writes, out)
}

const KEYWORDS: &[&str] = &[
    "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!", "{", "}", "time",
];

fn simple_command(
    words: Vec<(String, bool)>,
    writes_file: bool,
    substituted: bool,
    depth: usize,
    out: &mut Vec<Segment>,
) -> Result<(), Undetermined> {
    let mut i = 0;
    while i < words.len() && KEYWORDS.contains(&words[i].0.as_str()) && !words[i].1 {
        i += 1;
    }
    let mut assignments: Vec<String> = Vec::new();
    while i < words.len() && is_assignment(&words[i].0) {
        assignments.push(words[i].0.clone());
        i += 1;
    }
    let Some((first, _)) = words.get(i) else {
        if writes_file {
            // `> file` alone truncates a file.
            out.push(Segment {
                program: ":".into(),
                args: Vec::new(),
                writes_file,
                substituted,
                assignments,
                program_path: ":".into(),
                dynamic_args: Vec::new(),
            });
        } else if !assignments.is_empty() {
            out.push(shell_assignment(assignments));
        }
        return Ok(());
    };
    match first.as_str() {
        // `for x in a b` runs nothing itself; it sets `x` for the loop body.
        "for" | "select" => {
            if let Some((name, _)) = words.get(i + 1)
                && is_assignment(&format!("{name}="))
            {
                out.push(shell_assignment(vec![format!("{name}=")]));
            }
            return Ok(());
        }
        // `source f` / `. f` run a script like `bash f` does: the program is determined (and
        // not read-only), so `. venv/bin/activate && pytest` is not refused as undetermined.
        "case" | "function" | "coproc" | "eval" => {
            return undetermined(format!(
                "'{first}' is beyond what yuyao's shell lexer accounts for"
            ));
        }
        _ => {}
    }
    let words = &words[i..];
    if words.iter().take(1).any(|(_, dynamic)| *dynamic) {
        return undetermined(format!(
            "the program name '{}' is computed at run time",
            words[0].0
        ));
    }
    let mut argv: Vec<String> = words.iter().map(|(w, _)| w.clone()).collect();
    strip_wrappers(&mut argv, &mut assignments, substituted, depth, out)?;
    if argv.is_empty() {
        // `BASH_ENV=./x bash -c 'ls'`: the inner segments run with these assignments.
        if !assignments.is_empty() {
            out.push(shell_assignment(assignments));
        }
        return Ok(());
    }
    // Wrappers only remove leading words: the program is a word of the original line, and a
    // computed one (`env $X`, `command {rm,x}`) is as undetermined as in first position.
    if argv.len() <= words.len() {
        let (w, dynamic) = &words[words.len() - argv.len()];
        if *dynamic && *w == argv[0] {
            return undetermined(format!("the program name '{w}' is computed at run time"));
        }
    }
    let program = basename(&argv[0]);
    if program.is_empty() {
        return undetermined("empty program name");
    }
    let args = argv[1..].to_vec();
    // The arguments are the last words as written when wrappers only removed leading words;
    // otherwise every argument counts as computed.
    let tail = words.len().checked_sub(argv.len()).map(|n| &words[n..]);
    let as_written = tail.filter(|t| t.iter().map(|(w, _)| w).eq(argv.iter()));
    let mut dynamic_args: Vec<bool> = match as_written {
        Some(t) => t[1..].iter().map(|(_, d)| *d).collect(),
        None => vec![true; args.len()],
    };
    // `… | xargs sort` appends words read at run time: one more computed argument.
    if words[..words.len() - as_written.map_or(0, <[_]>::len)]
        .iter()
        .any(|(w, _)| basename(w) == "xargs")
    {
        dynamic_args.push(true);
    }
    // `find … -exec prog …;` runs `prog`: it is a segment of its own.
    if program == "find" {
        let mut k = 0;
        while k < args.len() {
            if matches!(args[k].as_str(), "-exec" | "-execdir" | "-ok" | "-okdir") {
                let end = args[k + 1..]
                    .iter()
                    .position(|a| a == ";" || a == "+")
                    .map_or(args.len(), |p| k + 1 + p);
                let inner: Vec<String> = args[k + 1..end].to_vec();
                if !inner.is_empty() {
                    let flags = dynamic_args[k + 1..end].iter().copied();
                    let inner_words = inner.into_iter().zip(flags).collect();
                    simple_command(inner_words, false, substituted, depth + 1, out)?;
                }
                k = end;
            }
            k += 1;
        }
    }
    out.push(Segment {
        program,
        program_path: argv[0].clone(),
        args,
        writes_file,
        substituted,
        assignments,
        dynamic_args,
    });
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

/// Removes wrappers that run another program (`env`, `timeout`, `sh -c`, …) so the effective
/// program is the one really executed. `sh -c STRING` is parsed as a command line.
fn strip_wrappers(
    argv: &mut Vec<String>,
    assignments: &mut Vec<String>,
    substituted: bool,
    depth: usize,
    out: &mut Vec<Segment>,
) -> Result<(), Undetermined> {
    loop {
        let Some(first) = argv.first() else {
            return Ok(());
        };
        let name = basename(first);
        // `command -v x` / `type`-like lookups run nothing: `command` is the program.
        if name == "command" && argv.get(1).is_some_and(|a| a == "-v" || a == "-V") {
            return Ok(());
        }
        // Options that take a value, per wrapper.
        let (with_value, then_skip): (&[&str], usize) = match name.as_str() {
            "command" | "builtin" | "exec" | "nohup" | "time" => (&["-a"], 0),
            "env" => (&["-u", "-C", "--unset", "--chdir", "-S"], 0),
            "nice" => (&["-n", "--adjustment"], 0),
            "timeout" => (&["-s", "-k", "--signal", "--kill-after"], 1),
            "stdbuf" => (&["-i", "-o", "-e"], 0),
            "xargs" => (
                &[
                    "-I",
                    "-i",
                    "-n",
                    "-P",
                    "-d",
                    "-L",
                    "-l",
                    "-s",
                    "-E",
                    "-e",
                    "-a",
                    "--max-args",
                    "--max-procs",
                    "--delimiter",
                    "--arg-file",
                    "--replace",
                ],
                0,
            ),
            "sudo" | "doas" => (&["-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U"], 0),
            "sh" | "bash" | "zsh" | "dash" | "ksh" => {
                return shell_c(argv, substituted, depth, out);
            }
            _ => return Ok(()),
        };
        argv.remove(0);
        let mut skipped_positional = 0;
        while let Some(a) = argv.first() {
            if a == "--" {
                argv.remove(0);
                break;
            }
            if a.starts_with('-') && a.len() > 1 {
                let takes_value = with_value.contains(&a.as_str());
                argv.remove(0);
                if takes_value && !argv.is_empty() {
                    argv.remove(0);
                }
                continue;
            }
            if name == "env" && is_assignment(a) {
                assignments.push(argv.remove(0));
                continue;
            }
            if skipped_positional < then_skip {
                argv.remove(0);
                skipped_positional += 1;
                continue;
            }
            break;
        }
        if argv.is_empty() && name == "xargs" {
            argv.push("echo".into());
        }
    }
}

fn shell_c(
    argv: &mut Vec<String>,
    substituted: bool,
    depth: usize,
    out: &mut Vec<Segment>,
) -> Result<(), Undetermined> {
    let pos = argv
        .iter()
        .position(|a| a.starts_with('-') && !a.starts_with("--") && a.contains('c'));
    match pos {
        Some(p) => match argv.get(p + 1) {
            Some(script) => {
                let script = script.clone();
                parse_into(&script, substituted, depth + 1, out)?;
                argv.clear();
                Ok(())
            }
            None => undetermined("`-c` without a command string"),
        },
        // `bash script.sh` runs a script: the shell itself is the program.
        None => Ok(()),
    }
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
                    return Ok(Tok::Redirect { writes_file: false });
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
                return Ok(Tok::Redirect { writes_file: false });
            }
            if self.peek(0) == Some('&') || self.peek(0) == Some('>') {
                self.pos += 1;
            }
            self.skip_blanks();
            self.word()?;
            return Ok(Tok::Redirect { writes_file: false });
        }
        // `>`, `>>`, `>|`, `>&`
        if matches!(self.peek(0), Some('>' | '|')) {
            self.pos += 1;
        }
        if self.peek(0) == Some('&') {
            self.pos += 1;
            self.skip_blanks();
            let (target, _) = self.word()?;
            let to_fd = target.chars().all(|c| c.is_ascii_digit()) || target == "-";
            return Ok(Tok::Redirect {
                writes_file: !to_fd,
            });
        }
        self.redirect_target()
    }

    fn redirect_target(&mut self) -> Result<Tok, Undetermined> {
        self.skip_blanks();
        let (target, _) = self.word()?;
        if target.is_empty() {
            return undetermined("redirection without a target");
        }
        Ok(Tok::Redirect {
            writes_file: target != "/dev/null"
                && target != "/dev/stdout"
                && target != "/dev/stderr",
        })
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
                Ok(true)
            }
            Some('(') => {
                self.pos += 2;
                let inner = self.balanced(')')?;
                self.subs.push(inner);
                Ok(true)
            }
            Some('{') => {
                self.pos += 2;
                let inner = self.balanced('}')?;
                no_hidden_substitution(&inner)?;
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
    fn redirections_are_seen() {
        let s = segments("ls > out.txt 2>&1").unwrap();
        assert!(s[0].writes_file);
        let s = segments("ls 2>&1 >/dev/null").unwrap();
        assert!(!s[0].writes_file);
    }
}
