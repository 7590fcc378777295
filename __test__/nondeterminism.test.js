'use strict'
// A turn whose code does not replay the instance's history. With
// onNondeterminism: 'hold' nothing of the turn is committed: the instance
// stays Running, the runtime emits a 'nondeterminism' event, logs a WARN and
// counts the hold, and retries with back-off until code that replays runs,
// which then finishes the instance. With 'fail' (the default) the instance
// fails. Either way the message is the replay check's sentence, not a debug
// dump of duroxide's actions. On SQLite and Postgres.
const { describe, test, before } = require('node:test')
const assert = require('node:assert/strict')
const { backends, startRuntime, eventually, uniqueName } = require('./helpers')
const { Client, initTracing, defineEvent } = require('..')

// WARN and above from every runtime of this file (its own process).
const logs = []
before(() => initTracing({ sink: (r) => logs.push(r), logLevel: 'warn' }))

const go = defineEvent('go')

/** The code the instances started with. */
function codeA(rt) {
  rt.registerActivity('Step', async (ctx, n) => n)
  rt.registerOrchestration('Flow', function* (ctx) {
    yield ctx.scheduleActivity('Step', 1)
    ctx.setCustomStatus('between')
    yield* ctx.waitFor(go)
    return 'done'
  })
}

/** A deploy that changed the past: a timer where the history has the activity. */
function codeB(rt) {
  rt.registerActivity('Step', async (ctx, n) => n)
  rt.registerOrchestration('Flow', function* (ctx) {
    yield ctx.scheduleTimer(5)
    ctx.setCustomStatus('between')
    yield* ctx.waitFor(go)
    return 'done'
  })
}

const SENTENCE = /^at event \d+ the history has activity 'Step' \(input 1\), but the code schedules a timer$/
const BACKOFF = { unregisteredBackoff: { baseDelayMs: 50, maxDelayMs: 200 } }

/** An instance of code A, waiting after its activity; the runtime is stopped. */
async function waitingInstance(t, store, client) {
  const id = uniqueName('flow')
  const rt = await startRuntime(t, store.provider, codeA)
  await client.startOrchestration(id, 'Flow', null)
  await eventually(async () => (await client.getStatus(id)).customStatus === 'between', { what: 'the instance waiting' })
  await rt.shutdown(1000)
  return id
}

for (const [backend, open] of backends) {
  describe(`nondeterminism on ${backend}`, () => {
    test("'hold' keeps the instance Running until code that replays it runs", async (t) => {
      const store = await open(t)
      const client = new Client(store.provider)
      const id = await waitingInstance(t, store, client)

      const events = []
      const b = await startRuntime(t, store.provider, (rt) => {
        rt.on('nondeterminism', (e) => events.push(e))
        codeB(rt)
      }, { ...BACKOFF, onNondeterminism: 'hold' })
      await client.raise(id, go, null)
      await eventually(() => events.length > 0 && b.metricsSnapshot().nondeterminismHolds >= 2, { what: 'two held turns' })
      assert.equal(events.length, 1, 'one event per instance and divergence')
      const e = events[0]
      assert.equal(e.type, 'nondeterminism')
      assert.equal(e.instanceId, id)
      assert.equal(e.held, true)
      assert.match(e.divergence, SENTENCE)
      assert.match(e.cause, /stays Running/)
      const m = b.metricsSnapshot()
      assert.deepEqual(m.heldInstances, [id])
      assert.equal(m.orchFailures, 0, 'a held turn is not a failure')
      assert.ok(b.metricsText().includes(`duroxide_node_instance_held{instance_id="${id}"} 1\n`))
      assert.ok(b.health().reasons.some((r) => r.includes(`'${id}' is held`) && SENTENCE.test(r.split(': ').pop())), JSON.stringify(b.health()))
      const warn = logs.filter((r) => r.level === 'warn' && r.message.includes(`instance '${id}' is held`))
      assert.equal(warn.length, 1, JSON.stringify(logs.map((r) => r.message)))
      assert.match(warn[0].message, /at event \d+ the history has activity 'Step' \(input 1\), but the code schedules a timer/)
      assert.ok(!logs.some((r) => r.message.includes('schedule mismatch') || (r.fields && JSON.stringify(r.fields).includes('schedule mismatch'))), 'no debug dump in the logs')
      const s = await client.getStatus(id)
      assert.equal(s.status, 'Running')
      assert.equal(s.customStatus, 'between')
      await b.shutdown(1000)

      // The previous code is deployed again: the held turn commits.
      const a = await startRuntime(t, store.provider, codeA, BACKOFF)
      const done = await client.waitForOrchestration(id, 30000)
      assert.equal(done.status, 'Completed', done.error)
      assert.equal(done.output, 'done')
      assert.deepEqual(a.metricsSnapshot().heldInstances, [])
    })

    test("'fail' (the default) fails the instance with the replay check's sentence", async (t) => {
      const store = await open(t)
      const client = new Client(store.provider)
      const id = await waitingInstance(t, store, client)
      const events = []
      await startRuntime(t, store.provider, (rt) => {
        rt.on('nondeterminism', (e) => events.push(e))
        codeB(rt)
      })
      await client.raise(id, go, null)
      const s = await client.waitForOrchestration(id, 30000)
      assert.equal(s.status, 'Failed')
      assert.equal(s.errorCategory, 'configuration')
      assert.match(s.error, /^nondeterministic: at event \d+ the history has activity 'Step' \(input 1\), but the code schedules a timer$/)
      assert.equal(events.length, 1)
      assert.equal(events[0].held, false)
      assert.match(events[0].divergence, SENTENCE)
      const failed = (await client.readExecutionHistory(id, 1)).find((ev) => ev.kind === 'OrchestrationFailed')
      assert.ok(!failed.data.includes('schedule mismatch'), failed.data)
      assert.ok(!logs.some((r) => r.message.includes('schedule mismatch')), 'no debug dump in the logs')
    })
  })
}
