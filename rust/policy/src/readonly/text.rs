//! Text and file programs that have a writing or executing form: each is read-only only in
//! the forms listed here (GNU coreutils/findutils/sed, ripgrep, fd, xxd).

use super::args::{
    Parsed, Spec, is_dynamic, long_abbreviates, parse, short_bundle_has, words_are_static,
};

/// `sed`: no `-i` in any spelling (`-i`, `-ni`, `-Ei`, `--in-place[=SUF]`), no `-f FILE`
/// (the script is then unknown), and a script without `w`/`W`/`e` or `s///w`/`s///e`.
pub(super) fn sed(args: &[String]) -> bool {
    const SPEC: Spec = Spec {
        flags: "nErszub",
        valued: "el",
        optional: "",
        long_flags: &[
            "quiet",
            "silent",
            "regexp-extended",
            "separate",
            "null-data",
            "unbuffered",
            "posix",
            "debug",
            "sandbox",
            "binary",
            "follow-symlinks",
            "zero-terminated",
        ],
        long_valued: &["expression", "line-length"],
        long_optional: &[],
    };
    let Some(p) = parse(args, &SPEC) else {
        return false;
    };
    let scripts: Vec<&str> = p
        .values
        .iter()
        .filter(|(o, _)| o == "-e" || o == "--expression")
        .map(|(_, v)| v.as_str())
        .collect();
    let script = if scripts.is_empty() {
        match p.operands.first() {
            Some(s) => s.clone(),
            None => return false,
        }
    } else {
        scripts.join("\n")
    };
    sed_script_is_safe(&script)
}

/// Whether a GNU sed script only reads and prints. Anything it does not recognise is unsafe.
pub(super) fn sed_script_is_safe(script: &str) -> bool {
    let c: Vec<char> = script.chars().collect();
    let mut i = 0;
    // Where a label, file name or version argument ends: the earliest place any sed could
    // end it (GNU sed ends a label at a blank: `:a e` is a label and the `e` command), so
    // that a command hidden after it is still seen.
    let to_separator = |i: &mut usize| {
        while c.get(*i).is_some_and(|x| *x == ' ' || *x == '\t') {
            *i += 1;
        }
        while *i < c.len() && !matches!(c[*i], '\n' | ';' | ' ' | '\t' | '}') {
            *i += 1;
        }
    };
    // Skips a delimited part (`/re/`, `s` parts) starting after the opening delimiter.
    let delimited = |i: &mut usize, d: char| -> bool {
        while *i < c.len() {
            if c[*i] == '\\' {
                *i += 2;
                continue;
            }
            if c[*i] == d {
                *i += 1;
                return true;
            }
            *i += 1;
        }
        false
    };
    let address = |i: &mut usize| -> bool {
        match c.get(*i) {
            Some(d) if d.is_ascii_digit() => {
                while c.get(*i).is_some_and(|x| x.is_ascii_digit() || *x == '~') {
                    *i += 1;
                }
            }
            Some('$') => *i += 1,
            Some('/') => {
                *i += 1;
                if !delimited(i, '/') {
                    return false;
                }
                while matches!(c.get(*i), Some('I' | 'M')) {
                    *i += 1;
                }
            }
            Some('\\') => {
                let Some(&d) = c.get(*i + 1) else {
                    return false;
                };
                *i += 2;
                if !delimited(i, d) {
                    return false;
                }
                while matches!(c.get(*i), Some('I' | 'M')) {
                    *i += 1;
                }
            }
            _ => {}
        }
        true
    };
    loop {
        while i < c.len() && (c[i].is_whitespace() || c[i] == ';') {
            i += 1;
        }
        let Some(&ch) = c.get(i) else {
            return true;
        };
        if ch == '#' {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
            continue;
        }
        if !address(&mut i) {
            return false;
        }
        if c.get(i) == Some(&',') {
            i += 1;
            while c.get(i).is_some_and(|x| *x == ' ') {
                i += 1;
            }
            if matches!(c.get(i), Some('+' | '~')) {
                i += 1;
            }
            if !address(&mut i) {
                return false;
            }
        }
        while c.get(i).is_some_and(|x| x.is_whitespace() || *x == '!') {
            i += 1;
        }
        let Some(&cmd) = c.get(i) else {
            return false;
        };
        i += 1;
        match cmd {
            '{' | '}' | '=' | 'd' | 'D' | 'g' | 'G' | 'h' | 'H' | 'n' | 'N' | 'p' | 'P' | 'x'
            | 'z' | 'F' => {}
            'l' | 'L' | 'q' | 'Q' => {
                while c.get(i).is_some_and(|x| x.is_ascii_digit() || *x == ' ') {
                    i += 1;
                }
            }
            // Text to the end of the line (a backslash continues it).
            'a' | 'i' | 'c' => {
                while i < c.len() && c[i] != '\n' {
                    i += if c[i] == '\\' { 2 } else { 1 };
                }
            }
            // Labels, files read (`r`/`R` only read), versions.
            ':' | 'b' | 't' | 'T' | 'r' | 'R' | 'v' => to_separator(&mut i),
            's' => {
                let Some(&d) = c.get(i) else {
                    return false;
                };
                if d == '\n' || d == '\\' {
                    return false;
                }
                i += 1;
                if !delimited(&mut i, d) || !delimited(&mut i, d) {
                    return false;
                }
                while let Some(&f) = c.get(i) {
                    match f {
                        'g' | 'p' | 'i' | 'I' | 'm' | 'M' => i += 1,
                        f if f.is_ascii_digit() => i += 1,
                        // `w FILE` writes, `e` runs the pattern space as a command.
                        'w' | 'e' => return false,
                        _ => break,
                    }
                }
            }
            'y' => {
                let Some(&d) = c.get(i) else {
                    return false;
                };
                i += 1;
                if !delimited(&mut i, d) || !delimited(&mut i, d) {
                    return false;
                }
            }
            // `w`/`W` write a file, `e` runs a command; anything else is unknown.
            _ => return false,
        }
    }
}

/// `sort`: no `-o`/`--output` in any spelling (bundled `-uo f` included), no
/// `--compress-program` (runs a program), no `-T` (writes temporary files where told).
pub(super) fn sort(args: &[String]) -> bool {
    sort_with(args, false)
}

/// `sort` as [`sort`], and with `temp_dir` also `-T DIR`/`--temporary-directory=DIR`: the
/// temporary files are the only thing it writes, which the read-only sandbox bounds.
pub(super) fn sort_with(args: &[String], temp_dir: bool) -> bool {
    const LONG_VALUED_TEMP: &[&str] = &[
        "key",
        "field-separator",
        "buffer-size",
        "parallel",
        "random-source",
        "files0-from",
        "batch-size",
        "sort",
        "temporary-directory",
    ];
    let spec = Spec {
        flags: "bdfgiMhnRrVcCmsuz",
        valued: if temp_dir { "ktST" } else { "ktS" },
        optional: "",
        long_flags: &[
            "ignore-leading-blanks",
            "dictionary-order",
            "ignore-case",
            "general-numeric-sort",
            "ignore-nonprinting",
            "month-sort",
            "human-numeric-sort",
            "numeric-sort",
            "random-sort",
            "reverse",
            "version-sort",
            "merge",
            "stable",
            "unique",
            "zero-terminated",
            "debug",
        ],
        long_valued: &[
            "key",
            "field-separator",
            "buffer-size",
            "parallel",
            "random-source",
            "files0-from",
            "batch-size",
            "sort",
        ],
        long_optional: &["check"],
    };
    let spec = if temp_dir {
        Spec {
            long_valued: LONG_VALUED_TEMP,
            ..spec
        }
    } else {
        spec
    };
    parse(args, &spec).is_some()
}

/// Whether a program whose second operand is an output file (`uniq IN OUT`) has at most one
/// operand, and as its last word: with `POSIXLY_CORRECT` in the environment, `uniq in -c`
/// writes a file named `-c`. (A glob that could become several words is a computed word,
/// refused by the reading.)
fn one_input_last(p: &Parsed, args: &[String]) -> bool {
    p.operands.len() <= 1 && p.first_operand_at.is_none_or(|i| i + 1 == args.len())
}

/// `uniq [IN]`: a second operand is written.
pub(super) fn uniq(args: &[String]) -> bool {
    const SPEC: Spec = Spec {
        flags: "cdDiuz",
        valued: "fsw",
        optional: "",
        long_flags: &[
            "count",
            "repeated",
            "ignore-case",
            "unique",
            "zero-terminated",
        ],
        long_valued: &["skip-fields", "skip-chars", "check-chars"],
        long_optional: &["all-repeated", "group"],
    };
    parse(args, &SPEC).is_some_and(|p| one_input_last(&p, args))
}

/// `xxd [IN]`: no `-r` (reverse writes binary, with `-s` into an existing file), and no
/// second operand (the output file). xxd reads an option by its first letter (`-ps` is `-p`)
/// and takes no option after a file name (`xxd in -p` writes a file named `-p`).
pub(super) fn xxd(args: &[String]) -> bool {
    const FLAGS: &str = "abCeEiuphdv";
    const VALUED: &str = "cglnosR";
    let mut operands: Vec<&String> = Vec::new();
    let mut i = 0;
    let mut only_operands = false;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if is_dynamic(a) {
            return false;
        }
        if only_operands || a == "-" || !a.starts_with('-') {
            operands.push(a);
            only_operands = true;
            continue;
        }
        if a == "--" {
            only_operands = true;
            continue;
        }
        let Some(letter) = a.trim_start_matches('-').chars().next() else {
            return false;
        };
        if VALUED.contains(letter) {
            // `-c12` / `-c 12` / `-s +100`: the value is attached or the next word.
            let single = a.trim_start_matches('-').len() == 1;
            if single {
                match args.get(i) {
                    Some(v) if !is_dynamic(v) => i += 1,
                    _ => return false,
                }
            }
        } else if !FLAGS.contains(letter) {
            return false;
        }
    }
    operands.len() <= 1
}

/// `base64`/`base32` to stdout: decoding or encoding; GNU has no output-file option (BSD's
/// `-o` is unknown here and so refused). One input at most.
pub(super) fn base64(args: &[String]) -> bool {
    const SPEC: Spec = Spec {
        flags: "di",
        valued: "w",
        optional: "",
        long_flags: &["decode", "ignore-garbage"],
        long_valued: &["wrap"],
        long_optional: &[],
    };
    parse(args, &SPEC).is_some_and(|p| one_input_last(&p, args))
}

/// `printf` (the bash builtin): `-v VAR` assigns, and an array subscript in VAR runs code.
pub(super) fn printf(args: &[String]) -> bool {
    match args.first() {
        None => true,
        Some(f) => !f.starts_with("-v") && !is_dynamic(f),
    }
}

/// `test`, `[`, `[[`: `-v 'a[$(cmd)]'` and `[[ x -eq 0 ]]` evaluate array subscripts and
/// arithmetic, which run command substitutions found in variable values.
pub(super) fn test(program: &str, args: &[String]) -> bool {
    const ARITH: &[&str] = &["-eq", "-ne", "-lt", "-le", "-gt", "-ge"];
    if args.iter().any(|a| a.contains("$(") || a.contains('`')) {
        return false;
    }
    for (k, a) in args.iter().enumerate() {
        if a == "-v"
            && args
                .get(k + 1)
                .is_none_or(|n| n.contains('[') || n.is_empty())
        {
            return false;
        }
        if program == "[[" && ARITH.contains(&a.as_str()) {
            let integer = |w: Option<&String>| {
                w.is_some_and(|w| {
                    let d = w.strip_prefix('-').unwrap_or(w);
                    !d.is_empty() && d.chars().all(|c| c.is_ascii_digit())
                })
            };
            if !integer(k.checked_sub(1).and_then(|p| args.get(p))) || !integer(args.get(k + 1)) {
                return false;
            }
        }
    }
    true
}

/// `date`: prints; `-s`/`--set` or a `MMDDhhmm` operand sets the clock. Operands only `+FMT`.
pub(super) fn date(args: &[String]) -> bool {
    const SPEC: Spec = Spec {
        flags: "uR",
        valued: "dfr",
        optional: "I",
        long_flags: &["utc", "universal", "rfc-email", "rfc-2822", "debug"],
        long_valued: &["date", "file", "reference", "rfc-3339", "resolution"],
        long_optional: &["iso-8601"],
    };
    parse(args, &SPEC)
        .is_some_and(|p| p.operands.len() <= 1 && p.operands.iter().all(|o| o.starts_with('+')))
}

/// `hostname`: prints; an operand, `-F`/`--file` or `-b` sets it.
pub(super) fn hostname(args: &[String]) -> bool {
    const SPEC: Spec = Spec {
        flags: "aAdfiIsy",
        valued: "",
        optional: "",
        long_flags: &[
            "alias",
            "all-fqdns",
            "domain",
            "fqdn",
            "long",
            "ip-address",
            "all-ip-addresses",
            "short",
            "nis",
            "yp",
        ],
        long_valued: &[],
        long_optional: &[],
    };
    parse(args, &SPEC).is_some_and(|p| p.operands.is_empty())
}

/// `tree`: every option only shapes the listing except `-o FILE` (bundles parsed per letter).
pub(super) fn tree(args: &[String]) -> bool {
    !args
        .iter()
        .any(|a| short_bundle_has(a, "o") || long_abbreviates(a, &["output"]))
}

/// `file`: reads; `-C`/`--compile` writes a compiled magic file.
pub(super) fn file(args: &[String]) -> bool {
    !args
        .iter()
        .any(|a| short_bundle_has(a, "C") || long_abbreviates(a, &["compile"]))
}

/// `find`: a table of tests, options and printing actions. `-exec`/`-execdir` are judged by
/// their inner program, which the lexer makes a segment of its own; `-ok*` prompts,
/// `-delete`, `-fprint*` and `-fls` write. Starting points may not expand into an expression.
pub(super) fn find(args: &[String]) -> bool {
    const NO_VALUE: &[&str] = &[
        "-empty",
        "-executable",
        "-readable",
        "-writable",
        "-nouser",
        "-nogroup",
        "-true",
        "-false",
        "-depth",
        "-d",
        "-mount",
        "-xdev",
        "-noleaf",
        "-ignore_readdir_race",
        "-noignore_readdir_race",
        "-daystart",
        "-follow",
        "-warn",
        "-nowarn",
        "-print",
        "-print0",
        "-ls",
        "-prune",
        "-quit",
        "(",
        ")",
        "!",
        ",",
        "-not",
        "-a",
        "-and",
        "-o",
        "-or",
    ];
    const ONE_VALUE: &[&str] = &[
        "-name",
        "-iname",
        "-path",
        "-ipath",
        "-wholename",
        "-iwholename",
        "-regex",
        "-iregex",
        "-lname",
        "-ilname",
        "-type",
        "-xtype",
        "-size",
        "-perm",
        "-user",
        "-group",
        "-uid",
        "-gid",
        "-links",
        "-inum",
        "-samefile",
        "-newer",
        "-anewer",
        "-cnewer",
        "-amin",
        "-atime",
        "-cmin",
        "-ctime",
        "-mmin",
        "-mtime",
        "-used",
        "-fstype",
        "-context",
        "-maxdepth",
        "-mindepth",
        "-regextype",
        "-files0-from",
        "-printf",
    ];
    let mut i = 0;
    // Global options before the starting points.
    while let Some(a) = args.get(i) {
        match a.as_str() {
            "-H" | "-L" | "-P" => i += 1,
            "-D" => i += 2,
            o if o.starts_with("-O") => i += 1,
            _ => break,
        }
    }
    // Starting points: everything before the first word that starts an expression.
    while let Some(a) = args.get(i) {
        if a.starts_with('-') || matches!(a.as_str(), "(" | "!" | ")" | ",") {
            break;
        }
        if is_dynamic(a) {
            return false;
        }
        i += 1;
    }
    while let Some(a) = args.get(i) {
        let a = a.as_str();
        i += 1;
        if is_dynamic(a) {
            return false;
        }
        if NO_VALUE.contains(&a) {
            continue;
        }
        let newer_xy =
            a.len() == 8 && a.starts_with("-newer") && a[6..].chars().all(|c| "amcBt".contains(c));
        if ONE_VALUE.contains(&a) || newer_xy {
            match args.get(i) {
                Some(v) if !is_dynamic(v) => i += 1,
                _ => return false,
            }
            continue;
        }
        if a == "-exec" || a == "-execdir" {
            match args[i..].iter().position(|w| w == ";" || w == "+") {
                Some(end) if end > 0 => i += end + 1,
                _ => return false,
            }
            continue;
        }
        return false;
    }
    true
}

/// `fd`: reads and lists; `-x`/`-X`/`--exec`/`--exec-batch` run a program. Short bundles
/// are checked per letter (`-Hx`), so an attached value containing `x` is refused too.
pub(super) fn fd(args: &[String]) -> bool {
    words_are_static(args)
        && !args
            .iter()
            .any(|a| short_bundle_has(a, "xX") || a.starts_with("--exec"))
}

/// `rg`: reads and searches; `--pre`/`--pre-glob` and `--hostname-bin` run a program,
/// `-z`/`--search-zip` run decompressors. ripgrep takes no abbreviated long options and has
/// no other option that writes or runs anything.
pub(super) fn rg(args: &[String]) -> bool {
    let mut only_operands = false;
    let mut glob_value = false;
    for a in args {
        // Paths after `--` cannot be options, whatever they expand to.
        if only_operands {
            continue;
        }
        if is_dynamic(a) {
            return false;
        }
        // The value of `-g`/`--glob`/`--iglob` is a glob by design (`rg -g '*.rs' x`).
        if std::mem::take(&mut glob_value) {
            continue;
        }
        glob_value = matches!(a.as_str(), "-g" | "--glob" | "--iglob");
        if a == "--" {
            only_operands = true;
            continue;
        }
        if short_bundle_has(a, "z")
            || a.starts_with("--pre")
            || a.starts_with("--search-zip")
            || a.starts_with("--hostname-bin")
        {
            return false;
        }
    }
    true
}
