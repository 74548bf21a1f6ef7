//! [`MessageMemo`]: values computed from shared trace messages, remembered while each message
//! lives.
//!
//! A sweep's units share their trace's messages behind `Arc`s and ask the same questions of
//! them over and over (token counts, what a message states for a key phrase). A memo keyed by
//! the address of a message's allocation answers those once per thread. Each entry holds a
//! `Weak` to its message: the allocation cannot be freed while the entry is there (so no other
//! message takes its address) and the message cannot change (`Arc::get_mut` refuses,
//! `Arc::make_mut` moves it to a new allocation), so an entry found for a live `Arc`'s address
//! is that message's.
//!
//! Messages made by one unit (its summaries, its planted needle) die with the unit, and their
//! entries with them: entries of freed messages are dropped whenever the memo has grown to twice
//! the entries that were live at the last drop (at least [`MessageMemo::FLOOR`]). So a memo
//! holds at most twice what was live at its last drop, not an entry for every unit that ran,
//! and the drops cost O(1) an entry. When half of [`MessageMemo::KEPT`] entries are still live
//! at a drop, the memo starts over: it never holds more than [`MessageMemo::KEPT`].

use super::Message;
use rustc_hash::FxHashMap;
use std::sync::{Arc, Weak};

/// A value per shared message, by the address of its allocation (see the module's docs).
pub struct MessageMemo<V> {
    entries: FxHashMap<usize, (Weak<Message>, V)>,
    /// Entries at which those of freed messages are dropped next.
    prune_at: usize,
}

impl<V> Default for MessageMemo<V> {
    fn default() -> Self {
        Self {
            entries: FxHashMap::default(),
            prune_at: Self::FLOOR,
        }
    }
}

impl<V> MessageMemo<V> {
    /// Freed entries a memo may hold besides its live ones (each pins its message's allocation,
    /// not its texts: ~250 bytes).
    pub const FLOOR: usize = 64;
    /// Entries at most: when half of them are live at a drop, the memo is emptied (a thread
    /// that works on that many shared messages at once gets little help from a memo).
    pub const KEPT: usize = 2048;

    /// The entry of `message`, made by `make` if it has none.
    pub fn get_or_insert_with(
        &mut self,
        message: &Arc<Message>,
        make: impl FnOnce() -> V,
    ) -> &mut V {
        let key = Arc::as_ptr(message) as usize;
        if self.entries.len() >= self.prune_at && !self.entries.contains_key(&key) {
            self.entries.retain(|_, (m, _)| m.strong_count() > 0);
            if self.entries.len() >= Self::KEPT / 2 {
                self.entries.clear();
            }
            self.prune_at = (2 * self.entries.len()).max(Self::FLOOR);
        }
        &mut self
            .entries
            .entry(key)
            .or_insert_with(|| (Arc::downgrade(message), make()))
            .1
    }

    /// Entries held (live or not).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the memo holds no entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Role;

    fn message(text: &str) -> Arc<Message> {
        Arc::new(Message::new(Role::User, text))
    }

    #[test]
    fn a_live_message_is_computed_once() {
        let mut memo = MessageMemo::default();
        let m = message("hello");
        let mut calls = 0;
        for _ in 0..3 {
            let v = *memo.get_or_insert_with(&m, || {
                calls += 1;
                m.content.len()
            });
            assert_eq!(v, 5);
        }
        assert_eq!(calls, 1);
    }

    #[test]
    fn freed_messages_do_not_accumulate_with_the_units_that_made_them() {
        let mut memo = MessageMemo::default();
        // A trace's messages, shared and live throughout.
        let shared: Vec<_> = (0..100).map(|i| message(&format!("shared {i}"))).collect();
        for m in &shared {
            memo.get_or_insert_with(m, || 0usize);
        }
        // 10,000 units, each with a few messages of its own that die with it.
        let mut most = 0;
        for unit in 0..10_000 {
            let own: Vec<_> = (0..3)
                .map(|i| message(&format!("unit {unit} {i}")))
                .collect();
            for m in shared.iter().chain(&own) {
                memo.get_or_insert_with(m, || 1usize);
            }
            most = most.max(memo.len());
        }
        // Live: 100 shared + 3 own; freed ones at most as many as the live at the last drop
        // plus the floor.
        assert!(
            most <= 2 * 103 + MessageMemo::<usize>::FLOOR,
            "the memo held {most} entries"
        );
        // The shared messages' values survived every drop.
        for m in &shared {
            assert_eq!(*memo.get_or_insert_with(m, || 9), 0);
        }
    }

    #[test]
    fn past_its_cap_of_live_entries_the_memo_starts_over() {
        let mut memo = MessageMemo::default();
        let live: Vec<_> = (0..MessageMemo::<u8>::KEPT + 10)
            .map(|i| message(&i.to_string()))
            .collect();
        for m in &live {
            memo.get_or_insert_with(m, || 0u8);
        }
        assert!(memo.len() <= MessageMemo::<u8>::KEPT);
    }
}
