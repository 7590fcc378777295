'use strict'
// The replay check of duroxide-node/testing against real SQLite and Postgres
// histories: code unchanged replays clean; an activity swapped or a timer
// added is reported at the event where code and history part, with both
// described; the check runs no activity and writes nothing; an exported
// history written to a JSON file and imported again replays the same.
const { describe, test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { backends, eventually, rowCounts, coded, Client } = require('./helpers')
const { openStore } = require('./fixtures/store')
const { Runtime } = require('..')
const { replayHistory, replayInstances, importHistory } = require('../testing')
const workflows = require('./fixtures/replay/workflows')

const ORDER = { sku: 'x-1', qty: 2 } // keys unsorted on purpose: readExecutionHistory sorts them

/** A runtime that is never started, holding `variant`'s code; `calls` counts its activity runs. */
function codeOf(provider, variant, calls = {}) {
  return workflows.register(new Runtime(provider), variant, { calls })
}

/** What the store holds, through the public API. */
async function snapshot(client) {
  const out = {}
  for (const id of (await client.listAllInstances()).sort()) {
    const executions = await client.listExecutions(id)
    out[id] = {
      status: await client.getStatus(id),
      histories: await Promise.all(executions.map((n) => client.readExecutionHistory(id, n))),
    }
  }
  return { instances: out, queues: await client.getQueueDepths() }
}

const dataOf = (event) => JSON.parse(event.data)

/** A report without the due time of a timer the code schedules, which replay computes from its own clock. */
function timeless(report) {
  const s = report.divergence && report.divergence.scheduled
  if (s && s.kind === 'TimerCreated') return { ...report, divergence: { ...report.divergence, scheduled: { ...s, data: undefined } } }
  return report
}

for (const [kind, open] of backends) {
  describe(`replay check on ${kind} histories`, () => {
    let store
    let client

    before(async () => {
      store = await openStore(open)
      client = new Client(store.provider)
      // The histories are recorded by the 'v1' code; 'Hold' never finishes,
      // so 'p1' keeps an activity scheduled and not completed.
      const rt = workflows.register(new Runtime(store.provider, { dispatcherPollIntervalMs: 5 }), 'v1', {
        hold: () => new Promise(() => {}),
      })
      await rt.start()
      try {
        await client.startOrchestration('o1', 'Order', ORDER)
        await client.startOrchestration('a1', 'Approval', ORDER)
        await client.startOrchestration('p1', 'Pending', null)
        await client.startOrchestration('m1', 'Mixed', 0)
        await client.startOrchestration('f1', 'Fails', null)
        await client.waitForOrchestration('o1', 20000)
        await client.waitForOrchestration('m1', 20000)
        // duroxide honours a detached start only in a turn that ends the
        // instance, so of the three, only the last execution's runs.
        await client.waitForOrchestration('m1-detached-2', 20000)
        await eventually(async () => (await client.getStatus('f1')).status === 'Failed', { what: 'f1 failed' })
        const has = async (id, k) => (await client.readExecutionHistory(id, 1)).some((e) => e.kind === k)
        await eventually(() => has('a1', 'ExternalSubscribed'), { what: 'a1 waiting for approve' })
        await eventually(() => has('p1', 'ActivityScheduled'), { what: 'p1 scheduling Hold' })
      } finally {
        await rt.shutdown(200)
      }
    })

    after(async () => {
      if (store) await store.release()
    })

    test('unchanged code replays every history clean, exported or as readExecutionHistory entries', async () => {
      const code = codeOf(store.provider, 'v1')
      for (const id of ['o1', 'a1', 'p1']) {
        assert.deepEqual(await replayHistory(code, await client.exportHistory(id)), { ok: true }, id)
        const entries = await client.readExecutionHistory(id, 1)
        assert.deepEqual(await replayHistory(code, entries, { instanceId: id }), { ok: true }, id)
      }
      // Every execution of the continued one, the failed one, the children.
      assert.deepEqual(await client.listExecutions('m1'), [1, 2, 3])
      for (const n of [1, 2, 3]) {
        assert.deepEqual(await replayHistory(code, await client.exportHistory('m1', n)), { ok: true }, `m1 #${n}`)
      }
      const kinds = new Set((await client.readExecutionHistory('m1', 1)).map((e) => e.kind))
      for (const k of ['CustomStatusUpdated', 'KeyValueSet', 'SubOrchestrationCompleted', 'TimerFired', 'ExternalSubscribedCancelled', 'OrchestrationChained', 'OrchestrationContinuedAsNew']) {
        assert.ok(kinds.has(k), `m1's history has ${k}`)
      }
      assert.deepEqual(await replayHistory(code, await client.readExecutionHistory('f1', 1), { instanceId: 'f1' }), { ok: true })
      const all = await replayInstances(store.provider, code)
      const ids = all.map((r) => r.instanceId)
      for (const id of ['o1', 'a1', 'p1', 'm1', 'f1', 'm1-detached-2']) assert.ok(ids.includes(id), id)
      assert.ok(all.length >= 9, 'the sub-orchestrations are instances too')
      assert.ok(ids.some((id) => id.startsWith('m1::sub::')), 'a sub-orchestration replayed')
      assert.deepEqual(all.filter((r) => !r.ok), [])
      assert.equal(all.find((r) => r.instanceId === 'm1').executionId, 3)
    })

    test('a failure where the history completed, or the other way round, diverges at the end', async () => {
      // 'Fails' recorded a failure after Reserve; code that returns there ends differently.
      const history = await client.exportHistory('f1')
      const calls = {}
      const rt = new Runtime(store.provider)
      rt.registerActivity('Reserve', async () => { calls.Reserve = 1 })
      rt.registerOrchestration('Fails', function* (ctx) {
        yield ctx.scheduleActivity('Reserve', { sku: 'f', qty: 1 })
        return 'in stock after all'
      })
      const r = await replayHistory(rt, history)
      assert.equal(r.ok, false)
      assert.equal(r.divergence.index, 3)
      assert.equal(r.divergence.recorded.kind, 'OrchestrationFailed')
      assert.equal(r.divergence.scheduled.kind, 'OrchestrationCompleted')
      assert.match(r.divergence.message, /ends with failure \(.*out of stock.*\).*but the code ends with completion/)
      // The failure's message alone, without the structure stored after it (lib/failure.js).
      // Numbered as the history numbers it: the failure is eventId 4 (index 3).
      assert.equal(r.divergence.eventId, r.divergence.recorded.eventId)
      assert.equal(r.divergence.eventId, 4)
      assert.match(r.divergence.message, /ends with failure \(out of stock\) at event 4,/)
      assert.deepEqual(calls, {})
    })

    test('an activity swapped diverges at the swapped activity, describing both', async () => {
      const code = codeOf(store.provider, 'swapped')
      const history = await client.readExecutionHistory('o1', 1)
      for (const given of [await client.exportHistory('o1'), history]) {
        const r = await replayHistory(code, given, { ...(Array.isArray(given) ? { instanceId: 'o1' } : {}) })
        assert.equal(r.ok, false)
        const d = r.divergence
        // 0 started, 1 Reserve scheduled, 2 Reserve completed, 3 Charge scheduled
        assert.equal(d.index, 3)
        assert.equal(d.recorded.kind, 'ActivityScheduled')
        assert.equal(d.recorded.eventId, history[3].eventId)
        // One numbering: the divergence names the eventId history shows, not the index.
        assert.equal(d.eventId, history[3].eventId)
        assert.equal(dataOf(d.recorded).name, 'Charge')
        assert.equal(d.scheduled.kind, 'ActivityScheduled')
        assert.equal(dataOf(d.scheduled).name, 'Refund')
        assert.match(d.message, new RegExp(`^at event ${history[3].eventId} the history has activity 'Charge'.*the code schedules activity 'Refund'`))
      }
      // The running instances never reach the changed step: still clean.
      const byId = Object.fromEntries((await replayInstances(store.provider, code)).map((r) => [r.instanceId, r]))
      assert.equal(byId.o1.ok, false)
      assert.equal(byId.o1.divergence.index, 3)
      assert.equal(byId.a1.ok, true)
      assert.equal(byId.p1.ok, true)
    })

    test('a timer added diverges where it was added: before an activity, or after the last one', async () => {
      const history = await client.exportHistory('o1')
      const before = await replayHistory(codeOf(store.provider, 'timer-before'), history)
      assert.equal(before.ok, false)
      assert.equal(before.divergence.index, 3)
      assert.equal(before.divergence.recorded.kind, 'ActivityScheduled')
      assert.equal(dataOf(before.divergence.recorded).name, 'Charge')
      assert.equal(before.divergence.scheduled.kind, 'TimerCreated')
      assert.match(before.divergence.message, /the code schedules a timer/)

      const after = await replayHistory(codeOf(store.provider, 'timer-after'), history)
      assert.equal(after.ok, false)
      // 4 Charge completed, 5 OrchestrationCompleted: the code waits on a timer instead
      assert.equal(after.divergence.index, 5)
      assert.equal(after.divergence.eventId, after.divergence.recorded.eventId)
      assert.equal(after.divergence.recorded.kind, 'OrchestrationCompleted')
      assert.deepEqual(dataOf(after.divergence.recorded).charged, 'charged 2')
      assert.equal(after.divergence.scheduled.kind, 'TimerCreated')
      assert.match(after.divergence.message, /does not end there: it schedules a timer/)
    })

    test('an activity removed diverges at that activity: the code has already completed there', async () => {
      const r = await replayHistory(codeOf(store.provider, 'removed'), await client.exportHistory('o1'))
      assert.equal(r.ok, false)
      assert.equal(r.divergence.index, 3)
      assert.equal(dataOf(r.divergence.recorded).name, 'Charge')
      assert.equal(r.divergence.scheduled.kind, 'OrchestrationCompleted')
      assert.deepEqual(dataOf(r.divergence.scheduled), { reserved: { reserved: 2, sku: 'x-1' } })
      assert.match(r.divergence.message, /has activity 'Charge' .*, but the code has already ended/)
    })

    test('an orchestration today\'s code does not register diverges at its start', async () => {
      const r = await replayHistory(codeOf(store.provider, 'unregistered'), await client.exportHistory('o1'))
      assert.equal(r.ok, false)
      assert.equal(r.divergence.index, 0)
      assert.equal(r.divergence.eventId, 1)
      assert.equal(r.divergence.recorded.kind, 'OrchestrationStarted')
      assert.equal(r.divergence.scheduled, undefined)
      assert.match(r.divergence.message, /orchestration 'Order' version 1\.0\.0 is not registered/)
    })

    test('replaying runs no activity and writes nothing', async () => {
      const calls = {}
      const rows = rowCounts(store)
      const seen = await snapshot(client)
      assert.ok(Object.values(rows).some((n) => n > 0), 'the store holds rows to compare')
      for (const variant of workflows.VARIANTS) {
        const code = codeOf(store.provider, variant, calls)
        await replayInstances(store.provider, code)
        for (const id of ['o1', 'a1', 'p1']) await replayHistory(code, await client.exportHistory(id))
      }
      assert.deepEqual(calls, {}, 'no activity ran')
      assert.deepEqual(rowCounts(store), rows)
      assert.deepEqual(await snapshot(client), seen)
      // 'p1' still has Hold scheduled and not completed.
      const p1 = await client.readExecutionHistory('p1', 1)
      assert.deepEqual(p1.map((e) => e.kind), ['OrchestrationStarted', 'ActivityScheduled'])
    })

    test('a history exported to a JSON file and imported again replays the same', async (t) => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'replay-export-'))
      t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
      for (const id of ['o1', 'a1']) {
        const exported = await client.exportHistory(id)
        assert.equal(exported.format, 'duroxide-history')
        assert.equal(exported.instanceId, id)
        assert.equal(exported.executionId, 1)
        const file = path.join(dir, `${id}.json`)
        fs.writeFileSync(file, JSON.stringify(exported))
        const text = fs.readFileSync(file, 'utf8')
        const imported = importHistory(text)
        assert.deepEqual(imported, exported)
        for (const variant of ['v1', 'swapped', 'timer-after']) {
          const code = codeOf(store.provider, variant)
          const fromStore = timeless(await replayHistory(code, exported))
          assert.deepEqual(timeless(await replayHistory(code, imported)), fromStore, `${id} ${variant}`)
          assert.deepEqual(timeless(await replayHistory(code, text)), fromStore, `${id} ${variant} (JSON text)`)
        }
      }
    })

    test('replayInstances filters by status and limit', async () => {
      const code = codeOf(store.provider, 'v1')
      const running = await replayInstances(store.provider, code, { status: 'Running' })
      assert.deepEqual(running.map((r) => r.instanceId).sort(), ['a1', 'p1'])
      const completed = await replayInstances(store.provider, code, { status: 'Completed' })
      assert.ok(completed.some((r) => r.instanceId === 'o1'))
      assert.ok(!completed.some((r) => ['a1', 'p1', 'f1'].includes(r.instanceId)))
      const failed = await replayInstances(store.provider, code, { status: 'Failed' })
      assert.deepEqual(failed.map((r) => [r.instanceId, r.ok]), [['f1', true]])
      assert.equal((await replayInstances(store.provider, code, { limit: 1 })).length, 1)
    })
  })
}

describe('replay check arguments', () => {
  let store
  before(async () => {
    store = await openStore(backends[0][1])
  })
  after(async () => {
    if (store) await store.release()
  })

  test('bad arguments are rejected with a code and what was wrong', async () => {
    const code = codeOf(store.provider, 'v1')
    await assert.rejects(replayHistory({}, []), coded('ERR_INVALID_ARGUMENT', 'runtime must be a Runtime'))
    await assert.rejects(replayHistory(code, 42), coded('ERR_INVALID_ARGUMENT', 'history must be'))
    await assert.rejects(replayHistory(code, '{nope'), coded('ERR_INVALID_ARGUMENT', 'not JSON'))
    await assert.rejects(replayHistory(code, { format: 'other' }), coded('ERR_INVALID_ARGUMENT', "format 'duroxide-history'"))
    await assert.rejects(replayHistory(code, []), coded('ERR_INVALID_ARGUMENT', 'history is empty'))
    await assert.rejects(
      replayHistory(code, [{ eventId: 1, kind: 'ActivityScheduled', timestampMs: 1, data: '{"name":"A","input":1}' }]),
      coded('ERR_INVALID_ARGUMENT', 'OrchestrationStarted'),
    )
    await assert.rejects(
      replayHistory(code, [{ eventId: 1, kind: 'KeyValueSet', timestampMs: 1 }]),
      coded('ERR_INVALID_ARGUMENT', 'KeyValueSet', 'exportHistory'),
    )
    await assert.rejects(replayHistory(code, [], { bogus: 1 }), coded('ERR_INVALID_OPTION', 'bogus'))
    await assert.rejects(replayInstances(store.provider, code, { limit: 0 }), coded('ERR_INVALID_OPTION', 'limit'))
    await assert.rejects(replayInstances(store.provider, code, { status: 'Nope' }), coded('ERR_INVALID_ARGUMENT', 'Nope'))
    await assert.rejects(new Client(store.provider).exportHistory('missing'), coded('ERR_NOT_FOUND', 'missing'))
    assert.throws(() => importHistory({ format: 'duroxide-history', formatVersion: 9 }), coded('ERR_INVALID_ARGUMENT', 'formatVersion 9'))
  })
})
