'use strict'
// Guard events and counters (issue 5, items 3 and 4): lockLost, poison and
// livelock reach the application with the instance id, on real Postgres and a
// real SQLite file; the livelock also produces an error-level log line.
const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { fork } = require('node:child_process')
const { pgSchema, sqliteFile, startRuntime, eventually, uniqueName, Client } = require('./helpers')
const sql = require('./fixtures/guard-sql')

let pg
before(async () => {
  pg = await pgSchema(null, 'dxguardev')
})
after(() => pg.drop())

/** Every turn of 'Slow' outlives a 500 ms lease, which cannot be renewed in time. */
const SHORT_LEASE = {
  allowUnrenewableLocks: true,
  orchestratorLockTimeoutMs: 500,
  orchestratorLockRenewalBufferMs: 100,
  orchestrationConcurrency: 1,
}

function registerSlow(turnMs) {
  return (rt) =>
    rt.registerOrchestration('Slow', function* () {
      sql.blockFor(turnMs)
      return 'late'
    })
}

function collect(rt, types) {
  const got = []
  for (const type of types) rt.on(type, (e) => got.push(e))
  return got
}

test('a turn slower than its lease: one lockLost, then poison, each naming the instance', async (t) => {
  const rt = await startRuntime(t, pg.provider, registerSlow(1500), { ...SHORT_LEASE, maxAttempts: 2, watchdogIntervalMs: 0 })
  const got = collect(rt, ['lockLost', 'poison', 'livelock'])
  const id = uniqueName('slow')
  const client = new Client(pg.provider)
  await client.startOrchestration(id, 'Slow', null)

  const poison = await eventually(() => got.find((e) => e.type === 'poison'), { timeoutMs: 30000, what: 'a poison event' })
  assert.equal(poison.instanceId, id)
  assert.equal(poison.queue, 'orchestrator')
  assert.equal(poison.attemptCount, 3)
  assert.equal(poison.maxAttempts, 2)

  const lost = got.filter((e) => e.type === 'lockLost')
  assert.equal(lost.length, 1, 'lockLost is reported once per instance, though both turns lost the lock')
  assert.equal(lost[0].instanceId, id)
  assert.equal(lost[0].attemptCount, 1)
  assert.match(lost[0].cause, /orchestratorLockTimeoutMs/)

  const m = rt.metricsSnapshot()
  assert.equal(m.invalidLockTokenAcks, 2)
  assert.equal(m.poisonDispositions, 1)
  assert.equal(m.orchPoison, 1)
  const health = rt.health()
  assert.equal(health.status, 'degraded')
  assert.ok(health.reasons.some((r) => r.includes("'Invalid lock token'")), health.reasons.join('; '))
  assert.ok(health.reasons.some((r) => r.includes('poison')), health.reasons.join('; '))

  const status = await client.waitForOrchestration(id, 10000)
  assert.equal(status.status, 'Failed')
})

test('livelock on Postgres: the application gets the instance id once, and an error line names it', async (t) => {
  const id = uniqueName('livelocked')
  t.after(sql.failAcksOf(pg.schema, id))
  const child = fork(path.join(__dirname, 'fixtures', 'guard-livelock.js'), [pg.url, pg.schema, id], {
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  })
  let stderr = ''
  child.stderr.on('data', (d) => (stderr += d))
  const exited = new Promise((resolve) => child.on('exit', resolve))
  t.after(() => child.kill())
  const events = []
  let report = null
  child.on('message', (m) => {
    if (m.kind === 'event') events.push(m.event)
    if (m.kind === 'report') report = m
  })

  const livelock = await eventually(() => events.find((e) => e.type === 'livelock'), {
    timeoutMs: 30000,
    what: `a livelock event (child stderr: ${stderr.slice(-2000)})`,
  })
  assert.equal(livelock.instanceId, id)
  assert.equal(livelock.queue, 'orchestrator')
  assert.equal(livelock.maxAttempts, 1)
  assert.ok(livelock.attemptCount > 2, `attempt ${livelock.attemptCount} exceeds maxAttempts + 1`)
  assert.match(livelock.cause, /maxAttempts \+ 1/)

  // The signature persists over more attempts and watchdog passes: still one event.
  await eventually(() => sql.attemptsOf(pg.schema, id) >= livelock.attemptCount + 2, { what: 'two more attempts' })
  child.send('report')
  await eventually(() => report, { what: 'a report' })
  assert.equal(events.filter((e) => e.type === 'livelock').length, 1)
  assert.equal(events.filter((e) => e.type === 'poison').length, 0, 'the poison ack never committed')
  assert.equal(report.metrics.livelocksDetected, 1)
  assert.equal(report.health.status, 'degraded')
  assert.ok(report.health.reasons.some((r) => r.includes(`'${id}' is livelocked`)), report.health.reasons.join('; '))

  child.send('stop')
  assert.equal(await exited, 0)
  const line = stderr.split('\n').find((l) => l.includes('ERROR') && l.includes(`livelock: instance '${id}'`))
  assert.ok(line, `an error-level line names the instance; stderr:\n${stderr.slice(-3000)}`)
  assert.match(line, /attempt \d+/)
  assert.match(line, /likely cause/)
  assert.ok(sql.attemptsOf(pg.schema, id) > 0, 'the watchdog left the queue rows in place')
})

test('livelock on SQLite: repeated lock losses on one instance, from in-process counters', async (t) => {
  const db = await sqliteFile(t, 'dxguardev')
  const rt = await startRuntime(t, db.provider, registerSlow(900), { ...SHORT_LEASE, maxAttempts: 10, watchdogIntervalMs: 100 })
  const got = collect(rt, ['livelock'])
  const id = uniqueName('sqlite-slow')
  await new Client(db.provider).startOrchestration(id, 'Slow', null)

  const livelock = await eventually(() => got[0], { timeoutMs: 30000, what: 'a livelock event' })
  assert.equal(livelock.instanceId, id)
  assert.ok(livelock.attemptCount >= 3, `attempt ${livelock.attemptCount}`)
  assert.match(livelock.cause, /Invalid lock token/)
  assert.equal(rt.metricsSnapshot().livelocksDetected, 1)
  assert.ok(rt.metricsSnapshot().invalidLockTokenAcks >= 3)
})

test('on() and off() check their arguments, and a removed listener is not called', async (t) => {
  const db = await sqliteFile(t, 'dxguardev')
  const rt = await startRuntime(t, db.provider, registerSlow(700), { ...SHORT_LEASE, watchdogIntervalMs: 0 })
  assert.throws(() => rt.on('lockLose', () => {}), (e) => e.code === 'ERR_INVALID_ARGUMENT' && /lockLose/.test(e.message))
  assert.throws(() => rt.on('poison', 'nope'), (e) => e.code === 'ERR_INVALID_ARGUMENT' && /listener/.test(e.message))
  assert.throws(() => rt.off('nope', () => {}), (e) => e.code === 'ERR_INVALID_ARGUMENT')
  const removed = []
  const kept = []
  const listener = (e) => removed.push(e)
  assert.equal(rt.on('lockLost', listener), rt)
  rt.on('lockLost', () => {
    throw new Error('a listener that throws does not stop the others')
  })
  rt.on('lockLost', (e) => kept.push(e))
  rt.off('lockLost', listener)
  await new Client(db.provider).startOrchestration(uniqueName('offed'), 'Slow', null)
  await eventually(() => kept.length === 1, { timeoutMs: 20000, what: 'a lockLost event' })
  assert.equal(removed.length, 0)
})

// Regression: the activity that lost a race finished after its orchestration
// had removed its row, and the guard reported that expected ack failure as a
// lost lock (a WARN line and a lockLost event per race).
test('the late ack of a cancelled race loser is not a lost lock', async (t) => {
  const store = await sqliteFile(t)
  let finished = 0
  // The loser returns once the orchestration completed, so its ack always
  // meets the removed row (a fixed delay let a loaded machine ack it first).
  let release
  const released = new Promise((r) => (release = r))
  const rt = await startRuntime(t, store.provider, (rt) => {
    rt.registerActivity('Slow', async () => {
      await released
      finished += 1
      return 'too late'
    })
    rt.registerOrchestration('Race', function* (ctx) {
      return yield ctx.race(ctx.scheduleActivity('Slow'), ctx.scheduleTimer(10))
    })
  })
  const got = collect(rt, ['lockLost'])
  const client = new Client(store.provider)
  const id = uniqueName('race')
  await client.startOrchestration(id, 'Race')
  try {
    assert.deepEqual((await client.waitForOrchestration(id, 20000)).output, { index: 1, value: null })
  } finally {
    release()
  }
  // duroxide counts the refused ack of the finished loser as an infrastructure error.
  await eventually(() => finished === 1 && rt.metricsSnapshot().activityInfraErrors === 1, {
    what: 'the loser to finish and its ack to be refused',
  })
  assert.equal(rt.metricsSnapshot().workLockLostAcks, 0)
  assert.deepEqual(got, [])
})
