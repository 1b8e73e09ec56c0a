//! The busy intervals open on one thread ([`OpenStack`]): every span begun and not ended
//! yet, `span!` guards and span layers alike, so the nesting depth a frame carries counts
//! both; and [`SlotMap`], which of a span layer's counters each of the thread's counter
//! slots holds. Platform-neutral: `picollo_linux::span` keeps one of each per thread, beside
//! the thread's ring and counters, and a layer without rings (time only) keeps its own.

/// An interval begun and not ended yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Open {
    /// Who began it (a layer's id; 0 for a `span!` guard).
    pub owner: u64,
    /// The span's id, for its owner.
    pub id: u64,
    /// The span clock at its start.
    pub start: u64,
    /// Whether counter samples were taken at its start.
    pub sampled: bool,
}

/// An interval that ended (small, so the hot path moves no samples: they stay in the stack,
/// [`OpenStack::samples_of`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ended {
    /// The interval.
    pub open: Open,
    /// Its nesting depth on the thread: 1 for the outermost.
    pub depth: u32,
    /// It ended below the top (out of order): its samples were set aside.
    below: bool,
}

/// The intervals open on one thread, innermost last, with their start samples (`S`: one
/// sample per counter slot). Intervals end out of order too (spans need not exit in LIFO
/// order): they are matched by owner and id.
#[derive(Debug)]
pub struct OpenStack<S> {
    open: Vec<Open>,
    /// `samples[i]`: the start samples of `open[i]`, when it has them (grown on first use,
    /// never shrunk: an unsampled interval leaves its entry as it was). The innermost
    /// interval's stay at `samples[depth - 1]` after it ends, until the next push.
    samples: Vec<S>,
    /// The start samples of the last interval that ended out of order.
    below: Option<S>,
}

impl<S> Default for OpenStack<S> {
    fn default() -> Self {
        Self::new()
    }
}

impl<S> OpenStack<S> {
    /// Empty (no memory until the first interval).
    pub const fn new() -> Self {
        Self {
            open: Vec::new(),
            samples: Vec::new(),
            below: None,
        }
    }

    /// Intervals open: the depth of the innermost.
    #[inline(always)]
    pub fn depth(&self) -> usize {
        self.open.len()
    }

    /// The innermost open interval.
    #[inline(always)]
    pub fn top(&self) -> Option<&Open> {
        self.open.last()
    }
}

impl<S: Copy + Default> OpenStack<S> {
    /// The start samples of the next interval pushed, to fill before [`OpenStack::push`]
    /// with `sampled` set.
    #[inline]
    pub fn next_samples(&mut self) -> &mut S {
        let at = self.open.len();
        if self.samples.len() <= at {
            self.samples.resize(at + 1, S::default());
        }
        &mut self.samples[at]
    }

    /// Opens an interval (innermost); returns its depth (1 for the outermost).
    #[inline(always)]
    pub fn push(&mut self, open: Open) -> u32 {
        self.open.push(open);
        u32::try_from(self.open.len()).unwrap_or(u32::MAX)
    }

    /// Ends the innermost open interval of `owner`'s span `id` (the top of the stack unless
    /// intervals end out of order); `None` when it has none open here. Its start samples are
    /// [`OpenStack::samples_of`] it, until the next push.
    #[inline(always)]
    pub fn take(&mut self, owner: u64, id: u64) -> Option<Ended> {
        let top = self.open.len().checked_sub(1)?;
        let o = self.open[top];
        if o.id == id && o.owner == owner {
            self.open.pop();
            return Some(Ended {
                open: o,
                depth: u32::try_from(top + 1).unwrap_or(u32::MAX),
                below: false,
            });
        }
        self.take_below(owner, id)
    }

    /// [`OpenStack::take`] below the top: its samples are set aside, the later intervals'
    /// move down with them.
    #[cold]
    #[inline(never)]
    fn take_below(&mut self, owner: u64, id: u64) -> Option<Ended> {
        let at = self
            .open
            .iter()
            .rposition(|o| o.id == id && o.owner == owner)?;
        let o = self.open.remove(at);
        self.below = if o.sampled {
            self.samples.get(at).copied()
        } else {
            None
        };
        let above = (self.open.len() + 1).min(self.samples.len());
        if at + 1 < above {
            self.samples[at..above].rotate_left(1);
        }
        Some(Ended {
            open: o,
            depth: u32::try_from(at + 1).unwrap_or(u32::MAX),
            below: true,
        })
    }

    /// The start samples of `ended`, the interval [`OpenStack::take`] just returned, when it
    /// was sampled.
    #[inline(always)]
    pub fn samples_of(&self, ended: &Ended) -> Option<&S> {
        if !ended.open.sampled {
            None
        } else if ended.below {
            self.below.as_ref()
        } else {
            self.samples.get(ended.depth as usize - 1)
        }
    }
}

/// `SlotMap::slot_to_counter` value of a slot that holds none of the owner's counters.
pub const NO_COUNTER: u8 = u8::MAX;

/// Which of a span layer's counters each of a thread's counter slots holds (slots beyond
/// `slots` are unused). Made when the layer first runs on the thread, and again whenever the
/// thread's counters change ([`SlotMap::NONE`] marks it stale).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotMap {
    /// The layer this mapping was made for (0: none yet, or stale).
    pub owner: u64,
    /// Counter slots the thread samples.
    pub slots: usize,
    /// Per slot, the layer's counter index, or [`NO_COUNTER`].
    pub slot_to_counter: [u8; picollo_core::ring::MAX_COUNTERS],
    /// Bit `i`: the layer's counter `i` is one of the thread's slots.
    pub mask: u32,
}

impl SlotMap {
    /// No mapping (made for no layer).
    pub const NONE: SlotMap = SlotMap {
        owner: 0,
        slots: 0,
        slot_to_counter: [NO_COUNTER; picollo_core::ring::MAX_COUNTERS],
        mask: 0,
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(owner: u64, id: u64, sampled: bool) -> Open {
        Open {
            owner,
            id,
            start: id * 10,
            sampled,
        }
    }

    #[test]
    fn intervals_end_in_and_out_of_order() {
        let mut s: OpenStack<u32> = OpenStack::new();
        for id in 1..=3 {
            *s.next_samples() = id as u32 * 100;
            assert_eq!(s.push(open(7, id, id != 2)), id as u32);
        }
        // The middle one ends first: the innermost's samples move down with it.
        let e = s.take(7, 2).unwrap();
        assert_eq!((e.depth, s.samples_of(&e)), (2, None));
        let e = s.take(7, 3).unwrap();
        assert_eq!(
            (e.depth, s.samples_of(&e), e.open.start),
            (2, Some(&300), 30)
        );
        assert!(s.take(8, 1).is_none(), "another owner's span");
        let e = s.take(7, 1).unwrap();
        assert_eq!((e.depth, s.samples_of(&e)), (1, Some(&100)));
        // Out of order, sampled: set aside.
        for id in 1..=2 {
            *s.next_samples() = id as u32;
            s.push(open(7, id, true));
        }
        let e = s.take(7, 1).unwrap();
        assert_eq!((e.depth, s.samples_of(&e)), (1, Some(&1)));
        let e = s.take(7, 2).unwrap();
        assert_eq!((e.depth, s.samples_of(&e)), (1, Some(&2)));
        assert_eq!(s.depth(), 0);
        assert!(s.take(7, 1).is_none());
    }
}
