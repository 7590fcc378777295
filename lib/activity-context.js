'use strict'
// ActivityContext: the first argument of an activity function.
const { ContextLog } = require('./context-log')

class ActivityContext {
  #native
  #tag
  #makeClient
  #log

  /** @internal */
  constructor(native, call, signal, makeClient) {
    this.#native = native
    this.#tag = call.tag ?? null
    this.#makeClient = makeClient
    this.instanceId = call.instanceId
    this.executionId = call.executionId
    this.orchestrationName = call.orchestrationName
    this.orchestrationVersion = call.orchestrationVersion
    this.activityName = call.activityName
    this.workerId = call.workerId
    this.sessionId = call.sessionId ?? null
    /** Aborts when the activity is cancelled (lost race, orchestration ended, shutdown). */
    this.signal = signal
    /** `{ traceparent, tracestate? }` of the instance that scheduled it, or null. */
    this.traceContext = call.traceContext ?? null
  }

  /** Structured logs with the activity's correlation fields. */
  get log() {
    this.#log ??= new ContextLog(this.#native)
    return this.#log
  }

  /** The routing tag the activity was scheduled with, or null. */
  tag() {
    return this.#tag
  }

  isCancelled() {
    return this.signal.aborted || this.#native.isCancelled()
  }

  /** A Client on the same provider as the runtime running this activity. */
  getClient() {
    return this.#makeClient()
  }

  traceInfo(message) { this.#native.trace('info', String(message)) }
  traceWarn(message) { this.#native.trace('warn', String(message)) }
  traceError(message) { this.#native.trace('error', String(message)) }
  traceDebug(message) { this.#native.trace('debug', String(message)) }
}

module.exports = { ActivityContext }
