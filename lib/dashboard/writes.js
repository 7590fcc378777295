'use strict'
// The dashboard's writes: raise, cancel, delete and prune, with the checks
// the CLI's commands make before they write (lib/cli/commands/*), and the
// bulk cancel / delete of a list selection. Reached only through a POST that
// passed the read-only switch and the cross-site check (security.js).
const { InvalidArgumentError, RuntimeStateError, describe } = require('../errors')
const { isLive } = require('../cli/statuses')
const { pruneOldExecutions } = require('../cli/retention')
const { mapLimited } = require('../cli/concurrent')

/** Most instances one bulk action takes. */
const MAX_BULK = 500

function field(body, name, check, what) {
  const v = body[name]
  if (!check(v)) throw new InvalidArgumentError(`${name} must be ${what}, got ${describe(v)}`)
  return v
}
const nonEmpty = (v) => typeof v === 'string' && v.length > 0
const optional = (check) => (v) => v === undefined || v === null || check(v)

const DURATION = /^(\d+)(m|h|d|w)$/
const UNIT_MS = { m: 60000, h: 3600000, d: 86400000, w: 604800000 }

/** A point in time: epoch ms, an ISO date or date-time, or an age (`30d`, `12h`, `15m`) before now. */
function pointInTime(name, v, now = Date.now()) {
  if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) return v
  if (typeof v === 'string') {
    const age = DURATION.exec(v)
    if (age) return now - Number(age[1]) * UNIT_MS[age[2]]
    const ms = /^\d{4}-\d{2}-\d{2}/.test(v) ? Date.parse(v) : NaN
    if (!Number.isNaN(ms)) return ms
  }
  throw new InvalidArgumentError(`${name} must be epoch ms, an ISO date (2026-01-31, 2026-01-31T12:00:00Z) or an age (30d, 12h, 15m), got ${describe(v)}`)
}

class Writes {
  constructor(client) {
    this.client = client
  }

  async raise(body) {
    const id = field(body, 'instanceId', nonEmpty, 'a non-empty string')
    const name = field(body, 'eventName', nonEmpty, 'a non-empty string')
    const info = await this.client.getInstanceInfo(id)
    if (!isLive(info.status)) {
      throw new RuntimeStateError(`instance '${id}' is ${info.status}; only a Running instance receives events`)
    }
    const data = body.data === undefined ? null : body.data
    await this.client.raiseEvent(id, name, data)
    return { instanceId: id, eventName: name, raised: true }
  }

  async cancel(body) {
    const id = field(body, 'instanceId', nonEmpty, 'a non-empty string')
    const reason = field(body, 'reason', optional((v) => typeof v === 'string'), 'a string')
    const info = await this.client.getInstanceInfo(id)
    if (!isLive(info.status)) {
      throw new RuntimeStateError(`instance '${id}' is ${info.status}; only a Running instance can be cancelled`)
    }
    await this.client.cancelInstance(id, reason || undefined)
    return { instanceId: id, cancelRequested: true }
  }

  async delete(body) {
    const id = field(body, 'instanceId', nonEmpty, 'a non-empty string')
    const force = field(body, 'force', optional((v) => typeof v === 'boolean'), 'a boolean') === true
    const info = await this.client.getInstanceInfo(id)
    if (info.parentInstanceId !== undefined) {
      throw new InvalidArgumentError(`instance '${id}' is a sub-orchestration of '${info.parentInstanceId}'; delete its root instead`)
    }
    if (isLive(info.status) && !force) {
      throw new RuntimeStateError(`instance '${id}' is Running; delete it with force to delete it anyway`)
    }
    return { instanceId: id, ...(await this.client.deleteInstance(id, force)) }
  }

  async prune(body) {
    const completedBefore = pointInTime('completedBefore', body.completedBefore)
    const keepLast = field(body, 'keepLast', optional((v) => Number.isInteger(v) && v >= 1), 'an integer >= 1')
    const instances = field(body, 'instances', optional((v) => typeof v === 'boolean'), 'a boolean') === true
    if (instances && keepLast != null) throw new InvalidArgumentError('keepLast applies to executions, not to instances')
    const result = instances
      ? await this.client.deleteInstanceBulk({ completedBefore })
      : await pruneOldExecutions(this.client, { completedBefore, keepLast: keepLast ?? undefined })
    return { mode: instances ? 'instances' : 'executions', completedBefore, ...result }
  }

  /** `{ action: 'cancel' | 'delete', instanceIds, reason?, force? }`: each instance's own outcome. */
  async bulk(body) {
    const action = field(body, 'action', (v) => v === 'cancel' || v === 'delete', "'cancel' or 'delete'")
    const ids = field(body, 'instanceIds', (v) => Array.isArray(v) && v.length > 0 && v.length <= MAX_BULK && v.every(nonEmpty),
      `an array of 1 to ${MAX_BULK} instance ids`)
    const results = await mapLimited(ids, 4, async (instanceId) => {
      try {
        const r = await this[action]({ instanceId, reason: body.reason, force: body.force })
        return { instanceId, ok: true, ...r }
      } catch (err) {
        return { instanceId, ok: false, code: err.code || 'ERR_INTERNAL', message: err.message }
      }
    })
    return { action, results }
  }
}

module.exports = { Writes, pointInTime }
