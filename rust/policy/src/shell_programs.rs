//! Programs whose own language can run a shell command, for the bash lexer (`shell.rs`):
//! the vi family and `ex`/`ed` (`:!cmd`), awk (`system()`, `print | "cmd"`, `"cmd" | getline`)
//! and sed (the `e` command, the `e` flag of `s///`). Their programs are not parsed as
//! command lines: a program that can run a command is undetermined (the policy never
//! permits it silently, and a deny rule whose program word appears in it refuses it), one
//! that cannot is an ordinary segment.

/// A program word and whether its value is only known at run time.
type W = (String, bool);

/// Editors that run Ex commands, from options (`-c`, `--cmd`, `+cmd`, `-S`, `-u`, Ex mode
/// `-e`/`-E`) or as keystrokes from an input that is not a terminal (`… | vim f`).
const VI_EDITORS: &[&str] = &[
    "vim", "vi", "nvim", "view", "vimdiff", "gvim", "gview", "rvim", "rview", "evim", "vimx",
    "nvi", "elvis",
];

/// Line editors: every command they run comes from their input or a script.
const LINE_EDITORS: &[&str] = &["ex", "ed", "red"];

/// Why `program args…` may run a command its own language names, `None` when it cannot.
/// `stdin_fed`: the line gives the program its input (a pipe, `<`, a here-document).
pub(crate) fn runs_commands(program: &str, args: &[W], stdin_fed: bool) -> Option<String> {
    let info_only = !args.is_empty()
        && args
            .iter()
            .all(|a| !a.1 && matches!(a.0.as_str(), "--version" | "--help" | "-h"));
    if LINE_EDITORS.contains(&program) && !info_only {
        return Some(format!(
            "`{program}` runs the editor commands of its input (`!cmd` runs a shell)"
        ));
    }
    if VI_EDITORS.contains(&program) {
        let commands = args.iter().any(|a| {
            let t = a.0.as_str();
            a.1 || t.starts_with('+')
                || matches!(
                    t,
                    "--cmd" | "--remote-send" | "--remote-expr" | "--startuptime"
                )
                || t.starts_with('-')
                    && !t.starts_with("--")
                    && t[1..].chars().any(|c| "cSsuUeEy".contains(c))
        });
        if commands || stdin_fed {
            return Some(format!(
                "`{program}` runs editor commands given to it (`:!cmd` runs a shell)"
            ));
        }
        return None;
    }
    match program {
        "awk" | "gawk" | "mawk" | "nawk" => awk_runs_commands(args),
        "sed" | "gsed" => sed_runs_commands(args),
        _ => None,
    }
}

/// awk: a program from a file (`-f`), a computed one, or one calling `system()`, piping to or
/// from a command (`|`, `|&`) or loading code (`@load`, `@include`, `-l`, `-i`).
fn awk_runs_commands(args: &[W]) -> Option<String> {
    let why = |w: &str| Some(format!("`awk` {w}"));
    let mut texts: Vec<&W> = Vec::new();
    let mut k = 0;
    let mut from_options = false;
    while k < args.len() {
        let a = &args[k];
        let t = a.0.as_str();
        if a.1 && t.starts_with('-') {
            return why("has a computed option");
        }
        if t == "--" {
            k += 1;
            break;
        }
        if !t.starts_with('-') || t == "-" {
            break;
        }
        let (name, attached) = match t.split_once('=') {
            Some((n, v)) if t.starts_with("--") => (n, Some(v)),
            _ if !t.starts_with("--") && t.len() > 2 => (&t[..2], Some(&t[2..])),
            _ => (t, None),
        };
        let value = |k: &mut usize| -> Option<&W> {
            if attached.is_some() {
                None
            } else {
                *k += 1;
                args.get(*k)
            }
        };
        match name {
            "-f" | "--file" | "-E" | "--exec" | "-i" | "--include" | "-l" | "--load" => {
                return why("runs a program read from a file");
            }
            "-e" | "--source" => {
                from_options = true;
                match (attached, value(&mut k)) {
                    (Some(_), _) => {
                        if a.1 {
                            return why("runs a computed program");
                        }
                        texts.push(a);
                    }
                    (None, Some(v)) => texts.push(v),
                    (None, None) => return why("-e without a program"),
                }
            }
            "-W" => {
                let v = attached
                    .map(str::to_string)
                    .or_else(|| value(&mut k).map(|v| v.0.clone()))
                    .unwrap_or_default();
                if v.starts_with('e') || v.starts_with('f') {
                    return why("-W exec/file runs a program read from a file");
                }
            }
            "-v" | "-F" | "--assign" | "--field-separator" => {
                value(&mut k);
            }
            _ => {}
        }
        k += 1;
    }
    if !from_options {
        match args.get(k) {
            Some(p) => texts.push(p),
            None => return None, // usage, `--version`: no program runs
        }
    }
    for p in texts {
        if p.1 {
            return why("runs a program computed at run time");
        }
        // Pipes inside strings and regexes (`/a|b/`) are text; see readonly::awk.
        if p.0.contains("system") || crate::readonly::awk_may_run_commands(&p.0) {
            return why("calls system() or pipes to or from a command");
        }
    }
    None
}

/// sed: a script from a file (`-f`), a computed one, or one with the `e` command or the `e`
/// flag of `s` (each runs a shell command).
fn sed_runs_commands(args: &[W]) -> Option<String> {
    let why = |w: &str| Some(format!("`sed` {w}"));
    let mut scripts: Vec<W> = Vec::new();
    let mut from_options = false;
    let mut operands = Vec::new();
    let mut k = 0;
    let mut options_done = false;
    while k < args.len() {
        let a = &args[k];
        let t = a.0.as_str();
        if options_done || !t.starts_with('-') || t == "-" {
            operands.push(a);
            k += 1;
            continue;
        }
        if a.1 {
            return why("has a computed option");
        }
        if t == "--" {
            options_done = true;
        } else if let Some(long) = t.strip_prefix("--") {
            let (name, val) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (long, None),
            };
            let is = |full: &str| name.len() >= 2 && full.starts_with(name);
            if is("expression") {
                from_options = true;
                match val.or_else(|| {
                    k += 1;
                    args.get(k).map(|v| v.0.clone())
                }) {
                    Some(v) => scripts.push((v, args.get(k).is_some_and(|v| v.1))),
                    None => return why("--expression without a script"),
                }
            } else if is("file") {
                return why("runs a script read from a file");
            } else if is("line-length") && val.is_none() {
                k += 1;
            }
        } else {
            // A cluster of short options: `e`, `f` and `l` take the rest or the next word.
            let chars: Vec<char> = t[1..].chars().collect();
            for (j, c) in chars.iter().enumerate() {
                let rest: String = chars[j + 1..].iter().collect();
                let mut value = || {
                    if rest.is_empty() {
                        k += 1;
                        args.get(k).cloned()
                    } else {
                        Some((rest.clone(), false))
                    }
                };
                match c {
                    'e' => {
                        from_options = true;
                        match value() {
                            Some(v) => scripts.push(v),
                            None => return why("-e without a script"),
                        }
                        break;
                    }
                    'f' => return why("runs a script read from a file"),
                    'l' => {
                        value();
                        break;
                    }
                    // `-i[SUFFIX]`: the suffix is attached.
                    'i' => break,
                    _ => {}
                }
            }
        }
        k += 1;
    }
    if !from_options {
        match operands.first() {
            Some(s) => scripts.push((*s).clone()),
            None => return None, // usage, `--help`: no script runs
        }
    }
    for s in &scripts {
        if s.1 {
            return why("runs a script computed at run time");
        }
        if let Err(w) = sed_script_is_inert(&s.0) {
            return why(&w);
        }
    }
    None
}

/// Scans a sed script command by command; `Err` when one runs a shell command (`e`, the `e`
/// flag of `s`) or the script cannot be read with certainty.
fn sed_script_is_inert(script: &str) -> Result<(), String> {
    let c: Vec<char> = script.chars().collect();
    let mut i = 0;
    let skip_line = |i: &mut usize| {
        while *i < c.len() && c[*i] != '\n' {
            *i += 1;
        }
    };
    // A delimited part (`/re/`, the replacement): backslash escapes the next character.
    let delimited = |i: &mut usize, d: char| -> Result<(), String> {
        while *i < c.len() {
            match c[*i] {
                '\\' => *i += 2,
                x if x == d => {
                    *i += 1;
                    return Ok(());
                }
                _ => *i += 1,
            }
        }
        Err("has a script yuyao cannot read (an unterminated part)".into())
    };
    while i < c.len() {
        let ch = c[i];
        if ch.is_whitespace() || ch == ';' || ch == '}' || ch == '{' || ch == '!' {
            i += 1;
            continue;
        }
        // Addresses: line numbers, `$`, `/re/`, `\cREc`, ranges and steps.
        if ch.is_ascii_digit() || matches!(ch, '$' | ',' | '~' | '+') {
            i += 1;
            continue;
        }
        if ch == '/' {
            i += 1;
            delimited(&mut i, '/')?;
            while i < c.len() && matches!(c[i], 'I' | 'M') {
                i += 1;
            }
            continue;
        }
        if ch == '\\' {
            let Some(&d) = c.get(i + 1) else {
                return Err("has a script yuyao cannot read".into());
            };
            i += 2;
            delimited(&mut i, d)?;
            continue;
        }
        i += 1;
        match ch {
            'e' => return Err("runs a shell command (the `e` command)".into()),
            's' | 'y' => {
                let Some(&d) = c.get(i) else {
                    return Err("has a script yuyao cannot read".into());
                };
                if d == '\n' || d == '\\' {
                    return Err("has a script yuyao cannot read (an odd delimiter)".into());
                }
                i += 1;
                delimited(&mut i, d)?;
                delimited(&mut i, d)?;
                if ch == 's' {
                    // Flags up to the end of the command; `w FILE` takes the rest of the line.
                    while i < c.len() && !matches!(c[i], ';' | '\n' | '}') {
                        match c[i] {
                            'e' => {
                                return Err("runs a shell command (the `e` flag of `s`)".into());
                            }
                            'w' | 'W' => skip_line(&mut i),
                            _ => i += 1,
                        }
                    }
                }
            }
            // Text, file names and labels run to the end of the line.
            'a' | 'i' | 'c' | 'r' | 'R' | 'w' | 'W' | ':' => {
                // GNU one-liner `a\` followed by the text on the next line(s).
                while i < c.len() && c[i] != '\n' {
                    if c[i] == '\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            'b' | 't' | 'T' => {
                while i < c.len() && !matches!(c[i], ';' | '\n' | '}') {
                    i += 1;
                }
            }
            'q' | 'Q' | 'l' | 'L' => {
                while i < c.len() && (c[i].is_ascii_digit() || c[i] == ' ') {
                    i += 1;
                }
            }
            'd' | 'D' | 'g' | 'G' | 'h' | 'H' | 'n' | 'N' | 'p' | 'P' | 'x' | 'z' | 'F' | '='
            | '#' => {
                if ch == '#' {
                    skip_line(&mut i);
                }
            }
            'v' => {
                while i < c.len() && !matches!(c[i], ';' | '\n' | '}') {
                    i += 1;
                }
            }
            other => return Err(format!("has a command yuyao does not know ('{other}')")),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs_commands_w(program: &str, args: &[W]) -> Option<String> {
        runs_commands(program, args, false)
    }

    fn w(words: &[&str]) -> Vec<W> {
        words.iter().map(|s| (s.to_string(), false)).collect()
    }

    #[test]
    fn sed_scripts_that_run_commands() {
        for script in [
            "s/x/rm y/e",
            "1e rm y",
            "e",
            "s/.*/rm y/ep",
            "s|a|b|ge",
            "/re/ { s/a/b/e }",
            "1!e rm y",
            "s/a/b/;e",
        ] {
            assert!(sed_script_is_inert(script).is_err(), "{script}");
        }
        for script in [
            "s/x/y/",
            "s/e/E/g",
            "s/a\\/e/b/p",
            "/e/d",
            "1,$p",
            "y/abc/xyz/",
            "s/x/y/w out.txt",
            "a\\\nappended text with e",
            "$!N;P;D",
            ":loop; s/ee/e/; t loop",
            "\\,e,d",
        ] {
            assert_eq!(sed_script_is_inert(script), Ok(()), "{script}");
        }
    }

    #[test]
    fn sed_option_forms() {
        assert!(runs_commands_w("sed", &w(&["-n", "s/x/y/e"])).is_some());
        assert!(runs_commands_w("sed", &w(&["-ne", "s/x/y/e"])).is_some());
        assert!(runs_commands_w("sed", &w(&["--expression=1e rm x"])).is_some());
        assert!(runs_commands_w("sed", &w(&["-f", "prog.sed", "f"])).is_some());
        assert!(runs_commands_w("sed", &w(&["-i.bak", "-e", "s/a/b/", "f"])).is_none());
        assert!(runs_commands_w("sed", &w(&["-n", "s/e/E/p", "file"])).is_none());
        assert!(runs_commands_w("sed", &[("s/x/y/".into(), true)]).is_some());
    }

    #[test]
    fn awk_programs_that_run_commands() {
        for args in [
            &["BEGIN { system(\"rm x\") }"][..],
            &["{ print | \"sh\" }"],
            &["BEGIN { \"rm x\" | getline }"],
            &["-F:", "BEGIN { print |& \"sh\" }"],
            &["-f", "prog.awk"],
            &["-e", "BEGIN{system(\"x\")}"],
            &["-W", "exec", "p.awk"],
            &["@load \"x\"; BEGIN{}"],
        ] {
            assert!(runs_commands_w("awk", &w(args)).is_some(), "{args:?}");
        }
        for args in [
            &["{ print $2 }", "f"][..],
            &["-F", ":", "$1 == \"a\" || $2 { n++ } END { print n }"],
            &["-v", "x=system", "{ print x }"],
        ] {
            assert!(runs_commands_w("awk", &w(args)).is_none(), "{args:?}");
        }
    }

    #[test]
    fn editors_run_commands_unless_asked_for_their_version() {
        assert!(runs_commands("vim", &w(&["-es", "-c", "!rm x"]), false).is_some());
        assert!(runs_commands("vi", &w(&["+!rm x"]), false).is_some());
        assert!(runs_commands("ex", &w(&[]), false).is_some());
        assert!(runs_commands("ed", &w(&["f"]), false).is_some());
        // Keystrokes from a pipe or a here-document are commands too.
        assert!(runs_commands("vim", &w(&["file.txt"]), true).is_some());
        assert!(runs_commands("vim", &w(&["file.txt"]), false).is_none());
        assert!(runs_commands("ex", &w(&["--version"]), false).is_none());
    }
}
