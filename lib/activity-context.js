'use strict'
// ActivityContext: the first argument of an activity function.
const { ContextLog } = require('./context-log')

/** @internal Aborts a context's signal (the runtime's, on cancellation or shutdown). */
const abort = Symbol('abort')

/** The reason a cancelled activity's signal carries. */
const cancelled = () => new Error('activity cancelled')

class ActivityContext {
  #native
  #tag
  #makeClient
  #log
  // The AbortController is made when `signal` is first read: most activities
  // never read it, and a controller per activity was most of what survived
  // V8's scavenges in a hello run (302 KB a scavenge, 90 KB without), which
  // grew the young generation and RSS with it.
  #controller = null
  /** Why it was cancelled, before anything read `signal`. */
  #aborted = undefined

  /** @internal */
  constructor(native, call, makeClient) {
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
    /** `{ traceparent, tracestate? }` of the instance that scheduled it, or null. */
    this.traceContext = call.traceContext ?? null
  }

  /** Aborts when the activity is cancelled (lost race, orchestration ended, shutdown). */
  get signal() {
    if (this.#controller === null) {
      this.#controller = new AbortController()
      // The runtime's word of the cancellation (`abort`) comes through the
      // JS event loop, after the token `isCancelled()` reads: a signal first
      // read in between is born aborted all the same.
      if (this.#aborted === undefined && this.#native.isCancelled()) this.#aborted = cancelled()
      if (this.#aborted !== undefined) this.#controller.abort(this.#aborted)
    }
    return this.#controller.signal
  }

  /** @internal */
  [abort](reason = cancelled()) {
    if (this.#controller !== null) this.#controller.abort(reason)
    else if (this.#aborted === undefined) this.#aborted = reason
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
    const aborted = this.#controller !== null ? this.#controller.signal.aborted : this.#aborted !== undefined
    return aborted || this.#native.isCancelled()
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

module.exports = { ActivityContext, abort }
