// Error classes (lib/errors.js). Every error the package throws or rejects
// with is a DuroxideError with a stable `code`.

/** The stable `code` of every error the package throws. */
export type DuroxideErrorCode =
  | 'ERR_INVALID_OPTION'
  | 'ERR_INVALID_ARGUMENT'
  | 'ERR_NOT_FOUND'
  | 'ERR_ALREADY_EXISTS'
  | 'ERR_TIMEOUT'
  | 'ERR_PROVIDER'
  | 'ERR_RUNTIME_STATE'
  | 'ERR_ORCHESTRATION_FAILED'
  | 'ERR_ABORTED'
  | 'ERR_ACTIVITY_FAILED'
  | 'ERR_SUB_ORCHESTRATION_FAILED'
  | 'ERR_NONDETERMINISTIC'
  | 'ERR_INTERNAL'

/** Second argument of the error constructors. */
export interface DuroxideErrorOptions {
  /** The underlying error. */
  cause?: unknown
}

/** Base class of every error of the package; match on `code`, not on the message. */
export declare class DuroxideError extends Error {
  constructor(message: string, code?: DuroxideErrorCode, options?: DuroxideErrorOptions)
  /** Stable machine-readable code. */
  code: DuroxideErrorCode
  /** The underlying error (e.g. the native one), when there is one. */
  cause?: unknown
}

/** `ERR_INVALID_OPTION`: an unknown or invalid option (the message names it and suggests the closest valid name). */
export declare class InvalidOptionError extends DuroxideError {
  constructor(message: string, options?: DuroxideErrorOptions)
  code: 'ERR_INVALID_OPTION'
}

/** `ERR_INVALID_ARGUMENT`: a method argument is missing, of the wrong type or out of range. */
export declare class InvalidArgumentError extends DuroxideError {
  constructor(message: string, options?: DuroxideErrorOptions)
  code: 'ERR_INVALID_ARGUMENT'
}

/** `ERR_NOT_FOUND`: the instance, execution or value asked for does not exist. */
export declare class NotFoundError extends DuroxideError {
  constructor(message: string, options?: DuroxideErrorOptions)
  code: 'ERR_NOT_FOUND'
}

/**
 * `ERR_ALREADY_EXISTS`: a typed `client.start` was given the id of an
 * instance that exists (stored, or its start waits in the queue). Pass
 * `{ ifExists: 'useExisting' }` for an idempotent start.
 */
export declare class AlreadyExistsError extends DuroxideError {
  constructor(message: string, options?: DuroxideErrorOptions)
  code: 'ERR_ALREADY_EXISTS'
}

/** `ERR_TIMEOUT`: a wait (`waitForOrchestration`, `waitForValue`, ...) ran out of time. */
export declare class TimeoutError extends DuroxideError {
  constructor(message: string, options?: DuroxideErrorOptions)
  code: 'ERR_TIMEOUT'
}

/** `ERR_PROVIDER`: the storage failed (connection, SQL, migration, ...). */
export declare class ProviderError extends DuroxideError {
  constructor(message: string, options?: DuroxideErrorOptions)
  code: 'ERR_PROVIDER'
}

/** `ERR_RUNTIME_STATE`: the call does not fit the lifecycle state (already started, shut down, tracing already initialised, ...). */
export declare class RuntimeStateError extends DuroxideError {
  constructor(message: string, options?: DuroxideErrorOptions)
  code: 'ERR_RUNTIME_STATE'
}

/**
 * What a structured failure carries across the bridge: an activity or
 * orchestration threw an `Error`, and its name, stack and JSON `details`
 * survive in history (the message stays the error's message).
 */
export interface FailureFields {
  /** `name` of the error originally thrown (`'TypeError'`, `'NonRetryableError'`, a custom class name, ...). */
  errorName?: string
  /** `stack` of the error originally thrown (cut at 4000 characters). */
  errorStack?: string
  /** The thrown error's `details`, as JSON (what `JSON.stringify` kept; dropped past 32 KiB). */
  details?: unknown
  /** duroxide's category; orchestration code only ever sees `'application'`. */
  category?: ErrorCategory
  /** True when the error originally thrown was a `NonRetryableError`. */
  nonRetryable?: boolean
  /** The activity that failed (also set when an orchestration rethrew its failure). */
  activityName?: string
  /** The sub-orchestration that failed (also set when a parent rethrew its failure). */
  orchestrationName?: string
  /**
   * True when the instance was cancelled (`cancelInstance`): its code got no
   * chance to run a `catch` or `finally`; compensate from outside (docs/user-guide.md).
   */
  cancelled?: boolean
  /** The reason given to `cancelInstance` (when `cancelled`). */
  reason?: string
}

/** Second argument of the failure error constructors. */
export interface FailureErrorOptions extends DuroxideErrorOptions, FailureFields {}

/** `ERR_ORCHESTRATION_FAILED`: `client.waitForOrchestrationTyped` on an instance that failed. */
export declare class OrchestrationFailedError extends DuroxideError {
  constructor(message: string, options?: FailureErrorOptions)
  code: 'ERR_ORCHESTRATION_FAILED'
  /** The failed instance (set by `waitForOrchestrationTyped`). */
  instanceId?: string
  /** Why it failed (set by `waitForOrchestrationTyped`). */
  errorCategory?: ErrorCategory
  errorName?: string
  errorStack?: string
  details?: unknown
  category?: ErrorCategory
  nonRetryable?: boolean
  activityName?: string
  orchestrationName?: string
  /** True when the instance was cancelled rather than failed. */
  cancelled?: boolean
  /** The reason given to `cancelInstance`. */
  reason?: string
}

/**
 * `ERR_ACTIVITY_FAILED`: what `yield` throws in an orchestration when the
 * activity failed. `message` is the activity's error message, as before.
 */
export declare class ActivityFailedError extends DuroxideError {
  constructor(message: string, options?: FailureErrorOptions)
  code: 'ERR_ACTIVITY_FAILED'
  /** The activity that failed. */
  activityName: string
  errorName: string
  errorStack?: string
  details?: unknown
  category: ErrorCategory
  nonRetryable: boolean
  /** Inside `race`/`all`: the position of the failed task. */
  index?: number
}

/**
 * `ERR_SUB_ORCHESTRATION_FAILED`: what `yield` throws in an orchestration when
 * the sub-orchestration failed. `message` is the child's failure message, as before.
 */
export declare class SubOrchestrationFailedError extends DuroxideError {
  constructor(message: string, options?: FailureErrorOptions)
  code: 'ERR_SUB_ORCHESTRATION_FAILED'
  /** The sub-orchestration that failed. */
  orchestrationName: string
  /** The activity whose failure the child rethrew, if it did. */
  activityName?: string
  errorName: string
  errorStack?: string
  details?: unknown
  category: ErrorCategory
  nonRetryable: boolean
  /** Inside `race`/`all`: the position of the failed task. */
  index?: number
}

/**
 * `ERR_NONDETERMINISTIC`: orchestration code called `Date.now()`, `new Date()`
 * or `Math.random()` with `determinismGuard: 'throw'`.
 */
export declare class NondeterministicError extends DuroxideError {
  constructor(message: string, options?: DuroxideErrorOptions)
  code: 'ERR_NONDETERMINISTIC'
}

/** Options of `NonRetryableError`. */
export interface NonRetryableErrorOptions {
  /** JSON data that travels with the failure (`ActivityFailedError.details`). */
  details?: unknown
  cause?: unknown
}

/**
 * Thrown by an activity to fail for good: a retry policy
 * (`scheduleActivityWithRetry`) stops at it. Not a `DuroxideError`: it is
 * the application's error.
 */
export declare class NonRetryableError extends Error {
  constructor(message: string, options?: NonRetryableErrorOptions)
  readonly nonRetryable: true
  details?: unknown
}

/**
 * `ERR_ABORTED`: a client wait given an `AbortSignal` was ended by it. `name`
 * is `'AbortError'`, as code checking for aborts expects; `cause` is the
 * signal's reason.
 */
export declare class AbortError extends DuroxideError {
  constructor(message: string, options?: DuroxideErrorOptions)
  code: 'ERR_ABORTED'
}

/** The category of an orchestration failure. */
export type ErrorCategory = 'application' | 'infrastructure' | 'configuration' | 'poison'

// Only the declarations marked `export` above are exported.
export {}
