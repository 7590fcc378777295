'use strict'
// readExecutionHistory's `data`: the per-kind shapes of api.md, which
// existing applications JSON.parse and read field by field. Regression for
// double-encoded payloads (`JSON.parse(e.data).input` was a string holding
// JSON, and ActivityCompleted's data was `{"result":"..."}`).
const { describe, test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { backends, FAST, uniqueName, eventually } = require('./helpers')
const { startSuiteRuntime, stopSuiteRuntime } = require('./fixtures/store')

function register(rt) {
  rt.registerActivity('Shout', async (ctx, input) => ({ said: input.greeting.toUpperCase() }))
  rt.registerActivity('Explode', async () => {
    throw new Error('kaboom')
  })
  rt.registerOrchestration('Child', function* (ctx, n) {
    return n * 2
  })
  rt.registerOrchestration('Shapes', function* (ctx, input) {
    const shouted = yield ctx.scheduleActivity('Shout', input)
    yield ctx.scheduleTimer(1)
    const approval = yield ctx.waitForEvent('approve')
    const queued = yield ctx.dequeueEvent('inbox')
    const child = yield ctx.scheduleSubOrchestrationWithId('Child', `${ctx.instanceId}-child`, 21)
    try {
      yield ctx.scheduleActivity('Explode', null)
    } catch {}
    return { shouted, approval, queued, child }
  })
  rt.registerOrchestration('Fails', function* () {
    throw new Error('orchestration broke')
  })
}

const byKind = (events) => {
  const map = {}
  for (const e of events) (map[e.kind] ??= []).push(e.data === undefined ? undefined : JSON.parse(e.data))
  return map
}

for (const [kind, open] of backends) {
  describe(`readExecutionHistory data on ${kind}`, () => {
    let store, rt, client
    before(async () => ({ store, rt, client } = await startSuiteRuntime(open, register, FAST)))
    after(() => stopSuiteRuntime({ store, rt }))

    test('payloads are embedded as JSON values, not as JSON strings inside the data', async () => {
      const id = uniqueName(`${kind}-shapes`)
      await client.startOrchestration(id, 'Shapes', { greeting: 'hello' })
      // Raised once subscribed: an event raised before its subscription is dropped.
      await eventually(async () => (await client.readExecutionHistory(id, 1)).some((e) => e.kind === 'ExternalSubscribed'), {
        what: 'the approve subscription',
      })
      await client.raiseEvent(id, 'approve', { by: 'ann' })
      await client.enqueueEvent(id, 'inbox', [1, 2, 3])
      const done = await client.waitForOrchestration(id, 20000)
      assert.equal(done.status, 'Completed', JSON.stringify(done))

      const d = byKind(await client.readExecutionHistory(id, 1))
      assert.deepEqual(d.OrchestrationStarted, [{ name: 'Shapes', version: '1.0.0', input: { greeting: 'hello' } }])
      assert.deepEqual(d.ActivityScheduled, [
        { name: 'Shout', input: { greeting: 'hello' } },
        { name: 'Explode', input: null },
      ])
      assert.deepEqual(d.ActivityCompleted, [{ said: 'HELLO' }])
      assert.equal(d.ActivityFailed.length, 1)
      assert.match(JSON.stringify(d.ActivityFailed[0]), /kaboom/)
      assert.equal(typeof d.TimerCreated[0].fireAtMs, 'number')
      assert.deepEqual(d.TimerFired, d.TimerCreated)
      assert.deepEqual(d.ExternalSubscribed, [{ name: 'approve' }])
      assert.deepEqual(d.ExternalEvent, [{ name: 'approve', data: { by: 'ann' } }])
      assert.deepEqual(d.QueueSubscribed, [{ name: 'inbox' }])
      assert.deepEqual(d.QueueEventDelivered, [{ name: 'inbox', data: [1, 2, 3] }])
      assert.deepEqual(d.SubOrchestrationScheduled, [{ name: 'Child', instance: `${id}-child`, input: 21 }])
      assert.deepEqual(d.SubOrchestrationCompleted, [42])
      assert.deepEqual(d.OrchestrationCompleted, [
        { shouted: { said: 'HELLO' }, approval: { by: 'ann' }, queued: [1, 2, 3], child: 42 },
      ])
    })

    test('an orchestration failure carries the crate error details', async () => {
      const id = uniqueName(`${kind}-fails`)
      await client.startOrchestration(id, 'Fails', 'x')
      assert.equal((await client.waitForOrchestration(id, 20000)).status, 'Failed')
      const events = await client.readExecutionHistory(id, 1)
      const failed = events.at(-1)
      assert.equal(failed.kind, 'OrchestrationFailed')
      const details = JSON.parse(failed.data)
      assert.equal(details.Application.message, 'orchestration broke')
    })
  })
}
