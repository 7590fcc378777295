'use strict'
// NonRetryableError: a retry policy stops at it. Read from the attempts the
// activity saw and the instance's history (each attempt is an
// ActivityScheduled event there); a plain Error under the same policy is
// retried to maxAttempts.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const { sqliteFile, clientWithRuntime, uniqueName } = require('./helpers')
const { NonRetryableError } = require('..')

const attempts = new Map()

function register(rt) {
  rt.registerActivity('Pay', async (ctx, { key, final }) => {
    attempts.set(key, (attempts.get(key) ?? 0) + 1)
    if (final) throw new NonRetryableError('card reported stolen', { details: { code: 'STOLEN', key } })
    throw new Error('gateway busy')
  })
  rt.registerOrchestration('PayWithRetry', function* (ctx, input) {
    try {
      return yield ctx.scheduleActivityWithRetry('Pay', input, { maxAttempts: 4, backoff: 'none' })
    } catch (e) {
      return { name: e.constructor.name, message: e.message, errorName: e.errorName, nonRetryable: e.nonRetryable, details: e.details }
    }
  })
  rt.registerOrchestration('PayWithRetryOnSession', function* (ctx, input) {
    try {
      return yield ctx.scheduleActivityWithRetryOnSession('Pay', input, { maxAttempts: 4, backoff: 'none' }, 's1')
    } catch (e) {
      return { message: e.message, nonRetryable: e.nonRetryable }
    }
  })
}

async function run(client, orchestration, final) {
  const key = uniqueName('pay')
  await client.startOrchestration(key, orchestration, { key, final })
  const s = await client.waitForOrchestration(key, 30000)
  assert.equal(s.status, 'Completed', s.error)
  const history = await client.readExecutionHistory(key, 1)
  const scheduled = history.filter((h) => h.kind === 'ActivityScheduled').length
  return { output: s.output, attempts: attempts.get(key), scheduled }
}

test('a retry policy stops at a NonRetryableError and retries a plain Error', async (t) => {
  const client = await clientWithRuntime(t, sqliteFile, register)
  const final = await run(client, 'PayWithRetry', true)
  assert.equal(final.attempts, 1, 'one attempt, no retries')
  assert.equal(final.scheduled, 1)
  assert.deepEqual(final.output, {
    name: 'ActivityFailedError',
    message: 'card reported stolen',
    errorName: 'NonRetryableError',
    nonRetryable: true,
    details: { code: 'STOLEN', key: final.output.details.key },
  })

  const busy = await run(client, 'PayWithRetry', false)
  assert.equal(busy.attempts, 4, 'a plain Error is retried to maxAttempts')
  assert.equal(busy.scheduled, 4)
  assert.equal(busy.output.message, 'gateway busy')
  assert.equal(busy.output.nonRetryable, false)
})

test('the session form of the retry stops at a NonRetryableError too', async (t) => {
  const client = await clientWithRuntime(t, sqliteFile, register)
  const final = await run(client, 'PayWithRetryOnSession', true)
  assert.equal(final.attempts, 1)
  assert.deepEqual(final.output, { message: 'card reported stolen', nonRetryable: true })
})

test('NonRetryableError is an Error with nonRetryable and details', () => {
  const e = new NonRetryableError('no', { details: { a: 1 }, cause: 'c' })
  assert.ok(e instanceof Error)
  assert.equal(e.name, 'NonRetryableError')
  assert.equal(e.nonRetryable, true)
  assert.deepEqual(e.details, { a: 1 })
  assert.equal(e.cause, 'c')
})
