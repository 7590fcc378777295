//! Where runtime logs go. duroxide installs a stdout subscriber when none is
//! installed; a library must never write to its host's stdout, so before the
//! first runtime starts we install one that writes to stderr, unless the
//! application already chose a file with `initTracing`.
//!
//! `logLevel` applies to every target the runtime logs under (duroxide,
//! duroxide-pg and this package), so `'off'` is silent and `'error'` shows
//! only errors; other crates never log above WARN. `relevel.rs` moves the
//! situations duroxide warns about but that are normal operation to INFO or
//! DEBUG. `sink.rs` hands the records to a JS function instead of (or as
//! well as) a file.

mod relevel;
pub(crate) mod sink;

use std::borrow::Cow;
use std::fs::OpenOptions;
use std::io::Write;
use std::sync::Mutex;

use duroxide::runtime::LogFormat;
use napi::bindgen_prelude::Function;
use napi_derive::napi;
use tracing::Metadata;
use tracing_subscriber::fmt::writer::{BoxMakeWriter, MakeWriter};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

use self::sink::{LogRecord, LogSink, SinkLayer};
use crate::errors::{BridgeError, ErrorCode};

/// The event field that carries the JSON of the fields passed to `ctx.log`;
/// the sink merges them into the record's `fields`.
pub(crate) const USER_FIELDS: &str = "fields";

/// `level` for the runtime's own targets; other crates at WARN, or at
/// `level` when it is stricter. `RUST_LOG` overrides it.
fn filter(level: &str) -> EnvFilter {
    EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(directives(level)))
}

fn directives(level: &str) -> String {
    let level = level.to_ascii_lowercase();
    let others = if matches!(level.as_str(), "off" | "error") {
        level.as_str()
    } else {
        "warn"
    };
    format!("{others},duroxide={level},duroxide_pg={level},duroxide_node={level}")
}

/// Installs the process's subscriber: lines to `writer` and/or records to `sink`.
fn install(
    format: &LogFormat,
    level: &str,
    writer: Option<BoxMakeWriter>,
    sink: Option<SinkLayer>,
) -> Result<(), String> {
    let registry = tracing_subscriber::registry()
        .with(filter(level))
        .with(relevel::Relevel)
        .with(sink);
    let fmt = writer.map(|w| {
        let fmt = tracing_subscriber::fmt::layer().with_writer(Scrubbed(w));
        match format {
            LogFormat::Json => fmt.json().boxed(),
            LogFormat::Pretty => fmt.with_ansi(false).boxed(),
            LogFormat::Compact => fmt.compact().with_ansi(false).boxed(),
        }
    });
    registry.with(fmt).try_init().map_err(|e| e.to_string())
}

/// A writer of formatted log lines without failure structures (bridge/failure.rs):
/// duroxide logs failure texts in many fields and shapes, and the fmt layer
/// hands each line to its writer in one piece, so the line is the one place
/// that sees them all, however they were formatted.
struct Scrubbed(BoxMakeWriter);

impl<'a> MakeWriter<'a> for Scrubbed {
    type Writer = ScrubbedLine<<BoxMakeWriter as MakeWriter<'a>>::Writer>;

    fn make_writer(&'a self) -> Self::Writer {
        ScrubbedLine(self.0.make_writer())
    }

    fn make_writer_for(&'a self, meta: &Metadata<'_>) -> Self::Writer {
        ScrubbedLine(self.0.make_writer_for(meta))
    }
}

struct ScrubbedLine<W>(W);

impl<W: Write> Write for ScrubbedLine<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match std::str::from_utf8(buf).map(crate::bridge::failure::scrub) {
            Ok(Cow::Owned(clean)) => self.0.write_all(clean.as_bytes()).map(|()| buf.len()),
            _ => self.0.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

/// Installs the stderr subscriber if no subscriber is installed yet. The first
/// runtime's `logFormat`/`logLevel` decide its shape; later calls are no-ops.
pub fn ensure_stderr_logging(format: &LogFormat, level: &str) {
    let _ = install(
        format,
        level,
        Some(BoxMakeWriter::new(std::io::stderr)),
        None,
    );
}

/// Options of `initTracing`.
#[napi(object)]
pub struct TracingOptions {
    /// File the logs are appended to (created if missing). At least one of
    /// it and the sink.
    pub log_file: Option<String>,
    /// `trace` | `debug` | `info` | `warn` | `error` (default `info`).
    pub log_level: Option<String>,
    /// `json` | `pretty` | `compact` (default `compact`).
    pub log_format: Option<String>,
}

/// Sends runtime logs to a file and/or to `sink`, which receives arrays of
/// records on the JS thread. Call it before the first `Runtime.start()`.
/// Returns the sink's counters when there is a sink.
#[napi(ts_args_type = "options: TracingOptions, sink?: (records: LogRecord[]) => void")]
pub fn init_tracing(
    options: TracingOptions,
    sink: Option<Function<'_, Vec<LogRecord>, ()>>,
) -> napi::Result<Option<LogSink>, ErrorCode> {
    let level = options.log_level.unwrap_or_else(|| "info".into());
    if !["trace", "debug", "info", "warn", "error", "off"]
        .contains(&level.to_ascii_lowercase().as_str())
    {
        return Err(BridgeError::InvalidOption(format!(
            "logLevel must be one of trace, debug, info, warn, error, off, got '{level}'"
        ))
        .into());
    }
    let format = match options.log_format.as_deref() {
        None | Some("compact") => LogFormat::Compact,
        Some("pretty") => LogFormat::Pretty,
        Some("json") => LogFormat::Json,
        Some(other) => {
            return Err(BridgeError::InvalidOption(format!(
                "logFormat must be one of 'json', 'pretty', 'compact', got '{other}'"
            ))
            .into())
        }
    };
    let writer = match &options.log_file {
        Some(path) => {
            let file = OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| {
                    BridgeError::InvalidArgument(format!("Failed to open log file '{path}': {e}"))
                })?;
            Some(BoxMakeWriter::new(Mutex::new(file)))
        }
        None => None,
    };
    let (layer, handle) = match sink {
        Some(f) => {
            let (layer, handle) = SinkLayer::new(f).map_err(BridgeError::from)?;
            (Some(layer), Some(handle))
        }
        None => (None, None),
    };
    if writer.is_none() && layer.is_none() {
        return Err(BridgeError::InvalidArgument(
            "initTracing needs logFile or sink (or both)".into(),
        )
        .into());
    }
    install(&format, &level, writer, layer)
        .map(|()| handle)
        .map_err(|e| {
            BridgeError::RuntimeState(format!(
                "Failed to init tracing: a tracing subscriber is already installed ({e}); \
             call initTracing once, before the first Runtime.start()"
            ))
            .into()
        })
}

#[cfg(test)]
mod tests {
    use super::directives;

    #[test]
    fn the_level_applies_to_every_runtime_target() {
        assert_eq!(
            directives("off"),
            "off,duroxide=off,duroxide_pg=off,duroxide_node=off"
        );
        assert_eq!(
            directives("DEBUG"),
            "warn,duroxide=debug,duroxide_pg=debug,duroxide_node=debug"
        );
    }
}
