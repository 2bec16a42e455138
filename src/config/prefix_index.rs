//! Names indexed for the single_writer rule's pattern checks: which entry of another writer comes
//! first among the names starting with a prefix (or equal to a name).
//!
//! Checking each of `n` patterns against every schema and every pattern above it costs `n²`
//! comparisons (8,000 patterns: 4 s on every read of a changed file). The index sorts the names
//! once and keeps, for every power-of-two run of the sorted names, the first entry and the first
//! entry of another writer ([`Firsts`]): the names starting with a prefix are one run of the
//! sorted names, found by binary search, and the first entry of a writer other than `w` in it is
//! the run's first entry or, when that one is `w`'s, its first entry of another writer. So a
//! query costs `O(log n)` and building `O(n log n)`.
//!
//! "First" is by rank: the position of the entry in the order the caller gave them (file order
//! for patterns, name order for schemas), so messages name the same entry a plain scan would.

use std::collections::HashMap;

/// An entry's rank and its writer's number.
type Entry = (usize, u32);

/// Of some entries: the lowest-ranked one, and the lowest-ranked one whose writer differs from
/// that one's. Enough to answer "the lowest-ranked entry whose writer is not `w`" for every `w`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Firsts {
    best: Option<Entry>,
    other: Option<Entry>,
}

impl Firsts {
    fn one(entry: Entry) -> Self {
        Firsts {
            best: Some(entry),
            other: None,
        }
    }

    /// The [`Firsts`] of the union of the entries of `self` and `other` (overlapping runs
    /// allowed: an entry seen twice is one entry).
    fn merge(self, other: Self) -> Self {
        let mut all = [self.best, self.other, other.best, other.other];
        all.sort_unstable_by_key(|e| e.map_or((usize::MAX, u32::MAX), |e| e));
        let best = all[0];
        let other = best.and_then(|(_, w)| all.into_iter().flatten().find(|e| e.1 != w));
        Firsts { best, other }
    }

    /// The rank of the lowest-ranked entry whose writer is not `writer`.
    fn first_not(&self, writer: u32) -> Option<usize> {
        match self.best {
            Some((rank, w)) if w != writer => Some(rank),
            _ => self.other.filter(|e| e.1 != writer).map(|e| e.0),
        }
    }
}

/// Names (already in the form they are compared in: folded, cut) with the writer of each; the
/// rank of an entry is its position in the list given to [`PrefixIndex::new`].
#[derive(Debug, Default)]
pub struct PrefixIndex {
    /// The names, sorted.
    names: Vec<String>,
    /// `runs[k][i]`: the [`Firsts`] of `names[i .. i + 2^k]`.
    runs: Vec<Vec<Firsts>>,
    /// The [`Firsts`] of each distinct name.
    exact: HashMap<String, Firsts>,
    /// Each writer's number.
    writers: HashMap<String, u32>,
}

impl PrefixIndex {
    /// Indexes `entries`, each a name and its writer, ranked in the order given.
    pub fn new<I, W>(entries: I) -> Self
    where
        I: IntoIterator<Item = (String, W)>,
        W: AsRef<str>,
    {
        let mut writers: HashMap<String, u32> = HashMap::new();
        let mut sorted: Vec<(String, Entry)> = Vec::new();
        for (rank, (name, writer)) in entries.into_iter().enumerate() {
            let next = u32::try_from(writers.len()).unwrap_or(u32::MAX);
            let id = *writers.entry(writer.as_ref().to_string()).or_insert(next);
            sorted.push((name, (rank, id)));
        }
        sorted.sort();
        let mut exact: HashMap<String, Firsts> = HashMap::new();
        for (name, entry) in &sorted {
            let firsts = exact.entry(name.clone()).or_default();
            *firsts = firsts.merge(Firsts::one(*entry));
        }
        let mut runs = vec![sorted
            .iter()
            .map(|(_, e)| Firsts::one(*e))
            .collect::<Vec<_>>()];
        let mut width = 1;
        while width * 2 <= sorted.len() {
            let below = &runs[runs.len() - 1];
            let level = (0..=sorted.len() - width * 2)
                .map(|i| below[i].merge(below[i + width]))
                .collect();
            runs.push(level);
            width *= 2;
        }
        PrefixIndex {
            names: sorted.into_iter().map(|(name, _)| name).collect(),
            runs,
            exact,
            writers,
        }
    }

    /// The lowest rank among the names starting with `prefix` whose writer is not `writer`.
    pub fn first_starting_with(&self, prefix: &str, writer: &str) -> Option<usize> {
        let start = self.names.partition_point(|n| n.as_str() < prefix);
        let len = self.names[start..].partition_point(|n| n.starts_with(prefix));
        if len == 0 {
            return None;
        }
        let level = usize::BITS - 1 - len.leading_zeros();
        let runs = &self.runs[level as usize];
        let firsts = runs[start].merge(runs[start + len - (1 << level)]);
        firsts.first_not(self.writer(writer))
    }

    /// The lowest rank among the names equal to `name` whose writer is not `writer`.
    pub fn first_equal_to(&self, name: &str, writer: &str) -> Option<usize> {
        self.exact.get(name)?.first_not(self.writer(writer))
    }

    /// `writer`'s number; a writer no entry has gets one no entry has.
    fn writer(&self, writer: &str) -> u32 {
        self.writers.get(writer).copied().unwrap_or(u32::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plain scan the index replaces: the lowest rank whose name passes `keep` and whose
    /// writer is not `writer`.
    fn scan(entries: &[(&str, &str)], keep: impl Fn(&str) -> bool, writer: &str) -> Option<usize> {
        entries
            .iter()
            .position(|(name, w)| keep(name) && *w != writer)
    }

    fn index(entries: &[(&str, &str)]) -> PrefixIndex {
        PrefixIndex::new(entries.iter().map(|(n, w)| (n.to_string(), *w)))
    }

    #[test]
    fn the_first_entry_of_another_writer_under_a_prefix() {
        let entries = [
            ("dbt_b", "dbt"),
            ("ci_", "reporting"),
            ("dbt_a", "io_manager"),
            ("dbt_", "dbt"),
            ("dbt_a", "reporting"),
            ("dbt", "dlt"),
        ];
        let ix = index(&entries);
        assert_eq!(ix.first_starting_with("dbt_", "dbt"), Some(2));
        assert_eq!(ix.first_starting_with("dbt_", "io_manager"), Some(0));
        assert_eq!(ix.first_starting_with("dbt_a", "io_manager"), Some(4));
        assert_eq!(ix.first_starting_with("dbt_b", "dbt"), None);
        assert_eq!(ix.first_starting_with("x", "dbt"), None);
        assert_eq!(ix.first_starting_with("", "nobody"), Some(0));
        assert_eq!(ix.first_equal_to("dbt_a", "io_manager"), Some(4));
        assert_eq!(ix.first_equal_to("dbt_a", "reporting"), Some(2));
        assert_eq!(ix.first_equal_to("dbt_", "dbt"), None);
        assert_eq!(ix.first_equal_to("nothing", "dbt"), None);
    }

    #[test]
    fn the_index_answers_as_the_plain_scan_does() {
        // Deterministic pseudo-random names over a small alphabet (many shared prefixes) and
        // three writers, against every prefix of every name and every writer.
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let names: Vec<String> = (0..300)
            .map(|_| {
                let len = 1 + next() % 6;
                (0..len)
                    .map(|_| (b'a' + (next() % 3) as u8) as char)
                    .collect()
            })
            .collect();
        let writers = ["dbt", "io_manager", "reporting"];
        let entries: Vec<(&str, &str)> = names
            .iter()
            .map(|n| (n.as_str(), writers[(next() % 3) as usize]))
            .collect();
        let ix = index(&entries);
        for (name, _) in &entries {
            for end in 0..=name.len() {
                let prefix = &name[..end];
                for writer in writers.iter().chain(&["nobody"]) {
                    assert_eq!(
                        ix.first_starting_with(prefix, writer),
                        scan(&entries, |n| n.starts_with(prefix), writer),
                        "{prefix} {writer}"
                    );
                    assert_eq!(
                        ix.first_equal_to(prefix, writer),
                        scan(&entries, |n| n == prefix, writer),
                        "{prefix} {writer}"
                    );
                }
            }
        }
    }

    #[test]
    fn an_empty_index_finds_nothing() {
        let ix = PrefixIndex::new(Vec::<(String, &str)>::new());
        assert_eq!(ix.first_starting_with("a", "dbt"), None);
        assert_eq!(ix.first_equal_to("a", "dbt"), None);
    }
}
