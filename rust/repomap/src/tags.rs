//! Definitions and references of one source file, from tree-sitter tag queries: the
//! grammars' own `tags.scm` (Python, Rust, JavaScript, TypeScript = JavaScript's plus its own,
//! Go, Java), with type references added where the grammar's query has none, and queries of
//! our own for C and C++ (theirs capture only the declarator, so a definition's lines would
//! stop at its name, and they capture no references).

use serde::{Deserialize, Serialize};
use std::sync::OnceLock;
use tree_sitter::{Language, Parser, Query, QueryCursor, StreamingIterator};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    Python,
    Rust,
    JavaScript,
    TypeScript,
    Tsx,
    Go,
    Java,
    C,
    Cpp,
}

/// C definitions: the whole function (so `@name` shows its body), prototypes as
/// `declaration` (a header's API; `@name` prefers the definition), types and macros.
const C_TAGS: &str = r#"
(function_definition declarator: (function_declarator declarator: (identifier) @name)) @definition.function
(function_definition declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name))) @definition.function
(declaration declarator: (function_declarator declarator: (identifier) @name)) @definition.declaration
(declaration declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name))) @definition.declaration
(struct_specifier name: (type_identifier) @name body: (_)) @definition.class
(union_specifier name: (type_identifier) @name body: (_)) @definition.class
(enum_specifier name: (type_identifier) @name body: (_)) @definition.type
(type_definition declarator: (type_identifier) @name) @definition.type
(preproc_function_def name: (identifier) @name) @definition.macro
(call_expression function: (identifier) @name) @reference.call
(call_expression function: (field_expression field: (field_identifier) @name)) @reference.call
((type_identifier) @name) @reference.type
"#;

/// C++: C's, plus classes, methods defined in or out of their class (`ns::Class::m` nests
/// one qualified_identifier per scope, hence one pattern per depth), and qualified calls.
const CPP_TAGS: &str = r#"
(class_specifier name: (type_identifier) @name body: (_)) @definition.class
(function_definition declarator: (function_declarator declarator: (qualified_identifier name: (identifier) @name))) @definition.method
(function_definition declarator: (function_declarator declarator: (qualified_identifier name: (qualified_identifier name: (identifier) @name)))) @definition.method
(function_definition declarator: (function_declarator declarator: (qualified_identifier name: (qualified_identifier name: (qualified_identifier name: (identifier) @name))))) @definition.method
(function_definition declarator: (function_declarator declarator: (field_identifier) @name)) @definition.method
(function_definition declarator: (reference_declarator (function_declarator declarator: (identifier) @name))) @definition.function
(field_declaration declarator: (function_declarator declarator: (field_identifier) @name)) @definition.declaration
(namespace_definition name: (namespace_identifier) @name) @definition.module
(call_expression function: (qualified_identifier name: (identifier) @name)) @reference.call
(call_expression function: (qualified_identifier name: (qualified_identifier name: (identifier) @name))) @reference.call
(new_expression type: (type_identifier) @name) @reference.class
"#;

const TYPE_REFS: &str = "((type_identifier) @name) @reference.type";

impl Lang {
    pub fn of(path: &std::path::Path) -> Option<Lang> {
        Some(match path.extension()?.to_str()? {
            "py" | "pyi" => Lang::Python,
            "rs" => Lang::Rust,
            "js" | "mjs" | "cjs" | "jsx" => Lang::JavaScript,
            "ts" | "mts" | "cts" => Lang::TypeScript,
            "tsx" => Lang::Tsx,
            "go" => Lang::Go,
            "java" => Lang::Java,
            "c" | "h" => Lang::C,
            "cc" | "cpp" | "cxx" | "c++" | "hh" | "hpp" | "hxx" | "h++" => Lang::Cpp,
            _ => return None,
        })
    }

    fn language(self) -> Language {
        match self {
            Lang::Python => tree_sitter_python::LANGUAGE.into(),
            Lang::Rust => tree_sitter_rust::LANGUAGE.into(),
            Lang::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
            Lang::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
            Lang::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
            Lang::Go => tree_sitter_go::LANGUAGE.into(),
            Lang::Java => tree_sitter_java::LANGUAGE.into(),
            Lang::C => tree_sitter_c::LANGUAGE.into(),
            Lang::Cpp => tree_sitter_cpp::LANGUAGE.into(),
        }
    }

    fn query_source(self) -> String {
        let ts = || {
            format!(
                "{}\n{}",
                tree_sitter_javascript::TAGS_QUERY,
                tree_sitter_typescript::TAGS_QUERY
            )
        };
        match self {
            Lang::Python => tree_sitter_python::TAGS_QUERY.to_string(),
            Lang::Rust => format!("{}\n{TYPE_REFS}\n", tree_sitter_rust::TAGS_QUERY),
            Lang::JavaScript => tree_sitter_javascript::TAGS_QUERY.to_string(),
            Lang::TypeScript | Lang::Tsx => ts(),
            // Go's query already references every type_identifier.
            Lang::Go => tree_sitter_go::TAGS_QUERY.to_string(),
            Lang::Java => format!("{}\n{TYPE_REFS}\n", tree_sitter_java::TAGS_QUERY),
            Lang::C => C_TAGS.to_string(),
            Lang::Cpp => format!("{C_TAGS}\n{CPP_TAGS}"),
        }
    }

    /// The compiled query, once per language; `None` if it does not compile against the
    /// grammar (the file is then skipped rather than the session failing).
    fn query(self) -> Option<&'static Query> {
        static CELLS: [OnceLock<Option<Query>>; 9] = [const { OnceLock::new() }; 9];
        CELLS[self as usize]
            .get_or_init(|| Query::new(&self.language(), &self.query_source()).ok())
            .as_ref()
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Def {
    pub name: String,
    /// 1-based first and last line of the whole definition.
    pub line: u32,
    pub end: u32,
    pub kind: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct FileTags {
    pub defs: Vec<Def>,
    /// Each referenced name once, sorted, and how often it is referenced (`ref_counts`,
    /// one per name; a missing count is 1): no source text is kept, only names.
    pub refs: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ref_counts: Vec<u32>,
}

/// 1-based last line of `node`: a node that ends at a line's start (a macro's newline)
/// ends on the line before.
fn last_line(node: tree_sitter::Node) -> u32 {
    let end = node.end_position();
    let row = if end.column == 0 && end.row > node.start_position().row {
        end.row - 1
    } else {
        end.row
    };
    row as u32 + 1
}

pub fn extract(lang: Lang, src: &str) -> FileTags {
    let mut parser = Parser::new();
    if parser.set_language(&lang.language()).is_err() {
        return FileTags::default();
    }
    let Some(tree) = parser.parse(src, None) else {
        return FileTags::default();
    };
    let Some(query) = lang.query() else {
        return FileTags::default();
    };
    let names = query.capture_names();
    let mut cursor = QueryCursor::new();
    let mut out = FileTags::default();
    let bytes = src.as_bytes();
    let mut refs: Vec<&str> = Vec::new();
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
            out.defs.push(Def {
                name: name.to_string(),
                line: node.start_position().row as u32 + 1,
                end: last_line(node),
                kind: kind.to_string(),
            });
        } else {
            refs.push(name);
        }
    }
    refs.sort_unstable();
    for name in refs {
        if out.refs.last().map(String::as_str) == Some(name) {
            if let Some(c) = out.ref_counts.last_mut() {
                *c += 1;
            }
        } else {
            out.refs.push(name.to_string());
            out.ref_counts.push(1);
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

    fn defs(lang: Lang, src: &str) -> Vec<(String, String, u32, u32)> {
        extract(lang, src)
            .defs
            .into_iter()
            .map(|d| (d.name, d.kind, d.line, d.end))
            .collect()
    }

    fn def(name: &str, kind: &str, line: u32, end: u32) -> (String, String, u32, u32) {
        (name.into(), kind.into(), line, end)
    }

    #[test]
    fn every_language_query_compiles() {
        for l in [
            Lang::Python,
            Lang::Rust,
            Lang::JavaScript,
            Lang::TypeScript,
            Lang::Tsx,
            Lang::Go,
            Lang::Java,
            Lang::C,
            Lang::Cpp,
        ] {
            if let Err(e) = Query::new(&l.language(), &l.query_source()) {
                panic!("{l:?}: {e}");
            }
        }
    }

    #[test]
    fn javascript_and_typescript_tags() {
        let js = "class Cart {\n  total() {\n    return sum(this.items);\n  }\n}\nfunction sum(xs) {\n  return xs.length;\n}\nconst twice = (x) => sum([x, x]);\n";
        assert_eq!(
            defs(Lang::JavaScript, js),
            [
                def("Cart", "class", 1, 5),
                def("total", "method", 2, 4),
                def("sum", "function", 6, 8),
                def("twice", "function", 9, 9)
            ]
        );
        assert!(extract(Lang::JavaScript, js).refs.contains(&"sum".into()));
        let ts = "interface Shape {\n  area(): number;\n}\nexport class Square implements Shape {\n  area(): number {\n    return side(this);\n  }\n}\nfunction side(s: Square): number {\n  return 2;\n}\n";
        let got = defs(Lang::TypeScript, ts);
        for want in [
            def("Shape", "interface", 1, 3),
            def("Square", "class", 4, 8),
            def("side", "function", 9, 11),
        ] {
            assert!(got.contains(&want), "{want:?} in {got:?}");
        }
        let refs = extract(Lang::TypeScript, ts).refs;
        assert!(
            refs.contains(&"side".into()) && refs.contains(&"Square".into()),
            "{refs:?}"
        );
        let tsx = "export function Button(p: Props) {\n  return <b>{label(p)}</b>;\n}\n";
        assert_eq!(defs(Lang::Tsx, tsx), [def("Button", "function", 1, 3)]);
    }

    #[test]
    fn go_and_java_tags() {
        let go = "package shop\n\ntype Cart struct {\n\tItems []int\n}\n\nfunc (c *Cart) Total() int {\n\treturn Sum(c.Items)\n}\n\nfunc Sum(xs []int) int {\n\treturn len(xs)\n}\n";
        assert_eq!(
            defs(Lang::Go, go),
            [
                def("Cart", "type", 3, 5),
                def("Total", "method", 7, 9),
                def("Sum", "function", 11, 13)
            ]
        );
        let refs = extract(Lang::Go, go).refs;
        assert!(
            refs.contains(&"Sum".into()) && refs.contains(&"Cart".into()),
            "{refs:?}"
        );
        let java = "public class Cart {\n  int total() {\n    return Util.sum(items);\n  }\n}\ninterface Priced {\n  int price();\n}\n";
        assert_eq!(
            defs(Lang::Java, java),
            [
                def("Cart", "class", 1, 5),
                def("total", "method", 2, 4),
                def("Priced", "interface", 6, 8),
                def("price", "method", 7, 7)
            ]
        );
        assert!(extract(Lang::Java, java).refs.contains(&"sum".into()));
    }

    #[test]
    fn c_and_cpp_tags_cover_the_whole_definition() {
        let c = "#include <stdio.h>\nstruct point {\n  int x;\n};\nint norm(struct point *p);\nstatic int norm(struct point *p) {\n  return square(p->x);\n}\nchar *name(void) {\n  return 0;\n}\n#define SQ(x) ((x) * (x))\n";
        assert_eq!(
            defs(Lang::C, c),
            [
                def("point", "class", 2, 4),
                def("norm", "declaration", 5, 5),
                def("norm", "function", 6, 8),
                def("name", "function", 9, 11),
                def("SQ", "macro", 12, 12)
            ]
        );
        assert!(extract(Lang::C, c).refs.contains(&"square".into()));
        let cpp = "namespace geo {\nclass Shape {\n public:\n  double area() const;\n  int sides() { return 4; }\n};\n}\ndouble geo::Shape::area() const {\n  return helper(2.0);\n}\n";
        let got = defs(Lang::Cpp, cpp);
        for want in [
            def("Shape", "class", 2, 6),
            def("area", "declaration", 4, 4),
            def("sides", "method", 5, 5),
            def("area", "method", 8, 10),
        ] {
            assert!(got.contains(&want), "{want:?} in {got:?}");
        }
        assert!(extract(Lang::Cpp, cpp).refs.contains(&"helper".into()));
    }
}
