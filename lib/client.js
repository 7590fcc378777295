'use strict'
// Client: starts, watches and manages orchestration instances.
const native = require('./native')
const { call, InvalidArgumentError, describe } = require('./errors')
const { encode, decode } = require('./json')
const { nativeProviderOf } = require('./providers')
const { string, number, optionalString } = require('./validate')
const { compact, filterArg, pruneOptionsArg, startOptionsArg } = require('./client-args')
const waits = require('./client-waits')
const { typedClientMethods } = require('./client-typed')
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

  constructor(provider) {
    this.#native = new native.NativeClient(nativeProviderOf(provider, 'new Client()'))
  }

  /** `options`: `{ traceparent?, tracestate? }` (W3C trace context the instance carries). */
  async startOrchestration(instanceId, name, input, options) {
    string('instanceId', instanceId)
    string('orchestrationName', name)
    const payload = encode(input, 'input')
    const trace = startOptionsArg(options)
    return call(() => this.#native.startOrchestration(instanceId, name, payload, trace))
  }

  async startOrchestrationVersioned(instanceId, name, input, version, options) {
    string('instanceId', instanceId)
    string('orchestrationName', name)
    string('version', version)
    const payload = encode(input, 'input')
    const trace = startOptionsArg(options)
    return call(() => this.#native.startOrchestrationVersioned(instanceId, name, payload, version, trace))
  }

  /** `{ status, output?, error?, customStatus?, customStatusVersion }`; `output` is the raw JSON string. */
  async getStatus(instanceId) {
    string('instanceId', instanceId)
    return toStatus(await call(() => this.#native.getStatus(instanceId)), false)
  }

  /**
   * Resolves once terminal, with `output` parsed; rejects with ERR_TIMEOUT.
   *
   * An instance that does not exist is waited for like a running one: a start
   * only becomes visible once a runtime has run its first turn, so "not found
   * yet" is the normal state right after startOrchestration. If the wait
   * times out and the instance still does not exist, the rejection is
   * ERR_NOT_FOUND instead of ERR_TIMEOUT, so a wrong id is told apart from a
   * slow orchestration.
   */
  async waitForOrchestration(instanceId, timeoutMs = 30000) {
    string('instanceId', instanceId)
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
    string('instanceId', instanceId)
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
    string('instanceId', instanceId)
    string('eventName', eventName)
    const payload = encode(data, 'data')
    return call(() => this.#native.raiseEvent(instanceId, eventName, payload))
  }

  async enqueueEvent(instanceId, queueName, data) {
    string('instanceId', instanceId)
    string('queueName', queueName)
    const payload = encode(data, 'data')
    return call(() => this.#native.enqueueEvent(instanceId, queueName, payload))
  }

  async cancelInstance(instanceId, reason) {
    string('instanceId', instanceId)
    const r = optionalString('reason', reason)
    return call(() => this.#native.cancelInstance(instanceId, r ?? null))
  }

  // ---- KV -----------------------------------------------------------------
  // Stored values stay the strings the store holds (only waitForOrchestration
  // parses, as api.md says).

  /** The stored string of `key` on the instance, or null; with a `defineKey` key, its parsed value. */
  async getValue(instanceId, key) {
    string('instanceId', instanceId)
    if (key instanceof KeyDefinition) return key.parse(await this.getValue(instanceId, key.key))
    string('key', key)
    return (await call(() => this.#native.getValue(instanceId, key))) ?? null
  }

  /** Resolves with the stored string once `key` is set; rejects with ERR_TIMEOUT. */
  async waitForValue(instanceId, key, timeoutMs = 30000) {
    string('instanceId', instanceId)
    if (key instanceof KeyDefinition) return key.parse(await this.waitForValue(instanceId, key.key, timeoutMs))
    if (waits.isOptions(timeoutMs)) {
      const o = waits.waitOptions('waitForValue()', timeoutMs, ['timeoutMs', 'pollIntervalMs', 'signal'])
      if (o.signal) return waits.waitForValue(this, instanceId, string('key', key), o)
      timeoutMs = o.timeoutMs
    }
    string('key', key)
    const t = number('timeoutMs', timeoutMs, 30000)
    return call(() => this.#native.waitForValue(instanceId, key, t))
  }

  /** `{ key: storedString }` of every key of the instance. */
  async getKvAllValues(instanceId) {
    string('instanceId', instanceId)
    return { ...(await call(() => this.#native.getKvAllValues(instanceId))) }
  }

  // ---- stats ----------------------------------------------------------------
  async getSystemMetrics() {
    return { ...(await call(() => this.#native.getSystemMetrics())) }
  }

  async getQueueDepths() {
    return { ...(await call(() => this.#native.getQueueDepths())) }
  }

  /** Sizes of the instance's current execution, or null if it does not exist. */
  async getOrchestrationStats(instanceId) {
    string('instanceId', instanceId)
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
    string('instanceId', instanceId)
    return compact(await call(() => this.#native.getInstanceInfo(instanceId)))
  }

  /** Rejects with ERR_NOT_FOUND for an unknown instance or execution. */
  async getExecutionInfo(instanceId, executionId) {
    string('instanceId', instanceId)
    number('executionId', executionId)
    return compact(await call(() => this.#native.getExecutionInfo(instanceId, executionId)))
  }

  /** Execution ids in ascending order; `[]` for an unknown instance. */
  async listExecutions(instanceId) {
    string('instanceId', instanceId)
    return call(() => this.#native.listExecutions(instanceId))
  }

  /** `[{ eventId, kind, sourceEventId?, timestampMs, data? }]`, oldest first. */
  async readExecutionHistory(instanceId, executionId) {
    string('instanceId', instanceId)
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
    string('instanceId', instanceId)
    if (executionId !== undefined) number('executionId', executionId)
    return call(() => this.#native.exportHistory(instanceId, executionId))
  }

  /** `{ rootId, allIds, size }`; rejects with ERR_NOT_FOUND for an unknown instance. */
  async getInstanceTree(instanceId) {
    string('instanceId', instanceId)
    const t = await call(() => this.#native.getInstanceTree(instanceId))
    return { rootId: t.rootId, allIds: t.allIds, size: t.size }
  }

  /**
   * Deletes a root instance and its sub-orchestrations. A running instance
   * needs `force` (ERR_RUNTIME_STATE otherwise); a sub-orchestration id is
   * ERR_INVALID_ARGUMENT; an unknown id is ERR_NOT_FOUND.
   */
  async deleteInstance(instanceId, force = false) {
    string('instanceId', instanceId)
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
    string('instanceId', instanceId)
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
