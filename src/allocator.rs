//! The allocator of everything the native module allocates, duroxide's
//! runtime and stores included (Node's own heap is not affected).
//!
//! A turn hands duroxide its execution's whole history, and duroxide copies
//! it three more times per turn (its history manager, `full_history`, the
//! replay engine's working copy), each event a few small strings; so a
//! turn's allocations and frees grow with the history. mimalloc makes them
//! cheaper than glibc's malloc, as it does for the napi-rs bindings of
//! rolldown, oxc and rspack. Without transparent huge pages (`no_thp` in
//! Cargo.toml): with them RSS started 25 MiB higher and kept growing
//! (the measurements are in the git history of `docs/architecture.md`).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[cfg(test)]
mod tests {
    #[test]
    fn the_modules_allocations_come_from_mimalloc() {
        let history: Vec<u64> = Vec::with_capacity(64);
        // SAFETY: mimalloc only compares the address with its own regions.
        let ours = unsafe { libmimalloc_sys::mi_is_in_heap_region(history.as_ptr().cast()) };
        assert!(ours, "a Vec's buffer is not in mimalloc's heap");
    }
}
