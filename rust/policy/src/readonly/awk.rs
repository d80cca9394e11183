//! awk under the read-only sandbox: a program given on the command line that only reads its
//! input and prints. Refused: anything that runs a command (`system()`, `print | "cmd"`,
//! `"cmd" | getline`, gawk's `|&` coprocesses), writes (`print > "f"`, `printf >> "f"`),
//! loads or names code (`-f`, `-e`/`--source`, `-i`/`@include`, `-l`/`@load`, gawk's
//! indirect calls `@f()`, which reach `system` too), gawk's network files (`/inet/…`), and
//! gawk's options that write (`--dump-variables`, `--profile`, `--pretty-print`) or read
//! commands (`--debug`). The program text is scanned, not parsed: whatever the scan cannot
//! tell apart (a `>` inside `print` that is a comparison) is refused.

use super::args::is_dynamic;

/// The options an awk (gawk, mawk, busybox, one-true-awk) may get: `-F fs`, `-v var=value`,
/// and gawk's switches that only change how the program is read.
pub(super) fn awk(args: &[String]) -> bool {
    const VALUED: &[&str] = &["-F", "-v", "--field-separator", "--assign"];
    const FLAGS: &[&str] = &[
        "-b",
        "--characters-as-bytes",
        "-c",
        "--traditional",
        "-P",
        "--posix",
        "-r",
        "--re-interval",
        "-S",
        "--sandbox",
        "-M",
        "--bignum",
        "-n",
        "--non-decimal-data",
        "-s",
        "--no-optimize",
    ];
    let mut i = 0;
    let program = loop {
        let Some(a) = args.get(i) else {
            return false;
        };
        i += 1;
        // A computed word before the program may become `-f evil.awk` or the program itself.
        if is_dynamic(a) {
            return false;
        }
        if a == "--" {
            match args.get(i) {
                Some(p) if !is_dynamic(p) => {
                    i += 1;
                    break p;
                }
                _ => return false,
            }
        }
        if !a.starts_with('-') || a == "-" {
            break a;
        }
        if FLAGS.contains(&a.as_str()) {
            continue;
        }
        // `-F:` / `-vx=1` attached, `--assign=x=1`, or the value in the next word.
        let attached = ["-F", "-v"].iter().any(|o| a.len() > 2 && a.starts_with(o))
            || ["--field-separator=", "--assign="]
                .iter()
                .any(|o| a.starts_with(o));
        if attached {
            continue;
        }
        if VALUED.contains(&a.as_str()) {
            match args.get(i) {
                Some(v) if !is_dynamic(v) => i += 1,
                _ => return false,
            }
            continue;
        }
        return false;
    };
    // After the program every word is an input file or a `var=value` assignment; neither
    // runs anything, but a file named `/inet/…` is a socket to gawk. gawk, mawk, busybox
    // and one-true-awk all stop reading options at the program text, so a computed word
    // there is an operand; a written one that looks like an option is refused all the same.
    program_is_safe(program)
        && args[i..]
            .iter()
            .all(|a| !a.contains("/inet") && (a == "-" || !a.starts_with('-')))
}

/// Whether an awk program text only reads and prints to standard output.
pub(super) fn program_is_safe(text: &str) -> bool {
    scan(text, true)
}

/// Whether an awk program text may run a command or load code (`system`, a pipe outside
/// strings and regexes, `@`): what makes the shell lexer call a line undetermined. Print
/// redirections to files are not commands and are left to the read-only check.
pub(crate) fn may_run_commands(text: &str) -> bool {
    !scan(text, false)
}

fn scan(text: &str, refuse_redirection: bool) -> bool {
    if text.contains("/inet") {
        return false;
    }
    let c: Vec<char> = text.chars().collect();
    let mut i = 0;
    // The last significant character of code: decides whether `/` opens a regex.
    let mut prev: Option<char> = None;
    // Inside a `print`/`printf` statement, at which parenthesis depth it started.
    let mut print_depth: Option<i32> = None;
    let mut depth = 0i32;
    while i < c.len() {
        let ch = c[i];
        match ch {
            '"' => {
                // A string literal: skipped to its closing quote.
                i += 1;
                while i < c.len() && c[i] != '"' {
                    if c[i] == '\n' {
                        return false;
                    }
                    i += if c[i] == '\\' { 2 } else { 1 };
                }
                if i >= c.len() {
                    return false;
                }
                prev = Some('"');
                i += 1;
                continue;
            }
            '/' if regex_may_start(prev) => {
                // A regex literal: skipped to the first unescaped `/` (a `/` inside a
                // bracket ends it here even where gawk would not: what follows is then
                // scanned as code, which only refuses more).
                i += 1;
                while i < c.len() && c[i] != '/' {
                    if c[i] == '\n' {
                        return false;
                    }
                    i += if c[i] == '\\' { 2 } else { 1 };
                }
                if i >= c.len() {
                    return false;
                }
                prev = Some('/');
                i += 1;
                continue;
            }
            '#' => {
                while i < c.len() && c[i] != '\n' {
                    i += 1;
                }
                continue;
            }
            // Pipes to and from commands, coprocesses; `||` is a logical or.
            '|' => {
                if c.get(i + 1) == Some(&'|') {
                    i += 2;
                    prev = Some('|');
                    continue;
                }
                return false;
            }
            // `@load`, `@include`, `@namespace`, and indirect calls (`@f()`, `f = "system"`).
            '@' => return false,
            // A redirection inside `print`/`printf` (a `>` there outside parentheses).
            '>' if refuse_redirection && print_depth.is_some_and(|d| d == depth) => {
                return false;
            }
            '(' => depth += 1,
            ')' => depth -= 1,
            ';' | '\n' | '{' | '}' => print_depth = None,
            _ => {}
        }
        if ch.is_ascii_alphabetic() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_ascii_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            let word: String = c[start..i].iter().collect();
            match word.as_str() {
                // `PROCINFO["sorted_in"]` names a function gawk calls.
                "system" | "PROCINFO" => return false,
                "print" | "printf" => print_depth = Some(depth),
                _ => {}
            }
            prev = Some('a');
            continue;
        }
        if !ch.is_whitespace() {
            prev = Some(ch);
        }
        i += 1;
    }
    true
}

/// Whether a `/` after `prev` (the last significant character) opens a regex: only where no
/// operand precedes it, so it cannot be a division. After an identifier, a number, `)` or
/// `]` it is a division, and its text is scanned as code.
fn regex_may_start(prev: Option<char>) -> bool {
    match prev {
        None => true,
        Some(p) => matches!(
            p,
            '(' | ',' | '{' | '}' | ';' | '!' | '~' | '&' | '|' | '?' | ':' | '=' | '\n'
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn programs_that_only_print() {
        for p in [
            "{print $1}",
            "{ print $1, $3 }",
            "$3 > 10",
            "$3 > 10 { print $1 }",
            "/foo|bar/ { n++ } END { print n }",
            "NR==1 || /x/",
            "BEGIN { FS=\":\" } { print $1 }",
            "{ s += $2 } END { printf \"%d\\n\", s }",
            "{ print ($1 > $2) }",
            "length($0) > 80",
            "{ while ((getline line < \"other\") > 0) print line }",
            "{ a[$1]++ } END { for (k in a) print k, a[k] }",
            "# a comment with | and >\n{ print }",
            "{ print \"a | b > c\" }",
            "{ print \"100%\" }",
            "{ x = $1 / 2; print x }",
        ] {
            assert!(program_is_safe(p), "{p}");
        }
    }

    #[test]
    fn programs_that_run_write_or_load() {
        for p in [
            "BEGIN { system(\"rm x\") }",
            "BEGIN{system(\"touch x\")}",
            "{ print | \"sh\" }",
            "{ print $0 | \"tee out\" }",
            "BEGIN { \"date\" | getline d }",
            "BEGIN { \"cat\" |& getline }",
            "{ print > \"out\" }",
            "{ print >> \"out\" }",
            "{ printf \"%s\", $0 > \"out\" }",
            "{ print $1, $2 > $3 }",
            "{ if (x) print > \"f\" }",
            "@load \"filefuncs\"",
            "@include \"lib.awk\"",
            "BEGIN { f = \"sys\" \"tem\"; @f(\"rm x\") }",
            "BEGIN { getline < \"/inet/tcp/0/example.com/80\" }",
            "{ x = $1 / 2 | \"sh\" }",
            "{ print \"x\" > \"/dev/stderr\" }",
            "BEGIN { print \"unterminated }",
            "/unterminated",
        ] {
            assert!(!program_is_safe(p), "{p}");
        }
    }

    #[test]
    fn options() {
        assert!(awk(&v(&["{print $1}", "f"])));
        assert!(awk(&v(&["-F:", "{print $1}", "/etc/passwd"])));
        assert!(awk(&v(&["-F", ",", "-v", "n=2", "{print $n}", "f", "g"])));
        assert!(awk(&v(&["--", "{print}", "f"])));
        assert!(awk(&v(&["{print}", ""])), "computed input files are files");
        assert!(!awk(&v(&["-f", "prog.awk", "f"])));
        assert!(!awk(&v(&["-fprog.awk", "f"])));
        assert!(!awk(&v(&["--file=prog.awk"])));
        assert!(!awk(&v(&["-e", "{print}"])));
        assert!(!awk(&v(&["--source", "{print}"])));
        assert!(!awk(&v(&["-i", "lib", "{print}"])));
        assert!(!awk(&v(&["-l", "filefuncs", "{print}"])));
        assert!(!awk(&v(&["-d", "{print}"])));
        assert!(!awk(&v(&["--dump-variables=out", "{print}"])));
        assert!(!awk(&v(&["-p", "{print}"])));
        assert!(!awk(&v(&["--profile", "{print}"])));
        assert!(!awk(&v(&["-o", "{print}"])));
        assert!(!awk(&v(&["-D", "{print}"])));
        assert!(!awk(&v(&["-W", "exec", "x"])));
        assert!(!awk(&v(&["", "f"])), "a computed program");
        assert!(!awk(&v(&["-v", "", "{print}"])));
        assert!(!awk(&v(&["{print}", "/inet/tcp/0/h/80"])));
        assert!(!awk(&v(&[])));
        assert!(!awk(&v(&["{print}", "-f", "evil.awk"])));
    }
}
