// Error classes (lib/errors.js). Every error the package throws or rejects
// with is a DuroxideError with a stable `code`.

/** The stable `code` of every error the package throws. */
export type DuroxideErrorCode =
  | 'ERR_INVALID_OPTION'
  | 'ERR_INVALID_ARGUMENT'
  | 'ERR_NOT_FOUND'
  | 'ERR_TIMEOUT'
  | 'ERR_PROVIDER'
  | 'ERR_RUNTIME_STATE'
  | 'ERR_ORCHESTRATION_FAILED'
  | 'ERR_ABORTED'
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

/** `ERR_ORCHESTRATION_FAILED`: `client.waitForOrchestrationTyped` on an instance that failed. */
export declare class OrchestrationFailedError extends DuroxideError {
  constructor(message: string, options?: DuroxideErrorOptions)
  code: 'ERR_ORCHESTRATION_FAILED'
  /** The failed instance (set by `waitForOrchestrationTyped`). */
  instanceId?: string
  /** Why it failed (set by `waitForOrchestrationTyped`). */
  errorCategory?: ErrorCategory
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
