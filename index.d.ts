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
  SystemMetrics,
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
  DeterminismGuard,
  EffectiveOptions,
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
export type { EntraOptions, PostgresConnectOptions, Provider } from './types/providers'
export { PostgresProvider, SqliteProvider } from './types/providers'
export type { MetricsSnapshot, RuntimeEvent, RuntimeEventType, RuntimeHealth } from './types/runtime'
export { Runtime } from './types/runtime'

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
