'use strict'
// Error classes of the package. Every error thrown or rejected by duroxide-node
// is a DuroxideError with a stable `code`. Native errors arrive with that
// `code` already set (see src/errors.rs) and are turned into these classes
// here by their code, keeping the native error as `cause`.

class DuroxideError extends Error {
  constructor(message, code = 'ERR_INTERNAL', options) {
    super(message, options)
    this.name = new.target.name
    this.code = code
  }
}

class InvalidOptionError extends DuroxideError {
  constructor(message, options) { super(message, 'ERR_INVALID_OPTION', options) }
}
class InvalidArgumentError extends DuroxideError {
  constructor(message, options) { super(message, 'ERR_INVALID_ARGUMENT', options) }
}
class NotFoundError extends DuroxideError {
  constructor(message, options) { super(message, 'ERR_NOT_FOUND', options) }
}
/** A typed `client.start` of an id that exists (stored, or its start is queued). */
class AlreadyExistsError extends DuroxideError {
  constructor(message, options) { super(message, 'ERR_ALREADY_EXISTS', options) }
}
class TimeoutError extends DuroxideError {
  constructor(message, options) { super(message, 'ERR_TIMEOUT', options) }
}
class ProviderError extends DuroxideError {
  constructor(message, options) { super(message, 'ERR_PROVIDER', options) }
}
class RuntimeStateError extends DuroxideError {
  constructor(message, options) { super(message, 'ERR_RUNTIME_STATE', options) }
}
/**
 * The fields a structured failure carries (lib/failure.js): the original
 * error's `errorName`/`errorStack`, its JSON `details`, duroxide's `category`,
 * `nonRetryable`, the failed `activityName`/`orchestrationName`, and for a
 * cancelled instance `cancelled` and its `reason`.
 */
const FAILURE_FIELDS = ['errorName', 'errorStack', 'details', 'category', 'nonRetryable', 'activityName', 'orchestrationName', 'cancelled', 'reason']

function assignFailure(err, fields) {
  if (!fields) return
  for (const k of FAILURE_FIELDS) if (fields[k] !== undefined) err[k] = fields[k]
}

/** waitForOrchestrationTyped on an instance that failed. */
class OrchestrationFailedError extends DuroxideError {
  constructor(message, options) {
    super(message, 'ERR_ORCHESTRATION_FAILED', options)
    assignFailure(this, options)
  }
}

/**
 * `yield` used to throw a plain Error, whose JSON is `{}`; orchestration code
 * that passes the caught error on (`scheduleActivity('Refund', { reason: e })`)
 * must schedule the same input as before, or instances in flight across an
 * upgrade no longer replay. So the fields are there but not enumerable.
 */
function hideFields(err) {
  for (const k of Object.keys(err)) Object.defineProperty(err, k, { enumerable: false })
}

/** What `yield` throws in an orchestration for a failed activity. */
class ActivityFailedError extends DuroxideError {
  constructor(message, options) {
    super(message, 'ERR_ACTIVITY_FAILED', options)
    assignFailure(this, options)
    hideFields(this)
  }
}

/** What `yield` throws in an orchestration for a failed sub-orchestration. */
class SubOrchestrationFailedError extends DuroxideError {
  constructor(message, options) {
    super(message, 'ERR_SUB_ORCHESTRATION_FAILED', options)
    assignFailure(this, options)
    hideFields(this)
  }
}

/** A call in orchestration code that breaks replay (`determinismGuard: 'throw'`). */
class NondeterministicError extends DuroxideError {
  constructor(message, options) { super(message, 'ERR_NONDETERMINISTIC', options) }
}

/**
 * Thrown by an activity: the failure is final, a retry policy
 * (`scheduleActivityWithRetry`) stops at it. `details` (JSON) travels with it.
 */
class NonRetryableError extends Error {
  constructor(message, options) {
    super(message, options && options.cause !== undefined ? { cause: options.cause } : undefined)
    this.name = new.target.name
    this.nonRetryable = true
    if (options && options.details !== undefined) this.details = options.details
  }
}

/** A wait ended by its `AbortSignal`; `cause` is the signal's reason. */
class AbortError extends DuroxideError {
  constructor(message, options) { super(message, 'ERR_ABORTED', options) }
}

const byCode = {
  ERR_INVALID_OPTION: InvalidOptionError,
  ERR_INVALID_ARGUMENT: InvalidArgumentError,
  ERR_NOT_FOUND: NotFoundError,
  ERR_ALREADY_EXISTS: AlreadyExistsError,
  ERR_TIMEOUT: TimeoutError,
  ERR_PROVIDER: ProviderError,
  ERR_RUNTIME_STATE: RuntimeStateError,
  // napi's own argument conversion ("Failed to convert ...") is a caller error.
  InvalidArg: InvalidArgumentError,
  NumberExpected: InvalidArgumentError,
  StringExpected: InvalidArgumentError,
  ObjectExpected: InvalidArgumentError,
  FunctionExpected: InvalidArgumentError,
  BooleanExpected: InvalidArgumentError,
}

/** Turns an error thrown by the native module into one of the classes above. */
function fromNative(err) {
  if (err instanceof DuroxideError) return err
  const message = err && typeof err.message === 'string' ? err.message : String(err)
  const Cls = err && byCode[err.code]
  if (Cls) return new Cls(message, { cause: err })
  return new DuroxideError(message, 'ERR_INTERNAL', { cause: err })
}

/** Runs a synchronous native call, rethrowing its error as a DuroxideError. */
function sync(fn) {
  try {
    return fn()
  } catch (err) {
    throw fromNative(err)
  }
}

/** Awaits a native call (which may also throw synchronously while converting arguments). */
async function call(fn) {
  try {
    return await fn()
  } catch (err) {
    throw fromNative(err)
  }
}

/** A readable name of what a value is, for messages. */
function describe(value) {
  if (value === null) return 'null'
  if (value === undefined) return 'undefined'
  if (typeof value === 'string') return `the string ${JSON.stringify(value.length > 40 ? value.slice(0, 40) + '…' : value)}`
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean') return `${typeof value} ${String(value)}`
  if (typeof value === 'function') return `a function${value.name ? ` (${value.name})` : ''}`
  if (typeof value === 'symbol') return `a symbol`
  if (typeof value.then === 'function') return 'a Promise (orchestrations cannot await; yield a ctx task instead)'
  if (Array.isArray(value)) return `an array of length ${value.length}`
  const ctor = value.constructor && value.constructor.name
  return ctor && ctor !== 'Object' ? `an instance of ${ctor}` : 'a plain object'
}

/** The message of anything thrown. */
function messageOf(err) {
  if (err instanceof Error) return err.message
  if (typeof err === 'string') return err
  return `non-Error value thrown: ${describe(err)}`
}

module.exports = {
  DuroxideError,
  InvalidOptionError,
  InvalidArgumentError,
  NotFoundError,
  AlreadyExistsError,
  TimeoutError,
  ProviderError,
  RuntimeStateError,
  OrchestrationFailedError,
  AbortError,
  ActivityFailedError,
  SubOrchestrationFailedError,
  NondeterministicError,
  NonRetryableError,
  fromNative,
  sync,
  call,
  describe,
  messageOf,
}
