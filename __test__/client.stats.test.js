'use strict'
// Client stats (getSystemMetrics, getQueueDepths, getOrchestrationStats) on a
// SQLite file and on Postgres. Each backend starts empty, so counts are exact.
const { describe, test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { backends, startRuntime, eventually, Client, scope } = require('./helpers')

const METRICS_KEYS = ['completedInstances', 'failedInstances', 'runningInstances', 'totalEvents', 'totalExecutions', 'totalInstances']
const DEPTH_KEYS = ['orchestratorQueue', 'timerQueue', 'workerQueue']
const STATS_KEYS = ['historyEventCount', 'historySizeBytes', 'kvTotalValueBytes', 'kvUserKeyCount', 'queuePendingCount']

function register(rt) {
  rt.registerActivity('Echo', async (ctx, x) => x)
  rt.registerOrchestration('Done', function* (ctx, x) {
    return yield ctx.scheduleActivity('Echo', x)
  })
  rt.registerOrchestration('Fail', function* () {
    throw new Error('boom')
  })
  rt.registerOrchestration('Holder', function* (ctx) {
    ctx.setValue('ab', 'ab')
    ctx.setValue('cde', 'cde')
    return yield ctx.waitForEvent('never')
  })
  // No worker serves the 'gpu' tag, so this activity stays in the worker queue.
  rt.registerOrchestration('Stuck', function* (ctx) {
    return yield ctx.scheduleActivity('Echo', 'x').withTag('gpu')
  })
  // Execution 1 waits while queue messages arrive, then continues as new
  // without dequeuing them: they are carried into execution 2.
  rt.registerOrchestration('Carrier', function* (ctx, n) {
    if (n === 0) {
      yield ctx.waitForEvent('go')
      return yield ctx.continueAsNew(1)
    }
    return yield ctx.waitForEvent('never')
  })
}

for (const [kind, open] of backends) {
  describe(`client stats on ${kind}`, () => {
    let client
    let provider
    const t = scope()
    after(() => t.close())

    before(async () => {
      const store = await open(t)
      provider = store.provider
      client = new Client(provider)
    })

    test('an empty store reports zeros in the documented shape', async () => {
      const m = await client.getSystemMetrics()
      assert.deepEqual(Object.keys(m).sort(), METRICS_KEYS)
      for (const k of METRICS_KEYS) assert.equal(m[k], 0, k)
      const q = await client.getQueueDepths()
      assert.deepEqual(q, { orchestratorQueue: 0, workerQueue: 0, timerQueue: 0 })
    })

    test('starts wait in the orchestrator queue until a runtime takes them', async () => {
      await client.startOrchestration('done-1', 'Done', 'a')
      await client.startOrchestration('done-2', 'Done', 'b')
      await client.startOrchestration('fail-1', 'Fail', null)
      const q = await client.getQueueDepths()
      assert.deepEqual(Object.keys(q).sort(), DEPTH_KEYS)
      assert.equal(q.orchestratorQueue, 3)
      assert.equal(q.workerQueue, 0)
      assert.equal(q.timerQueue, 0, 'both stores keep timers in the orchestrator queue')
      // Not an instance until a runtime ran its first turn.
      assert.equal((await client.getSystemMetrics()).totalInstances, 0)
      assert.equal(await client.getOrchestrationStats('done-1'), null)
    })

    test('getSystemMetrics counts instances, executions and events', async () => {
      await startRuntime(t, provider, register)
      for (const id of ['done-1', 'done-2', 'fail-1']) await client.waitForOrchestration(id, 20000)
      await client.startOrchestration('holder-1', 'Holder', null)
      await eventually(async () => (await client.getStatus('holder-1')).status === 'Running', { what: 'holder running' })

      const m = await client.getSystemMetrics()
      assert.deepEqual(Object.keys(m).sort(), METRICS_KEYS)
      assert.equal(m.totalInstances, 4)
      assert.equal(m.totalExecutions, 4)
      assert.equal(m.completedInstances, 2)
      assert.equal(m.failedInstances, 1)
      assert.equal(m.runningInstances, 1)
      let events = 0
      for (const id of ['done-1', 'done-2', 'fail-1', 'holder-1']) events += (await client.readExecutionHistory(id, 1)).length
      assert.equal(m.totalEvents, events)
    })

    test('an activity no worker serves stays in the worker queue', async () => {
      await client.startOrchestration('stuck-1', 'Stuck', null)
      const q = await eventually(async () => {
        const d = await client.getQueueDepths()
        return d.workerQueue === 1 ? d : null
      }, { what: 'worker queue depth 1' })
      assert.equal(q.orchestratorQueue, 0)
      assert.equal(q.timerQueue, 0)
    })

    test('getOrchestrationStats reports history and KV sizes', async () => {
      const s = await client.getOrchestrationStats('holder-1')
      assert.deepEqual(Object.keys(s).sort(), STATS_KEYS)
      const history = await client.readExecutionHistory('holder-1', 1)
      assert.equal(s.historyEventCount, history.length)
      assert.ok(s.historySizeBytes > 0)
      assert.equal(s.queuePendingCount, 0)
      assert.equal(s.kvUserKeyCount, 2)
      assert.equal(s.kvTotalValueBytes, 'ab'.length + 'cde'.length)
      assert.equal(await client.getOrchestrationStats('no-such-instance'), null)
      await assert.rejects(client.getOrchestrationStats(''), (e) => e.code === 'ERR_INVALID_ARGUMENT')
    })

    test('queuePendingCount counts messages carried through continue-as-new', async () => {
      await client.startOrchestration('carrier-1', 'Carrier', 0)
      await eventually(async () => (await client.getStatus('carrier-1')).status === 'Running', { what: 'carrier running' })
      await client.enqueueEvent('carrier-1', 'inbox', 1)
      await client.enqueueEvent('carrier-1', 'inbox', 2)
      await client.raiseEvent('carrier-1', 'go', null)
      await eventually(async () => (await client.listExecutions('carrier-1')).length === 2, { what: 'second execution' })
      const s = await eventually(async () => {
        const st = await client.getOrchestrationStats('carrier-1')
        return st && st.historyEventCount > 0 ? st : null
      }, { what: 'stats of execution 2' })
      assert.equal(s.queuePendingCount, 2)
    })
  })
}
