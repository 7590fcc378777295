// Public types of duroxide-node. The JS lives in index.js / lib/; the types
// are split by class under types/ and re-exported here. The napi-generated
// native.d.ts is internal and deliberately not part of this surface.

export type { ActivityFunction } from './types/activity'
export { ActivityContext } from './types/activity'
export type {
  DeleteResult,
  FailureInfo,
  ExecutionInfo,
  ExecutionStatusName,
  ExportedHistory,
  HistoryEvent,
  HistoryEventKind,
  InstanceFilter,
  InstanceInfo,
  InstanceTree,
  OrchestrationStats,
  OrchestrationStatus,
  OrchestrationCompletedStatus,
  OrchestrationFailedStatus,
  OrchestrationRunningStatus,
  OrchestrationStatusCommon,
  OrchestrationStatusName,
  PruneOptions,
  PruneResult,
  QueueDepths,
  SetAsideMessage,
  SystemMetrics,
  TypedStartOptions,
} from './types/client'
export { Client } from './types/client'
export type {
  ActivityDefinition,
  AnyActivityDefinition,
  AnyDefinition,
  AnyOrchestrationDefinition,
  EventDefinition,
  EventPayloadIn,
  InputOf,
  Jsonified,
  KeyDefinition,
  ListFilter,
  OrchestrationDefinition,
  OrchestrationDefinitionOptions,
  OutputOf,
  PayloadOf,
  Registered,
  StatusDefinition,
  StatusOf,
  TerminalOrchestrationStatus,
  TypedOrchestrationFunction,
  TypedOrchestrationStatus,
  WaitOptions,
} from './types/definitions'
export { OrchestrationHandle, defineActivity, defineEvent, defineKey, defineOrchestration, defineStatus } from './types/definitions'
export type {
  DuroxideErrorCode,
  DuroxideErrorOptions,
  ErrorCategory,
  FailureErrorOptions,
  FailureFields,
  NonRetryableErrorOptions,
} from './types/errors'
export {
  AbortError,
  ActivityFailedError,
  AlreadyExistsError,
  DuroxideError,
  InvalidArgumentError,
  InvalidOptionError,
  NondeterministicError,
  NonRetryableError,
  NotFoundError,
  OrchestrationFailedError,
  SubOrchestrationFailedError,
  ProviderError,
  RuntimeStateError,
  TimeoutError,
} from './types/errors'
export type {
  ClientOptions,
  DeterminismGuard,
  EffectiveOptions,
  NondeterminismPolicy,
  LogFormat,
  LogLevel,
  RuntimeOptions,
  WorkerTagFilter,
} from './types/options'
export type {
  ActivityTask,
  AllResult,
  Backoff,
  BackoffKind,
  CallOptions,
  CallOrchestrationOptions,
  JoinOf,
  OrchestrationFunction,
  RaceOf,
  RaceResult,
  RetryPolicy,
  ScheduleActivityOptions,
  Task,
  TaskResult,
} from './types/orchestration'
export { OrchestrationContext } from './types/orchestration'
export type {
  EntraOptions,
  FastPath,
  FastPathsReport,
  MigrateOptions,
  MigrateReport,
  PostgresConnectOptions,
  PostgresOptions,
  Provider,
  SqliteOpenOptions,
} from './types/providers'
export { PostgresProvider, SqliteProvider } from './types/providers'
export type { MetricsSnapshot, RuntimeEvent, RuntimeEventType, RuntimeHealth } from './types/runtime'
export { Runtime } from './types/runtime'

export type { DashboardHandler, DashboardOptions } from './types/dashboard'
export { createDashboard } from './types/dashboard'

export type { ContextLog, LogRecord, LogSinkStats, StartOptions, TraceContext, TracingOptions } from './types/tracing'
export { initTracing } from './types/tracing'

/** Most tags in one `workerTagFilter` (from duroxide's `runtime::limits`). */
export declare const MAX_WORKER_TAGS: number
/** Longest tag name, in UTF-8 bytes (from duroxide's `runtime::limits`). */
export declare const MAX_TAG_NAME_BYTES: number
/** Most KV keys per instance (from duroxide's `runtime::limits`). */
export declare const MAX_KV_KEYS: number
/** Largest KV value, in bytes (from duroxide's `runtime::limits`). */
export declare const MAX_KV_VALUE_BYTES: number
/** Largest custom status, in bytes (from duroxide's `runtime::limits`). */
export declare const MAX_CUSTOM_STATUS_BYTES: number
/**
 * Longest identifier, in UTF-8 bytes: 1000. An identifier (instance id,
 * orchestration, activity, event, queue, session and tag name, KV key) is a
 * non-empty, well-formed Unicode string (no unpaired surrogates) without
 * control characters (C0 U+0000-U+001F, DEL U+007F, C1 U+0080-U+009F) of at
 * most this many bytes; anything else is refused at the call with
 * `InvalidArgumentError` (`ERR_INVALID_ARGUMENT`) naming the argument and
 * the rule. The same on SQLite and Postgres.
 */
export declare const MAX_IDENTIFIER_BYTES: number
/** Default of the `maxPayloadBytes` option of runtimes and clients, in bytes of JSON: 2097152 (2 MiB). */
export declare const DEFAULT_MAX_PAYLOAD_BYTES: number
