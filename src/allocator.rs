//! The allocator of everything the native module allocates, duroxide's
//! runtime and stores included (Node's own heap is not affected).
//!
//! A turn hands duroxide its execution's whole history, and duroxide copies
//! it several times per turn (its history manager, the replay engine's
//! working and final histories), each event being a few small strings. So
//! past a few hundred steps, a turn's time is mostly small allocations and
//! frees, and grows with the history. mimalloc makes those cheaper than
//! glibc's malloc, as it does for the napi-rs bindings of rolldown, oxc and
//! rspack.
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
