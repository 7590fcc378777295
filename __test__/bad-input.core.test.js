'use strict'
// Bad orchestration code fails its instance with a message saying what went
// wrong, never the process; names no runtime registered wait (unregistered
// backoff) until a runtime that has them starts.
const { describe, test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { backends, FAST, psql, sqliteQuery, eventually, uniqueName, Client } = require('./helpers')
const { openStore } = require('./fixtures/store')
const { Runtime } = require('..')

const unhandled = []
process.on('unhandledRejection', (reason) => unhandled.push(reason))

const nondeterministicRuns = new Map()

const BAD = {
  Throws: [function* () { throw new Error('generator blew up') }, /^generator blew up$/],
  ThrowsAfterYield: [function* (ctx) { yield ctx.scheduleTimer(1); throw new TypeError('late failure') }, /^late failure$/],
  ThrowsString: [function* () { throw 'a bare string' }, /^a bare string$/],
  ThrowsObject: [function* () { throw { reason: 'object thrown' } }, /ThrowsObject.*non-Error.*object thrown/],
  YieldsNumber: [function* () { yield 42 }, /yielded number 42, which is not a task/],
  YieldsPromise: [function* () { yield Promise.resolve(1) }, /yielded a Promise.*not a task/],
  YieldsObject: [function* () { yield { kind: 'timer', delayMs: 5 } }, /yielded a plain object, which is not a task/],
  YieldsUndefined: [function* () { yield }, /yielded undefined, which is not a task/],
  YieldsArray: [function* (ctx) { yield [ctx.scheduleTimer(1)] }, /yielded an array.*not a task.*all/],
  ReturnsBigInt: [function* () { return 1n }, /orchestration result.*JSON.*BigInt/],
  ReturnsCycle: [function* () { const o = {}; o.o = o; return o }, /orchestration result.*JSON.*circular/i],
  BadTimer: [function* (ctx) { yield ctx.scheduleTimer(-5) }, /delayMs must be a non-negative integer/],
  EmptyRace: [function* (ctx) { yield ctx.race() }, /race\(\) needs at least one task/],
  BadAllElement: [function* (ctx) { yield ctx.all([ctx.scheduleTimer(1), 'x']) }, /all\(\): element 1 is the string "x", not a task/],
  BadStatus: [function* (ctx) { ctx.setCustomStatus(7); yield ctx.scheduleTimer(1) }, /status must be a string/],
  ReservedChildId: [function* (ctx) { yield ctx.startOrchestration('Fine', 'sub::x', null) }, /reserved/],
  BadChildVersion: [function* (ctx) { yield ctx.scheduleSubOrchestrationVersioned('Fine', 'v2', null) }, /not a semver version/],
  // Yields a timer the first time and an event when replayed: duroxide's
  // nondeterminism check must still see what the generator yields.
  Nondeterministic: [function* (ctx) {
    const runs = (nondeterministicRuns.get(ctx.instanceId) || 0) + 1
    nondeterministicRuns.set(ctx.instanceId, runs)
    yield runs === 1 ? ctx.scheduleTimer(1) : ctx.waitForEvent('different')
    yield ctx.scheduleTimer(1)
  }, /nondetermini/],
}

for (const [kind, open] of backends) {
  describe(`bad orchestration code on ${kind}`, { concurrency: true }, () => {
    let store, rt, client
    before(async () => {
      store = await openStore(open)
      // No generator cache: `Nondeterministic` diverges only when its generator
      // is re-run from the start, which a cached generator never is.
      rt = new Runtime(store.provider, { ...FAST, orchestrationConcurrency: 4, orchestrationCacheSize: 0 })
      for (const [name, [fn]] of Object.entries(BAD)) rt.registerOrchestration(name, fn)
      rt.registerOrchestration('Fine', function* (ctx, input) {
        yield ctx.scheduleTimer(1)
        return input
      })
      await rt.start()
      client = new Client(store.provider)
    })
    after(async () => {
      await rt.shutdown(1000)
      await store.release()
    })

    for (const [name, [, pattern]] of Object.entries(BAD)) {
      test(`${name} fails its instance with a message`, async () => {
        const instanceId = uniqueName(`${kind}-${name}`)
        await client.startOrchestration(instanceId, name)
        const s = await client.waitForOrchestration(instanceId, 20000)
        assert.equal(s.status, 'Failed')
        assert.match(s.error, pattern)
      })
    }

    test('the runtime keeps working afterwards and nothing went unhandled', async () => {
      const instanceId = uniqueName(`${kind}-fine`)
      await client.startOrchestration(instanceId, 'Fine', 'still alive')
      const s = await client.waitForOrchestration(instanceId, 20000)
      assert.deepEqual([s.status, s.output], ['Completed', 'still alive'])
      assert.deepEqual(unhandled, [])
    })
  })
}

// The second runtime has the handler the first lacks. Both keep polling, so
// the instance may be fetched (and abandoned with backoff) by the first one a
// few times; maxAttempts is raised so those fetches cannot poison it.
const ROLLING = { ...FAST, maxAttempts: 100, unregisteredBackoff: { baseDelayMs: 100, maxDelayMs: 400 } }

/** A store with runtimes that are shut down before the store is removed. */
async function rolling(t, open) {
  const store = await openStore(open)
  const runtimes = []
  t.after(async () => {
    for (const rt of runtimes) await rt.shutdown(0)
    await store.release()
  })
  const start = async (register) => {
    const rt = new Runtime(store.provider, ROLLING)
    register(rt)
    await rt.start()
    runtimes.push(rt)
    return rt
  }
  /**
   * Waits until the first runtime has fetched and abandoned the message at
   * least twice: the queue row's attempt_count (both stores keep one) goes up
   * once per fetch, and the message stays queued.
   */
  const retried = async (table, instanceId) => {
    const query = store.schema
      ? (sql) => psql(sql.replace('{table}', `${store.schema}.${table}`))
      : (sql) => sqliteQuery(store.file, sql.replace('{table}', table))
    const sql = `SELECT coalesce(max(attempt_count), 0) FROM {table} WHERE instance_id = '${instanceId}'`
    await eventually(() => Number(query(sql)) >= 2, { what: `${table} attempts`, intervalMs: 100 })
  }
  return { store, start, retried, client: new Client(store.provider) }
}

for (const [kind, open] of backends) {
  test(`an unregistered orchestration waits, then completes once a runtime that has it starts (${kind})`, async (t) => {
    const { start, retried, client } = await rolling(t, open)
    await start((rt) => rt.registerOrchestration('Other', function* () { return 1 }))
    const instanceId = uniqueName('ghost')
    await client.startOrchestration(instanceId, 'Ghost', 'boo')
    await retried('orchestrator_queue', instanceId)
    assert.ok(!['Completed', 'Failed'].includes((await client.getStatus(instanceId)).status))

    await start((rt) => rt.registerOrchestration('Ghost', function* (ctx, input) { return `found ${input}` }))
    const s = await client.waitForOrchestration(instanceId, 20000)
    assert.deepEqual([s.status, s.output], ['Completed', 'found boo'])
  })

  test(`an unregistered activity waits, then completes once a runtime that has it starts (${kind})`, async (t) => {
    const { start, retried, client } = await rolling(t, open)
    const usesGhost = function* (ctx, input) {
      return yield ctx.scheduleActivity('GhostActivity', input)
    }
    await start((rt) => rt.registerOrchestration('UsesGhost', usesGhost))
    const instanceId = uniqueName('ghost-activity')
    await client.startOrchestration(instanceId, 'UsesGhost', 7)
    await eventually(async () => (await client.getStatus(instanceId)).status === 'Running', { what: 'the first turn' })
    await retried('worker_queue', instanceId)
    assert.equal((await client.getStatus(instanceId)).status, 'Running')

    await start((rt) => {
      rt.registerActivity('GhostActivity', async (ctx, n) => n * 6)
      rt.registerOrchestration('UsesGhost', usesGhost)
    })
    const s = await client.waitForOrchestration(instanceId, 20000)
    assert.deepEqual([s.status, s.output], ['Completed', 42])
  })
}
