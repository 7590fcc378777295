'use strict'
// Large fan-outs and deep backlogs come out exact (issue 46): every result
// in its place, every activity run once, the history holding exactly the
// events the work implies, every waiting instance raised once and completed
// with its own event. The code under test: the in-order join of an `all` of
// activities (src/bridge/tasks.rs), the remembered activity descriptors
// (src/providers/descriptors.rs), and the SQLite fetch that looks at the
// front of the queue first (src/providers/sqlite_direct/turn_fetch.rs).
// Nothing here is timed; the bench measures (npm run bench -- fanout 20000).
const { test } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { SqliteProvider, Client } = require('..')
const { pgSchema, startRuntime, eventually, onCleanup } = require('./helpers')

const FANOUT = 1500
const BACKLOG = 300
// Children one turn starts: their starts share one visible_at, which the
// Postgres turn fetch must not read whole at each fetch (fetch_turn.sql v2).
const CHILDREN = 300
/**
 * More than the 64 messages the SQLite turn fetch, and the 64 activities the
 * Postgres worker fetch, look at first.
 */
const HIDDEN_FRONT = 80

async function sqliteStore(t, options) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dxt-scale-'))
  const provider = await SqliteProvider.open(`sqlite:${path.join(dir, 'test.db')}`, options)
  onCleanup(t, () => fs.rmSync(dir, { recursive: true, force: true }))
  return { provider }
}

const stores = [
  ['sqlite', (t) => sqliteStore(t)],
  ['sqlite with fastPaths: false', (t) => sqliteStore(t, { fastPaths: false })],
  ['postgres', (t) => pgSchema(t, 'dxt_scale')],
]

const kinds = (history) => {
  const counts = {}
  for (const e of history) counts[e.kind] = (counts[e.kind] || 0) + 1
  return counts
}

for (const [name, open] of stores) {
  test(`a fan-out of ${FANOUT} activities joined by ctx.all is exact (${name})`, async (t) => {
    const store = await open(t)
    const ran = new Map()
    await startRuntime(
      t,
      store.provider,
      (rt) => {
        rt.registerActivity('Square', async (ctx, i) => {
          ran.set(i, (ran.get(i) || 0) + 1)
          // Completions arrive out of order.
          if (i % 7 === 0) await new Promise((r) => setTimeout(r, (i * 13) % 5))
          return i * i
        })
        // Activities no worker here takes, at the front of the worker queue:
        // the worker fetch finds nothing among its first rows and reads on.
        rt.registerOrchestration('Elsewhere', function* (ctx, n) {
          return yield ctx.all(Array.from({ length: n }, (_, i) => ctx.scheduleActivity('Square', i).withTag('elsewhere')))
        })
        rt.registerOrchestration('Fan', function* (ctx, n) {
          const first = yield ctx.all(Array.from({ length: n }, (_, i) => ctx.scheduleActivity('Square', i)))
          // A second join, of an activity and a timer: duroxide's own join.
          const [last] = yield ctx.all([ctx.scheduleActivity('Square', n), ctx.scheduleTimer(1)])
          return { first: first.map((r) => r.ok), last: last.ok, failed: first.filter((r) => !('ok' in r)).length }
        })
      },
      { orchestrationConcurrency: 2, workerConcurrency: 8 },
    )
    const client = new Client(store.provider)
    await client.startOrchestration('elsewhere-1', 'Elsewhere', HIDDEN_FRONT)
    await eventually(async () => kinds(await client.readExecutionHistory('elsewhere-1', 1)).ActivityScheduled === HIDDEN_FRONT, {
      what: 'the activities no worker takes',
    })
    await client.startOrchestration('fan-1', 'Fan', FANOUT)
    const s = await client.waitForOrchestration('fan-1', 120000)
    assert.equal(s.status, 'Completed', JSON.stringify(s).slice(0, 500))
    assert.deepEqual(s.output.first, Array.from({ length: FANOUT }, (_, i) => i * i))
    assert.equal(s.output.last, FANOUT * FANOUT)
    assert.equal(s.output.failed, 0)
    assert.equal(ran.size, FANOUT + 1)
    assert.deepEqual([...ran.values()].filter((c) => c !== 1), [], 'every activity ran once')
    const history = await client.readExecutionHistory('fan-1', 1)
    assert.deepEqual(kinds(history), {
      OrchestrationStarted: 1,
      ActivityScheduled: FANOUT + 1,
      ActivityCompleted: FANOUT + 1,
      TimerCreated: 1,
      TimerFired: 1,
      OrchestrationCompleted: 1,
    })
    // Each completion answers its own schedule.
    const scheduled = new Map(history.filter((e) => e.kind === 'ActivityScheduled').map((e) => [e.eventId, JSON.parse(e.data).input]))
    for (const e of history.filter((e) => e.kind === 'ActivityCompleted')) {
      const input = scheduled.get(e.sourceEventId)
      assert.equal(JSON.parse(e.data), input * input)
      scheduled.delete(e.sourceEventId)
    }
    assert.equal(scheduled.size, 0)
    assert.equal((await client.getStatus('elsewhere-1')).status, 'Running')
  })

  test(`a backlog of ${BACKLOG} waiting instances, each raised once, completes exactly (${name})`, async (t) => {
    const store = await open(t)
    const turns = new Map()
    await startRuntime(
      t,
      store.provider,
      (rt) => {
        rt.registerOrchestration('Sleepy', function* (ctx) {
          return yield ctx.scheduleTimer(3_600_000)
        })
        rt.registerOrchestration('Wait', function* (ctx) {
          const id = ctx.instanceId
          turns.set(id, (turns.get(id) || 0) + 1)
          return yield ctx.waitForEvent('go')
        })
      },
      { orchestrationConcurrency: 4, workerConcurrency: 1, orchestrationCacheSize: 0 },
    )
    const client = new Client(store.provider)
    // Timers due in an hour at the front of the queue: the fetch finds
    // nothing it may take among its first messages and reads the rest.
    for (let i = 0; i < HIDDEN_FRONT; i++) await client.startOrchestration(`sleepy-${i}`, 'Sleepy', null)
    for (let i = 0; i < HIDDEN_FRONT; i++) {
      await eventually(async () => kinds(await client.readExecutionHistory(`sleepy-${i}`, 1)).TimerCreated === 1, { what: `sleepy-${i}'s timer` })
    }
    for (let i = 0; i < BACKLOG; i++) await client.startOrchestration(`wait-${i}`, 'Wait', null)
    for (let i = 0; i < BACKLOG; i++) {
      await eventually(async () => kinds(await client.readExecutionHistory(`wait-${i}`, 1)).ExternalSubscribed === 1, {
        what: `wait-${i}'s subscription`,
        timeoutMs: 60000,
      })
    }
    for (let i = 0; i < BACKLOG; i++) await client.raiseEvent(`wait-${i}`, 'go', { i })
    for (let i = 0; i < BACKLOG; i++) {
      const s = await client.waitForOrchestration(`wait-${i}`, 60000)
      assert.equal(s.status, 'Completed', `wait-${i}: ${JSON.stringify(s).slice(0, 300)}`)
      assert.deepEqual(s.output, { i })
      assert.deepEqual(kinds(await client.readExecutionHistory(`wait-${i}`, 1)), {
        OrchestrationStarted: 1,
        ExternalSubscribed: 1,
        ExternalEvent: 1,
        OrchestrationCompleted: 1,
      })
      // Without a generator cache each turn runs the generator once: two turns.
      assert.equal(turns.get(`wait-${i}`), 2, `wait-${i} ran its turns once each`)
    }
    for (let i = 0; i < HIDDEN_FRONT; i++) assert.equal((await client.getStatus(`sleepy-${i}`)).status, 'Running')
  })

  test(`a fan-out of ${CHILDREN} sub-orchestrations started in one turn is exact (${name})`, async (t) => {
    const store = await open(t)
    const ran = new Map()
    await startRuntime(
      t,
      store.provider,
      (rt) => {
        rt.registerOrchestration('Child', function* (ctx, i) {
          ran.set(ctx.instanceId, (ran.get(ctx.instanceId) || 0) + 1)
          return i * 2
        })
        rt.registerOrchestration('Parent', function* (ctx, n) {
          return yield ctx.all(Array.from({ length: n }, (_, i) => ctx.scheduleSubOrchestration('Child', i)))
        })
      },
      { orchestrationConcurrency: 4, workerConcurrency: 1 },
    )
    const client = new Client(store.provider)
    await client.startOrchestration('parent-1', 'Parent', CHILDREN)
    const s = await client.waitForOrchestration('parent-1', 120000)
    assert.equal(s.status, 'Completed', JSON.stringify(s).slice(0, 500))
    assert.deepEqual(
      s.output.map((r) => r.ok),
      Array.from({ length: CHILDREN }, (_, i) => i * 2),
    )
    assert.equal(ran.size, CHILDREN)
    assert.deepEqual([...ran.values()].filter((c) => c !== 1), [], 'every child ran its one turn once')
    assert.deepEqual(kinds(await client.readExecutionHistory('parent-1', 1)), {
      OrchestrationStarted: 1,
      SubOrchestrationScheduled: CHILDREN,
      SubOrchestrationCompleted: CHILDREN,
      OrchestrationCompleted: 1,
    })
  })
}
