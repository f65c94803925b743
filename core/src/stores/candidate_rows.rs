//! The rowids of the lookup candidates a SQLite store handed out, so the
//! pass's write-back (`lookup_checked`) reaches each row by rowid. By id it
//! probes the registry's key index once per id: ids deleted together sit far
//! apart in key order, so at millions of rows that is a random index page per
//! id (about 1,000 a pass), where by rowid it reads only the rows' own pages.
//!
//! A remembered rowid is a hint, never trusted alone: the write also names
//! the ids, so a row pruned and its rowid reused by another id is not touched.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

/// The most rows remembered (a hundred passes' candidates at the default
/// limit): beyond it, what no write-back took is forgotten.
const MOST: usize = 100_000;

/// (provider, id) → the rowid its candidate row had.
#[derive(Debug, Default)]
pub(crate) struct CandidateRows(Mutex<HashMap<(String, String), i64>>);

/// Asked ids split by whether a rowid is remembered for them.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Split<'a> {
    /// The remembered rowids, and the ids they were handed out for.
    pub rowids: Vec<i64>,
    pub by_row: Vec<&'a str>,
    /// Ids without one: written by id.
    pub by_id: Vec<&'a str>,
}

impl CandidateRows {
    /// Remembers the rowid of each candidate handed out for `provider`.
    pub fn remember(&self, provider: &str, rows: &[(i64, String)]) {
        let mut known = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if known.len() + rows.len() > MOST {
            known.clear();
        }
        for (rowid, id) in rows {
            known.insert((provider.to_owned(), id.clone()), *rowid);
        }
    }

    /// Splits `ids` of `provider` (and forgets the rowids taken: a write-back
    /// runs once per candidate).
    pub fn take<'a>(&self, provider: &str, ids: &[&'a str]) -> Split<'a> {
        let mut known = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let mut split = Split::default();
        for &id in ids {
            match known.remove(&(provider.to_owned(), id.to_owned())) {
                Some(rowid) => {
                    split.rowids.push(rowid);
                    split.by_row.push(id);
                }
                None => split.by_id.push(id),
            }
        }
        split
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rowid_serves_one_write_back_of_its_own_provider() {
        let rows = CandidateRows::default();
        rows.remember("docker", &[(7, "a".to_owned()), (9, "b".to_owned())]);
        let split = rows.take("e2b", &["a"]);
        assert_eq!(split, Split { rowids: vec![], by_row: vec![], by_id: vec!["a"] });
        let split = rows.take("docker", &["a", "c"]);
        assert_eq!(split, Split { rowids: vec![7], by_row: vec!["a"], by_id: vec!["c"] });
        assert_eq!(rows.take("docker", &["a", "b"]).by_id, vec!["a"]);
    }

    #[test]
    fn past_the_bound_what_was_not_taken_is_forgotten() {
        let rows = CandidateRows::default();
        let many: Vec<(i64, String)> = (0..MOST as i64).map(|n| (n, format!("id-{n}"))).collect();
        rows.remember("docker", &many);
        rows.remember("docker", &[(-1, "late".to_owned())]);
        assert_eq!(rows.take("docker", &["id-0", "late"]).by_id, vec!["id-0"]);
    }
}
