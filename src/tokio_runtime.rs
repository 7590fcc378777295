//! The Tokio runtime napi-rs runs our async exports, and duroxide, on: how
//! it is built, and its stop when the process exits.
//!
//! napi-rs's default is Tokio's: its worker threads look for I/O readiness
//! only when idle or every 61 tasks they run. Under load a client call's
//! reply then waits behind the dispatchers' tasks before its future is
//! woken, and a hello start's latency is what the application's sequential
//! starts add up to. Looking every [`EVENT_INTERVAL`] tasks, 200 hello
//! orchestrations started one after another took 508 ms against 520 ms
//! (medians of 10 alternating runs; 478 against 494 in another 6), and 1
//! did no better than 8.

/// Tasks a worker thread runs between its looks for I/O and timer events.
const EVENT_INTERVAL: u32 = 4;

#[napi_derive::module_init]
fn init() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .event_interval(EVENT_INTERVAL)
        .build();
    // Without it napi-rs builds its default runtime.
    if let Ok(runtime) = runtime {
        napi::bindgen_prelude::create_custom_tokio_runtime(runtime);
    }
    // SAFETY: `atexit` takes any `extern "C" fn()`; it fails only when its
    // table is full, and then the process exits as it did before.
    unsafe {
        atexit(stop_at_exit);
    }
}

extern "C" {
    fn atexit(callback: extern "C" fn()) -> std::os::raw::c_int;
}

/// Stops the runtime's threads when the process exits by `process.exit()`,
/// before OpenSSL's own exit handler frees its tables. The TLS our Postgres
/// connections use is the OpenSSL Node exports, and `process.exit()` does not
/// run the environment's cleanup hooks (where napi-rs stops the runtime on a
/// natural exit), so a connection opening on a worker thread read freed
/// memory: `process.exit()` right after a runtime's `shutdown()` ended with a
/// segmentation fault in 9 of 20 exits (`__test__/runtime.exit.test.js`).
/// Exit handlers run in the reverse order of their registration, and Node
/// sets OpenSSL up, registering its handler, before it loads this module.
/// The threads finish what they are running, waiting at most 100 ms
/// (napi-rs's bound).
extern "C" fn stop_at_exit() {
    // A panic must not unwind into the C runtime.
    let _ = std::panic::catch_unwind(napi::bindgen_prelude::shutdown_async_runtime);
}
