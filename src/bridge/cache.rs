//! The generator cache: live JS generators kept between turns, per
//! (instance, execution), least recently used evicted first.
//!
//! A turn takes its entry out while it runs and puts it back when it ends, so
//! two turns never share a generator, and the count bounds only idle entries
//! (in-flight ones are bounded by `orchestrationConcurrency`). The cache
//! holds no JS references: an entry names its generator by id, and whoever
//! drops an entry tells JS to dispose that id.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use super::context::ContextState;
use super::step_log::StepLog;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct CacheKey {
    pub instance: String,
    pub execution: u64,
}

/// A suspended generator and everything needed to resume it.
pub(crate) struct CachedGenerator {
    /// The generator's id on the JS side.
    pub id: u32,
    pub context: Arc<ContextState>,
    /// Name, version and input it was started with: a turn whose own differ
    /// belongs to another instance that reused the id.
    pub name: String,
    pub version: String,
    pub input: String,
    pub log: StepLog,
}

struct Lru {
    /// False after shutdown: nothing is cached any more.
    open: bool,
    tick: u64,
    entries: HashMap<CacheKey, (u64, CachedGenerator)>,
    order: BTreeMap<u64, CacheKey>,
}

pub(crate) struct GeneratorCache {
    capacity: usize,
    lru: Mutex<Lru>,
}

impl GeneratorCache {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            capacity,
            lru: Mutex::new(Lru {
                open: true,
                tick: 0,
                entries: HashMap::new(),
                order: BTreeMap::new(),
            }),
        }
    }

    pub(crate) fn enabled(&self) -> bool {
        self.capacity > 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Lru> {
        self.lru.lock().expect("generator cache lock")
    }

    pub(crate) fn take(&self, key: &CacheKey) -> Option<CachedGenerator> {
        let mut lru = self.lock();
        let (tick, entry) = lru.entries.remove(key)?;
        lru.order.remove(&tick);
        Some(entry)
    }

    /// Caches `entry` as the most recently used; returns the generator ids
    /// that no longer have an entry (evicted, or `entry` itself when the
    /// cache is off or closed), for the caller to dispose.
    #[must_use]
    pub(crate) fn put(&self, key: CacheKey, entry: CachedGenerator) -> Vec<u32> {
        let mut lru = self.lock();
        if !lru.open || self.capacity == 0 {
            return vec![entry.id];
        }
        let mut dropped = Vec::new();
        lru.tick += 1;
        let tick = lru.tick;
        if let Some((old_tick, old)) = lru.entries.insert(key.clone(), (tick, entry)) {
            lru.order.remove(&old_tick);
            dropped.push(old.id);
        }
        lru.order.insert(tick, key);
        while lru.entries.len() > self.capacity {
            let Some((_, oldest)) = lru.order.pop_first() else {
                break;
            };
            if let Some((_, evicted)) = lru.entries.remove(&oldest) {
                dropped.push(evicted.id);
            }
        }
        dropped
    }

    /// Empties the cache for good (shutdown); returns the dropped ids.
    pub(crate) fn close(&self) -> Vec<u32> {
        let mut lru = self.lock();
        lru.open = false;
        lru.order.clear();
        lru.entries.drain().map(|(_, (_, e))| e.id).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(i: &str) -> CacheKey {
        CacheKey {
            instance: i.into(),
            execution: 1,
        }
    }

    fn entry(id: u32) -> CachedGenerator {
        CachedGenerator {
            id,
            context: ContextState::new(
                duroxide::OrchestrationContext::new(
                    Vec::new(),
                    1,
                    "i".into(),
                    "o".into(),
                    "1.0.0".into(),
                    None,
                ),
                true,
            ),
            name: "o".into(),
            version: "1.0.0".into(),
            input: "null".into(),
            log: StepLog::default(),
        }
    }

    #[test]
    fn generator_cache_evicts_least_recently_used_by_count() {
        let cache = GeneratorCache::new(2);
        assert!(cache.put(key("a"), entry(1)).is_empty());
        assert!(cache.put(key("b"), entry(2)).is_empty());
        // Using `a` makes `b` the oldest.
        let a = cache.take(&key("a")).unwrap();
        assert!(cache.put(key("a"), a).is_empty());
        assert_eq!(cache.put(key("c"), entry(3)), vec![2]);
        assert!(cache.take(&key("b")).is_none());
        assert_eq!(cache.take(&key("a")).map(|e| e.id), Some(1));
    }

    #[test]
    fn generator_cache_off_or_closed_keeps_nothing() {
        let off = GeneratorCache::new(0);
        assert_eq!(off.put(key("a"), entry(1)), vec![1]);
        let cache = GeneratorCache::new(4);
        assert!(cache.put(key("a"), entry(1)).is_empty());
        assert_eq!(cache.close(), vec![1]);
        assert_eq!(cache.put(key("b"), entry(2)), vec![2]);
        assert!(cache.take(&key("b")).is_none());
    }
}
