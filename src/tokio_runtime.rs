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
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.enable_all().event_interval(EVENT_INTERVAL);
    #[cfg(target_os = "linux")]
    builder.on_thread_start(exiting_threads::started);
    let runtime = builder.build();
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
/// The threads finish what they are running. napi-rs waits for them at most
/// 100 ms, which a thread loading the CA store on a loaded machine outlasts
/// (3 of 30 exits still crashed with two busy processes beside them, the core
/// showing our LISTEN task's connect in `SSL_CTX_load_verify_locations`), so
/// on Linux, where native-tls is OpenSSL, we wait for every runtime thread to
/// be gone, at most [`EXIT_WAIT`].
extern "C" fn stop_at_exit() {
    // A panic must not unwind into the C runtime.
    let _ = std::panic::catch_unwind(|| {
        napi::bindgen_prelude::shutdown_async_runtime();
        #[cfg(target_os = "linux")]
        exiting_threads::wait(EXIT_WAIT);
    });
}

/// The longest `process.exit()` waits for a runtime thread that is still
/// finishing a poll; past it the process exits as it would have without us.
#[cfg(target_os = "linux")]
const EXIT_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// The runtime's threads by Linux thread id, so the exit handler can wait
/// until each one has left the kernel's task list: that is after its
/// thread-local destructors, OpenSSL's among them, which Tokio's
/// `on_thread_stop` precedes.
#[cfg(target_os = "linux")]
mod exiting_threads {
    use std::sync::Mutex;
    use std::time::{Duration, Instant};

    /// Only the runtime's own threads: they live as long as the process.
    static THREADS: Mutex<Vec<libc::pid_t>> = Mutex::new(Vec::new());

    fn alive(tid: libc::pid_t) -> bool {
        std::path::Path::new(&format!("/proc/self/task/{tid}")).exists()
    }

    pub(super) fn started() {
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() };
        if let Ok(mut threads) = THREADS.lock() {
            // Blocking threads come and go; the list holds the live ones.
            threads.retain(|&t| alive(t));
            threads.push(tid);
        }
    }

    pub(super) fn wait(bound: Duration) {
        let deadline = Instant::now() + bound;
        let Some(threads) = THREADS.lock().ok().map(|t| t.clone()) else {
            return;
        };
        // SAFETY: gettid has no preconditions.
        let own = unsafe { libc::gettid() };
        for tid in threads.into_iter().filter(|&t| t != own) {
            while alive(tid) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(2));
            }
        }
    }
}
