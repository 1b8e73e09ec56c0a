//! The busy intervals open on one thread ([`OpenStack`]): every span begun and not ended
//! yet, `span!` guards and span layers alike, so the nesting depth a frame carries counts
//! both; and [`SlotMap`], which of a span layer's counters each of the thread's counter
//! slots holds. Platform-neutral: `picollo_linux::span` keeps one of each per thread, beside
//! the thread's ring and counters, and a layer without rings (time only) keeps its own.

/// An interval of a span layer's span, begun and not ended yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Open {
    /// Who began it (a layer's id).
    pub owner: u64,
    /// The span's id, for its owner.
    pub id: u64,
    /// The span clock at its start.
    pub start: u64,
    /// Its nesting depth on the thread when it began (1 for the outermost), set by
    /// [`OpenStack::push`].
    depth: u32,
    /// Whether counter samples were taken at its start.
    pub sampled: bool,
}

impl Open {
    /// An interval of `owner`'s span `id` that began at `start`, `sampled` or not.
    #[inline(always)]
    pub const fn new(owner: u64, id: u64, start: u64, sampled: bool) -> Self {
        Self {
            owner,
            id,
            start,
            depth: 0,
            sampled,
        }
    }
}

/// Where the start samples of an interval that ended are ([`OpenStack::samples_of`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StartSamples {
    /// It was not sampled.
    None,
    /// A span layer's interval that was the innermost of the layers': its samples stayed
    /// where they were.
    Top,
    /// A span layer's interval that ended below the innermost (out of order): its samples
    /// were set aside.
    SetAside,
    /// A scoped interval's, at its depth ([`OpenStack::scoped_samples`]).
    Scoped,
}

/// An interval that ended: 16 bytes, so the hot path moves no samples (they stay in the
/// stack, [`OpenStack::samples_of`]) and the interval stays in registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ended {
    /// The span clock at its start.
    pub start: u64,
    /// Its nesting depth on the thread when it began: 1 for the outermost.
    pub depth: u32,
    /// Where its start samples are.
    pub starts: StartSamples,
}

/// The intervals open on one thread, with their start samples (`S`: one sample per counter
/// slot), of two kinds:
///
/// - **scoped** intervals (`span!` guards): they end in the reverse order of their begins,
///   as scopes do, and the guard keeps its start and depth, so the stack keeps only their
///   count and their start samples (by depth);
/// - **span layers'** intervals, innermost last, which end in any order (a `tracing` span
///   need not exit in LIFO order): matched by owner and id, each with the depth it began
///   at.
///
/// The depth of a new interval counts both kinds: every interval open on the thread.
#[derive(Debug)]
pub struct OpenStack<S> {
    /// The span layers' open intervals, innermost last.
    open: Vec<Open>,
    /// Intervals open on the thread, of both kinds.
    depth: u32,
    /// `samples[i]`: the start samples of `open[i]`, when it has them (grown on first use,
    /// never shrunk: an unsampled interval leaves its entry as it was). The innermost
    /// interval's stay at `samples[open.len()]` after it ends, until the next push.
    samples: Vec<S>,
    /// The start samples of the last layer interval that ended out of order.
    below: Option<S>,
    /// `scoped[d - 1]`: the start samples of the scoped interval open at depth `d`, with
    /// the ticket of the interval that took them.
    scoped: Vec<(S, u32)>,
    /// The ticket of the last scoped interval sampled (see [`OpenStack::scoped_samples`]).
    tickets: u32,
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
            depth: 0,
            samples: Vec::new(),
            below: None,
            scoped: Vec::new(),
            tickets: 0,
        }
    }

    /// Intervals open, of both kinds: the depth of the innermost.
    #[inline(always)]
    pub fn depth(&self) -> u32 {
        self.depth
    }

    /// The innermost open interval of the span layers'.
    #[inline(always)]
    pub fn top(&self) -> Option<&Open> {
        self.open.last()
    }

    /// Opens a span layer's interval; returns its depth (1 for the outermost).
    #[inline(always)]
    pub fn push(&mut self, mut open: Open) -> u32 {
        // 2^32 open intervals do not fit in memory: the depth does not wrap.
        self.depth = self.depth.wrapping_add(1);
        open.depth = self.depth;
        self.open.push(open);
        self.depth
    }

    /// Opens a scoped interval; returns its depth (1 for the outermost), which its owner
    /// keeps and hands back to [`OpenStack::samples_of`].
    #[inline(always)]
    pub fn push_scoped(&mut self) -> u32 {
        self.depth = self.depth.wrapping_add(1);
        self.depth
    }

    /// Ends the innermost scoped interval.
    #[inline(always)]
    pub fn pop_scoped(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }
}

impl<S: Copy + Default> OpenStack<S> {
    /// The start samples of the next span layer's interval pushed, to fill before
    /// [`OpenStack::push`] with `sampled` set.
    #[inline]
    pub fn next_samples(&mut self) -> &mut S {
        grown_to(&mut self.samples, self.open.len())
    }

    /// The start samples of the scoped interval at `depth` (from [`OpenStack::push_scoped`]),
    /// to fill, and their ticket, which the interval keeps and hands back to
    /// [`OpenStack::scoped_samples_of`].
    ///
    /// The ticket tells a scoped interval ended out of order from one that ended in order:
    /// a guard whose outer guard ended first (`a.end()` while `b` is open) leaves its depth
    /// to the next interval begun, whose start samples then take its slot; the ticket shows
    /// they are not its own any more. Only sampled intervals take one (0 is never a ticket).
    #[inline]
    pub fn scoped_samples(&mut self, depth: u32) -> (&mut S, u32) {
        self.tickets = self.tickets.wrapping_add(1).max(1);
        let ticket = self.tickets;
        let slot = grown_to(&mut self.scoped, (depth as usize).saturating_sub(1));
        slot.1 = ticket;
        (&mut slot.0, ticket)
    }

    /// The start samples of the scoped interval at `depth` with `ticket`, when it took
    /// samples and no later interval took its slot since (it ended out of order: see
    /// [`OpenStack::scoped_samples`]). Call it before the next push.
    #[inline(always)]
    pub fn scoped_samples_of(&self, depth: u32, ticket: u32) -> Option<&S> {
        match self.scoped.get((depth as usize).wrapping_sub(1)) {
            Some((samples, t)) if *t == ticket => Some(samples),
            _ => None,
        }
    }

    /// Ends the innermost open interval of `owner`'s span `id` (the top of the layers'
    /// intervals unless they end out of order); `None` when it has none open here. `before`
    /// runs first, with whether the interval was sampled (to sample the end with as little of
    /// this bookkeeping inside the window as possible; after it, for an interval that ends
    /// out of order); its start samples are then [`OpenStack::samples_of`] it, until the
    /// next push.
    #[inline(always)]
    pub fn take(&mut self, owner: u64, id: u64, before: impl FnOnce(bool)) -> Option<Ended> {
        match self.open.last() {
            Some(o) if o.id == id && o.owner == owner => {
                let (start, depth, sampled) = (o.start, o.depth, o.sampled);
                before(sampled);
                self.open.pop();
                self.depth = self.depth.saturating_sub(1);
                Some(Ended {
                    start,
                    depth,
                    starts: if sampled {
                        StartSamples::Top
                    } else {
                        StartSamples::None
                    },
                })
            }
            _ => {
                let ended = self.take_below(owner, id)?;
                before(ended.starts != StartSamples::None);
                Some(ended)
            }
        }
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
        self.depth = self.depth.saturating_sub(1);
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
            start: o.start,
            depth: o.depth,
            starts: if o.sampled {
                StartSamples::SetAside
            } else {
                StartSamples::None
            },
        })
    }

    /// The start samples of `ended`: the interval [`OpenStack::take`] just returned, or a
    /// scoped interval [`OpenStack::pop_scoped`] just ended whose samples are its own
    /// ([`OpenStack::scoped_samples_of`] says), when it was sampled.
    #[inline(always)]
    pub fn samples_of(&self, ended: &Ended) -> Option<&S> {
        match ended.starts {
            StartSamples::None => None,
            StartSamples::Top => self.samples.get(self.open.len()),
            StartSamples::SetAside => self.below.as_ref(),
            StartSamples::Scoped => self
                .scoped
                .get((ended.depth as usize).wrapping_sub(1))
                .map(|(samples, _)| samples),
        }
    }
}

/// `v[at]`, growing `v` with defaults to hold it.
#[inline(always)]
fn grown_to<S: Copy + Default>(v: &mut Vec<S>, at: usize) -> &mut S {
    if v.len() <= at {
        v.resize(at + 1, S::default());
    }
    &mut v[at]
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
    pub slot_to_counter: [u8; picollo_ring::MAX_COUNTERS],
    /// Bit `i`: the layer's counter `i` is one of the thread's slots.
    pub mask: u32,
}

impl SlotMap {
    /// No mapping (made for no layer).
    pub const NONE: SlotMap = SlotMap {
        owner: 0,
        slots: 0,
        slot_to_counter: [NO_COUNTER; picollo_ring::MAX_COUNTERS],
        mask: 0,
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(owner: u64, id: u64, sampled: bool) -> Open {
        Open::new(owner, id, id * 10, sampled)
    }

    #[test]
    fn intervals_end_in_and_out_of_order() {
        let mut s: OpenStack<u32> = OpenStack::new();
        for id in 1..=3 {
            *s.next_samples() = id as u32 * 100;
            assert_eq!(s.push(open(7, id, id != 2)), id as u32);
        }
        // The middle one ends first: the innermost's samples move down with it.
        let mut sampled = None;
        let e = s.take(7, 2, |x| sampled = Some(x)).unwrap();
        assert_eq!((e.depth, s.samples_of(&e), sampled), (2, None, Some(false)));
        let e = s.take(7, 3, |x| sampled = Some(x)).unwrap();
        assert_eq!(
            (e.depth, s.samples_of(&e), e.start, sampled),
            (3, Some(&300), 30, Some(true)),
            "the depth it began at"
        );
        assert!(
            s.take(8, 1, |_| panic!("not open")).is_none(),
            "another owner's span"
        );
        let e = s.take(7, 1, |_| {}).unwrap();
        assert_eq!((e.depth, s.samples_of(&e)), (1, Some(&100)));
        // Out of order, sampled: set aside.
        for id in 1..=2 {
            *s.next_samples() = id as u32;
            s.push(open(7, id, true));
        }
        let e = s.take(7, 1, |_| {}).unwrap();
        assert_eq!(
            (e.depth, s.samples_of(&e), e.starts),
            (1, Some(&1), StartSamples::SetAside)
        );
        let e = s.take(7, 2, |_| {}).unwrap();
        assert_eq!(
            (e.depth, s.samples_of(&e), e.starts),
            (2, Some(&2), StartSamples::Top)
        );
        assert_eq!(s.depth(), 0);
        assert!(s.take(7, 1, |_| {}).is_none());
    }

    #[test]
    fn scoped_and_layer_intervals_share_the_depth() {
        let mut s: OpenStack<u32> = OpenStack::new();
        let guard = s.push_scoped();
        *s.scoped_samples(guard).0 = 11;
        *s.next_samples() = 22;
        assert_eq!((guard, s.push(open(7, 1, true))), (1, 2));
        let inner = s.push_scoped();
        let (samples, ticket) = s.scoped_samples(inner);
        *samples = 33;
        assert_eq!(s.scoped_samples_of(inner, ticket), Some(&33));
        assert_eq!((inner, s.depth()), (3, 3));
        s.pop_scoped();
        let e = Ended {
            start: 0,
            depth: inner,
            starts: StartSamples::Scoped,
        };
        assert_eq!(s.samples_of(&e), Some(&33));
        let e = s.take(7, 1, |_| {}).unwrap();
        assert_eq!((e.depth, s.samples_of(&e)), (2, Some(&22)));
        s.pop_scoped();
        assert_eq!(s.depth(), 0);
        // A layer's interval that outlives the guard it began in keeps its depth; the next
        // one begins at the depth of what is open then.
        s.push_scoped();
        s.push(open(7, 2, false));
        s.pop_scoped();
        assert_eq!(s.push(open(7, 3, false)), 2);
        assert_eq!(s.take(7, 2, |_| {}).unwrap().depth, 2);
        assert_eq!(s.take(7, 3, |_| {}).unwrap().depth, 2);
        assert_eq!(s.depth(), 0);
    }

    #[test]
    fn a_scoped_interval_ended_out_of_order_keeps_no_other_samples() {
        let mut s: OpenStack<u32> = OpenStack::new();
        let a = s.push_scoped();
        let (samples, a_ticket) = s.scoped_samples(a);
        *samples = 1;
        let b = s.push_scoped();
        let (samples, b_ticket) = s.scoped_samples(b);
        *samples = 2;
        // `a` ends first: `b` is still open, at depth 2, but the depth count drops to 1.
        assert_eq!(s.scoped_samples_of(a, a_ticket), Some(&1));
        s.pop_scoped();
        // The next interval takes depth 2, and with it `b`'s slot.
        let c = s.push_scoped();
        assert_eq!(c, b);
        let (samples, c_ticket) = s.scoped_samples(c);
        *samples = 3;
        // `b` ends: its samples are gone, and it is told so rather than handed `c`'s.
        assert_eq!(s.scoped_samples_of(b, b_ticket), None);
        s.pop_scoped();
        assert_eq!(s.scoped_samples_of(c, c_ticket), Some(&3));
        s.pop_scoped();
        assert_eq!(s.depth(), 0);
    }
}
