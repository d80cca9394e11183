//! A getopt-like reading of one program's arguments against a table of the options known to
//! be safe. Anything not in the table — an unknown option, an abbreviated long option (GNU
//! `getopt_long` would expand `--out` to `--output`), a word whose text is computed at run
//! time — makes the reading fail, and the segment is then not read-only.

/// The options a program may be given while it stays read-only.
#[derive(Default)]
pub(super) struct Spec {
    /// Short options without a value (bundling allowed: `-nr`).
    pub flags: &'static str,
    /// Short options with a value, attached (`-k2`) or in the next word (`-k 2`).
    pub valued: &'static str,
    /// Short options with an optional value, only ever attached (`-Iseconds`).
    pub optional: &'static str,
    /// Long options without a value (`--unique`).
    pub long_flags: &'static [&'static str],
    /// Long options with a value: `--key=2` or `--key 2`.
    pub long_valued: &'static [&'static str],
    /// Long options with an optional value, only ever `--check=quiet`.
    pub long_optional: &'static [&'static str],
}

/// What a successful reading found.
#[derive(Debug, Default)]
pub(super) struct Parsed {
    /// Options seen, as written without their value: `-n`, `--key`.
    pub options: Vec<String>,
    /// `(option, value)` for each option that took a value.
    pub values: Vec<(String, String)>,
    /// Operands (after `--` too), in order.
    pub operands: Vec<String>,
    /// Where the first operand is among the arguments.
    pub first_operand_at: Option<usize>,
}

impl Parsed {
    pub fn has(&self, opt: &str) -> bool {
        self.options.iter().any(|o| o == opt)
    }
}

/// A word whose text is computed at run time. [`super::segment_is_read_only`] hands such
/// words (`$X`, `"-$X"`, `s/a/b/$F`, unquoted globs) to the per-program checks as an empty
/// text: after expansion and word splitting they may be any number of words, options
/// included.
pub(super) fn is_dynamic(w: &str) -> bool {
    w.is_empty()
}

/// Whether every word is static (an unquoted glob is not: a planted file named `-ofoo`
/// matches `*`).
pub(super) fn words_are_static(args: &[String]) -> bool {
    args.iter().all(|a| !is_dynamic(a))
}

/// Reads `args` against `spec`. `None`: an unknown option, a missing value, or a word that
/// may turn into an option at run time.
pub(super) fn parse(args: &[String], spec: &Spec) -> Option<Parsed> {
    let mut p = Parsed::default();
    let mut i = 0;
    let mut only_operands = false;
    while i < args.len() {
        let a = args[i].as_str();
        i += 1;
        if is_dynamic(a) {
            return None;
        }
        if only_operands || a == "-" || !a.starts_with('-') {
            p.first_operand_at.get_or_insert(i - 1);
            p.operands.push(a.to_string());
            continue;
        }
        if a == "--" {
            only_operands = true;
            continue;
        }
        if let Some(long) = a.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (long, None),
            };
            let opt = format!("--{name}");
            if spec.long_flags.contains(&name) && value.is_none() {
                p.options.push(opt);
            } else if spec.long_optional.contains(&name) {
                if let Some(v) = value {
                    p.values.push((opt.clone(), v));
                }
                p.options.push(opt);
            } else if spec.long_valued.contains(&name) {
                let v = match value {
                    Some(v) => v,
                    None => {
                        let v = args.get(i)?.clone();
                        i += 1;
                        if is_dynamic(&v) {
                            return None;
                        }
                        v
                    }
                };
                p.values.push((opt.clone(), v));
                p.options.push(opt);
            } else {
                return None;
            }
            continue;
        }
        // A bundle of short options: `-nr`, `-uo f`, `-k2`.
        let chars: Vec<char> = a[1..].chars().collect();
        let mut k = 0;
        while k < chars.len() {
            let c = chars[k];
            let opt = format!("-{c}");
            k += 1;
            if spec.flags.contains(c) {
                p.options.push(opt);
            } else if spec.optional.contains(c) {
                let rest: String = chars[k..].iter().collect();
                if !rest.is_empty() {
                    p.values.push((opt.clone(), rest));
                }
                p.options.push(opt);
                break;
            } else if spec.valued.contains(c) {
                let rest: String = chars[k..].iter().collect();
                let v = if rest.is_empty() {
                    let v = args.get(i)?.clone();
                    i += 1;
                    if is_dynamic(&v) {
                        return None;
                    }
                    v
                } else {
                    rest
                };
                p.values.push((opt.clone(), v));
                p.options.push(opt);
                break;
            } else {
                return None;
            }
        }
    }
    Some(p)
}

/// Whether the long option `arg` (`--name` or `--name=value`) is, or abbreviates, one of
/// `names` (GNU `getopt_long` and git's parse-options accept unambiguous prefixes).
pub(super) fn long_abbreviates(arg: &str, names: &[&str]) -> bool {
    let Some(long) = arg.strip_prefix("--") else {
        return false;
    };
    let name = long.split_once('=').map_or(long, |(n, _)| n);
    !name.is_empty() && names.iter().any(|n| n.starts_with(name))
}

/// Whether a short-option bundle (`-abc`, not `--x`) contains one of `letters`.
pub(super) fn short_bundle_has(arg: &str, letters: &str) -> bool {
    arg.starts_with('-') && !arg.starts_with("--") && arg[1..].contains(|c| letters.contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    const SORT_LIKE: Spec = Spec {
        flags: "nru",
        valued: "k",
        optional: "",
        long_flags: &["unique"],
        long_valued: &["key"],
        long_optional: &["check"],
    };

    #[test]
    fn bundles_values_and_unknowns() {
        let p = parse(&v(&["-nr", "-k2", "--key", "3", "f"]), &SORT_LIKE).unwrap();
        assert_eq!(p.operands, v(&["f"]));
        assert!(p.has("-n") && p.has("-r") && p.has("--key"));
        assert!(parse(&v(&["-uo", "f"]), &SORT_LIKE).is_none());
        assert!(parse(&v(&["--uniq"]), &SORT_LIKE).is_none());
        assert!(parse(&v(&["--unique=x"]), &SORT_LIKE).is_none());
        assert!(parse(&v(&["-k"]), &SORT_LIKE).is_none());
        assert!(parse(&v(&["", "f"]), &SORT_LIKE).is_none());
        assert_eq!(parse(&v(&["-"]), &SORT_LIKE).unwrap().operands, v(&["-"]));
        let p = parse(&v(&["--", "-o", "x"]), &SORT_LIKE).unwrap();
        assert_eq!(p.operands, v(&["-o", "x"]));
    }

    #[test]
    fn abbreviations() {
        assert!(long_abbreviates("--out=f", &["output"]));
        assert!(long_abbreviates("--output", &["output"]));
        assert!(!long_abbreviates("--oneline", &["output"]));
        assert!(short_bundle_has("-nO", "O"));
        assert!(!short_bundle_has("--Other", "O"));
    }
}
