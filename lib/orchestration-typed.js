'use strict'
// The OrchestrationContext methods that take typed definitions instead of
// names. Each builds the task of the string-named method it stands for, so a
// `yield ctx.call(charge, o)` is recorded exactly as
// `yield ctx.scheduleActivity('Charge', o)`; only `join` decodes differently
// (values instead of `{ ok } | { err }`), and `waitFor` takes its event from
// the mailbox `client.raise` keeps (src/bridge/waits.rs). Installed on the
// prototype by lib/orchestration-context.js.
const { InvalidArgumentError, describe } = require('./errors')
const { Task, JoinTask, descriptorsOf } = require('./tasks')
const { ActivityDefinition, OrchestrationDefinition, EventDefinition, definition } = require('./definitions')

function options(what, value, known) {
  if (value === undefined || value === null) return {}
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw new InvalidArgumentError(`${what} options must be an object, got ${describe(value)}`)
  }
  for (const key of Object.keys(value)) {
    if (!known.includes(key)) throw new InvalidArgumentError(`${what} options.${key} is not an option (expected ${known.join(', ')})`)
  }
  return value
}

const typedMethods = {
  /** Runs an activity definition; `opts`: `{ retry?, sessionId?, tag? }`. */
  call(def, input, opts) {
    const a = definition(ActivityDefinition, 'defineActivity', 'call(): activity', def)
    const o = options(`call('${a.name}')`, opts, ['retry', 'sessionId', 'tag'])
    let task
    if (o.retry != null) {
      task = o.sessionId != null
        ? this.scheduleActivityWithRetryOnSession(a.name, input, o.retry, o.sessionId)
        : this.scheduleActivityWithRetry(a.name, input, o.retry)
    } else {
      task = this.scheduleActivity(a.name, input, o.sessionId != null ? { sessionId: o.sessionId } : undefined)
    }
    return o.tag != null ? task.withTag(o.tag) : task
  },

  /** Runs a child orchestration definition (its pinned version, if any); `opts`: `{ instanceId? }`. */
  callOrchestration(def, input, opts) {
    const d = definition(OrchestrationDefinition, 'defineOrchestration', 'callOrchestration(): orchestration', def)
    const o = options(`callOrchestration('${d.name}')`, opts, ['instanceId'])
    if (o.instanceId != null) {
      return d.version === undefined
        ? this.scheduleSubOrchestrationWithId(d.name, o.instanceId, input)
        : this.scheduleSubOrchestrationVersionedWithId(d.name, d.version, o.instanceId, input)
    }
    return d.version === undefined
      ? this.scheduleSubOrchestration(d.name, input)
      : this.scheduleSubOrchestrationVersioned(d.name, d.version, input)
  },

  /** Starts an independent instance of a definition (fire-and-forget). */
  startDetached(def, instanceId, input) {
    const d = definition(OrchestrationDefinition, 'defineOrchestration', 'startDetached(): orchestration', def)
    return d.version === undefined
      ? this.startOrchestration(d.name, instanceId, input)
      : this.startOrchestrationVersioned(d.name, d.version, instanceId, input)
  },

  /** A durable timer; yields `null`. */
  timer(delayMs) {
    return this.scheduleTimer(delayMs)
  },

  /**
   * Takes the next event `client.raise(id, def, payload)` sent: events are
   * kept in order until a wait takes them (also across continue-as-new), so
   * one raised before the instance waits is not lost. A wait that loses a
   * race takes nothing. (`waitForEvent` is the string-named one-shot wait.)
   */
  waitFor(def) {
    const e = definition(EventDefinition, 'defineEvent', 'waitFor(): event', def)
    return new Task({ kind: 'event', name: e.name, mailbox: true })
  },

  /** Takes the next message of an event definition's persistent mailbox (`client.enqueue`). */
  dequeue(def) {
    return this.dequeueEvent(definition(EventDefinition, 'defineEvent', 'dequeue(): event', def).name)
  },

  /**
   * Waits for every task and yields their values in order (a tuple in
   * TypeScript). Throws the first failure in task order, as that task alone
   * would; `all()` is the variant that never throws.
   */
  join(tasks) {
    return new JoinTask({ kind: 'all', tasks: descriptorsOf('join()', tasks) })
  },
}

module.exports = { typedMethods }
