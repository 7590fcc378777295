'use strict'
// OrchestrationContext: the first argument of an orchestration generator.
// Durable operations return Tasks to `yield`; the synchronous calls go to the
// native handle that belongs to this invocation.
const native = require('./native')
const { InvalidArgumentError, describe, sync } = require('./errors')
const { encode } = require('./json')
const { Task, descriptorsOf } = require('./tasks')
const { ContextLog } = require('./context-log')
const { string, identifier, text, number, nonEmptyString, optionalString, nonNegativeNumber } = require('./validate')
const { StatusDefinition, KeyDefinition } = require('./definitions')
const { typedMethods } = require('./orchestration-typed')

/** Checks the keys and types of an options object; Rust judges the values (src/rules.rs). */
function knownKeys(what, value, known) {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new InvalidArgumentError(`${what} must be an object, got ${describe(value)}`)
  }
  for (const key of Object.keys(value)) {
    if (!known.includes(key)) throw new InvalidArgumentError(`${what}.${key} is not an option here (expected ${known.join(', ')})`)
  }
  return value
}

function retrySpec(retry) {
  knownKeys('retry', retry, ['maxAttempts', 'timeoutMs', 'totalTimeoutMs', 'backoff'])
  const spec = { maxAttempts: number('retry.maxAttempts', retry.maxAttempts) }
  if (retry.timeoutMs != null) spec.timeoutMs = number('retry.timeoutMs', retry.timeoutMs)
  if (retry.totalTimeoutMs != null) spec.totalTimeoutMs = number('retry.totalTimeoutMs', retry.totalTimeoutMs)
  if (retry.backoff != null) spec.backoff = retry.backoff
  return spec
}

/** Where a context keeps its runtime's maxPayloadBytes (not a private field: a context made with Object.create has none). */
const PAYLOAD_LIMIT = Symbol('maxPayloadBytes')

/** A task of `ctx`: judged now, with its runtime's payload limit (the default when unknown). */
function task(ctx, descriptor) {
  return new Task(descriptor, ctx[PAYLOAD_LIMIT] ?? native.DEFAULT_MAX_PAYLOAD_BYTES)
}

class OrchestrationContext {
  #native
  #log

  /** @internal */
  constructor(native, info) {
    this.#native = native
    this.instanceId = info.instanceId
    this.executionId = info.executionId
    this.orchestrationName = info.orchestrationName
    this.orchestrationVersion = info.orchestrationVersion
    /** `{ traceparent, tracestate? }` the instance was started with, or null. */
    this.traceContext = info.traceContext ?? null
    Object.defineProperty(this, PAYLOAD_LIMIT, { value: info.maxPayloadBytes })
  }


  /** Structured logs, emitted once per first execution (silent while replaying). */
  get log() {
    this.#log ??= new ContextLog(this.#native)
    return this.#log
  }

  /** True while the runtime replays history (traces are suppressed then). */
  get isReplaying() {
    return this.#native.isReplaying
  }

  // ---- activities ---------------------------------------------------------
  /** `options`: `{ sessionId? }`; tag the task with `.withTag()`. */
  scheduleActivity(name, input, options) {
    const d = { kind: 'activity', name: identifier('name', name), input: encode(input, 'input') }
    if (options != null) {
      knownKeys('options', options, ['sessionId'])
      const sessionId = optionalString('options.sessionId', options.sessionId)
      if (sessionId !== undefined) d.sessionId = sessionId
    }
    return task(this, d)
  }

  scheduleActivityOnSession(name, input, sessionId) {
    return this.scheduleActivity(name, input, { sessionId: identifier('sessionId', sessionId) })
  }

  scheduleActivityWithRetry(name, input, retry) {
    return task(this, { kind: 'activity', name: identifier('name', name), input: encode(input, 'input'), retry: retrySpec(retry) })
  }

  scheduleActivityWithRetryOnSession(name, input, retry, sessionId) {
    return task(this, {
      kind: 'activity',
      name: identifier('name', name),
      input: encode(input, 'input'),
      retry: retrySpec(retry),
      sessionId: identifier('sessionId', sessionId),
    })
  }

  // ---- timers and events --------------------------------------------------
  scheduleTimer(delayMs) {
    return task(this, { kind: 'timer', delayMs: number('delayMs', delayMs) })
  }

  waitForEvent(name) {
    return task(this, { kind: 'event', name: identifier('name', name) })
  }

  dequeueEvent(queueName) {
    return task(this, { kind: 'dequeue', queue: identifier('queueName', queueName) })
  }

  // ---- sub-orchestrations and detached starts -------------------------------
  scheduleSubOrchestration(name, input) {
    return task(this, { kind: 'subOrchestration', name: identifier('name', name), input: encode(input, 'input') })
  }

  scheduleSubOrchestrationWithId(name, instanceId, input) {
    return task(this, {
      kind: 'subOrchestration',
      name: identifier('name', name),
      instanceId: identifier('instanceId', instanceId),
      input: encode(input, 'input'),
    })
  }

  scheduleSubOrchestrationVersioned(name, version, input) {
    return task(this, {
      kind: 'subOrchestration',
      name: identifier('name', name),
      version: string('version', version),
      input: encode(input, 'input'),
    })
  }

  scheduleSubOrchestrationVersionedWithId(name, version, instanceId, input) {
    return task(this, {
      kind: 'subOrchestration',
      name: identifier('name', name),
      version: string('version', version),
      instanceId: identifier('instanceId', instanceId),
      input: encode(input, 'input'),
    })
  }

  startOrchestration(name, instanceId, input) {
    return task(this, {
      kind: 'startOrchestration',
      name: identifier('name', name),
      instanceId: identifier('instanceId', instanceId),
      input: encode(input, 'input'),
    })
  }

  startOrchestrationVersioned(name, version, instanceId, input) {
    return task(this, {
      kind: 'startOrchestration',
      name: identifier('name', name),
      version: string('version', version),
      instanceId: identifier('instanceId', instanceId),
      input: encode(input, 'input'),
    })
  }

  // ---- deterministic values -------------------------------------------------
  newGuid() {
    return task(this, { kind: 'newGuid' })
  }

  utcNow() {
    return task(this, { kind: 'utcNow' })
  }

  // ---- continue-as-new --------------------------------------------------------
  continueAsNew(input) {
    return task(this, { kind: 'continueAsNew', input: encode(input, 'input') })
  }

  continueAsNewVersioned(input, version) {
    return task(this, { kind: 'continueAsNew', input: encode(input, 'input'), version: string('version', version) })
  }

  getValueFromInstance(instanceId, key) {
    return task(this, { kind: 'getValueFromInstance', instanceId: identifier('instanceId', instanceId), key: identifier('key', key) })
  }

  // ---- composition ------------------------------------------------------------
  /** Waits for every task; resolves to `[{ ok: value } | { err: message }]` in task order. */
  all(tasks) {
    return task(this, { kind: 'all', tasks: descriptorsOf('all()', tasks) })
  }

  /** Resolves to `{ index, value }` of the first task to finish; the others are cancelled. */
  race(...tasks) {
    const list = tasks.length === 1 && Array.isArray(tasks[0]) ? tasks[0] : tasks
    if (list.length === 0) throw new InvalidArgumentError('race() needs at least one task')
    return task(this, { kind: 'race', tasks: descriptorsOf('race()', list) })
  }

  // ---- custom status ------------------------------------------------------------
  /** `setCustomStatus(text)`, or `setCustomStatus(statusDef, value)` stored as JSON. */
  setCustomStatus(status, value) {
    if (status instanceof StatusDefinition) status = encode(value, 'custom status')
    if (typeof status !== 'string') throw new InvalidArgumentError(`status must be a string, got ${describe(status)}`)
    text('status', status)
    sync(() => this.#native.setCustomStatus(status))
  }

  resetCustomStatus() {
    this.#native.resetCustomStatus()
  }

  /** The custom status text, or with a `statusDef` its parsed value; `null` when unset. */
  getCustomStatus(def) {
    const raw = this.#native.getCustomStatus() ?? null
    return def instanceof StatusDefinition ? def.parse(raw) : raw
  }

  // ---- key-value state ------------------------------------------------------------
  /** Values are strings; anything else is stored JSON-encoded. */
  setValue(key, value) {
    // A typed key is always JSON, so its value reads back as what was set.
    if (key instanceof KeyDefinition) return sync(() => this.#native.setValue(key.key, encode(value, 'value')))
    identifier('key', nonEmptyString('key', key))
    const stored = typeof value === 'string' ? text('value', value) : encode(value, 'value')
    sync(() => this.#native.setValue(key, stored))
  }

  /** The stored string, or with a `keyDef` its parsed value; `null` when unset. */
  getValue(key) {
    if (key instanceof KeyDefinition) return key.parse(this.#native.getValue(key.key) ?? null)
    return this.#native.getValue(identifier('key', nonEmptyString('key', key))) ?? null
  }

  clearValue(key) {
    if (key instanceof KeyDefinition) key = key.key
    this.#native.clearValue(identifier('key', nonEmptyString('key', key)))
  }

  clearAllValues() {
    this.#native.clearAllValues()
  }

  getKvAllValues() {
    return { ...this.#native.getKvAllValues() }
  }

  getKvAllKeys() {
    return this.#native.getKvAllKeys()
  }

  getKvLength() {
    return this.#native.getKvLength()
  }

  pruneKvValuesUpdatedBefore(cutoffMs) {
    return this.#native.pruneKvValuesUpdatedBefore(nonNegativeNumber('cutoffMs', cutoffMs))
  }

  // ---- traces (suppressed while replaying) ---------------------------------------------
  traceInfo(message) { this.#native.trace('info', String(message)) }
  traceWarn(message) { this.#native.trace('warn', String(message)) }
  traceError(message) { this.#native.trace('error', String(message)) }
  traceDebug(message) { this.#native.trace('debug', String(message)) }
}

// Methods taking typed definitions (defineActivity, defineEvent, ...).
for (const [name, fn] of Object.entries(typedMethods)) {
  Object.defineProperty(OrchestrationContext.prototype, name, { value: fn, writable: true, configurable: true })
}

// Typed aliases: results already arrive parsed, so they are the same tasks.
for (const name of [
  'scheduleActivity', 'scheduleActivityOnSession', 'scheduleActivityWithRetry',
  'scheduleActivityWithRetryOnSession', 'scheduleSubOrchestration', 'scheduleSubOrchestrationWithId',
  'waitForEvent', 'dequeueEvent', 'startOrchestration', 'startOrchestrationVersioned', 'continueAsNew',
  'all', 'race',
]) {
  Object.defineProperty(OrchestrationContext.prototype, `${name}Typed`, {
    value: OrchestrationContext.prototype[name],
    writable: true,
    configurable: true,
  })
}

module.exports = { OrchestrationContext }
