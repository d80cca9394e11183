//! The uncased BERT tokenizer of the shipped model: basic splitting (lower case, accents
//! folded for Latin letters, punctuation and CJK characters on their own) then WordPiece
//! (greedy longest match, `##` continuations). Written here rather than pulled in: it is
//! forty lines, and the `tokenizers` crate would bring a large dependency tree.

use std::collections::HashMap;

pub struct WordPiece {
    vocab: HashMap<String, u32>,
}

/// One WordPiece token of a text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece {
    pub id: u32,
    /// A `##` piece continuing a word (not its first piece).
    pub continuation: bool,
}

impl WordPiece {
    /// From a `vocab.txt`: one token per line, the line number is the id.
    pub fn from_vocab(text: &str) -> WordPiece {
        let vocab: HashMap<String, u32> = text
            .lines()
            .enumerate()
            .map(|(i, t)| (t.to_string(), i as u32))
            .collect();
        WordPiece { vocab }
    }

    pub fn len(&self) -> usize {
        self.vocab.len()
    }

    pub fn is_empty(&self) -> bool {
        self.vocab.is_empty()
    }

    /// Token ids of `text`; unknown words are left out (they carry no vector).
    pub fn ids(&self, text: &str) -> Vec<u32> {
        self.pieces(text).into_iter().map(|p| p.id).collect()
    }

    /// The WordPiece pieces of `text`, each marked as a word's first piece or a `##`
    /// continuation; unknown words are left out.
    pub fn pieces(&self, text: &str) -> Vec<Piece> {
        let mut out = Vec::new();
        for word in basic_words(text) {
            self.word_ids(&word, &mut out);
        }
        out
    }

    /// The id of a token of the vocabulary (`[CLS]`, `[UNK]`…).
    pub fn id(&self, token: &str) -> Option<u32> {
        self.vocab.get(token).copied()
    }

    /// Token ids as BERT's tokenizer gives them to the encoder: a word with no WordPiece
    /// split (or over 100 characters) is one `unk` token instead of being left out.
    pub fn ids_with_unknown(&self, text: &str, unk: u32) -> Vec<u32> {
        let mut out = Vec::new();
        let mut pieces = Vec::new();
        for word in basic_words(text) {
            pieces.clear();
            if self.word_ids(&word, &mut pieces) {
                out.extend(pieces.iter().map(|p| p.id));
            } else {
                out.push(unk);
            }
        }
        out
    }

    /// Appends the pieces of `word`; false (nothing appended) when the word is unknown.
    fn word_ids(&self, word: &str, out: &mut Vec<Piece>) -> bool {
        let chars: Vec<char> = word.chars().collect();
        if chars.len() > 100 {
            return false;
        }
        let mut pieces = Vec::new();
        let mut start = 0;
        while start < chars.len() {
            let mut end = chars.len();
            let mut found = None;
            while start < end {
                let mut piece: String = chars[start..end].iter().collect();
                if start > 0 {
                    piece.insert_str(0, "##");
                }
                if let Some(&id) = self.vocab.get(&piece) {
                    found = Some(id);
                    break;
                }
                end -= 1;
            }
            match found {
                Some(id) => pieces.push(Piece {
                    id,
                    continuation: start > 0,
                }),
                // One piece that matches nothing makes the whole word unknown (as BERT does).
                None => return false,
            }
            start = end;
        }
        out.extend(pieces);
        true
    }
}

/// Lower-cased words with punctuation split off, as BERT's basic tokenizer does.
pub fn basic_words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let flush = |cur: &mut String, words: &mut Vec<String>| {
        if !cur.is_empty() {
            words.push(std::mem::take(cur));
        }
    };
    for c in text.chars() {
        if c.is_whitespace() || c.is_control() {
            flush(&mut cur, &mut words);
        } else if is_punct(c) || is_cjk(c) {
            flush(&mut cur, &mut words);
            words.push(c.to_string());
        } else {
            for l in c.to_lowercase() {
                cur.push(fold_accent(l));
            }
        }
    }
    flush(&mut cur, &mut words);
    words
}

fn is_punct(c: char) -> bool {
    c.is_ascii_punctuation()
        || matches!(c, '\u{2000}'..='\u{206F}' | '\u{3000}'..='\u{303F}' | '«' | '»' | '¿' | '¡')
}

fn is_cjk(c: char) -> bool {
    matches!(c, '\u{4E00}'..='\u{9FFF}' | '\u{3400}'..='\u{4DBF}' | '\u{F900}'..='\u{FAFF}')
}

/// The common Latin accented letters to their base letter (BERT uncased strips accents).
fn fold_accent(c: char) -> char {
    match c {
        'à' | 'á' | 'â' | 'ã' | 'ä' | 'å' => 'a',
        'ç' => 'c',
        'è' | 'é' | 'ê' | 'ë' => 'e',
        'ì' | 'í' | 'î' | 'ï' => 'i',
        'ñ' => 'n',
        'ò' | 'ó' | 'ô' | 'õ' | 'ö' => 'o',
        'ù' | 'ú' | 'û' | 'ü' => 'u',
        'ý' | 'ÿ' => 'y',
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_on_punctuation_and_fold_case_and_accents() {
        assert_eq!(
            basic_words("Use Bun, not npm! Café"),
            vec!["use", "bun", ",", "not", "npm", "!", "cafe"]
        );
    }

    #[test]
    fn wordpiece_takes_the_longest_pieces_and_drops_unknown_words() {
        let wp = WordPiece::from_vocab("[PAD]\n[UNK]\nplay\n##ing\n##s\nthe\n");
        assert_eq!(wp.ids("the playing plays"), vec![5, 2, 3, 2, 4]);
        assert_eq!(wp.ids("zzz the"), vec![5]);
        let marks: Vec<bool> = wp
            .pieces("playing the")
            .iter()
            .map(|p| p.continuation)
            .collect();
        assert_eq!(marks, [false, true, false]);
    }

    /// For the encoder an unknown word is one `[UNK]` (BERT's rule), also a word over 100
    /// characters; known words split as for the static model.
    #[test]
    fn the_encoder_ids_mark_unknown_words_instead_of_dropping_them() {
        let wp = WordPiece::from_vocab("[PAD]\n[UNK]\nplay\n##ing\n##s\nthe\n");
        assert_eq!(wp.ids_with_unknown("zzz the playing", 1), vec![1, 5, 2, 3]);
        let wp2 = WordPiece::from_vocab("[UNK]\na\n##a\n");
        assert_eq!(wp2.ids_with_unknown(&"a".repeat(100), 0).len(), 100);
        assert_eq!(wp2.ids_with_unknown(&"a".repeat(101), 0), vec![0]);
        assert!(wp2.ids(&"a".repeat(101)).is_empty());
        assert_eq!(wp.id("[UNK]"), Some(1));
        assert_eq!(wp.id("nope"), None);
    }
}
