'use strict'
// The generator cache (orchestrationCacheSize): a cached generator resumed at
// its pending step must reach the same history and output as a full replay,
// fall back cleanly when its entry is gone or stale, and actually be used.
const { describe, test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { spawn } = require('node:child_process')
const { once } = require('node:events')
const { FAST, sqliteFile, eventually, uniqueName, sleep, Client } = require('./helpers')
const { openStore, startSuiteRuntime, stopSuiteRuntime } = require('./fixtures/store')
const { Runtime } = require('..')

// How many times each instance's generator function body was entered: once
// per fresh generator. Without the cache every turn enters it again.
const entries = new Map()
const entered = (ctx) => entries.set(ctx.instanceId, (entries.get(ctx.instanceId) || 0) + 1)
const views = [] // what 'Deterministic' saw, once per time its generator passed that point
const activityRuns = new Map() // key -> runs, for activities whose result changes per run

function register(rt) {
  rt.registerActivity('Add', async (ctx, { n, by }) => n + by)
  rt.registerActivity('Fail', async (ctx, why) => { throw new Error(`failed: ${why}`) })
  rt.registerActivity('Count', async (ctx, key) => {
    const n = (activityRuns.get(key) || 0) + 1
    activityRuns.set(key, n)
    return n
  })

  // Sequential activities with custom status and KV writes between them.
  rt.registerOrchestration('Chain', function* (ctx, { steps }) {
    entered(ctx)
    let n = 0
    for (let i = 0; i < steps; i++) {
      ctx.setCustomStatus(`step ${i}`)
      if (i % 3 === 0) ctx.setValue(`k${i}`, { n })
      n = yield ctx.scheduleActivity('Add', { n, by: i })
    }
    return { n, status: ctx.getCustomStatus(), keys: ctx.getKvAllKeys(), k0: ctx.getValue('k0') }
  })
  // Timers, events, failures, and all/race nested both ways.
  rt.registerOrchestration('Mixed', function* (ctx) {
    entered(ctx)
    const out = {}
    out.timer = yield ctx.scheduleTimer(5)
    try {
      yield ctx.scheduleActivity('Fail', 'on purpose')
    } catch (err) {
      out.failed = err.message
    }
    ctx.setCustomStatus('waiting for go')
    out.go = yield ctx.waitForEvent('go')
    const raced = yield ctx.race(ctx.waitForEvent('never'), ctx.all([ctx.scheduleActivity('Add', { n: 1, by: 1 }), ctx.scheduleTimer(5)]))
    out.raced = raced
    out.all = yield ctx.all([ctx.race(ctx.scheduleTimer(5), ctx.waitForEvent('never2')), ctx.scheduleActivity('Add', { n: 2, by: 2 })])
    ctx.resetCustomStatus()
    ctx.setValue('done', 'yes')
    out.pruned = ctx.pruneKvValuesUpdatedBefore(0)
    out.kv = ctx.getKvAllValues()
    return out
  })
  rt.registerOrchestration('Child', function* (ctx, n) {
    entered(ctx)
    const r = yield ctx.scheduleActivity('Add', { n, by: 100 })
    return r
  })
  rt.registerOrchestration('Parent', function* (ctx, childId) {
    entered(ctx)
    const a = yield ctx.scheduleSubOrchestration('Child', 1)
    const b = yield ctx.scheduleSubOrchestrationWithId('Child', childId, 2)
    const c = yield ctx.scheduleSubOrchestrationVersioned('Versioned', '1.0.0', null)
    return { a, b, c }
  })
  // Continue-as-new through three executions, then a versioned continue.
  rt.registerOrchestration('Looper', function* (ctx, { i, total }) {
    entered(ctx)
    const next = yield ctx.scheduleActivity('Add', { n: total, by: i })
    ctx.setValue(`exec${ctx.executionId}`, String(next))
    if (i < 3) {
      yield ctx.continueAsNew({ i: i + 1, total: next })
    }
    return { total: next, executionId: ctx.executionId, keys: ctx.getKvAllKeys() }
  })
  rt.registerOrchestrationVersioned('Versioned', '1.0.0', function* (ctx, input) {
    entered(ctx)
    const x = yield ctx.scheduleActivity('Add', { n: 1, by: 1 })
    if (input && input.upgrade) yield ctx.continueAsNewVersioned({ from: x }, '2.0.0')
    return { version: ctx.orchestrationVersion, x }
  })
  rt.registerOrchestrationVersioned('Versioned', '2.0.0', function* (ctx, input) {
    entered(ctx)
    const x = yield ctx.scheduleActivity('Add', { n: 2, by: 2 })
    return { version: ctx.orchestrationVersion, x, input }
  })
  rt.registerOrchestration('Deterministic', function* (ctx) {
    entered(ctx)
    const guid = yield ctx.newGuid()
    const now = yield ctx.utcNow()
    views.push({ id: ctx.instanceId, guid, now })
    yield ctx.scheduleTimer(10)
    return { guid, now, guid2: yield ctx.newGuid() }
  })
  // Same as fixtures/cache-recreate-child.js registers.
  rt.registerOrchestration('Guided', function* (ctx) {
    entered(ctx)
    ctx.setCustomStatus('drawing')
    const guid = yield ctx.newGuid()
    views.push({ id: ctx.instanceId, guid })
    const go = yield ctx.waitForEvent('go')
    return { guid, go }
  })
  // Holds the JS thread, and with orchestrationConcurrency 1 the runtime's only
  // orchestration slot, until another process is done.
  rt.registerOrchestration('Blocker', function* (ctx, { ready, done }) {
    fs.writeFileSync(ready, '')
    const end = Date.now() + 60000
    while (!fs.existsSync(done) && Date.now() < end) {
      // spin
    }
    return 'unblocked'
  })
  // One step whose result changes every time the activity runs, then a wait.
  rt.registerOrchestration('Recreated', function* (ctx, key) {
    entered(ctx)
    const first = yield ctx.scheduleActivity('Count', key)
    const go = yield ctx.waitForEvent('go')
    const second = yield ctx.scheduleActivity('Count', key)
    return { first, second, go }
  })
}

// Events that arrive from outside the orchestration; with concurrent tasks
// their order depends on timing, not on the orchestration. So does the turn
// in which a race loser is cancelled (/Cancel/ kinds).
const ARRIVALS = new Set([
  'ActivityCompleted', 'ActivityFailed', 'TimerFired', 'ExternalEvent',
  'SubOrchestrationCompleted', 'SubOrchestrationFailed', 'QueueEventDelivered',
])

/** An orchestration-made event with its data, minus the wall-clock fields. */
function action(ev) {
  if (!ev.data) return ev.kind
  const { fireAtMs, lastUpdatedAtMs, ...data } = JSON.parse(ev.data)
  return `${ev.kind} ${JSON.stringify(data)}`
}

/**
 * Every execution's history: `exact` lists each event with its completion
 * link, as the replay engine compares them. Otherwise (workloads with tasks
 * in flight together) it lists the orchestration's own events in order, plus
 * all kinds sorted.
 */
async function historyShape(client, instanceId, exact) {
  const executions = await client.listExecutions(instanceId)
  const shape = []
  for (const e of executions) {
    const events = await client.readExecutionHistory(instanceId, e)
    if (exact) {
      shape.push(events.map((ev) => `${ev.eventId}:${ev.kind}${ev.sourceEventId ? `<-${ev.sourceEventId}` : ''}`))
    } else {
      shape.push({
        actions: events.filter((ev) => !ARRIVALS.has(ev.kind) && !/Cancel/.test(ev.kind)).map(action),
        kinds: events.map((ev) => ev.kind).sort(),
      })
    }
  }
  return shape
}

async function finish(client, instanceId) {
  const s = await client.waitForOrchestration(instanceId, 30000)
  assert.equal(s.status, 'Completed', `${instanceId} ended ${s.status}: ${s.error}`)
  return s
}

/** Each workload: start it (with its helpers), return the instance ids whose history and output are compared. */
const workloads = {
  async chain(client, id) {
    await client.startOrchestration(id, 'Chain', { steps: 12 })
    return [id]
  },
  async mixed(client, id) {
    await client.startOrchestration(id, 'Mixed', null)
    await eventually(async () => (await client.getStatus(id)).customStatus === 'waiting for go', { what: 'Mixed waiting' })
    await client.raiseEvent(id, 'go', { please: true })
    return [id]
  },
  async subOrchestrations(client, id) {
    await client.startOrchestration(id, 'Parent', `${id}-child`)
    return [id, `${id}-child`]
  },
  async continueAsNew(client, id) {
    await client.startOrchestration(id, 'Looper', { i: 1, total: 0 })
    return [id]
  },
  async versioning(client, id) {
    await client.startOrchestrationVersioned(id, 'Versioned', { upgrade: true }, '1.0.0')
    return [id]
  },
}

describe('generator cache: same history and output with the cache on and off', { concurrency: false }, () => {
  const runs = {}
  before(async () => {
    for (const [mode, size] of [['on', 1000], ['off', 0]]) {
      const { store, rt, client } = await startSuiteRuntime(sqliteFile, register, { ...FAST, orchestrationCacheSize: size })
      runs[mode] = { store, rt, client }
    }
  })
  after(async () => {
    for (const r of Object.values(runs)) await stopSuiteRuntime(r)
  })

  for (const [name, start] of Object.entries(workloads)) {
    test(name, async () => {
      const results = {}
      for (const mode of ['on', 'off']) {
        const { client } = runs[mode]
        const id = `${name}-${mode}`
        const ids = await start(client, id)
        const outputs = []
        const shapes = []
        for (const i of ids) {
          outputs.push((await finish(client, i)).output)
          shapes.push(await historyShape(client, i, name !== 'mixed'))
        }
        results[mode] = { outputs, shapes, entries: entries.get(id) }
      }
      assert.deepEqual(results.on.outputs, results.off.outputs)
      assert.deepEqual(results.on.shapes, results.off.shapes)
      // Every workload takes more than one turn: the cache-off generator is
      // entered again on each, the cached one only at each execution's start.
      assert.ok(results.off.entries > results.on.entries, `entries on=${results.on.entries} off=${results.off.entries}`)
    })
  }
})

describe('generator cache: use, eviction and fallback', () => {
  test('a 20-step chain enters its generator once with the cache on, about once per step with it off', async (t) => {
    const counts = {}
    for (const [mode, size] of [['on', 1000], ['off', 0]]) {
      const store = await sqliteFile(t)
      const rt = new Runtime(store.provider, { ...FAST, orchestrationCacheSize: size })
      register(rt)
      await rt.start()
      const client = new Client(store.provider)
      const id = uniqueName(`count-${mode}`)
      await client.startOrchestration(id, 'Chain', { steps: 20 })
      const s = await finish(client, id)
      assert.equal(s.output.n, 190)
      await rt.shutdown(1000)
      counts[mode] = entries.get(id)
    }
    assert.equal(counts.on, 1)
    assert.ok(counts.off >= 20, `the cache-off generator was entered ${counts.off} times`)
  })

  test('newGuid and utcNow: one view with the cache on, the same values on every full replay with it off', async (t) => {
    for (const [mode, size] of [['on', 1000], ['off', 0]]) {
      const store = await sqliteFile(t)
      const rt = new Runtime(store.provider, { ...FAST, orchestrationCacheSize: size })
      register(rt)
      await rt.start()
      const client = new Client(store.provider)
      const id = uniqueName(`det-${mode}`)
      await client.startOrchestration(id, 'Deterministic', null)
      const s = await finish(client, id)
      await rt.shutdown(1000)
      assert.notEqual(s.output.guid, s.output.guid2)
      const seen = views.filter((v) => v.id === id)
      if (mode === 'on') assert.equal(seen.length, 1)
      else assert.ok(seen.length >= 2, `expected a replay, saw ${seen.length} view(s)`)
      for (const v of seen) assert.deepEqual(v, { id, guid: s.output.guid, now: s.output.now })
    }
  })

  test('size 1 with two interleaved chains: evicted generators replay in full and finish correctly', async (t) => {
    const store = await sqliteFile(t)
    const rt = new Runtime(store.provider, { ...FAST, orchestrationCacheSize: 1, orchestrationConcurrency: 2 })
    register(rt)
    await rt.start()
    t.after(() => rt.shutdown(1000))
    const client = new Client(store.provider)
    const ids = [uniqueName('evict-a'), uniqueName('evict-b')]
    await Promise.all(ids.map((id) => client.startOrchestration(id, 'Chain', { steps: 15 })))
    for (const id of ids) {
      const s = await finish(client, id)
      assert.equal(s.output.n, 105)
      assert.equal(s.output.status, 'step 14')
      assert.deepEqual(s.output.keys, ['k0', 'k12', 'k3', 'k6', 'k9'])
    }
    // One slot for two interleaved instances: at least one was evicted and rebuilt.
    const total = ids.reduce((sum, id) => sum + entries.get(id), 0)
    assert.ok(total > 2, `generators entered ${total} times for 2 instances`)
  })

  test('a new Runtime on the same SQLite file mid-chain rebuilds the generator and finishes', async (t) => {
    const store = await sqliteFile(t)
    const id = uniqueName('restart')
    const key = uniqueName('restart-key')
    const first = new Runtime(store.provider, { ...FAST })
    register(first)
    await first.start()
    const client = new Client(store.provider)
    await client.startOrchestration(id, 'Recreated', key)
    await eventually(async () => activityRuns.get(key) === 1 && (await client.readExecutionHistory(id, 1)).some((e) => e.kind === 'ExternalSubscribed'), { what: 'waiting on go' })
    await first.shutdown(1000)
    assert.equal(entries.get(id), 1)

    const reopened = await openStore(() => require('..').SqliteProvider.open(store.url).then((provider) => ({ provider })))
    const second = new Runtime(reopened.provider, { ...FAST })
    register(second)
    await second.start()
    t.after(() => second.shutdown(1000))
    await client.raiseEvent(id, 'go', 'now')
    const s = await finish(client, id)
    assert.deepEqual(s.output, { first: 1, second: 2, go: 'now' })
    // The second runtime had no cached generator: one full replay, then cached.
    assert.equal(entries.get(id), 2)
  })

  test('an instance deleted and started again under the same id does not resume the old generator', async (t) => {
    const store = await sqliteFile(t)
    const rt = new Runtime(store.provider, { ...FAST })
    register(rt)
    await rt.start()
    t.after(() => rt.shutdown(1000))
    const client = new Client(store.provider)
    const id = uniqueName('recreated')
    const key = uniqueName('recreated-key')
    const waiting = async () => (await client.readExecutionHistory(id, 1)).some((e) => e.kind === 'ExternalSubscribed')
    await client.startOrchestration(id, 'Recreated', key)
    await eventually(waiting, { what: 'first instance waiting' })
    // The cached generator saw Count = 1. The new instance's first step sees 2.
    await client.deleteInstance(id, true)
    await sleep(50)
    await client.startOrchestration(id, 'Recreated', key)
    await eventually(waiting, { what: 'second instance waiting' })
    await client.raiseEvent(id, 'go', 'again')
    const s = await finish(client, id)
    assert.deepEqual(s.output, { first: 2, second: 3, go: 'again' })
    const kinds = (await client.readExecutionHistory(id, 1)).map((e) => e.kind)
    assert.deepEqual(kinds, [
      'OrchestrationStarted', 'ActivityScheduled', 'ActivityCompleted', 'ExternalSubscribed', 'ExternalEvent',
      'ActivityScheduled', 'ActivityCompleted', 'OrchestrationCompleted',
    ])
  })
})

describe('generator cache: a step log that differs from the history', () => {
  // Another process deletes the instance and starts it again under the same
  // id while this runtime still caches the old generator, so the next turn
  // here finds a history whose first step (a GUID) differs from the log.
  test('the generator is rebuilt, caught up without emitting, and fed the new outcome', async (t) => {
    const store = await sqliteFile(t)
    const rt = new Runtime(store.provider, { ...FAST, orchestrationConcurrency: 1 })
    register(rt)
    await rt.start()
    t.after(() => rt.shutdown(1000))
    const client = new Client(store.provider)
    const id = uniqueName('guided')
    const ready = path.join(store.dir, 'ready')
    const done = path.join(store.dir, 'done')
    await client.startOrchestration(id, 'Guided', null)
    await eventually(async () => (await client.readExecutionHistory(id, 1)).some((e) => e.kind === 'ExternalSubscribed'), { what: 'waiting on go' })
    const [cached] = views.filter((v) => v.id === id)

    const child = spawn(process.execPath, [path.join(__dirname, 'fixtures', 'cache-recreate-child.js'), store.url, id, ready, done], { stdio: ['ignore', 'ignore', 'inherit'] })
    const exited = once(child, 'exit')
    await client.startOrchestration(uniqueName('blocker'), 'Blocker', { ready, done })
    const [code] = await exited
    assert.equal(code, 0, 'child process failed')
    const recreated = fs.readFileSync(done, 'utf8')
    assert.notEqual(recreated, cached.guid)

    await client.raiseEvent(id, 'go', 'now')
    const s = await finish(client, id)
    assert.deepEqual(s.output, { guid: recreated, go: 'now' })
    // The original generator, then its caught-up replacement (which drew no GUID of its own).
    assert.equal(entries.get(id), 2)
    assert.deepEqual(views.filter((v) => v.id === id).map((v) => v.guid), [cached.guid, recreated])
    const kinds = (await client.readExecutionHistory(id, 1)).map((e) => e.kind)
    // Catching up emitted nothing: one status update and one subscription, as the child recorded them.
    assert.equal(kinds.filter((k) => k === 'CustomStatusUpdated').length, 1, `history: ${kinds.join(', ')}`)
    assert.equal(kinds.filter((k) => k === 'ExternalSubscribed').length, 1, `history: ${kinds.join(', ')}`)
  })
})

describe('orchestrationCacheSize option', () => {
  test('defaults to 1000, accepts 0, and refuses what is not a count', async (t) => {
    const store = await sqliteFile(t)
    assert.equal(new Runtime(store.provider).effectiveOptions().orchestrationCacheSize, 1000)
    assert.equal(new Runtime(store.provider, { orchestrationCacheSize: 0 }).effectiveOptions().orchestrationCacheSize, 0)
    for (const bad of [-1, 1.5, 'big', true]) {
      assert.throws(() => new Runtime(store.provider, { orchestrationCacheSize: bad }), (err) => {
        assert.equal(err.code, 'ERR_INVALID_OPTION')
        assert.match(err.message, /orchestrationCacheSize/)
        return true
      })
    }
  })
})
