//! Personalised PageRank over files (an edge from a file to the file defining a name it
//! references, weighted like aider's: names the prompt mentions ×10, private or very common
//! names ÷10, √ of the reference count), then each edge's share of its source's rank goes
//! to the (file, name) definition it points at.

use super::{Focus, Index};
use std::collections::HashMap;

const DAMPING: f64 = 0.85;
const ITERATIONS: usize = 30;

/// (file, name) definitions, most relevant first.
pub fn rank(index: &Index, focus: &Focus) -> Vec<(String, String)> {
    let files: Vec<&str> = index.files.keys().map(String::as_str).collect();
    let n = files.len();
    if n == 0 {
        return Vec::new();
    }
    let mut definers: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, f) in files.iter().enumerate() {
        for d in &index.files[*f].defs {
            let v = definers.entry(d.name.as_str()).or_default();
            if v.last() != Some(&i) {
                v.push(i);
            }
        }
    }
    // Edges (src, dst, weight, name).
    let mut edges: Vec<(usize, usize, f64, &str)> = Vec::new();
    for (i, f) in files.iter().enumerate() {
        let mut counts: HashMap<&str, usize> = HashMap::new();
        let tags = &index.files[*f];
        for (k, r) in tags.refs.iter().enumerate() {
            let n = tags.ref_counts.get(k).copied().unwrap_or(1) as usize;
            *counts.entry(r.as_str()).or_default() += n;
        }
        for (name, count) in counts {
            let Some(dst) = definers.get(name) else {
                continue;
            };
            let mut mul = 1.0;
            if focus.idents.contains(name) {
                mul *= 10.0;
            }
            if name.starts_with('_') || dst.len() > 5 {
                mul *= 0.1;
            }
            for &j in dst {
                if j != i {
                    edges.push((i, j, mul * (count as f64).sqrt(), name));
                }
            }
        }
    }
    let mut personal: Vec<f64> = files
        .iter()
        .map(|f| if focus.files.contains(*f) { 1.0 } else { 0.0 })
        .collect();
    let sum: f64 = personal.iter().sum();
    if sum == 0.0 {
        personal = vec![1.0 / n as f64; n];
    } else {
        personal.iter_mut().for_each(|p| *p /= sum);
    }
    let mut out_w = vec![0.0; n];
    for (s, _, w, _) in &edges {
        out_w[*s] += w;
    }
    let mut r = personal.clone();
    for _ in 0..ITERATIONS {
        let mut next: Vec<f64> = personal.iter().map(|p| (1.0 - DAMPING) * p).collect();
        let dangling: f64 = (0..n).filter(|i| out_w[*i] == 0.0).map(|i| r[i]).sum();
        for (i, p) in personal.iter().enumerate() {
            next[i] += DAMPING * dangling * p;
        }
        for (s, d, w, _) in &edges {
            next[*d] += DAMPING * r[*s] * w / out_w[*s];
        }
        r = next;
    }
    let mut score: HashMap<(usize, &str), f64> = HashMap::new();
    for (s, d, w, name) in &edges {
        *score.entry((*d, name)).or_default() += r[*s] * w / out_w[*s];
    }
    // Definitions nobody references still rank by their file, far below referenced ones;
    // a mentioned name is lifted the same way as a mentioned reference.
    for (i, f) in files.iter().enumerate() {
        for d in &index.files[*f].defs {
            let lift = if focus.idents.contains(&d.name) {
                10.0
            } else {
                1.0
            };
            *score.entry((i, d.name.as_str())).or_default() += r[i] * 1e-3 * lift;
        }
    }
    let mut ranked: Vec<((usize, &str), f64)> = score.into_iter().collect();
    ranked.sort_by(|a, b| {
        b.1.partial_cmp(&a.1)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then_with(|| files[a.0.0].cmp(files[b.0.0]))
            .then_with(|| a.0.1.cmp(b.0.1))
    });
    ranked
        .into_iter()
        .map(|((i, name), _)| (files[i].to_string(), name.to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::tags::{Def, FileTags};
    use super::*;

    fn def(name: &str, line: u32) -> Def {
        Def {
            name: name.into(),
            line,
            end: line,
            kind: "function".into(),
        }
    }

    #[test]
    fn referenced_and_focused_definitions_come_first() {
        let mut files = std::collections::BTreeMap::new();
        files.insert(
            "core.py".to_string(),
            FileTags {
                defs: vec![def("popular", 1), def("lonely", 5)],
                ..Default::default()
            },
        );
        files.insert(
            "a.py".to_string(),
            FileTags {
                defs: vec![def("helper_a", 1)],
                refs: vec!["popular".into(), "popular".into()],
                ..Default::default()
            },
        );
        files.insert(
            "b.py".to_string(),
            FileTags {
                defs: vec![def("helper_b", 1)],
                refs: vec!["popular".into(), "helper_a".into()],
                ..Default::default()
            },
        );
        let index = Index {
            files,
            ..Default::default()
        };
        let r = rank(&index, &Focus::default());
        assert_eq!(r[0], ("core.py".into(), "popular".into()));
        // Focus on b.py: what b.py uses ranks first.
        let focus = Focus {
            files: ["b.py".to_string()].into(),
            idents: Default::default(),
        };
        let r = rank(&index, &focus);
        let pos = |f: &str, n: &str| r.iter().position(|x| x.0 == f && x.1 == n).unwrap();
        assert!(pos("a.py", "helper_a") < pos("core.py", "lonely"));
        // A mentioned name is lifted above the unreferenced rest.
        let focus = Focus {
            files: Default::default(),
            idents: ["lonely".to_string()].into(),
        };
        let r = rank(&index, &focus);
        assert!(
            r.iter().position(|x| x.1 == "lonely").unwrap()
                < r.iter().position(|x| x.1 == "helper_b").unwrap()
        );
    }
}
