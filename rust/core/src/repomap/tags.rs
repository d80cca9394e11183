//! Definitions and references of one source file, from tree-sitter tag queries (the
//! grammars' own `tags.scm`, plus type references for Rust).

use serde::{Deserialize, Serialize};
use std::sync::OnceLock;
use tree_sitter::{Language, Parser, Query, QueryCursor, StreamingIterator};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    Python,
    Rust,
}

impl Lang {
    pub fn of(path: &std::path::Path) -> Option<Lang> {
        match path.extension()?.to_str()? {
            "py" | "pyi" => Some(Lang::Python),
            "rs" => Some(Lang::Rust),
            _ => None,
        }
    }

    fn language(self) -> Language {
        match self {
            Lang::Python => tree_sitter_python::LANGUAGE.into(),
            Lang::Rust => tree_sitter_rust::LANGUAGE.into(),
        }
    }

    fn query(self) -> &'static Query {
        static PY: OnceLock<Query> = OnceLock::new();
        static RS: OnceLock<Query> = OnceLock::new();
        let (cell, src) = match self {
            Lang::Python => (&PY, tree_sitter_python::TAGS_QUERY.to_string()),
            Lang::Rust => (
                &RS,
                format!(
                    "{}\n((type_identifier) @name) @reference.type\n",
                    tree_sitter_rust::TAGS_QUERY
                ),
            ),
        };
        cell.get_or_init(|| Query::new(&self.language(), &src).expect("the grammar's tags query"))
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Def {
    pub name: String,
    /// 1-based first and last line of the whole definition.
    pub line: u32,
    pub end: u32,
    pub kind: String,
    /// The definition's first line, trimmed (what the map shows).
    pub text: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct FileTags {
    pub defs: Vec<Def>,
    pub refs: Vec<String>,
}

pub fn extract(lang: Lang, src: &str) -> FileTags {
    let mut parser = Parser::new();
    if parser.set_language(&lang.language()).is_err() {
        return FileTags::default();
    }
    let Some(tree) = parser.parse(src, None) else {
        return FileTags::default();
    };
    let query = lang.query();
    let names = query.capture_names();
    let mut cursor = QueryCursor::new();
    let mut out = FileTags::default();
    let bytes = src.as_bytes();
    let mut matches = cursor.matches(query, tree.root_node(), bytes);
    while let Some(m) = matches.next() {
        let mut name = None;
        let mut role = None;
        for c in m.captures {
            let cap = names[c.index as usize];
            if cap == "name" {
                name = c.node.utf8_text(bytes).ok();
            } else if let Some(kind) = cap.strip_prefix("definition.") {
                role = Some((true, kind, c.node));
            } else if cap.starts_with("reference.") {
                role = Some((false, "", c.node));
            }
        }
        let (Some(name), Some((is_def, kind, node))) = (name, role) else {
            continue;
        };
        if is_def {
            let line = node.start_position().row as u32 + 1;
            // A constant's value may be a secret: the map shows its name only.
            let text = if kind == "constant" {
                format!("{name} = …")
            } else {
                src.lines()
                    .nth(line as usize - 1)
                    .unwrap_or("")
                    .trim()
                    .chars()
                    .take(120)
                    .collect()
            };
            out.defs.push(Def {
                name: name.to_string(),
                line,
                end: node.end_position().row as u32 + 1,
                kind: kind.to_string(),
                text,
            });
        } else {
            out.refs.push(name.to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_and_rust_tags() {
        let py = extract(
            Lang::Python,
            "class Shape:\n    def area(self):\n        return 1\n\ndef total(xs):\n    return sum(x.area() for x in xs)\n",
        );
        let names: Vec<_> = py
            .defs
            .iter()
            .map(|d| (d.name.as_str(), d.line, d.end))
            .collect();
        assert_eq!(names, [("Shape", 1, 3), ("area", 2, 3), ("total", 5, 6)]);
        assert!(py.refs.contains(&"area".to_string()) && py.refs.contains(&"sum".to_string()));
        let rs = extract(
            Lang::Rust,
            "struct Point { x: i32 }\nimpl Point {\n    fn norm(&self) -> i32 { helper(self.x) }\n}\nfn helper(v: i32) -> i32 { v }\n",
        );
        let names: Vec<_> = rs.defs.iter().map(|d| d.name.as_str()).collect();
        assert!(names.contains(&"Point") && names.contains(&"norm") && names.contains(&"helper"));
        assert!(rs.refs.contains(&"helper".to_string()) && rs.refs.contains(&"Point".to_string()));
    }
}
