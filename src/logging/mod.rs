//! Where runtime logs go. duroxide installs a stdout subscriber when none is
//! installed; a library must never write to its host's stdout, so before the
//! first runtime starts we install one that writes to stderr, unless the
//! application already chose a file with `initTracing`.
//!
//! `logLevel` applies to every target the runtime logs under (duroxide,
//! duroxide-pg and this package), so `'off'` is silent and `'error'` shows
//! only errors; other crates never log above WARN. `relevel.rs` moves the
//! situations duroxide warns about but that are normal operation to INFO or
//! DEBUG.

mod relevel;

use std::fs::OpenOptions;
use std::sync::Mutex;

use duroxide::runtime::LogFormat;
use napi_derive::napi;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::EnvFilter;

use crate::errors::{BridgeError, ErrorCode};

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

fn install<W>(format: &LogFormat, level: &str, writer: W) -> Result<(), String>
where
    W: for<'a> tracing_subscriber::fmt::MakeWriter<'a> + Send + Sync + 'static,
{
    let registry = tracing_subscriber::registry()
        .with(filter(level))
        .with(relevel::Relevel);
    let fmt = tracing_subscriber::fmt::layer().with_writer(writer);
    let result = match format {
        LogFormat::Json => registry.with(fmt.json()).try_init(),
        LogFormat::Pretty => registry.with(fmt.with_ansi(false)).try_init(),
        LogFormat::Compact => registry.with(fmt.compact().with_ansi(false)).try_init(),
    };
    result.map_err(|e| e.to_string())
}

/// Installs the stderr subscriber if no subscriber is installed yet. The first
/// runtime's `logFormat`/`logLevel` decide its shape; later calls are no-ops.
pub fn ensure_stderr_logging(format: &LogFormat, level: &str) {
    let _ = install(format, level, std::io::stderr);
}

/// Options of `initTracing`.
#[napi(object)]
pub struct TracingOptions {
    /// File the logs are appended to (created if missing).
    pub log_file: String,
    /// `trace` | `debug` | `info` | `warn` | `error` (default `info`).
    pub log_level: Option<String>,
    /// `json` | `pretty` | `compact` (default `compact`).
    pub log_format: Option<String>,
}

/// Sends runtime logs to a file. Call it before the first `Runtime.start()`.
#[napi]
pub fn init_tracing(options: TracingOptions) -> napi::Result<(), ErrorCode> {
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
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&options.log_file)
        .map_err(|e| {
            BridgeError::InvalidArgument(format!(
                "Failed to open log file '{}': {e}",
                options.log_file
            ))
        })?;
    install(&format, &level, Mutex::new(file)).map_err(|e| {
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
