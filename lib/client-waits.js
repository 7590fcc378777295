'use strict'
// Client waits that an AbortSignal can end. The native waits cannot be
// cancelled from JS (a pending one keeps the process alive until its
// timeout), so a wait given a `signal` polls the store from JS instead, with
// timers the signal clears: abort ends it at once and leaves nothing behind.
// Without a signal the native waits run as before.
const { setTimeout: sleep } = require('node:timers/promises')
const { AbortError, InvalidArgumentError, TimeoutError, describe } = require('./errors')
const { decode } = require('./json')
const { stateOf } = require('./client-typed')

/** The options form of a wait: `{ timeoutMs?, pollIntervalMs?, signal? }`, keys checked. */
function waitOptions(what, value, known) {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new InvalidArgumentError(`${what} options must be an object, got ${describe(value)}`)
  }
  for (const key of Object.keys(value)) {
    if (!known.includes(key)) throw new InvalidArgumentError(`${what} options.${key} is not an option (expected ${known.join(', ')})`)
  }
  const signal = value.signal
  if (signal !== undefined && signal !== null && !(signal instanceof AbortSignal)) {
    throw new InvalidArgumentError(`${what} options.signal must be an AbortSignal, got ${describe(signal)}`)
  }
  return {
    timeoutMs: value.timeoutMs,
    pollIntervalMs: value.pollIntervalMs,
    signal: signal ?? undefined,
  }
}

/** True when `value` is the options form (a plain object) rather than a positional number. */
function isOptions(value) {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** Milliseconds as the native waits take them (src/rules.rs `millis`): an integer >= 0. */
function millis(name, value, fallback) {
  if (value === undefined || value === null) return fallback
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
    throw new InvalidArgumentError(`${name} must be a non-negative integer number of milliseconds, got ${describe(value)}`)
  }
  return value
}

function aborted(what, signal) {
  const reason = signal.reason
  const why = reason instanceof Error ? reason.message : reason === undefined ? 'aborted' : String(reason)
  return new AbortError(`${what} was aborted: ${why}`, { cause: reason })
}

/**
 * Calls `probe()` until it returns a value other than `undefined`, sleeping
 * `intervalMs` between calls; rejects with AbortError when `signal` aborts
 * and with `onTimeout()` once `timeoutMs` has passed.
 */
async function poll({ what, signal, timeoutMs, intervalMs, probe, onTimeout }) {
  if (signal && signal.aborted) throw aborted(what, signal)
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await probe()
    if (value !== undefined) return value
    if (signal && signal.aborted) throw aborted(what, signal)
    const left = deadline - Date.now()
    if (left <= 0) return onTimeout()
    try {
      await sleep(Math.min(intervalMs, left), undefined, signal ? { signal } : undefined)
    } catch (err) {
      if (signal && signal.aborted) throw aborted(what, signal)
      throw err
    }
  }
}

const TERMINAL = new Set(['Completed', 'Failed'])

/**
 * `waitForOrchestration(id, { signal })`: the status once terminal, `output`
 * parsed; ERR_NOT_FOUND at once for an instance neither stored nor queued.
 */
function waitForOrchestration(client, instanceId, o) {
  const timeoutMs = millis('timeoutMs', o.timeoutMs, 30000)
  const what = `waitForOrchestration('${instanceId}')`
  let first = true
  return poll({
    what,
    signal: o.signal,
    timeoutMs,
    intervalMs: millis('pollIntervalMs', o.pollIntervalMs, 50),
    probe: async () => {
      const s = await client.getStatus(instanceId)
      if (s.status === 'NotFound' && first) await stateOf(client, instanceId, what)
      first = false
      if (!TERMINAL.has(s.status)) return undefined
      if (s.output !== undefined) s.output = decode(s.output)
      return s
    },
    // The native wait with no time left tells a never-started id
    // (ERR_NOT_FOUND) from a start no runtime picked up (ERR_TIMEOUT).
    onTimeout: async () => {
      try {
        return await client.waitForOrchestration(instanceId, 0)
      } catch (err) {
        if (typeof err.message === 'string') err.message = err.message.replace('within 0 ms', `within ${timeoutMs} ms`)
        throw err
      }
    },
  })
}

/** `waitForStatusChange(id, lastSeen, { signal })`: like the native wait, also returns once terminal. */
function waitForStatusChange(client, instanceId, lastSeenVersion, o) {
  const timeoutMs = millis('timeoutMs', o.timeoutMs, 30000)
  return poll({
    what: `waitForStatusChange('${instanceId}')`,
    signal: o.signal,
    timeoutMs,
    intervalMs: Math.max(1, millis('pollIntervalMs', o.pollIntervalMs, 500)),
    probe: async () => {
      const s = await client.getStatus(instanceId)
      return s.customStatusVersion > lastSeenVersion || TERMINAL.has(s.status) ? s : undefined
    },
    onTimeout: () => {
      throw new TimeoutError(
        `custom status of '${instanceId}' did not change past version ${lastSeenVersion} within ${timeoutMs} ms`,
      )
    },
  })
}

/** `waitForValue(id, key, { signal })`: the stored string once `key` is set. */
function waitForValue(client, instanceId, key, o) {
  const timeoutMs = millis('timeoutMs', o.timeoutMs, 30000)
  return poll({
    what: `waitForValue('${instanceId}', '${key}')`,
    signal: o.signal,
    timeoutMs,
    intervalMs: millis('pollIntervalMs', o.pollIntervalMs, 50),
    probe: async () => (await client.getValue(instanceId, key)) ?? undefined,
    onTimeout: () => {
      throw new TimeoutError(`key '${key}' of instance '${instanceId}' was not set within ${timeoutMs} ms`)
    },
  })
}

module.exports = { waitOptions, isOptions, waitForOrchestration, waitForStatusChange, waitForValue, aborted }
