//! Bounded collection of grep's content rows. Files are shown newest first, so which rows
//! are shown is known only when the walk ends; `KeptRows` keeps just the newest files whose
//! rows cover the first `cap` positions and counts every other row without storing it.
//! Memory is bounded by about twice `cap` rows, whatever the tree holds.

use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::SystemTime;

/// Display order: newest first, then by path.
pub(crate) type OrderKey = (Reverse<SystemTime>, PathBuf);

pub(crate) struct KeptRows {
    /// Rows needed: the page's end (offset + limit).
    cap: usize,
    /// The newest files' first rows (at most `cap` each).
    files: BTreeMap<OrderKey, Vec<String>>,
    stored: usize,
    /// Every row of every matching file, stored or not.
    total: u64,
}

impl KeptRows {
    pub(crate) fn new(cap: usize) -> Self {
        KeptRows {
            cap,
            files: BTreeMap::new(),
            stored: 0,
            total: 0,
        }
    }

    /// Whether a file at `key` could still appear within the first `cap` rows: not when
    /// the newer files kept already fill them.
    pub(crate) fn wants(&self, key: &OrderKey) -> bool {
        self.stored < self.cap || self.files.keys().next_back().is_some_and(|last| key < last)
    }

    /// Adds a file's stored rows (already at most `cap`) and its true row count, then drops
    /// the oldest files that the newer ones make unnecessary.
    pub(crate) fn add(&mut self, key: OrderKey, rows: Vec<String>, row_count: u64) {
        self.total += row_count;
        if rows.is_empty() || !self.wants(&key) {
            return;
        }
        self.stored += rows.len();
        self.files.insert(key, rows);
        while let Some(last) = self.files.last_entry() {
            let without_last = self.stored - last.get().len();
            if without_last < self.cap {
                break;
            }
            self.stored = without_last;
            last.remove();
        }
    }

    #[cfg(test)]
    fn stored(&self) -> usize {
        self.stored
    }

    /// The first rows in display order (at least `min(cap, total)` of them) and the total.
    pub(crate) fn into_rows(self) -> (Vec<String>, u64) {
        (self.files.into_values().flatten().collect(), self.total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn key(age: u64, name: &str) -> OrderKey {
        (
            Reverse(SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000 - age)),
            PathBuf::from(name),
        )
    }

    fn rows(name: &str, n: usize) -> Vec<String> {
        (0..n).map(|k| format!("{name}:{k}")).collect()
    }

    /// Every file in any arrival order: the kept prefix equals the prefix of the full sort,
    /// storage stays under 2 × cap, and the total counts everything.
    #[test]
    fn keeps_the_newest_prefix_in_bounded_memory() {
        let cap = 50;
        let n_files = 2000u64;
        let per_file = |k: u64| (k % 13 + 1) as usize;
        let mut all: Vec<(OrderKey, Vec<String>)> = (0..n_files)
            .map(|k| {
                let name = format!("f{k:04}");
                (key(k % 300, &name), rows(&name, per_file(k)))
            })
            .collect();
        let expected_total: u64 = (0..n_files).map(|k| per_file(k) as u64).sum();
        // Arrival order unrelated to display order (a parallel walk).
        let mut order: Vec<usize> = (0..all.len()).collect();
        order.sort_by_key(|&i| (i * 7919) % all.len());
        let mut kept = KeptRows::new(cap);
        let mut peak = 0;
        for &i in &order {
            let (k, r) = &all[i];
            let n = r.len() as u64;
            if kept.wants(k) {
                kept.add(k.clone(), r.clone(), n);
            } else {
                kept.add(k.clone(), Vec::new(), n);
            }
            peak = peak.max(kept.stored());
        }
        assert!(peak < 2 * cap, "peak stored rows {peak}");
        let (got, total) = kept.into_rows();
        assert_eq!(total, expected_total);
        all.sort_by(|a, b| a.0.cmp(&b.0));
        let want: Vec<String> = all.into_iter().flat_map(|(_, r)| r).take(cap).collect();
        assert!(got.len() >= cap);
        assert_eq!(&got[..cap], &want[..]);
    }

    #[test]
    fn an_older_file_is_not_wanted_once_the_cap_is_filled() {
        let mut kept = KeptRows::new(3);
        assert!(kept.wants(&key(5, "a")));
        kept.add(key(5, "a"), rows("a", 3), 3);
        assert!(!kept.wants(&key(9, "old")));
        assert!(kept.wants(&key(1, "new")));
        kept.add(key(1, "new"), rows("new", 3), 10);
        // "a" is no longer needed: the newer file fills the cap on its own.
        assert_eq!(kept.stored(), 3);
        let (got, total) = kept.into_rows();
        assert_eq!(got, rows("new", 3));
        assert_eq!(total, 13);
    }
}
