//! A real bash parse (tree-sitter-bash) that backs the lexer of [`crate::shell`] (DESIGN §5).
//!
//! Every command line the lexer accepts is parsed again by the grammar, and it stays
//! determined only if
//! - the parse has no ERROR or MISSING node,
//! - every named node is of a kind on an allow-list of kinds the adjudicator understands
//!   (function definitions, `case`, C-style `for`, … are not on it),
//! - no command or process substitution hides inside `${…}` or `$((…))`,
//! - every command the grammar finds, with a literal name, is among the lexer's segments
//!   (or is a wrapper the lexer stripped, whose `-c` script is checked the same way), and no
//!   command name is computed (expansions, globs, brace expansion) where the lexer saw a
//!   literal.
//!
//! Anything else is [`Undetermined`]: the two independent readings must agree before a
//! command can be permitted.

use crate::shell::{Segment, Undetermined};
use std::cell::RefCell;
use tree_sitter::{Node, Parser};

thread_local! {
    static PARSER: RefCell<Option<Parser>> = const { RefCell::new(None) };
}

/// Named node kinds the adjudicator understands; any other kind is undetermined.
const UNDERSTOOD: &[&str] = &[
    "program",
    "comment",
    "command",
    "command_name",
    "word",
    "string",
    "string_content",
    "raw_string",
    "ansi_c_string",
    "translated_string",
    "concatenation",
    "simple_expansion",
    "expansion",
    "variable_name",
    "special_variable_name",
    "command_substitution",
    "process_substitution",
    "arithmetic_expansion",
    "number",
    "pipeline",
    "list",
    "subshell",
    "compound_statement",
    "redirected_statement",
    "file_redirect",
    "heredoc_redirect",
    "heredoc_start",
    "heredoc_body",
    "heredoc_content",
    "heredoc_end",
    "herestring_redirect",
    "file_descriptor",
    "variable_assignment",
    "variable_assignments",
    "negated_command",
    "if_statement",
    "elif_clause",
    "else_clause",
    "while_statement",
    "for_statement",
    "do_group",
    "test_command",
    "binary_expression",
    "unary_expression",
    "parenthesized_expression",
    "postfix_expression",
    "ternary_expression",
    "test_operator",
    "regex",
    "array",
    "subscript",
    "declaration_command",
    "unset_command",
];

fn undetermined<T>(why: impl Into<String>) -> Result<T, Undetermined> {
    Err(Undetermined(why.into()))
}

/// Confirms the lexer's reading of `cmd` (its segments `segs`) with the grammar. The
/// lexer bounds the nesting: it confirms every command string it parses in turn.
pub fn confirm(cmd: &str, segs: &[Segment]) -> Result<(), Undetermined> {
    // tree-sitter-bash's scanner reads out of bounds (and crashes the process) on `{`
    // followed by a code point far beyond the assigned planes (seen from U+65E20). No
    // command needs such characters: they are undetermined before the grammar sees them.
    if cmd.chars().any(|c| u32::from(c) > 0x3_FFFF) {
        return undetermined("characters outside the assigned Unicode planes");
    }
    let tree = PARSER.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            let mut p = Parser::new();
            p.set_language(&tree_sitter_bash::LANGUAGE.into()).ok()?;
            *slot = Some(p);
        }
        slot.as_mut()?.parse(cmd, None)
    });
    let Some(tree) = tree else {
        return undetermined("the bash parser is unavailable");
    };
    walk(tree.root_node(), cmd, segs, false)
}

fn walk(n: Node<'_>, src: &str, segs: &[Segment], hidden: bool) -> Result<(), Undetermined> {
    if n.is_error() || n.is_missing() {
        let at = n.start_position();
        return undetermined(format!(
            "bash syntax error (line {}, column {})",
            at.row + 1,
            at.column + 1
        ));
    }
    let kind = n.kind();
    if n.is_named() {
        if !UNDERSTOOD.contains(&kind) {
            return undetermined(format!(
                "'{}' is beyond what yuyao's shell adjudicator understands",
                kind.replace('_', " ")
            ));
        }
        if hidden && matches!(kind, "command_substitution" | "process_substitution") {
            return undetermined("a command substitution inside ${…} or $((…))");
        }
        if kind == "command" {
            check_command(n, src, segs)?;
        }
    }
    let hidden = hidden || matches!(kind, "expansion" | "arithmetic_expansion");
    let mut cursor = n.walk();
    for child in n.children(&mut cursor) {
        walk(child, src, segs, hidden)?;
    }
    Ok(())
}

fn check_command(n: Node<'_>, src: &str, segs: &[Segment]) -> Result<(), Undetermined> {
    let Some(name_node) = n.child_by_field_name("name") else {
        return Ok(()); // assignments only
    };
    let Some(name) = name_node.named_child(0).and_then(|c| literal(c, src)) else {
        return undetermined(format!(
            "the program name '{}' is computed at run time",
            &src[name_node.byte_range()]
        ));
    };
    let base = name.rsplit('/').next().unwrap_or(&name).to_string();
    // Wrappers (`sh -c`, `sudo`, `env -S`, …) are stripped by the lexer, which has every
    // command string it parses confirmed by this grammar in turn.
    if crate::shell::is_wrapper(&base)
        || segs
            .iter()
            .any(|s| s.program == base || s.wrappers.contains(&base))
    {
        return Ok(());
    }
    undetermined(format!(
        "the bash parse finds '{base}', which the lexer did not account for"
    ))
}

/// The word's value after quote removal, or `None` if it is computed at run time.
fn literal(n: Node<'_>, src: &str) -> Option<String> {
    let text = &src[n.byte_range()];
    let value = match n.kind() {
        "word" | "number" => {
            if text.contains(['*', '?', '[']) {
                return None;
            }
            unescape(text)
        }
        "raw_string" => text.get(1..text.len().saturating_sub(1))?.to_string(),
        "ansi_c_string" => {
            if text.contains('\\') {
                return None;
            }
            text.get(2..text.len().saturating_sub(1))?.to_string()
        }
        "string" => {
            let mut s = String::new();
            let mut cursor = n.walk();
            for c in n.named_children(&mut cursor) {
                if c.kind() != "string_content" {
                    return None;
                }
                s.push_str(&unescape_dq(&src[c.byte_range()]));
            }
            s
        }
        "concatenation" => {
            let mut s = String::new();
            let mut cursor = n.walk();
            for c in n.children(&mut cursor) {
                s.push_str(&literal(c, src)?);
            }
            s
        }
        _ => return None,
    };
    if value.contains('{') && value.contains('}') && (value.contains(',') || value.contains("..")) {
        return None; // brace expansion
    }
    Some(value)
}

fn unescape(t: &str) -> String {
    let mut out = String::new();
    let mut it = t.chars();
    while let Some(c) = it.next() {
        if c == '\\' {
            match it.next() {
                Some('\n') | None => {}
                Some(n) => out.push(n),
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn unescape_dq(t: &str) -> String {
    let mut out = String::new();
    let mut it = t.chars().peekable();
    while let Some(c) = it.next() {
        if c == '\\' && matches!(it.peek(), Some('"' | '\\' | '$' | '`')) {
            out.extend(it.next());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::shell::segments;

    #[test]
    fn far_code_points_never_reach_the_grammar() {
        // `{` + U+E0198 crashed tree-sitter-bash (a segfault, not a panic).
        for c in ["{\u{e0198}", "x{\u{10ffff}", "echo {\u{65e20}"] {
            assert!(segments(c).is_err(), "{c:?}");
        }
        assert!(segments("echo {\u{1f600}}").is_ok());
    }

    #[test]
    fn agreement_and_disagreement() {
        // Accepted by both.
        for c in [
            "ls | head",
            "sh -c 'cd a && rm b'",
            "echo $(rm x)",
            "find . -exec rm {} +",
        ] {
            assert!(segments(c).is_ok(), "{c}");
        }
        // Syntax the grammar rejects or does not understand.
        for c in ["ls &&", "f() { ls; }", "for ((i=0;i<2;i++)); do ls; done"] {
            assert!(segments(c).is_err(), "{c}");
        }
    }
}
