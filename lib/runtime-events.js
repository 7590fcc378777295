'use strict'
// Guard events of one Runtime: `runtime.on('poison' | 'lockLost' | 'livelock' | 'unregistered' | 'nondeterminism', fn)`.
//
// Rust hands each event to `dispatch` through the runtime's non-blocking
// `events` callback (src/bridge/mod.rs, src/guard/events.rs). A listener that
// throws must not take the process down from inside a native callback, nor
// stop the other listeners: its error becomes a process warning (stderr).
const native = require('./native')
const { InvalidArgumentError, describe } = require('./errors')
const { func } = require('./validate')

// The native string enum (src/guard/events.rs): the types Rust can emit.
const EVENT_TYPES = Object.freeze(Object.values(native.RuntimeEventType))

function eventType(type) {
  if (!EVENT_TYPES.includes(type)) {
    throw new InvalidArgumentError(
      `event must be one of ${EVENT_TYPES.map((t) => `'${t}'`).join(', ')}, got ${describe(type)}`,
    )
  }
  return type
}

class RuntimeEvents {
  #listeners = new Map(EVENT_TYPES.map((t) => [t, []]))

  on(type, fn) {
    eventType(type)
    func('listener', fn)
    this.#listeners.get(type).push(fn)
  }

  off(type, fn) {
    eventType(type)
    const list = this.#listeners.get(type)
    const i = list.lastIndexOf(fn)
    if (i >= 0) list.splice(i, 1)
  }

  /** Called from Rust with `{ type, instanceId, queue, attemptCount?, maxAttempts, cause }`. */
  dispatch(event) {
    const list = this.#listeners.get(event && event.type)
    if (!list) return
    for (const fn of [...list]) {
      try {
        fn({ ...event })
      } catch (err) {
        process.emitWarning(
          `a runtime '${event.type}' listener threw: ${err instanceof Error ? err.message : describe(err)}`,
          { code: 'DUROXIDE_LISTENER_ERROR' },
        )
      }
    }
  }
}

module.exports = { RuntimeEvents, EVENT_TYPES }
