'use strict'
// Structured failures across the bridge.
//
// duroxide carries a failure as one string. A thrown Error keeps its name,
// stack, `details` and NonRetryableError-ness by appending them to its
// message: `message` + '\u001e' + `{"$duroxide":1,...}` (src/bridge/failure.rs
// reads the same format). Every reader strips the suffix, so the message text
// an application sees is the one it saw before failures had structure.
const { ActivityFailedError, SubOrchestrationFailedError, OrchestrationFailedError, describe } = require('./errors')
const { decode } = require('./json')

const SEPARATOR = '\u001e'
const TAG = '$duroxide'
/** A stack past this is cut: it is stored in history with every failure. */
const MAX_STACK = 4000
/**
 * `details` whose JSON is longer are dropped: errors of other libraries may
 * carry a large `details` the application never meant to store with every
 * failure (and every retry).
 */
const MAX_DETAILS = 32 * 1024

/**
 * The message of anything user code threw. A thrown string is the message its
 * author meant; other non-Errors are described with their JSON so a rejected
 * `{ code, detail }` still says what went wrong.
 */
function thrownMessage(who, err) {
  if (err instanceof Error) return err.message || String(err)
  if (typeof err === 'string') return err
  let shown = describe(err)
  if (err !== null && typeof err === 'object') {
    try {
      const json = JSON.stringify(err)
      if (json !== undefined) shown += ` ${json.length > 500 ? `${json.slice(0, 500)}…` : json}`
    } catch {
      // Unencodable (a cycle, a BigInt): the description alone has to do.
    }
  }
  return `${who} threw a non-Error value: ${shown}`
}

/** `details` as JSON, or undefined when it has none (a cycle, a BigInt, a function) or is too long. */
function jsonOf(value) {
  if (value === undefined) return undefined
  try {
    const text = JSON.stringify(value)
    return text === undefined || text.length > MAX_DETAILS ? undefined : JSON.parse(text)
  } catch {
    return undefined
  }
}

/** What survives of a thrown Error, beyond its message. */
function structureOf(err) {
  if (err instanceof ActivityFailedError || err instanceof SubOrchestrationFailedError) {
    // Rethrown from an orchestration: pass the original failure on.
    return {
      name: err.errorName,
      stack: err.errorStack,
      details: jsonOf(err.details),
      nonRetryable: err.nonRetryable || undefined,
      activityName: err.activityName,
      orchestrationName: err.orchestrationName,
    }
  }
  const stack = typeof err.stack === 'string' ? err.stack : undefined
  return {
    name: typeof err.name === 'string' ? err.name : 'Error',
    stack: stack && stack.length > MAX_STACK ? `${stack.slice(0, MAX_STACK)}…` : stack,
    details: jsonOf(err.details),
    nonRetryable: err.nonRetryable === true || undefined,
  }
}

/** The failure text of anything user code threw (what crosses to duroxide). */
function encodeFailure(who, err) {
  const message = thrownMessage(who, err)
  if (!(err instanceof Error)) return message
  const info = { [TAG]: 1, ...structureOf(err) }
  return `${message}${SEPARATOR}${JSON.stringify(info)}`
}

/** `{ message, info }`: the failure text split; `info` is null for a plain text. */
function decodeFailure(text) {
  const at = text.lastIndexOf(SEPARATOR)
  if (at >= 0) {
    try {
      const info = JSON.parse(text.slice(at + 1))
      if (info && typeof info === 'object' && info[TAG] === 1) {
        delete info[TAG]
        return { message: text.slice(0, at), info }
      }
    } catch {
      // Not our structure: the separator is part of the message.
    }
  }
  return { message: text, info: null }
}

/** The fields both task errors and `OrchestrationFailedError` carry. */
function failureFields(info, category, defaultName = 'Error') {
  return {
    errorName: info?.name ?? defaultName,
    errorStack: info?.stack,
    details: info?.details,
    category,
    nonRetryable: info?.nonRetryable === true,
    activityName: info?.activityName,
    orchestrationName: info?.orchestrationName,
  }
}

/**
 * The error a failed task throws in the orchestration: ActivityFailedError
 * or SubOrchestrationFailedError for those tasks (with `index` inside a
 * race/all), a plain Error for others, always with the message as before.
 */
function taskError(text, descriptor, index) {
  const { message, info } = decodeFailure(text)
  const kind = descriptor && descriptor.kind
  let err
  if (kind === 'activity') {
    err = new ActivityFailedError(message, { ...failureFields(info, 'application'), activityName: descriptor.name })
  } else if (kind === 'subOrchestration') {
    err = new SubOrchestrationFailedError(message, {
      ...failureFields(info, 'application'),
      orchestrationName: descriptor.name,
      activityName: info?.activityName,
    })
  } else {
    err = new Error(message)
  }
  // Not enumerable, as the other fields (lib/errors.js: the JSON stays `{}`).
  if (index !== undefined) Object.defineProperty(err, 'index', { value: index, writable: true, configurable: true })
  return err
}

/**
 * Decodes an outcome from Rust into the value a `yield` evaluates to; throws
 * the failed task's error. `descriptor` is the yielded task's.
 */
function decodeOutcome(outcome, descriptor, index) {
  if ('ok' in outcome) return decode(outcome.ok)
  if ('err' in outcome) throw taskError(outcome.err, descriptor, index)
  if ('all' in outcome) {
    return outcome.all.map((o, i) => {
      try {
        return { ok: decodeOutcome(o, descriptor?.tasks?.[i], i) }
      } catch (err) {
        // `error` is not enumerable: `{ err }` compares and serializes as before.
        return Object.defineProperty({ err: err.message }, 'error', { value: err, writable: true, configurable: true })
      }
    })
  }
  if ('race' in outcome) {
    const i = outcome.race.index
    return { index: i, value: decodeOutcome(outcome.race.outcome, descriptor?.tasks?.[i], i) }
  }
  throw new Error(`unknown task outcome ${JSON.stringify(outcome)}`)
}

/**
 * The `failure` of a client status: the parsed JSON Rust built
 * (src/client/mod.rs); a cancelled instance's has `cancelled: true` and the
 * `reason` given to cancelInstance.
 */
function statusFailure(json) {
  const f = JSON.parse(json)
  const out = { message: f.message, ...failureFields(f, f.category, undefined) }
  if (f.cancelled === true) {
    out.cancelled = true
    out.reason = f.reason
  }
  for (const k of Object.keys(out)) if (out[k] === undefined) delete out[k]
  return out
}

/** `OrchestrationFailedError` for a failed status (`waitForOrchestrationTyped`, `h.result()`). */
function orchestrationFailed(instanceId, s) {
  const { message, ...fields } = s.failure ?? {}
  const text = fields.cancelled ? `orchestration '${instanceId}' was cancelled: ${fields.reason}` : `orchestration '${instanceId}' failed: ${s.error}`
  const err = new OrchestrationFailedError(text, fields)
  err.instanceId = instanceId
  err.errorCategory = s.errorCategory
  return err
}

module.exports = { thrownMessage, encodeFailure, decodeFailure, decodeOutcome, statusFailure, failureFields, orchestrationFailed }
