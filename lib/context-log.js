'use strict'
// ctx.log of orchestration and activity contexts: structured log lines that
// reach the runtime's subscriber (stderr, the initTracing file or sink) with
// the context's correlation fields. In orchestrations the native side emits
// a line only on the first execution of the code that logs it (never while
// replaying), so each line appears once per instance.
const { InvalidArgumentError, describe } = require('./errors')

/** Errors keep their name and message in JSON (JSON.stringify gives `{}`). */
function replacer(_key, value) {
  if (value instanceof Error) return { name: value.name, message: value.message }
  if (typeof value === 'bigint') return value.toString()
  return value
}

function fieldsJson(fields) {
  if (fields === undefined || fields === null) return undefined
  if (typeof fields !== 'object' || Array.isArray(fields)) {
    throw new InvalidArgumentError(`fields must be an object, got ${describe(fields)}`)
  }
  try {
    return JSON.stringify(fields, replacer)
  } catch (err) {
    throw new InvalidArgumentError(`fields cannot be encoded as JSON: ${err.message}`, { cause: err })
  }
}

class ContextLog {
  #native

  /** @internal */
  constructor(native) {
    this.#native = native
  }

  info(message, fields) { this.#native.log('info', String(message), fieldsJson(fields)) }
  warn(message, fields) { this.#native.log('warn', String(message), fieldsJson(fields)) }
  error(message, fields) { this.#native.log('error', String(message), fieldsJson(fields)) }
  debug(message, fields) { this.#native.log('debug', String(message), fieldsJson(fields)) }
}

module.exports = { ContextLog }
