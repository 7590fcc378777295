'use strict'
// The replay check (the deploy gate): does today's orchestration code still
// replay the histories that running (or captured) instances recorded?
//
// The native half (src/testing/) runs duroxide's replay engine with the
// runtime's own handlers over a bridge made for each check, so the runtime is
// not started, activities never run (a scheduled activity with no completion
// in the history stays scheduled) and nothing is written.
const native = require('../native')
const { call, InvalidArgumentError, InvalidOptionError, describe } = require('../errors')
const { Runtime, replayBridge } = require('../runtime')
const { Client } = require('../client')
const { compact } = require('../client-args')

const FORMAT = 'duroxide-history'
const FORMAT_VERSION = 1

/**
 * An exported history (`client.exportHistory`) from its JSON text or the
 * parsed object, checked; what `replayHistory` accepts. Throws
 * ERR_INVALID_ARGUMENT naming what is wrong.
 */
function importHistory(json) {
  let h = json
  if (typeof json === 'string') {
    try {
      h = JSON.parse(json)
    } catch (err) {
      throw new InvalidArgumentError(`importHistory: not JSON: ${err.message}`, { cause: err })
    }
  }
  if (h === null || typeof h !== 'object' || Array.isArray(h) || h.format !== FORMAT) {
    throw new InvalidArgumentError(`importHistory: not an exported history (expected format '${FORMAT}'), got ${describe(h)}`)
  }
  if (h.formatVersion !== FORMAT_VERSION) {
    throw new InvalidArgumentError(`importHistory: formatVersion ${h.formatVersion} is not supported (this build reads ${FORMAT_VERSION})`)
  }
  if (typeof h.instanceId !== 'string' || !Number.isInteger(h.executionId) || !Array.isArray(h.events)) {
    throw new InvalidArgumentError('importHistory: an exported history needs instanceId, executionId and events')
  }
  return h
}

/** The JSON text of a payload with object keys sorted, as `readExecutionHistory` hands payloads back. */
function sortedJson(text) {
  let value
  try {
    value = JSON.parse(text)
  } catch {
    return text
  }
  const sort = (v) => {
    if (Array.isArray(v)) return v.map(sort)
    if (v === null || typeof v !== 'object') return v
    const out = {}
    for (const k of Object.keys(v).sort()) out[k] = sort(v[k])
    return out
  }
  return JSON.stringify(sort(value))
}

/** A yielded task with its payloads' keys sorted (a copy: the Task's own descriptor is left alone). */
function sortedTask(d) {
  if (d === null || typeof d !== 'object') return d
  const out = { ...d }
  if (typeof d.input === 'string') out.input = sortedJson(d.input)
  if (Array.isArray(d.tasks)) out.tasks = d.tasks.map(sortedTask)
  return out
}

function bridgeOf(runtime, who) {
  if (!(runtime instanceof Runtime)) {
    throw new InvalidArgumentError(`${who}: runtime must be a Runtime holding the registrations to check, got ${describe(runtime)}`)
  }
  return runtime[replayBridge]()
}

function checkOptions(who, options, allowed) {
  if (options === undefined || options === null) return {}
  if (typeof options !== 'object' || Array.isArray(options)) {
    throw new InvalidOptionError(`${who}: options must be an object, got ${describe(options)}`)
  }
  for (const key of Object.keys(options)) {
    if (!allowed.includes(key)) {
      throw new InvalidOptionError(`${who}: unknown option '${key}' (expected ${allowed.join(', ')})`)
    }
  }
  return options
}

/**
 * Replays one execution's history against the orchestrations `runtime`
 * registered. `history` is `client.exportHistory(...)` (object or its JSON
 * text) or `client.readExecutionHistory(...)` (then `options.instanceId` /
 * `executionId` say whose it is; default 'replay' / 1).
 * Resolves with `{ ok, divergence? }`, `divergence` = `{ index, eventId,
 * recorded?, scheduled?, message }`.
 */
async function replayHistory(runtime, history, options) {
  const bridge = bridgeOf(runtime, 'replayHistory')
  const opts = checkOptions('replayHistory', options, ['instanceId', 'executionId'])
  let events = history
  let target = { instanceId: opts.instanceId, executionId: opts.executionId }
  if (typeof history === 'string' || (history !== null && typeof history === 'object' && !Array.isArray(history))) {
    const h = importHistory(history)
    events = h.events
    target = { instanceId: h.instanceId, executionId: h.executionId }
  } else if (!Array.isArray(history)) {
    throw new InvalidArgumentError(
      `replayHistory: history must be client.exportHistory(...) or client.readExecutionHistory(...), got ${describe(history)}`,
    )
  }
  // readExecutionHistory entries hand payloads back with sorted keys; the
  // code's payloads are sorted the same way so that the two compare.
  const entries = events.length > 0 && events[0] !== null && typeof events[0] === 'object' && 'eventId' in events[0]
  const step = entries
    ? (c) => {
        const r = bridge.orchestrationStep(c)
        return r && r.yield ? { yield: sortedTask(r.yield) } : r
      }
    : bridge.orchestrationStep
  const report = await call(() =>
    native.replayExecution(
      bridge.native,
      events,
      compact(target),
      step,
      bridge.orchestrationDispose,
      (c) => c.context.complete({ err: 'the replay check runs no activities' }),
      () => {},
      () => {},
    ),
  )
  if (report.ok) return { ok: true }
  const d = report.divergence
  const divergence = { index: d.index, eventId: d.eventId, message: d.message }
  if (d.recorded) divergence.recorded = compact(d.recorded)
  if (d.scheduled) divergence.scheduled = compact(d.scheduled)
  return { ok: false, divergence }
}

function limitOption(who, limit) {
  if (limit === undefined) return undefined
  if (!Number.isInteger(limit) || limit < 1) {
    throw new InvalidOptionError(`${who}: limit must be an integer >= 1, got ${describe(limit)}`)
  }
  return limit
}

/**
 * Replays the current execution of stored instances (newest first; only
 * those whose current execution has `status`, at most `limit`). Resolves
 * with `[{ instanceId, executionId, ok, divergence? }]`. Reads only.
 */
async function replayInstances(provider, runtime, options) {
  bridgeOf(runtime, 'replayInstances')
  const opts = checkOptions('replayInstances', options, ['status', 'limit'])
  const limit = limitOption('replayInstances', opts.limit)
  const client = new Client(provider)
  const ids = opts.status === undefined
    ? await client.listAllInstances()
    : await client.listInstancesByStatus(opts.status)
  const results = []
  for (const instanceId of ids) {
    if (limit !== undefined && results.length >= limit) break
    let exported
    try {
      exported = await client.exportHistory(instanceId)
    } catch (err) {
      // Deleted (or not yet started) between the listing and the read.
      if (err && err.code === 'ERR_NOT_FOUND') continue
      throw err
    }
    const r = await replayHistory(runtime, exported)
    results.push({ instanceId, executionId: exported.executionId, ...r })
  }
  return results
}

module.exports = { replayHistory, replayInstances, importHistory }
