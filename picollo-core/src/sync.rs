//! The switch for bugs planted in loom model builds (`RUSTFLAGS="--cfg loom"`): the lock-free
//! protocols of the other crates (`picollo-ring`'s publish/validate handshake, `picollo-alloc`'s
//! sparse storage and thread-local shards, `picollo-export`'s registry, `picollo-tracing`'s
//! live-span table) swap in loom's atomics themselves, and each lists its own bugs (a
//! `planted::Bug` enum of its own, `crate::planted::Bug` in that crate); this is only the switch
//! they share, so adding a bug to a model never edits this crate.
//!
//! A model build has planted bugs ([`planted`]): a model run with one must fail, which shows
//! that the model can fail at all. Normal builds contain neither loom nor the plants:
//! [`plant!`](crate::plant) is the correct expression there.

/// `plant!(Name, correct, planted)`: `correct`, except in a loom build while the model runs with
/// `crate::planted::Bug::Name` planted (`picollo_core::planted::with`), where it is `planted`;
/// `crate` is the crate that writes the `plant!`, whose own list of bugs that is. Normal builds
/// compile `correct` alone. Exported (hidden) for the other crates' lock-free code.
#[doc(hidden)]
#[macro_export]
// `crate` (not `$crate`) on purpose: the bug is the calling crate's, from its own list.
#[allow(clippy::crate_in_macro_def)]
macro_rules! plant {
    ($bug:ident, $correct:expr, $planted:expr) => {{
        #[cfg(not(loom))]
        let value = $correct;
        #[cfg(loom)]
        let value = if $crate::planted::is(crate::planted::Bug::$bug) {
            $planted
        } else {
            $correct
        };
        value
    }};
}

/// The switch of the bugs planted on purpose in loom builds, one at a time: a model runs with
/// one of a crate's bugs planted ([`with`]), and the code that has it ([`plant!`]) asks
/// whether it is ([`is`]). A bug is a value of any crate's own `Bug` enum.
#[cfg(loom)]
pub mod planted {
    extern crate std;
    use core::any::Any;
    use core::cell::RefCell;
    use std::boxed::Box;

    std::thread_local! {
        /// Per test thread: loom runs a model's threads as coroutines on the thread that
        /// called it, so parallel tests do not see each other's plants.
        static PLANTED: RefCell<Option<Box<dyn Any>>> = const { RefCell::new(None) };
    }

    /// Runs `f` (a loom model) with `bug` planted.
    pub fn with<B: Any, R>(bug: B, f: impl FnOnce() -> R) -> R {
        struct Unplant;
        impl Drop for Unplant {
            fn drop(&mut self) {
                PLANTED.with(|p| p.borrow_mut().take());
            }
        }
        PLANTED.with(|p| *p.borrow_mut() = Some(Box::new(bug)));
        let _unplant = Unplant;
        f()
    }

    /// Whether `bug` is planted on this thread.
    pub fn is<B: Any + PartialEq>(bug: B) -> bool {
        PLANTED.with(|p| {
            p.borrow()
                .as_ref()
                .and_then(|planted| planted.downcast_ref::<B>())
                == Some(&bug)
        })
    }
}
