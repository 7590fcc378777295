'use strict'
// Client, continued: KV reads, stats and management. `install(Client)` adds
// these methods to Client.prototype (lib/client.js calls it), keeping each
// file about one topic. Results keep the field names of api.md; optional
// fields are omitted rather than null, and stored payloads stay the strings
// the store holds (only waitForOrchestration parses, as api.md says).
const { call, InvalidArgumentError, InvalidOptionError, describe } = require('./errors')
const { nonEmptyString, nonNegativeNumber } = require('./validate')

const INSTANCE_STATUSES = ['Running', 'Completed', 'Failed', 'ContinuedAsNew']

/** Copies `src` without its null/undefined fields (`output?` means absent, not null). */
function compact(src) {
  const out = {}
  for (const [k, v] of Object.entries(src)) if (v !== null && v !== undefined) out[k] = v
  return out
}

function executionIdArg(value) {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new InvalidArgumentError(`executionId must be an integer >= 1, got ${describe(value)}`)
  }
  return value
}

function plainObject(name, value) {
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw new InvalidArgumentError(`${name} must be an object, got ${describe(value)}`)
  }
  return value
}

function checkKeys(name, value, known) {
  for (const key of Object.keys(value)) {
    if (!known.includes(key)) {
      throw new InvalidOptionError(`${name}.${key} is not a known field (expected ${known.join(', ')})`)
    }
  }
}

/** Epoch ms from a number or a Date. */
function epochMs(name, value) {
  if (value === undefined || value === null) return undefined
  const ms = value instanceof Date ? value.getTime() : value
  if (typeof ms !== 'number' || !Number.isSafeInteger(ms) || ms < 0) {
    throw new InvalidOptionError(`${name} must be a Date or non-negative integer epoch milliseconds, got ${describe(value)}`)
  }
  return ms
}

function u32(name, value, max = 0xffffffff) {
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > max) {
    throw new InvalidOptionError(`${name} must be an integer 0..${max}, got ${describe(value)}`)
  }
  return value
}

function filterArg(filter) {
  const f = plainObject('filter', filter)
  if (!f) return null
  checkKeys('filter', f, ['instanceIds', 'completedBefore', 'limit'])
  const out = {}
  if (f.instanceIds !== undefined && f.instanceIds !== null) {
    if (!Array.isArray(f.instanceIds)) {
      throw new InvalidOptionError(`filter.instanceIds must be an array of instance ids, got ${describe(f.instanceIds)}`)
    }
    out.instanceIds = f.instanceIds.map((id, i) => {
      if (typeof id !== 'string' || id.length === 0) {
        throw new InvalidOptionError(`filter.instanceIds[${i}] must be a non-empty string, got ${describe(id)}`)
      }
      return id
    })
  }
  const completedBefore = epochMs('filter.completedBefore', f.completedBefore)
  if (completedBefore !== undefined) out.completedBefore = completedBefore
  const limit = u32('filter.limit', f.limit)
  if (limit !== undefined) out.limit = limit
  return out
}

function pruneOptionsArg(options) {
  const o = plainObject('options', options)
  if (!o) return null
  checkKeys('options', o, ['keepLast', 'completedBefore'])
  const out = {}
  // duroxide-pg hands keepLast to SQL as a signed 32-bit integer.
  const keepLast = u32('options.keepLast', o.keepLast, 0x7fffffff)
  if (keepLast !== undefined) out.keepLast = keepLast
  const completedBefore = epochMs('options.completedBefore', o.completedBefore)
  if (completedBefore !== undefined) out.completedBefore = completedBefore
  return out
}

const methods = {
  // ---- KV ---------------------------------------------------------------------
  /** The stored string of `key` on the instance, or null. */
  async getValue(instanceId, key) {
    nonEmptyString('instanceId', instanceId)
    nonEmptyString('key', key)
    return (await call(() => this._nativeClient.getValue(instanceId, key))) ?? null
  },

  /** Resolves with the stored string once `key` is set; rejects with ERR_TIMEOUT. */
  async waitForValue(instanceId, key, timeoutMs = 30000) {
    nonEmptyString('instanceId', instanceId)
    nonEmptyString('key', key)
    const t = nonNegativeNumber('timeoutMs', timeoutMs, 30000)
    return call(() => this._nativeClient.waitForValue(instanceId, key, t))
  },

  /** `{ key: storedString }` of every key of the instance. */
  async getKvAllValues(instanceId) {
    nonEmptyString('instanceId', instanceId)
    return { ...(await call(() => this._nativeClient.getKvAllValues(instanceId))) }
  },

  // ---- stats ----------------------------------------------------------------------
  async getSystemMetrics() {
    return { ...(await call(() => this._nativeClient.getSystemMetrics())) }
  },

  async getQueueDepths() {
    return { ...(await call(() => this._nativeClient.getQueueDepths())) }
  },

  /** Sizes of the instance's current execution, or null if it does not exist. */
  async getOrchestrationStats(instanceId) {
    nonEmptyString('instanceId', instanceId)
    const s = await call(() => this._nativeClient.getOrchestrationStats(instanceId))
    return s == null ? null : { ...s }
  },

  // ---- management -------------------------------------------------------------------
  async listAllInstances() {
    return call(() => this._nativeClient.listAllInstances())
  },

  async listInstancesByStatus(status) {
    if (typeof status !== 'string' || !INSTANCE_STATUSES.includes(status)) {
      throw new InvalidArgumentError(`status must be one of ${INSTANCE_STATUSES.join(', ')}, got ${describe(status)}`)
    }
    return call(() => this._nativeClient.listInstancesByStatus(status))
  },

  /** Rejects with ERR_NOT_FOUND for an unknown instance. */
  async getInstanceInfo(instanceId) {
    nonEmptyString('instanceId', instanceId)
    return compact(await call(() => this._nativeClient.getInstanceInfo(instanceId)))
  },

  /** Rejects with ERR_NOT_FOUND for an unknown instance or execution. */
  async getExecutionInfo(instanceId, executionId) {
    nonEmptyString('instanceId', instanceId)
    executionIdArg(executionId)
    return compact(await call(() => this._nativeClient.getExecutionInfo(instanceId, executionId)))
  },

  /** Execution ids in ascending order; `[]` for an unknown instance. */
  async listExecutions(instanceId) {
    nonEmptyString('instanceId', instanceId)
    return call(() => this._nativeClient.listExecutions(instanceId))
  },

  /** `[{ eventId, kind, sourceEventId?, timestampMs, data? }]`, oldest first. */
  async readExecutionHistory(instanceId, executionId) {
    nonEmptyString('instanceId', instanceId)
    executionIdArg(executionId)
    const events = await call(() => this._nativeClient.readExecutionHistory(instanceId, executionId))
    return events.map(compact)
  },

  /** `{ rootId, allIds, size }`; rejects with ERR_NOT_FOUND for an unknown instance. */
  async getInstanceTree(instanceId) {
    nonEmptyString('instanceId', instanceId)
    const t = await call(() => this._nativeClient.getInstanceTree(instanceId))
    return { rootId: t.rootId, allIds: t.allIds, size: t.size }
  },

  /**
   * Deletes a root instance and its sub-orchestrations. A running instance
   * needs `force` (ERR_RUNTIME_STATE otherwise); a sub-orchestration id is
   * ERR_INVALID_ARGUMENT; an unknown id is ERR_NOT_FOUND.
   */
  async deleteInstance(instanceId, force = false) {
    nonEmptyString('instanceId', instanceId)
    if (force === undefined || force === null) force = false
    if (typeof force !== 'boolean') throw new InvalidArgumentError(`force must be a boolean, got ${describe(force)}`)
    return { ...(await call(() => this._nativeClient.deleteInstance(instanceId, force))) }
  },

  /** Deletes terminal root instances matching `filter = { instanceIds?, completedBefore?, limit? }`. */
  async deleteInstanceBulk(filter = {}) {
    const f = filterArg(filter)
    return { ...(await call(() => this._nativeClient.deleteInstanceBulk(f))) }
  },

  /** Deletes old executions; `options = { keepLast?, completedBefore? }`. The current execution stays. */
  async pruneExecutions(instanceId, options = {}) {
    nonEmptyString('instanceId', instanceId)
    const o = pruneOptionsArg(options)
    return { ...(await call(() => this._nativeClient.pruneExecutions(instanceId, o))) }
  },

  async pruneExecutionsBulk(filter = {}, options = {}) {
    const f = filterArg(filter)
    const o = pruneOptionsArg(options)
    return { ...(await call(() => this._nativeClient.pruneExecutionsBulk(f, o))) }
  },
}

function install(Client) {
  for (const [name, fn] of Object.entries(methods)) {
    Object.defineProperty(Client.prototype, name, { value: fn, writable: true, configurable: true })
  }
}

module.exports = { install, INSTANCE_STATUSES }
