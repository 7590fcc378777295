'use strict'
// Client: starts, watches and manages orchestration instances.
const native = require('./native')
const { call, InvalidArgumentError, NotFoundError, OrchestrationFailedError, TimeoutError, describe } = require('./errors')
const { encode, decode } = require('./json')
const { nativeProviderOf } = require('./providers')
const { nonEmptyString, nonNegativeNumber, optionalString } = require('./validate')

/** The status object of api.md; `output` stays a JSON string unless `parse`. */
function toStatus(s, parse) {
  const out = { status: s.status, customStatusVersion: s.customStatusVersion }
  if (s.output != null) out.output = parse ? decode(s.output) : s.output
  if (s.error != null) out.error = s.error
  if (s.errorCategory != null) out.errorCategory = s.errorCategory
  if (s.customStatus != null) out.customStatus = s.customStatus
  return out
}

class Client {
  #native

  constructor(provider) {
    this.#native = new native.NativeClient(nativeProviderOf(provider, 'new Client()'))
    this._provider = provider
  }

  /** @internal the native client, for lib/ extensions. */
  get _nativeClient() {
    return this.#native
  }

  async startOrchestration(instanceId, name, input) {
    nonEmptyString('instanceId', instanceId)
    nonEmptyString('orchestrationName', name)
    const payload = encode(input, 'input')
    return call(() => this.#native.startOrchestration(instanceId, name, payload))
  }

  async startOrchestrationVersioned(instanceId, name, input, version) {
    nonEmptyString('instanceId', instanceId)
    nonEmptyString('orchestrationName', name)
    nonEmptyString('version', version)
    const payload = encode(input, 'input')
    return call(() => this.#native.startOrchestrationVersioned(instanceId, name, payload, version))
  }

  /** `{ status, output?, error?, customStatus?, customStatusVersion }`; `output` is the raw JSON string. */
  async getStatus(instanceId) {
    nonEmptyString('instanceId', instanceId)
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
    nonEmptyString('instanceId', instanceId)
    const t = nonNegativeNumber('timeoutMs', timeoutMs, 30000)
    try {
      return toStatus(await call(() => this.#native.waitForOrchestration(instanceId, t)), true)
    } catch (err) {
      if (err instanceof TimeoutError) {
        const now = await call(() => this.#native.getStatus(instanceId)).catch(() => null)
        if (now && now.status === 'NotFound') {
          throw new NotFoundError(
            `instance '${instanceId}' not found: nothing with this id was started (or picked up by a runtime) within ${t} ms`,
            { cause: err },
          )
        }
      }
      throw err
    }
  }

  /** The parsed output; rejects with ERR_ORCHESTRATION_FAILED if it failed. */
  async waitForOrchestrationTyped(instanceId, timeoutMs = 30000) {
    const s = await this.waitForOrchestration(instanceId, timeoutMs)
    if (s.status === 'Failed') {
      const err = new OrchestrationFailedError(`orchestration '${instanceId}' failed: ${s.error}`)
      err.instanceId = instanceId
      err.errorCategory = s.errorCategory
      throw err
    }
    return s.output
  }

  async waitForStatusChange(instanceId, lastSeenVersion, pollIntervalMs = 500, timeoutMs = 30000) {
    nonEmptyString('instanceId', instanceId)
    const v = nonNegativeNumber('lastSeenVersion', lastSeenVersion)
    if (v === undefined) throw new InvalidArgumentError(`lastSeenVersion must be a non-negative number, got ${describe(lastSeenVersion)}`)
    const p = nonNegativeNumber('pollIntervalMs', pollIntervalMs, 500)
    const t = nonNegativeNumber('timeoutMs', timeoutMs, 30000)
    return toStatus(await call(() => this.#native.waitForStatusChange(instanceId, v, p, t)), false)
  }

  async raiseEvent(instanceId, eventName, data) {
    nonEmptyString('instanceId', instanceId)
    nonEmptyString('eventName', eventName)
    const payload = encode(data, 'data')
    return call(() => this.#native.raiseEvent(instanceId, eventName, payload))
  }

  async enqueueEvent(instanceId, queueName, data) {
    nonEmptyString('instanceId', instanceId)
    nonEmptyString('queueName', queueName)
    const payload = encode(data, 'data')
    return call(() => this.#native.enqueueEvent(instanceId, queueName, payload))
  }

  async cancelInstance(instanceId, reason) {
    nonEmptyString('instanceId', instanceId)
    const r = optionalString('reason', reason)
    return call(() => this.#native.cancelInstance(instanceId, r ?? null))
  }
}

// Typed aliases: payloads are JSON either way.
Client.prototype.startOrchestrationTyped = Client.prototype.startOrchestration
Client.prototype.startOrchestrationVersionedTyped = Client.prototype.startOrchestrationVersioned
Client.prototype.raiseEventTyped = Client.prototype.raiseEvent
Client.prototype.enqueueEventTyped = Client.prototype.enqueueEvent

// KV, stats and management (lib/client-management.js).
require('./client-management').install(Client)

module.exports = { Client, toStatus }
