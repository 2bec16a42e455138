//! The closed sets of names a schema entry may use: writers and layers. Each is the built-in
//! names plus those the file declares under `[custom]`, so a typo (`writer = "dtl"`, `layer =
//! "curatd"`) is an error when the file is read, naming the known names and the closest one.

/// The writers every file knows; `[custom] writers` declares more.
pub const BUILTIN_WRITERS: [&str; 3] = ["dbt", "dlt", "io_manager"];

/// The layers every file knows; `[custom] layers` declares more. `landing` is not among them:
/// the landing zone is `landing_path`, a folder outside DuckLake.
pub const BUILTIN_LAYERS: [&str; 6] = [
    "curated",
    "intermediate",
    "marts",
    "raw",
    "serving",
    "staging",
];

/// Built-in and declared names of one kind, sorted, without repeats.
pub fn known(builtin: &[&str], declared: &[String]) -> Vec<String> {
    let mut all: Vec<String> = builtin.iter().map(|s| s.to_string()).collect();
    all.extend(declared.iter().cloned());
    all.sort();
    all.dedup();
    all
}

/// The known name closest to `name`, if it is close enough to be a typo of it: at most two
/// single-character edits (insert, delete, replace, swap), and fewer than half of `name`.
pub fn closest<'a>(name: &str, known: &'a [String]) -> Option<&'a str> {
    let limit = 2.min(name.chars().count().saturating_sub(1) / 2 + 1);
    known
        .iter()
        .map(|k| {
            (
                distance(&name.to_ascii_lowercase(), &k.to_ascii_lowercase()),
                k,
            )
        })
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k.as_str())
}

/// Optimal string alignment distance: insertions, deletions, replacements and adjacent swaps.
fn distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typos_find_their_name_and_other_names_find_none() {
        let writers = known(&BUILTIN_WRITERS, &["reporting".to_string()]);
        assert_eq!(writers, ["dbt", "dlt", "io_manager", "reporting"]);
        assert_eq!(closest("dtl", &writers), Some("dlt"));
        assert_eq!(closest("DBT", &writers), Some("dbt"));
        assert_eq!(closest("io_manger", &writers), Some("io_manager"));
        assert_eq!(closest("reportin", &writers), Some("reporting"));
        assert_eq!(closest("airbyte", &writers), None);
        let layers = known(&BUILTIN_LAYERS, &[]);
        assert_eq!(closest("curatd", &layers), Some("curated"));
        // Two edits (two letters left out, a swap and a replacement): still the name.
        assert_eq!(closest("curtd", &layers), Some("curated"));
        assert_eq!(closest("stgaign", &layers), Some("staging"));
        assert_eq!(closest("srvng", &layers), Some("serving"));
        assert_eq!(distance("curtd", "curated"), 2);
        assert_eq!(closest("rwa", &layers), Some("raw"));
        assert_eq!(closest("bronze", &layers), None);
        assert_eq!(distance("dtl", "dlt"), 1);
        assert_eq!(distance("", "raw"), 3);
    }
}
