//! `initTracing({ sink })`: runtime log records handed to a JS function, so
//! an application's own logger (pino, winston, ...) receives them.
//!
//! Events happen on tokio threads that must never wait for JS, so a record
//! goes into a bounded queue and the JS thread is asked, without blocking,
//! to drain it; one call delivers every record queued since the last. When
//! JS falls so far behind that the queue is full, new records are dropped
//! and counted (`LogSink.droppedRecords`, and the
//! `duroxide_node_log_records_dropped_total` metric). The threadsafe function
//! is weak: it never keeps the Node process alive.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use napi::bindgen_prelude::Function;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::Status;
use napi_derive::napi;
use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer};

/// Records waiting for the JS thread; past it, new ones are dropped.
const CAPACITY: usize = 10_000;

/// One log record as the sink receives it.
#[napi(object, object_from_js = false)]
#[derive(Debug, Clone)]
pub struct LogRecord {
    /// `'error' | 'warn' | 'info' | 'debug' | 'trace'`.
    pub level: String,
    /// Where it was logged, e.g. `duroxide::orchestration` (user code's
    /// `ctx.log`), `duroxide::runtime`, `duroxide_node::guard`.
    pub target: String,
    pub message: String,
    /// The event's other fields (`instance_id`, `orchestration_name`, ...,
    /// and the fields passed to `ctx.log`).
    pub fields: Value,
    /// Epoch milliseconds.
    pub timestamp: f64,
}

/// The bounded queue between the tracing threads and the JS thread.
#[derive(Default)]
pub(crate) struct Records {
    queue: Mutex<VecDeque<LogRecord>>,
    /// A drain is scheduled on the JS thread and has not started yet.
    scheduled: AtomicBool,
    dropped: AtomicU64,
}

impl Records {
    /// Queues `record`; true when the caller must schedule a drain.
    fn push(&self, record: LogRecord, capacity: usize) -> bool {
        {
            let mut q = self.queue.lock().expect("log queue lock");
            if q.len() >= capacity {
                drop(q);
                self.dropped.fetch_add(1, Ordering::Relaxed);
                metrics::counter!("duroxide_node_log_records_dropped_total").increment(1);
                return false;
            }
            q.push_back(record);
        }
        !self.scheduled.swap(true, Ordering::AcqRel)
    }

    /// Everything queued; a record pushed from now on schedules a new drain.
    fn drain(&self) -> Vec<LogRecord> {
        self.scheduled.store(false, Ordering::Release);
        self.queue
            .lock()
            .expect("log queue lock")
            .drain(..)
            .collect()
    }

    /// The drain could not be scheduled (the JS side is going away): let
    /// the next record try again.
    fn unschedule(&self) {
        self.scheduled.store(false, Ordering::Release);
    }
}

type Deliver = ThreadsafeFunction<(), (), Vec<LogRecord>, Status, false, true>;

/// The tracing layer that feeds a JS sink.
pub(crate) struct SinkLayer {
    records: Arc<Records>,
    deliver: Deliver,
}

impl SinkLayer {
    /// `sink` receives arrays of records on the JS thread.
    pub(crate) fn new(sink: Function<'_, Vec<LogRecord>, ()>) -> napi::Result<(Self, LogSink)> {
        let records = Arc::new(Records::default());
        let draining = records.clone();
        let deliver = sink
            .build_threadsafe_function::<()>()
            .weak::<true>()
            .callee_handled::<false>()
            .build_callback(move |_ctx| Ok(draining.drain()))?;
        let handle = LogSink {
            records: records.clone(),
        };
        Ok((Self { records, deliver }, handle))
    }
}

impl<S: Subscriber> Layer<S> for SinkLayer {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let record = record_of(event);
        if self.records.push(record, CAPACITY) {
            let status = self
                .deliver
                .call((), ThreadsafeFunctionCallMode::NonBlocking);
            if status != Status::Ok {
                self.records.unschedule();
            }
        }
    }
}

fn level_name(level: &Level) -> &'static str {
    match *level {
        Level::ERROR => "error",
        Level::WARN => "warn",
        Level::INFO => "info",
        Level::DEBUG => "debug",
        Level::TRACE => "trace",
    }
}

fn record_of(event: &Event<'_>) -> LogRecord {
    let meta = event.metadata();
    let mut visitor = Fields::default();
    event.record(&mut visitor);
    let timestamp = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0);
    LogRecord {
        level: level_name(meta.level()).into(),
        target: meta.target().into(),
        message: visitor.message,
        fields: Value::Object(visitor.fields),
        timestamp,
    }
}

/// An event's message and its other fields as JSON values. `fields` holds
/// the JSON of the fields passed to `ctx.log` (`bridge/log.rs`); they are
/// merged in.
#[derive(Default)]
struct Fields {
    message: String,
    fields: Map<String, Value>,
}

impl Fields {
    fn put(&mut self, field: &Field, value: Value) {
        // No failure structure reaches the application's logger (bridge/failure.rs).
        let value = match value {
            Value::String(s) => match crate::bridge::failure::scrub(&s) {
                std::borrow::Cow::Owned(clean) => Value::String(clean),
                std::borrow::Cow::Borrowed(_) => Value::String(s),
            },
            other => other,
        };
        match (field.name(), value) {
            ("message", Value::String(s)) => self.message = s,
            ("message", other) => self.message = other.to_string(),
            (crate::logging::USER_FIELDS, Value::String(json)) => {
                match serde_json::from_str::<Map<String, Value>>(&json) {
                    Ok(user) => self.fields.extend(user),
                    Err(_) => {
                        self.fields
                            .insert(crate::logging::USER_FIELDS.into(), Value::String(json));
                    }
                }
            }
            (name, value) => {
                self.fields.insert(name.to_string(), value);
            }
        }
    }
}

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.put(field, Value::String(format!("{value:?}")));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.put(field, Value::String(value.to_string()));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.put(field, Value::from(value));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.put(field, Value::from(value));
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.put(field, Value::from(value));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.put(field, Value::from(value));
    }
}

/// What `initTracing({ sink })` returns: the sink's delivery counters.
#[napi]
pub struct LogSink {
    records: Arc<Records>,
}

#[napi]
impl LogSink {
    /// Records dropped because the JS thread fell more than 10000 records behind.
    #[napi(getter)]
    pub fn dropped_records(&self) -> i64 {
        self.records.dropped.load(Ordering::Relaxed) as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(message: &str) -> LogRecord {
        LogRecord {
            level: "info".into(),
            target: "t".into(),
            message: message.into(),
            fields: Value::Null,
            timestamp: 0.0,
        }
    }

    #[test]
    fn a_full_queue_drops_and_counts_without_blocking() {
        let r = Records::default();
        assert!(r.push(record("a"), 2), "the first record schedules a drain");
        assert!(!r.push(record("b"), 2), "one drain is scheduled at a time");
        assert!(!r.push(record("c"), 2));
        assert_eq!(r.dropped.load(Ordering::Relaxed), 1);
        let drained: Vec<_> = r.drain().into_iter().map(|x| x.message).collect();
        assert_eq!(drained, ["a", "b"]);
        assert!(
            r.push(record("d"), 2),
            "after a drain, a record schedules the next"
        );
    }
}
