// initTracing: where runtime logs go (a file, the application's logger, or both).
import type { LogFormat, LogLevel } from './options'

/** One runtime log record, as an `initTracing` sink receives it. */
export interface LogRecord {
  level: 'error' | 'warn' | 'info' | 'debug' | 'trace'
  /**
   * Where it was logged: `duroxide::orchestration` (orchestration code's
   * `ctx.log` / `ctx.trace*`), `duroxide::activity` (activity code's),
   * `duroxide::runtime...`, `duroxide_pg...`, `duroxide_node::...`.
   */
  target: string
  message: string
  /**
   * The record's other fields: correlation fields (`instance_id`,
   * `execution_id`, `orchestration_name`, `orchestration_version`, and in
   * activities `activity_name`, `worker_id`) and the fields passed to
   * `ctx.log.*(message, fields)`.
   */
  fields: Record<string, unknown>
  /** Epoch milliseconds. */
  timestamp: number
}

/** Options of `initTracing`: at least one of `logFile` and `sink`. */
export interface TracingOptions {
  /** File the logs are appended to (created if missing). */
  logFile?: string | undefined
  /**
   * Receives every runtime log record on the JS thread, e.g.
   * `(r) => logger[r.level === 'trace' ? 'debug' : r.level]({ ...r.fields, target: r.target }, r.message)`.
   * Records are queued without blocking the runtime's threads and delivered
   * in batches; past 10000 undelivered records new ones are dropped and
   * counted (`droppedRecords`). It never keeps the process alive. A sink
   * that throws loses that record (counted in `sinkErrors`; the first
   * becomes a process warning).
   */
  sink?: ((record: LogRecord) => void) | undefined
  /** Verbosity; matched case-insensitively. `RUST_LOG` overrides it. Default `'info'`. */
  logLevel?: LogLevel | Uppercase<LogLevel> | undefined
  /** Line format of `logFile`. Default `'compact'`. */
  logFormat?: LogFormat | undefined
}

/** What `initTracing` returns when it has a `sink`. */
export interface LogSinkStats {
  /** Records dropped because the JS thread fell more than 10000 records behind. */
  readonly droppedRecords: number
  /** Records the sink threw on. */
  readonly sinkErrors: number
}

/**
 * Sends runtime logs to `logFile` instead of stderr, and/or to `sink`. Call
 * it once, before the first `runtime.start()`. Throws an error whose message
 * contains `Failed to open log file` for an unusable path, and one
 * containing `Failed to init tracing` when a subscriber is already
 * installed. Returns the sink's counters when there is a sink.
 */
export declare function initTracing(options: TracingOptions & { sink: (record: LogRecord) => void }): LogSinkStats
export declare function initTracing(options: TracingOptions & { logFile: string }): void

/** A W3C trace context (https://www.w3.org/TR/trace-context/). */
export interface TraceContext {
  /** `00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>`. */
  traceparent: string
  /** Vendor-specific trace state, if the start had one. */
  tracestate?: string
}

/** Options of `client.startOrchestration` / `startOrchestrationVersioned`. */
export interface StartOptions {
  /**
   * W3C `traceparent` the instance carries: its orchestrations, activities,
   * sub-orchestrations and continue-as-new executions read it as
   * `ctx.traceContext`. Malformed → `ERR_INVALID_ARGUMENT`.
   */
  traceparent?: string | undefined
  /** W3C `tracestate` (needs `traceparent`); at most 512 printable ASCII characters. */
  tracestate?: string | undefined
}

/**
 * `ctx.log` of orchestration and activity contexts: structured lines with
 * the context's correlation fields (`instance_id`, `orchestration_name`,
 * ...) and `fields`, to stderr, the `initTracing` file or its sink. In an
 * orchestration a line is emitted once, on the first execution of the code
 * that logs it, and never while replaying.
 */
export interface ContextLog {
  /** `fields`: a JSON object (an `Error` value keeps its name and message); anything else → `ERR_INVALID_ARGUMENT`. */
  info(message: string, fields?: Record<string, unknown>): void
  warn(message: string, fields?: Record<string, unknown>): void
  error(message: string, fields?: Record<string, unknown>): void
  debug(message: string, fields?: Record<string, unknown>): void
}
