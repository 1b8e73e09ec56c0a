//! The registry's families in registration order (the order of every exposition), with the
//! hash indices registration finds them by: a family by its name, a series by its labels in
//! name order, a family by a sample name it writes. Without them a registration compared
//! the new series with every series of its family, so registering `n` series took O(n²)
//! (10,000 label sets of one family: 50 million label compares).

use std::collections::hash_map::Entry;
use std::collections::HashMap;

use super::{Family, Series, Value};
use crate::text::MetricKind;
use crate::{ExportError, Labels};

#[cfg(test)]
mod tests;

/// The families and their indices. Every change goes through [`Families::insert`] and
/// [`Families::remove`], which keep the indices in step with the lists.
#[derive(Default)]
pub(crate) struct Families {
    /// In registration order; each family's series in registration order.
    list: Vec<Family>,
    /// A family's name → its position in `list`.
    by_name: HashMap<String, usize>,
    /// At each family's position in `list`: a series' labels in name order (its identity)
    /// → its position in the family's `series`.
    by_key: Vec<HashMap<Labels, usize>>,
    /// Every sample name a family writes ([`Family::sample_names`]) → that family's name.
    /// Registration refuses a family whose sample names clash with another's, so each
    /// sample name has one writer.
    samples: HashMap<String, String>,
    /// Changes so far (series added or removed, help texts replaced): a snapshot of `list`
    /// taken at one count is current while the count stays.
    changes: u64,
}

impl Families {
    /// The families, in registration order.
    pub(crate) fn list(&self) -> &[Family] {
        &self.list
    }

    /// Changes so far ([`Families::insert`] of a new series, [`Families::remove`],
    /// [`Families::set_help`]).
    pub(crate) fn changes(&self) -> u64 {
        self.changes
    }

    /// Replaces the help text of family `name`, if registered.
    pub(crate) fn set_help(&mut self, name: &str, help: &str) {
        if let Some(&i) = self.by_name.get(name) {
            if self.list[i].help != help {
                self.list[i].help = help.to_owned();
                self.changes += 1;
            }
        }
    }

    /// Adds series `labels` (identified by `key`, the same labels in name order) with
    /// `value` to family `name`, creating the family; `id` gives a new series its id. For
    /// a series already registered, returns its counter or gauge, or a duplicate error for
    /// a histogram.
    ///
    /// # Errors
    /// Family `name` holds another kind or help text; a new family's sample names clash with
    /// another family's (the first such family in registration order is named); a histogram
    /// series with these labels exists.
    pub(crate) fn insert(
        &mut self,
        family: (&str, &str, MetricKind),
        labels: &Labels,
        key: Labels,
        value: Value,
        id: impl FnOnce() -> u64,
    ) -> Result<Value, ExportError> {
        let (name, help, kind) = family;
        let index = match self.by_name.get(name) {
            Some(&i) => {
                self.list[i].admits(kind, help)?;
                i
            }
            None => {
                let candidate = Family::new(name, help, kind);
                let mine = candidate.sample_names();
                if let Some((theirs, sample)) = self.first_clash(&mine) {
                    return Err(clash(name, sample, theirs));
                }
                for sample in mine {
                    self.samples.insert(sample, candidate.name.clone());
                }
                self.by_name.insert(candidate.name.clone(), self.list.len());
                self.list.push(candidate);
                self.by_key.push(HashMap::new());
                self.list.len() - 1
            }
        };
        let family = &mut self.list[index];
        // One hash of the labels, for the lookup and the insertion.
        match self.by_key[index].entry(key) {
            Entry::Occupied(s) => return existing(&family.series[*s.get()].value, name, labels),
            Entry::Vacant(s) => s.insert(family.series.len()),
        };
        family.series.push(Series {
            id: id(),
            labels: labels.clone(),
            value: value.clone(),
        });
        self.changes += 1;
        Ok(value)
    }

    /// Of the families that write one of the sample names `mine`, the first in registration
    /// order, and the first of `mine` it writes.
    fn first_clash<'a>(&self, mine: &'a [String]) -> Option<(&Family, &'a String)> {
        mine.iter()
            .filter_map(|sample| {
                let owner = self.samples.get(sample)?;
                Some((self.by_name[owner], sample))
            })
            // The first of equal minima: the first of `mine` that this family writes.
            .min_by_key(|&(position, _)| position)
            .map(|(position, sample)| (&self.list[position], sample))
    }

    /// Removes series `key` (labels in name order) of family `name`; the family goes with its
    /// last series. Returns whether it was registered. Later series and families move down
    /// one place, so the indices of those after it are updated (linear in the family's
    /// series, or in the families: removal is rare, registration is not).
    pub(crate) fn remove(&mut self, name: &str, key: &Labels) -> bool {
        let Some(&fi) = self.by_name.get(name) else {
            return false;
        };
        let Some(si) = self.by_key[fi].remove(key) else {
            return false;
        };
        self.list[fi].series.remove(si);
        self.changes += 1;
        for position in self.by_key[fi].values_mut() {
            if *position > si {
                *position -= 1;
            }
        }
        if self.list[fi].series.is_empty() {
            let family = self.list.remove(fi);
            self.by_key.remove(fi);
            self.by_name.remove(name);
            for position in self.by_name.values_mut() {
                if *position > fi {
                    *position -= 1;
                }
            }
            for sample in family.sample_names() {
                self.samples.remove(&sample);
            }
        }
        true
    }
}

impl Family {
    /// A family without series yet.
    fn new(name: &str, help: &str, kind: MetricKind) -> Family {
        Family {
            name: name.to_owned(),
            help: help.to_owned(),
            kind,
            series: Vec::new(),
        }
    }

    /// Whether a series of `kind` with help text `help` may join the family.
    ///
    /// # Errors
    /// The family holds another kind or help text.
    fn admits(&self, kind: MetricKind, help: &str) -> Result<(), ExportError> {
        if self.kind != kind {
            return Err(ExportError::Conflict {
                name: self.name.clone(),
                reason: format!("kind {:?} (asked for {kind:?})", self.kind),
            });
        }
        if self.help != help {
            return Err(ExportError::Conflict {
                name: self.name.clone(),
                reason: format!("help text {:?} (asked for {help:?})", self.help),
            });
        }
        Ok(())
    }
}

/// The error for a new family `name` with sample name `sample`, which family `theirs`
/// already writes.
fn clash(name: &str, sample: &str, theirs: &Family) -> ExportError {
    ExportError::Conflict {
        name: name.into(),
        reason: format!(
            "a sample name ({sample}) that family {:?} also writes",
            theirs.name
        ),
    }
}

/// What registering series `labels` of family `name` again gives: the counter or gauge
/// `value` (get-or-create), or a duplicate error for a histogram.
fn existing(value: &Value, name: &str, labels: &Labels) -> Result<Value, ExportError> {
    match value {
        Value::Counter(_) | Value::Gauge(_) => Ok(value.clone()),
        Value::Histogram(_) => Err(ExportError::DuplicateSeries {
            name: name.into(),
            labels: labels.to_string(),
        }),
    }
}
