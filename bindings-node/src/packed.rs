//! How a batch crosses to JS: as one UTF-16 string the driver unpacks
//! (`lib/batches.cjs`), rather than a JS array built element by element
//! through napi, and with a string sent only when JS does not hold it yet.
//!
//! Each run has a string table both sides fill identically: the strings JS
//! passed to start it and the identity strings it answered with (an
//! instance's provider and sandbox id, claimed sandbox ids), in the order
//! they were passed. A text slot naming one of those crosses as its handle;
//! any other text (a log line, a report) crosses inline. So a plain
//! reclaim's batches carry no string at all.
//!
//! Each slot is a tag unit, `kind * 8 + digits`, then `digits` base-65536
//! digits, most significant first (no digit: 0). Kinds: a whole number (the
//! digits), a handle (the digits are its index in the run's table), an
//! inline string (the digits are its length in UTF-16 units, which follow),
//! nothing (no digits).

use std::cell::RefCell;
use std::collections::HashMap;

use napi::bindgen_prelude::Utf16String;
use napi::{Error, Result, Status};
use sandbox_reclaim::wire::{ending, Slot, WireError};

/// Slot kinds, as the tag's high part (`lib/batches.cjs` reads the same).
pub const KIND_NUMBER: u16 = 0;
pub const KIND_HANDLE: u16 = 1;
pub const KIND_INLINE: u16 = 2;
pub const KIND_NOTHING: u16 = 3;

/// Tables this short are searched in order; longer ones get an index.
const SCAN_LIMIT: usize = 16;

/// One run's strings, in the order JS pushed the same ones.
#[derive(Default)]
struct RunStrings {
    texts: Vec<String>,
    /// First position of each text, once the table outgrows a scan.
    index: HashMap<String, u32>,
}

impl RunStrings {
    fn add(&mut self, text: String) {
        let at = self.texts.len() as u32;
        self.texts.push(text);
        if self.texts.len() > SCAN_LIMIT {
            if self.index.is_empty() {
                for (position, known) in self.texts.iter().enumerate() {
                    self.index.entry(known.clone()).or_insert(position as u32);
                }
            } else if let Some(text) = self.texts.last() {
                self.index.entry(text.clone()).or_insert(at);
            }
        }
    }

    fn find(&self, text: &str) -> Option<u32> {
        if self.index.is_empty() {
            self.texts.iter().position(|known| known == text).map(|position| position as u32)
        } else {
            self.index.get(text).copied()
        }
    }
}

thread_local! {
    /// By run number; a run's table goes with its ending.
    static TABLES: RefCell<Vec<Option<RunStrings>>> = const { RefCell::new(Vec::new()) };
}

/// Starts run `run`'s table with the strings JS passed to start it.
pub fn open(run: u32, strings: impl IntoIterator<Item = String>) {
    TABLES.with_borrow_mut(|tables| {
        let run = run as usize;
        if tables.len() <= run {
            tables.resize_with(run + 1, || None);
        }
        let mut table = RunStrings::default();
        strings.into_iter().for_each(|text| table.add(text));
        tables[run] = Some(table);
    });
}

/// Adds strings JS answered run `run` with (it pushes the same ones).
pub fn add(run: u32, strings: impl IntoIterator<Item = String>) {
    TABLES.with_borrow_mut(|tables| {
        if let Some(table) = tables.get_mut(run as usize).and_then(Option::as_mut) {
            strings.into_iter().for_each(|text| table.add(text));
        }
    });
}

/// Forgets run `run`'s table (the driver abandoned it).
pub fn close(run: u32) {
    TABLES.with_borrow_mut(|tables| {
        if let Some(table) = tables.get_mut(run as usize) {
            *table = None;
        }
    });
}

/// The first slot of a batch: its run.
pub fn run_of(batch: &[Slot]) -> u32 {
    match batch.first() {
        Some(Slot::Int(run)) => *run as u32,
        _ => u32::MAX,
    }
}

/// Appends a tag of `kind` and `value`'s digits.
fn tagged(packed: &mut Vec<u16>, kind: u16, value: u64) {
    let digits = (64 - value.leading_zeros()).div_ceil(16) as u16;
    packed.push(kind * 8 + digits);
    for digit in (0..digits).rev() {
        packed.push((value >> (16 * digit)) as u16);
    }
}

/// `batch`, packed; an ended run's table is dropped.
pub fn pack(batch: Vec<Slot>) -> Utf16String {
    let ended = !matches!(batch.get(2), Some(Slot::Int(kind)) if *kind == u64::from(ending::RUNNING));
    let run = run_of(&batch) as usize;
    TABLES.with_borrow_mut(|tables| {
        let table = tables.get(run).and_then(Option::as_ref);
        let mut packed = Vec::with_capacity(batch.len() * 2);
        for slot in batch {
            match slot {
                Slot::Int(number) => tagged(&mut packed, KIND_NUMBER, number),
                Slot::Nothing => packed.push(KIND_NOTHING * 8),
                Slot::Text(text) => match table.and_then(|table| table.find(&text)) {
                    Some(handle) => tagged(&mut packed, KIND_HANDLE, u64::from(handle)),
                    None => {
                        let at = packed.len();
                        packed.extend(text.encode_utf16());
                        let units = (packed.len() - at) as u64;
                        let mut tag = Vec::with_capacity(5);
                        tagged(&mut tag, KIND_INLINE, units);
                        packed.splice(at..at, tag);
                    }
                },
            }
        }
        if ended {
            if let Some(table) = tables.get_mut(run) {
                *table = None;
            }
        }
        Utf16String::from(packed)
    })
}

/// A machine's answer, packed; a wire error is a JS error with the core's text.
pub fn answer(batch: std::result::Result<Vec<Slot>, WireError>) -> Result<Utf16String> {
    batch.map(pack).map_err(|error| Error::new(Status::GenericFailure, error.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_take_as_few_digits_as_they_need() {
        let mut packed = Vec::new();
        tagged(&mut packed, KIND_NUMBER, 0);
        tagged(&mut packed, KIND_NUMBER, 65_535);
        tagged(&mut packed, KIND_NUMBER, 1_700_000_000_000);
        assert_eq!(packed, [0, 1, 65_535, 3, 0x18b, 0xcfe5, 0x6800]);
    }

    #[test]
    fn a_string_the_run_holds_crosses_as_its_handle_and_others_inline() {
        open(7, ["run-1".to_owned(), "key-é".to_owned()]);
        let packed =
            pack(vec![Slot::Int(7), Slot::Nothing, Slot::Int(0), Slot::Text("key-é".into()), Slot::Text("new".into())]);
        let expected: Vec<u16> = [1, 7, 24, 0, 9, 1, 17, 3, u16::from(b'n'), u16::from(b'e'), u16::from(b'w')].into();
        assert_eq!(&*packed, &expected[..]);
        // A run's last batch still uses its table; then the table goes.
        let ending = || vec![Slot::Int(7), Slot::Nothing, Slot::Int(2), Slot::Text("run-1".into())];
        assert_eq!(pack(ending()).last(), Some(&(KIND_HANDLE * 8)), "handle 0: no digit");
        let packed = pack(ending());
        assert_eq!(
            packed[packed.len() - 7..packed.len() - 5],
            [KIND_INLINE * 8 + 1, 5],
            "inline once the table is gone"
        );
    }
}
