//! The Tokio runtime napi-rs runs our async exports, and duroxide, on.
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
}
