'use strict'
// The guard's lock hygiene on real Postgres (issue 5, items 2 and 3).
//
// When every ack of a turn fails, duroxide's dispatcher builds an abandon and
// drops it unpolled, so without the guard the instance stays locked until its
// lease expires. A trigger on the schema's history table makes the acks of one
// instance fail (history rows are written by every ack): with a 60 s lease, a
// re-fetch within seconds proves the guard handed the lock back.
const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { pgSchema, startRuntime, eventually, uniqueName, Client } = require('./helpers')
const sql = require('./fixtures/guard-sql')

let pg
before(async () => {
  pg = await pgSchema(null, 'dxguardlk')
})
after(() => pg.drop())

function register(rt) {
  rt.registerActivity('Echo', async (ctx, x) => x)
  rt.registerOrchestration('Once', function* (ctx, input) {
    return yield ctx.scheduleActivity('Echo', input)
  })
}

const LONG_LEASE = { orchestratorLockTimeoutMs: 60000, maxAttempts: 50, watchdogIntervalMs: 0 }

test('a turn whose acks all fail is retried at once, not after its 60 s lease', async (t) => {
  const id = uniqueName('victim')
  const restore = sql.failAcksOf(pg.schema, id, 'P0001')
  t.after(restore)
  const rt = await startRuntime(t, pg.provider, register, LONG_LEASE)
  const client = new Client(pg.provider)
  await client.startOrchestration(id, 'Once', 'x')

  // Attempt 2 needs the first lock released: the lease alone would take 60 s.
  await eventually(() => sql.attemptsOf(pg.schema, id) >= 2, { timeoutMs: 20000, what: 'a second attempt before lease expiry' })
  assert.ok(rt.metricsSnapshot().orphanedLocksReleased >= 1, 'the guard released the dropped lock')

  restore()
  const done = await client.waitForOrchestration(id, 30000)
  assert.equal(done.status, 'Completed')
  assert.equal(done.output, 'x')
})

test('deadlocks reported by Postgres (40P01) are counted and make health degraded', async (t) => {
  const id = uniqueName('deadlocked')
  const rt = await startRuntime(t, pg.provider, register, LONG_LEASE)
  assert.deepEqual(rt.health(), { status: 'ok', reasons: [] })
  const restore = sql.failAcksOf(pg.schema, id, '40P01')
  t.after(restore)
  const client = new Client(pg.provider)
  await client.startOrchestration(id, 'Once', 'y')

  const m = await eventually(() => {
    const s = rt.metricsSnapshot()
    return s.deadlockRetries >= 1 && s
  }, { what: 'a counted deadlock' })
  const health = rt.health()
  assert.equal(health.status, 'degraded')
  assert.ok(health.reasons.some((r) => /deadlock \(40P01\)/.test(r)), health.reasons.join('; '))

  restore()
  const done = await client.waitForOrchestration(id, 40000)
  assert.equal(done.status, 'Completed')
})

test('metricsSnapshot keeps the crate counters and adds the guard fields', async (t) => {
  const rt = await startRuntime(t, pg.provider, register, { watchdogIntervalMs: 0 })
  const client = new Client(pg.provider)
  const id = uniqueName('plain')
  await client.startOrchestration(id, 'Once', 1)
  await client.waitForOrchestration(id, 20000)
  const m = rt.metricsSnapshot()
  for (const k of ['orchStarts', 'orchCompletions', 'providerErrors', 'invalidLockTokenAcks', 'poisonDispositions',
    'deadlockRetries', 'orphanedLocksReleased', 'livelocksDetected', 'orchFetchSamples', 'workFetchSamples']) {
    assert.equal(typeof m[k], 'number', k)
  }
  assert.equal(m.orchCompletions, 1)
  // Every store fetch is a sample, empty polls included, so only a floor is known.
  assert.ok(m.orchFetchSamples >= 2, 'the start and the activity completion were each fetched')
  assert.ok(m.orchFetchP99Ms >= m.orchFetchP50Ms && m.orchFetchP50Ms >= 0)
  assert.equal(typeof m.orchFetchWaitP99Ms, 'number')
  assert.equal(m.invalidLockTokenAcks, 0)
})
