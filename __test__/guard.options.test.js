'use strict'
// Lease validation (issue 5, item 5) and the guard's own options, against a
// real Postgres provider: an unrenewable lease is refused with a message that
// says why, unless the caller opts in with allowUnrenewableLocks.
const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { pgSchema, sqliteFile } = require('./helpers')
const { Runtime } = require('..')

let pg
before(async () => {
  pg = await pgSchema(null, 'dxguardop')
})
after(() => pg.drop())

function rejects(options, ...patterns) {
  assert.throws(
    () => new Runtime(pg.provider, options),
    (err) => {
      assert.equal(err.code, 'ERR_INVALID_OPTION')
      for (const p of patterns) assert.match(err.message, p)
      return true
    },
  )
}

test('a lock timeout under 2 s is refused, explaining that renewal cannot keep up', () => {
  rejects(
    { orchestratorLockTimeoutMs: 1500 },
    /orchestratorLockTimeoutMs must be >= 2000/,
    /got 1500/,
    /renews a lock every ceil\(timeout_s \/ 2\) seconds, at least 1 s apart/,
    /expires before .* its first renewal/,
    /allowUnrenewableLocks/,
  )
  rejects({ workerLockTimeoutMs: 900 }, /workerLockTimeoutMs must be >= 2000/, /got 900/, /ceil\(timeout_s \/ 2\)/)
  rejects({ sessionLockTimeoutMs: 1999, sessionIdleTimeoutMs: 300000 }, /sessionLockTimeoutMs must be >= 2000/)
})

test('an explicit renewal buffer not smaller than a timeout of 15 s or more is refused, naming both values', () => {
  rejects(
    { orchestratorLockTimeoutMs: 20000, orchestratorLockRenewalBufferMs: 20000 },
    /orchestratorLockRenewalBufferMs must be smaller than orchestratorLockTimeoutMs/,
    /orchestratorLockRenewalBufferMs 20000 with orchestratorLockTimeoutMs 20000/,
    /renews at timeout - buffer/,
  )
})

// Regression: short leases with the default buffer were refused, breaking
// existing fleets and tests; duroxide ignores the buffer under 15 s.
test('short leases with the default renewal buffer are accepted and renew at half the timeout', () => {
  for (const [options, expected] of [
    [{ workerLockTimeoutMs: 2000 }, { worker: 1000 }],
    [{ workerLockTimeoutMs: 3000 }, { worker: 2000 }],
    [{ orchestratorLockTimeoutMs: 2500 }, { orchestrator: 2000 }],
    [{ orchestratorLockTimeoutMs: 4000, orchestratorLockRenewalBufferMs: 4000 }, { orchestrator: 2000 }],
    [{ workerLockTimeoutMs: 20000, workerLockRenewalBufferMs: 4000 }, { worker: 16000 }],
  ]) {
    const eff = new Runtime(pg.provider, options).effectiveOptions()
    for (const [kind, ms] of Object.entries(expected)) assert.equal(eff.lockRenewalIntervalsMs[kind], ms, JSON.stringify(options))
  }
})

test('allowUnrenewableLocks: true lets tests choose leases that expire', async () => {
  const rt = new Runtime(pg.provider, {
    allowUnrenewableLocks: true,
    orchestratorLockTimeoutMs: 500,
    orchestratorLockRenewalBufferMs: 500,
    watchdogIntervalMs: 0,
  })
  const eff = rt.effectiveOptions()
  assert.equal(eff.orchestratorLockTimeoutMs, 500)
  assert.equal(eff.allowUnrenewableLocks, true)
  await rt.start()
  assert.equal(rt.health().status, 'ok')
  await rt.shutdown(0)
})

test('guard options are validated and reported', () => {
  rejects({ maxConcurrentOrchestrationFetches: 0 }, /maxConcurrentOrchestrationFetches/, /0/)
  rejects({ maxConcurrentWorkFetches: -1 }, /maxConcurrentWorkFetches/)
  rejects({ watchdogIntervalMs: 1.5 }, /watchdogIntervalMs/)
  const eff = new Runtime(pg.provider).effectiveOptions()
  assert.equal(eff.maxConcurrentOrchestrationFetches, 1)
  assert.equal(eff.maxConcurrentWorkFetches, 0)
  assert.equal(eff.watchdogIntervalMs, 10000)
})

// Regression: with the Postgres default of one orchestration fetch at a time,
// SQLite dispatchers queued behind each other's slow fetches and 200 hello
// orchestrations took 1.6x as long as on the crate alone (bench/run.js hello).
test('SQLite runtimes do not cap orchestration fetches unless asked (the cap made SQLite hello 1.6x slower)', async () => {
  const sqlite = await sqliteFile(null, 'dxguardop')
  try {
    assert.equal(new Runtime(sqlite.provider).effectiveOptions().maxConcurrentOrchestrationFetches, 2)
    const eff = new Runtime(sqlite.provider, { orchestrationConcurrency: 4 }).effectiveOptions()
    assert.equal(eff.maxConcurrentOrchestrationFetches, 4, 'one fetch slot per dispatcher')
    const set = new Runtime(sqlite.provider, { orchestrationConcurrency: 4, maxConcurrentOrchestrationFetches: 1 })
    assert.equal(set.effectiveOptions().maxConcurrentOrchestrationFetches, 1, 'an explicit cap is kept')
    assert.equal(new Runtime(pg.provider, { orchestrationConcurrency: 4 }).effectiveOptions().maxConcurrentOrchestrationFetches, 1)
  } finally {
    sqlite.remove()
  }
})

test('health() says why a runtime that is not running is not ok', async () => {
  const rt = new Runtime(pg.provider, { watchdogIntervalMs: 0 })
  assert.deepEqual(rt.health(), { status: 'degraded', reasons: ['the runtime is not running (not started, or shut down)'] })
  await rt.start()
  assert.deepEqual(rt.health(), { status: 'ok', reasons: [] })
  await rt.shutdown(0)
  assert.equal(rt.health().status, 'degraded')
})
