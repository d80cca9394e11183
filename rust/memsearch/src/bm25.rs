//! BM25 (k1 = 1.2, b = 0.75) over the chunks' terms: lower-cased words, a small stop list,
//! a light suffix fold (plural, -ing, -ed) so "packages" meets "package".

use std::collections::HashMap;

const STOP: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "do", "does", "for", "from", "how", "i", "in",
    "is", "it", "its", "of", "on", "or", "our", "so", "that", "the", "this", "to", "we", "what",
    "when", "where", "which", "who", "why", "with", "you", "your",
];

pub fn terms(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| w.to_lowercase())
        .filter(|w| !STOP.contains(&w.as_str()))
        .map(|w| fold(&w))
        .collect()
}

fn fold(w: &str) -> String {
    if let Some(stem) = w.strip_suffix("ies")
        && stem.chars().count() >= 2
    {
        return format!("{stem}y");
    }
    for suffix in ["ing", "ed", "s"] {
        if let Some(stem) = w.strip_suffix(suffix)
            && stem.chars().count() >= 3
            && !w.ends_with("ss")
        {
            return stem.to_string();
        }
    }
    w.to_string()
}

/// Term statistics of a corpus, built once when the index is loaded.
pub struct Bm25 {
    docs: Vec<HashMap<String, u32>>,
    lens: Vec<u32>,
    df: HashMap<String, u32>,
    avg_len: f32,
}

impl Bm25 {
    pub fn new<'a>(texts: impl Iterator<Item = &'a str>) -> Bm25 {
        let mut docs = Vec::new();
        let mut lens = Vec::new();
        let mut df: HashMap<String, u32> = HashMap::new();
        for t in texts {
            let mut tf: HashMap<String, u32> = HashMap::new();
            let ts = terms(t);
            lens.push(ts.len() as u32);
            for term in ts {
                *tf.entry(term).or_default() += 1;
            }
            for term in tf.keys() {
                *df.entry(term.clone()).or_default() += 1;
            }
            docs.push(tf);
        }
        let avg_len = lens.iter().sum::<u32>() as f32 / lens.len().max(1) as f32;
        Bm25 {
            docs,
            lens,
            df,
            avg_len,
        }
    }

    /// (document index, score) for every document with a positive score, best first.
    pub fn rank(&self, query: &str) -> Vec<(usize, f32)> {
        self.matches(query)
            .into_iter()
            .map(|m| (m.doc, m.score))
            .collect()
    }

    /// Every document sharing a term with `query`, best BM25 score first, with the share of
    /// the query's IDF mass it covers (a query term found in no document counts with the IDF
    /// of an unseen term, so a question mostly made of words the notes never use covers
    /// little in any note).
    pub fn matches(&self, query: &str) -> Vec<LexicalMatch> {
        let n = self.docs.len() as f32;
        let mut qterms = terms(query);
        qterms.sort();
        qterms.dedup();
        let idf = |df: f32| ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
        let mut mass = 0f32;
        let weights: Vec<(String, f32)> = qterms
            .into_iter()
            .filter_map(|t| match self.df.get(&t) {
                Some(&df) => {
                    let w = idf(df as f32);
                    mass += w;
                    Some((t, w))
                }
                None => {
                    mass += idf(0.0);
                    None
                }
            })
            .collect();
        if weights.is_empty() {
            return Vec::new();
        }
        let (k1, b) = (1.2f32, 0.75f32);
        let mut out: Vec<LexicalMatch> = self
            .docs
            .iter()
            .enumerate()
            .filter_map(|(i, tf)| {
                let len_norm = 1.0 - b + b * self.lens[i] as f32 / self.avg_len.max(1.0);
                let (mut score, mut covered) = (0f32, 0f32);
                for (t, idf) in &weights {
                    if let Some(&f) = tf.get(t) {
                        let f = f as f32;
                        score += idf * f * (k1 + 1.0) / (f + k1 * len_norm);
                        covered += idf;
                    }
                }
                (score > 0.0).then_some(LexicalMatch {
                    doc: i,
                    score,
                    coverage: (covered / mass).min(1.0),
                })
            })
            .collect();
        out.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.doc.cmp(&b.doc)));
        out
    }
}

/// A document matching a query's terms.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LexicalMatch {
    pub doc: usize,
    /// BM25 score.
    pub score: f32,
    /// Share of the query's IDF mass the document contains, 0 to 1.
    pub coverage: f32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_with_the_rarer_matching_term_ranks_first() {
        let docs = [
            "use bun for packages",
            "run the tests with pytest",
            "the package registry is private",
        ];
        let bm = Bm25::new(docs.iter().copied());
        let r = bm.rank("which packages");
        assert_eq!(r[0].0, 0);
        assert_eq!(r.len(), 2, "{r:?}");
        assert!(bm.rank("the of").is_empty());
    }

    #[test]
    fn coverage_is_the_share_of_the_query_idf_mass_a_document_holds() {
        let docs = [
            "error E1042 means the license server is down",
            "the license is Apache 2.0",
            "deploy on tuesdays",
        ];
        let bm = Bm25::new(docs.iter().copied());
        let m = bm.matches("E1042 license");
        assert_eq!(m[0].doc, 0);
        assert!((m[0].coverage - 1.0).abs() < 1e-6, "{m:?}");
        assert!(m[1].coverage > 0.0 && m[1].coverage < 0.5, "{m:?}");
        // A word no note uses still weighs in the query's mass.
        let m = bm.matches("license zebra");
        assert!(m.iter().all(|x| x.coverage < 0.5), "{m:?}");
    }
}
