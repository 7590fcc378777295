'use strict'
// Retry policies of scheduleActivityWithRetry, read from the instance's
// history (a backoff or a timeout is a durable timer there) and from the
// attempts the activity saw. These check order and outcome: which attempts
// ran, which timers separate them, what each timer was set to; never how long
// anything took. duroxide semantics: `timeoutMs` races each attempt against
// a timer, and a timed-out attempt ends the call (timeouts are not retried);
// `totalTimeoutMs` is the same per-attempt timeout under its legacy name.
const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { sqliteFile, FAST, uniqueName, scope, Client } = require('./helpers')
const { Runtime } = require('..')

/** Per key: the attempts the Flaky activity saw (one entry per call). */
const attempts = new Map()
let rt, client, cleanup

before(async () => {
  cleanup = scope()
  const db = await sqliteFile(cleanup, 'dxretry')
  rt = new Runtime(db.provider, { ...FAST, workerConcurrency: 2 })
  cleanup.after(() => rt.shutdown(1000))
  // Fails the first `failures` attempts, hangs on attempt `hangOn` (until
  // `hangMs` passes: long enough that only a timeout can end the call first).
  rt.registerActivity('Flaky', async (ctx, { key, failures = 0, hangOn = 0, hangMs = 15000 }) => {
    if (!attempts.has(key)) attempts.set(key, [])
    const seen = attempts.get(key)
    seen.push(seen.length + 1)
    if (seen.length === hangOn) {
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, hangMs)
        ctx.signal.addEventListener('abort', () => { clearTimeout(timer); resolve() }, { once: true })
      })
      return 'finished late'
    }
    if (seen.length <= failures) throw new Error(`attempt ${seen.length} failed`)
    return `ok on attempt ${seen.length}`
  })
  rt.registerOrchestration('Retry', function* (ctx, { input, retry }) {
    try {
      return { ok: yield ctx.scheduleActivityWithRetry('Flaky', input, retry) }
    } catch (err) {
      return { err: err.message }
    }
  })
  await rt.start()
  client = new Client(db.provider)
})
after(() => cleanup.close())

/** Runs Retry to completion; returns its output, the attempts and the history. */
async function runRetry(input, retry) {
  const key = uniqueName('retry')
  const instanceId = `${key}-instance`
  await client.startOrchestration(instanceId, 'Retry', { input: { ...input, key }, retry })
  const s = await client.waitForOrchestration(instanceId, 60000)
  assert.equal(s.status, 'Completed', s.error)
  const history = await client.readExecutionHistory(instanceId, 1)
  return { output: s.output, attempts: attempts.get(key) || [], history }
}

/** The activity/timer events of a history, in order: 'A' scheduled, 'F' failed, 'C' completed, 'T' timer fired. */
function shape(history) {
  const letters = { ActivityScheduled: 'A', ActivityFailed: 'F', ActivityCompleted: 'C', TimerFired: 'T' }
  return history.map((e) => letters[e.kind] || '').join('')
}

/** The delay each timer was created with: fireAtMs minus the creation event's stamp (at most the requested delay). */
function timerDelays(history) {
  return history.filter((e) => e.kind === 'TimerCreated').map((e) => JSON.parse(e.data).fireAtMs - e.timestampMs)
}

test('exponential backoff: each retry waits on a timer after the failure, and the delays grow by the multiplier', async () => {
  // Not the default policy (100 ms x 2), so a dropped backoff option shows.
  const backoff = { kind: 'exponential', baseMs: 60, multiplier: 3, maxMs: 10000 }
  const { output, attempts: seen, history } = await runRetry({ failures: 3 }, { maxAttempts: 4, backoff })
  assert.deepEqual(output, { ok: 'ok on attempt 4' })
  assert.equal(shape(history), 'AFTAFTAFTAC', 'failure, backoff timer, next attempt; four attempts')
  const nominal = [60, 180, 540]
  const delays = timerDelays(history)
  assert.equal(delays.length, 3)
  for (let k = 0; k < 3; k++) {
    assert.ok(delays[k] > 0 && delays[k] <= nominal[k], `timer ${k + 1} was set to ${delays[k]} ms, requested ${nominal[k]}`)
  }
  assert.equal(seen.length, 4, 'the activity ran four times')
  assert.ok(delays[0] < delays[1] && delays[1] < delays[2], `delays grow: ${delays}`)
})

test("backoff 'none' retries at once: no timer between attempts", async () => {
  const { output, history } = await runRetry({ failures: 2 }, { maxAttempts: 3, backoff: 'none' })
  assert.deepEqual(output, { ok: 'ok on attempt 3' })
  assert.equal(shape(history), 'AFAFAC')
  assert.deepEqual(timerDelays(history), [])
})

test('timeoutMs: an attempt that outlives it ends the call with a timeout error, and no further attempt runs', async () => {
  const { output, attempts: seen, history } = await runRetry({ hangOn: 1 }, { maxAttempts: 3, timeoutMs: 300, backoff: 'none' })
  assert.match(output.err, /timeout/i)
  assert.equal(seen.length, 1, 'the timed-out attempt was not retried')
  assert.equal(shape(history), 'AT', 'the attempt raced a timer, and the timer won')
  const [delay] = timerDelays(history)
  assert.ok(delay > 0 && delay <= 300, `the timeout timer was set to ${delay} ms`)
})

test('timeoutMs: attempts that fail before it are still retried, each with its own timeout timer', async () => {
  const { output, attempts: seen, history } = await runRetry({ failures: 2 }, { maxAttempts: 3, timeoutMs: 10000, backoff: 'none' })
  assert.deepEqual(output, { ok: 'ok on attempt 3' })
  assert.equal(seen.length, 3)
  assert.equal(shape(history), 'AFAFAC')
  assert.equal(timerDelays(history).length, 3, 'one timeout timer per attempt')
})

test('totalTimeoutMs is the per-attempt timeout: a hanging second attempt times out and stops the retries', async () => {
  const { output, attempts: seen, history } = await runRetry({ failures: 1, hangOn: 2 }, { maxAttempts: 4, totalTimeoutMs: 300, backoff: 'none' })
  assert.match(output.err, /timeout/i)
  assert.equal(seen.length, 2, 'attempt 1 failed and was retried; attempt 2 timed out; attempts 3 and 4 never ran')
  // Attempt 1's timer is not cancelled when it fails, so it may fire too;
  // what matters is that the activity events stop after the second schedule
  // and a timer fired last.
  assert.match(shape(history), /^AFT*AT+$/)
  const delays = timerDelays(history)
  assert.equal(delays.length, 2, 'each attempt got its own timer')
  for (const d of delays) assert.ok(d > 0 && d <= 300, `timeout timer set to ${d} ms`)
})
