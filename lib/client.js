'use strict'
// Client: starts, watches and manages orchestration instances.
const native = require('./native')
const { call, sync, InvalidArgumentError, describe } = require('./errors')
const { encode, decode } = require('./json')
const { nativeProviderOf } = require('./providers')
const { string, number, identifier, text, optionalString } = require('./validate')
const { compact, filterArg, pruneOptionsArg, startOptionsArg, clientOptionsArg } = require('./client-args')
const waits = require('./client-waits')
const { typedClientMethods, nativeClient } = require('./client-typed')
const { KeyDefinition } = require('./definitions')
const { statusFailure, orchestrationFailed } = require('./failure')

/** The status object of api.md; `output` stays a JSON string unless `parse`. */
function toStatus(s, parse) {
  const out = { status: s.status, customStatusVersion: s.customStatusVersion }
  if (s.output != null) out.output = parse ? decode(s.output) : s.output
  if (s.error != null) out.error = s.error
  if (s.errorCategory != null) out.errorCategory = s.errorCategory
  if (s.failure != null) out.failure = statusFailure(s.failure)
  if (s.customStatus != null) out.customStatus = s.customStatus
  return out
}

// Argument checks here are type checks; the values (ids, names, versions,
// durations, statuses) are judged by the native client (src/rules.rs).
class Client {
  #native

  /** `options`: `{ maxPayloadBytes? }` (docs/options.md, Client options). */
  constructor(provider, options) {
    const handle = nativeProviderOf(provider, 'new Client()')
    this.#native = sync(() => new native.NativeClient(handle, clientOptionsArg(options)))
  }

  /** The client's options with their defaults filled in. */
  effectiveOptions() {
    return this.#native.effectiveOptions()
  }

  /** @internal The native client, for lib/client-typed.js, lib/client-waits.js and the CLI. */
  [nativeClient]() {
    return this.#native
  }

  /**
   * `options`: `{ traceparent?, tracestate? }` (W3C trace context the
   * instance carries). An id that exists is not started again (its input is
   * dropped; the runtime logs a warning naming it); `client.start()` refuses it.
   */
  async startOrchestration(instanceId, name, input, options) {
    identifier('instanceId', instanceId)
    identifier('orchestrationName', name)
    const payload = encode(input, 'input')
    const trace = startOptionsArg(options)
    return call(() => this.#native.startOrchestration(instanceId, name, payload, trace))
  }

  async startOrchestrationVersioned(instanceId, name, input, version, options) {
    identifier('instanceId', instanceId)
    identifier('orchestrationName', name)
    string('version', version)
    const payload = encode(input, 'input')
    const trace = startOptionsArg(options)
    return call(() => this.#native.startOrchestrationVersioned(instanceId, name, payload, version, trace))
  }

  /** `{ status, output?, error?, customStatus?, customStatusVersion }`; `output` is the raw JSON string. */
  async getStatus(instanceId) {
    identifier('instanceId', instanceId)
    return toStatus(await call(() => this.#native.getStatus(instanceId)), false)
  }

  /**
   * Resolves once terminal, with `output` parsed; rejects with ERR_TIMEOUT.
   *
   * An instance that is neither stored nor waiting to start (its start
   * queued, as it is until a runtime runs its first turn) rejects
   * ERR_NOT_FOUND at once, naming the closest ids. A timeout on a running
   * instance says what it waits for (an activity tried again and again
   * without a result, for one that no running worker registers).
   */
  async waitForOrchestration(instanceId, timeoutMs = 30000) {
    identifier('instanceId', instanceId)
    if (waits.isOptions(timeoutMs)) {
      const o = waits.waitOptions('waitForOrchestration()', timeoutMs, ['timeoutMs', 'pollIntervalMs', 'signal'])
      if (o.signal) return waits.waitForOrchestration(this, instanceId, o)
      timeoutMs = o.timeoutMs
    }
    const t = number('timeoutMs', timeoutMs, 30000)
    // At the deadline the native side tells a never-started id (ERR_NOT_FOUND)
    // from a start no runtime picked up (ERR_TIMEOUT naming the orchestration).
    return toStatus(await call(() => this.#native.waitForOrchestration(instanceId, t)), true)
  }

  /** The parsed output; rejects with ERR_ORCHESTRATION_FAILED if it failed. */
  async waitForOrchestrationTyped(instanceId, timeoutMs = 30000) {
    const s = await this.waitForOrchestration(instanceId, timeoutMs)
    if (s.status === 'Failed') {
      throw orchestrationFailed(instanceId, s)
    }
    return s.output
  }

  /** Positional `(id, lastSeen, pollIntervalMs?, timeoutMs?)` or `(id, lastSeen, { pollIntervalMs?, timeoutMs?, signal? })`. */
  async waitForStatusChange(instanceId, lastSeenVersion, pollIntervalMs = 500, timeoutMs = 30000) {
    identifier('instanceId', instanceId)
    const v = number('lastSeenVersion', lastSeenVersion)
    if (waits.isOptions(pollIntervalMs)) {
      const o = waits.waitOptions('waitForStatusChange()', pollIntervalMs, ['timeoutMs', 'pollIntervalMs', 'signal'])
      if (o.signal) return waits.waitForStatusChange(this, instanceId, v, o)
      pollIntervalMs = o.pollIntervalMs
      timeoutMs = o.timeoutMs
    }
    const p = number('pollIntervalMs', pollIntervalMs, 500)
    const t = number('timeoutMs', timeoutMs, 30000)
    return toStatus(await call(() => this.#native.waitForStatusChange(instanceId, v, p, t)), false)
  }

  async raiseEvent(instanceId, eventName, data) {
    identifier('instanceId', instanceId)
    identifier('eventName', eventName)
    const payload = encode(data, 'data')
    return call(() => this.#native.raiseEvent(instanceId, eventName, payload))
  }

  async enqueueEvent(instanceId, queueName, data) {
    identifier('instanceId', instanceId)
    identifier('queueName', queueName)
    const payload = encode(data, 'data')
    return call(() => this.#native.enqueueEvent(instanceId, queueName, payload))
  }

  async cancelInstance(instanceId, reason) {
    identifier('instanceId', instanceId)
    const r = optionalString('reason', reason)
    if (r !== undefined) text('reason', r)
    return call(() => this.#native.cancelInstance(instanceId, r ?? null))
  }

  // ---- KV -----------------------------------------------------------------
  // Stored values stay the strings the store holds (only waitForOrchestration
  // parses, as api.md says).

  /** The stored string of `key` on the instance, or null; with a `defineKey` key, its parsed value. */
  async getValue(instanceId, key) {
    identifier('instanceId', instanceId)
    if (key instanceof KeyDefinition) return key.parse(await this.getValue(instanceId, key.key))
    identifier('key', key)
    return (await call(() => this.#native.getValue(instanceId, key))) ?? null
  }

  /** Resolves with the stored string once `key` is set; rejects with ERR_TIMEOUT. */
  async waitForValue(instanceId, key, timeoutMs = 30000) {
    identifier('instanceId', instanceId)
    if (key instanceof KeyDefinition) return key.parse(await this.waitForValue(instanceId, key.key, timeoutMs))
    if (waits.isOptions(timeoutMs)) {
      const o = waits.waitOptions('waitForValue()', timeoutMs, ['timeoutMs', 'pollIntervalMs', 'signal'])
      if (o.signal) return waits.waitForValue(this, instanceId, identifier('key', key), o)
      timeoutMs = o.timeoutMs
    }
    identifier('key', key)
    const t = number('timeoutMs', timeoutMs, 30000)
    return call(() => this.#native.waitForValue(instanceId, key, t))
  }

  /** `{ key: storedString }` of every key of the instance. */
  async getKvAllValues(instanceId) {
    identifier('instanceId', instanceId)
    return { ...(await call(() => this.#native.getKvAllValues(instanceId))) }
  }

  // ---- stats ----------------------------------------------------------------
  async getSystemMetrics() {
    return { ...(await call(() => this.#native.getSystemMetrics())) }
  }

  async getQueueDepths() {
    return { ...(await call(() => this.#native.getQueueDepths())) }
  }

  /**
   * Queue messages set aside because no fetch can read them (they stay in
   * their queue, never fetched): `[{ queue, id, instanceId, reason, text }]`.
   */
  async listSetAside() {
    return (await call(() => this.#native.listSetAside())).map((m) => ({ ...m }))
  }

  /** Sizes of the instance's current execution, or null if it does not exist. */
  async getOrchestrationStats(instanceId) {
    identifier('instanceId', instanceId)
    const s = await call(() => this.#native.getOrchestrationStats(instanceId))
    return s == null ? null : { ...s }
  }

  // ---- management -------------------------------------------------------------
  // Results keep the field names of api.md; optional fields are omitted
  // rather than null.
  async listAllInstances() {
    return call(() => this.#native.listAllInstances())
  }

  /** `status`: 'Running' | 'Completed' | 'Failed' | 'ContinuedAsNew'; anything else is refused natively. */
  async listInstancesByStatus(status) {
    return call(() => this.#native.listInstancesByStatus(status))
  }

  /** Rejects with ERR_NOT_FOUND for an unknown instance. */
  async getInstanceInfo(instanceId) {
    identifier('instanceId', instanceId)
    return compact(await call(() => this.#native.getInstanceInfo(instanceId)))
  }

  /** Rejects with ERR_NOT_FOUND for an unknown instance or execution. */
  async getExecutionInfo(instanceId, executionId) {
    identifier('instanceId', instanceId)
    number('executionId', executionId)
    return compact(await call(() => this.#native.getExecutionInfo(instanceId, executionId)))
  }

  /** Execution ids in ascending order; `[]` for an unknown instance. */
  async listExecutions(instanceId) {
    identifier('instanceId', instanceId)
    return call(() => this.#native.listExecutions(instanceId))
  }

  /** `[{ eventId, kind, sourceEventId?, timestampMs, data? }]`, oldest first. */
  async readExecutionHistory(instanceId, executionId) {
    identifier('instanceId', instanceId)
    number('executionId', executionId)
    const events = await call(() => this.#native.readExecutionHistory(instanceId, executionId))
    return events.map(compact)
  }

  /**
   * One execution's history (default: the current one) as a JSON-serialisable
   * object that loses nothing, for `duroxide-node/testing` (`replayHistory`,
   * `importHistory`): `{ format, formatVersion, instanceId, executionId,
   * orchestrationName, orchestrationVersion, events }`. ERR_NOT_FOUND for an
   * unknown instance or execution.
   */
  async exportHistory(instanceId, executionId) {
    identifier('instanceId', instanceId)
    if (executionId !== undefined) number('executionId', executionId)
    return call(() => this.#native.exportHistory(instanceId, executionId))
  }

  /** `{ rootId, allIds, size }`; rejects with ERR_NOT_FOUND for an unknown instance. */
  async getInstanceTree(instanceId) {
    identifier('instanceId', instanceId)
    const t = await call(() => this.#native.getInstanceTree(instanceId))
    return { rootId: t.rootId, allIds: t.allIds, size: t.size }
  }

  /**
   * Deletes a root instance and its sub-orchestrations. A running instance
   * needs `force` (ERR_RUNTIME_STATE otherwise); a sub-orchestration id is
   * ERR_INVALID_ARGUMENT; an unknown id is ERR_NOT_FOUND.
   */
  async deleteInstance(instanceId, force = false) {
    identifier('instanceId', instanceId)
    if (force === undefined || force === null) force = false
    if (typeof force !== 'boolean') throw new InvalidArgumentError(`force must be a boolean, got ${describe(force)}`)
    return { ...(await call(() => this.#native.deleteInstance(instanceId, force))) }
  }

  /** Deletes terminal root instances matching `filter = { instanceIds?, completedBefore?, limit? }`. */
  async deleteInstanceBulk(filter = {}) {
    const f = filterArg(filter)
    return { ...(await call(() => this.#native.deleteInstanceBulk(f))) }
  }

  /** Deletes old executions; `options = { keepLast?, completedBefore? }`. The current execution stays. */
  async pruneExecutions(instanceId, options = {}) {
    identifier('instanceId', instanceId)
    const o = pruneOptionsArg(options)
    return { ...(await call(() => this.#native.pruneExecutions(instanceId, o))) }
  }

  async pruneExecutionsBulk(filter = {}, options = {}) {
    const f = filterArg(filter)
    const o = pruneOptionsArg(options)
    return { ...(await call(() => this.#native.pruneExecutionsBulk(f, o))) }
  }
}

// Methods taking typed definitions (start, handle, raise, enqueue, list).
for (const [name, fn] of Object.entries(typedClientMethods)) {
  Object.defineProperty(Client.prototype, name, { value: fn, writable: true, configurable: true })
}

// Typed aliases: payloads are JSON either way.
Client.prototype.startOrchestrationTyped = Client.prototype.startOrchestration
Client.prototype.startOrchestrationVersionedTyped = Client.prototype.startOrchestrationVersioned
Client.prototype.raiseEventTyped = Client.prototype.raiseEvent
Client.prototype.enqueueEventTyped = Client.prototype.enqueueEvent

module.exports = { Client, toStatus }
