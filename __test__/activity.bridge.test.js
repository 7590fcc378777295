'use strict'
// The activity bridge: every ActivityContext property and method, and what
// happens when an activity fails in the ways JavaScript allows (throwing
// non-Errors, returning values JSON cannot carry).
const { describe, test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { backends, FAST, eventually, uniqueName } = require('./helpers')
const { startSuiteRuntime, stopSuiteRuntime } = require('./fixtures/store')

const unhandled = []
process.on('unhandledRejection', (reason) => unhandled.push(reason))

const running = new Set()
const aborted = new Map()

const cyclic = () => {
  const o = { name: 'loop' }
  o.self = o
  return o
}

// Activities that fail, keyed by the failure the orchestration must see.
const FAILING = {
  ThrowsError: async () => { throw new Error('kaput') },
  ThrowsTypeError: async () => { null.property },
  ThrowsSync: () => { throw new RangeError('thrown synchronously') },
  RejectsString: () => Promise.reject('just a string'),
  RejectsNumber: async () => { throw 42 },
  RejectsObject: async () => { throw { code: 'E_OBJ', detail: 'structured' } },
  RejectsNull: async () => { throw null },
  RejectsUndefined: async () => { throw undefined },
  ReturnsBigInt: async () => 10n,
  ReturnsCycle: async () => cyclic(),
  ReturnsBigIntDeep: async () => ({ list: [1, 2, { n: 3n }] }),
  ReturnsFunction: async () => () => 1,
  ReturnsSymbol: async () => Symbol('s'),
}

function register(rt) {
  rt.registerActivity('Inspect', async (ctx, input) => {
    ctx.traceInfo('inspect info')
    ctx.traceWarn('inspect warn')
    ctx.traceError('inspect error')
    ctx.traceDebug('inspect debug')
    const client = ctx.getClient()
    const self = await client.getStatus(ctx.instanceId)
    return {
      input,
      instanceId: ctx.instanceId,
      executionId: ctx.executionId,
      orchestrationName: ctx.orchestrationName,
      orchestrationVersion: ctx.orchestrationVersion,
      activityName: ctx.activityName,
      workerId: ctx.workerId,
      sessionId: ctx.sessionId,
      tag: ctx.tag(),
      isCancelled: ctx.isCancelled(),
      signal: ctx.signal instanceof AbortSignal && !ctx.signal.aborted,
      selfStatus: self.status,
    }
  })
  // Uses the Client it gets from the context to start another instance.
  rt.registerActivity('Spawn', async (ctx, childId) => {
    await ctx.getClient().startOrchestration(childId, 'Plain', 'spawned')
    return childId
  })
  rt.registerActivity('ReturnsNothing', async () => undefined)
  rt.registerActivity('PlainFunction', (ctx, n) => n + 1)
  rt.registerActivity('Sleep', async (ctx, key) => {
    running.add(key)
    await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve))
    aborted.set(key, { isCancelled: ctx.isCancelled(), aborted: ctx.signal.aborted })
    return 'cancelled'
  })
  // Reads `ctx.signal` only once isCancelled() says so: the signal is made
  // on first read and must then already be aborted, with the reason.
  rt.registerActivity('SleepUnwatched', async (ctx, key) => {
    running.add(key)
    while (!ctx.isCancelled()) await new Promise((resolve) => setTimeout(resolve, 5))
    const { signal } = ctx
    aborted.set(key, { aborted: signal.aborted, reason: String(signal.reason), same: signal === ctx.signal })
    return 'cancelled'
  })
  for (const [name, fn] of Object.entries(FAILING)) rt.registerActivity(name, fn)

  rt.registerOrchestrationVersioned('Inspector', '1.2.3', function* (ctx) {
    const plain = yield ctx.scheduleActivity('Inspect', { n: 1 })
    const session = yield ctx.scheduleActivityOnSession('Inspect', null, 'sess-9')
    const tagged = yield ctx.scheduleActivity('Inspect', null).withTag('blue')
    return { plain, session, tagged }
  })
  rt.registerOrchestration('Plain', function* (ctx, input) {
    return input
  })
  rt.registerOrchestration('Spawner', function* (ctx, childId) {
    return yield ctx.scheduleActivity('Spawn', childId)
  })
  rt.registerOrchestration('Values', function* (ctx) {
    return [yield ctx.scheduleActivity('ReturnsNothing'), yield ctx.scheduleActivity('PlainFunction', 41)]
  })
  rt.registerOrchestration('Failures', function* (ctx) {
    const names = Object.keys(FAILING)
    const results = yield ctx.all(names.map((n) => ctx.scheduleActivity(n)))
    return Object.fromEntries(names.map((n, i) => [n, results[i]]))
  })
  rt.registerOrchestration('Uncaught', function* (ctx, name) {
    yield ctx.scheduleActivity(name)
    return 'not reached'
  })
  rt.registerOrchestration('SleeperUnwatched', function* (ctx) {
    return yield ctx.scheduleActivity('SleepUnwatched', ctx.instanceId)
  })
  rt.registerOrchestration('Sleeper', function* (ctx) {
    return yield ctx.scheduleActivity('Sleep', ctx.instanceId)
  })
}

for (const [kind, open] of backends) {
  describe(`ActivityContext on ${kind}`, { concurrency: true }, () => {
    let store, rt, client
    const start = async (name, input) => {
      const instanceId = uniqueName(`${kind}-${name}`)
      await client.startOrchestration(instanceId, name, input)
      return instanceId
    }
    const run = async (name, input) => {
      const instanceId = await start(name, input)
      const s = await client.waitForOrchestration(instanceId, 20000)
      assert.equal(s.status, 'Completed', `${name} ended ${s.status}: ${s.error}`)
      return { instanceId, output: s.output }
    }

    before(async () => ({ store, rt, client } = await startSuiteRuntime(open, register, {
        ...FAST,
        workerConcurrency: 4,
        // Untagged and 'blue' activities both run here.
        workerTagFilter: { defaultAnd: ['blue'] },
        workerLockTimeoutMs: 2000,
        workerLockRenewalBufferMs: 500,
      })))
    after(() => stopSuiteRuntime({ store, rt }))

    test('every property and method of ActivityContext', async () => {
      const { instanceId, output } = await run('Inspector')
      const common = {
        instanceId,
        executionId: 1,
        orchestrationName: 'Inspector',
        orchestrationVersion: '1.2.3',
        activityName: 'Inspect',
        isCancelled: false,
        signal: true,
        selfStatus: 'Running',
      }
      for (const r of [output.plain, output.session, output.tagged]) {
        const { workerId, input, sessionId, tag, ...rest } = r
        assert.deepEqual(rest, common)
        assert.equal(typeof workerId, 'string')
        assert.ok(workerId.length > 0)
      }
      assert.deepEqual([output.plain.input, output.plain.sessionId, output.plain.tag], [{ n: 1 }, null, null])
      assert.deepEqual([output.session.sessionId, output.session.tag], ['sess-9', null])
      assert.deepEqual([output.tagged.sessionId, output.tagged.tag], [null, 'blue'])
    })

    test('getClient() returns a working Client on the same provider', async () => {
      const childId = uniqueName('spawned')
      const { output } = await run('Spawner', childId)
      assert.equal(output, childId)
      const child = await client.waitForOrchestration(childId, 20000)
      assert.deepEqual([child.status, child.output], ['Completed', 'spawned'])
    })

    test('undefined results arrive as null; a plain (non-async) function works', async () => {
      assert.deepEqual((await run('Values')).output, [null, 42])
    })

    test('throws, non-Error rejections and unencodable results fail the activity with a clear message', async () => {
      const { output } = await run('Failures')
      for (const [name, r] of Object.entries(output)) assert.ok('err' in r, `${name} should fail, got ${JSON.stringify(r)}`)
      const err = Object.fromEntries(Object.entries(output).map(([n, r]) => [n, r.err]))
      assert.equal(err.ThrowsError, 'kaput')
      assert.match(err.ThrowsTypeError, /Cannot read properties of null/)
      assert.equal(err.ThrowsSync, 'thrown synchronously')
      assert.match(err.RejectsString, /just a string/)
      assert.match(err.RejectsNumber, /RejectsNumber.*non-Error.*42/)
      assert.match(err.RejectsObject, /RejectsObject.*non-Error.*E_OBJ.*structured/)
      assert.match(err.RejectsNull, /RejectsNull.*non-Error.*null/)
      assert.match(err.RejectsUndefined, /RejectsUndefined.*non-Error.*undefined/)
      assert.match(err.ReturnsBigInt, /ReturnsBigInt.*JSON.*BigInt/)
      assert.match(err.ReturnsBigIntDeep, /ReturnsBigIntDeep.*JSON.*BigInt/)
      assert.match(err.ReturnsCycle, /ReturnsCycle.*JSON.*circular/i)
      assert.match(err.ReturnsFunction, /ReturnsFunction.*JSON.*function/)
      assert.match(err.ReturnsSymbol, /ReturnsSymbol.*JSON.*symbol/)
      assert.deepEqual(unhandled, [])
    })

    test('an uncaught activity failure fails the orchestration with its message', async () => {
      for (const [name, pattern] of [['ThrowsError', /kaput/], ['ReturnsCycle', /circular/i], ['RejectsObject', /E_OBJ/]]) {
        const instanceId = await start('Uncaught', name)
        const s = await client.waitForOrchestration(instanceId, 20000)
        assert.equal(s.status, 'Failed')
        assert.match(s.error, pattern)
      }
    })

    test('signal aborts and isCancelled turns true when the orchestration is cancelled', async () => {
      const instanceId = await start('Sleeper')
      await eventually(() => running.has(instanceId), { what: 'the activity to start' })
      await client.cancelInstance(instanceId, 'stop it')
      const seen = await eventually(() => aborted.get(instanceId), { what: 'the abort' })
      assert.deepEqual(seen, { isCancelled: true, aborted: true })
      const s = await client.waitForOrchestration(instanceId, 20000)
      assert.equal(s.status, 'Failed')
      assert.match(s.error, /stop it/)
    })

    test('a signal first read after the cancellation is already aborted, with the reason', async () => {
      const instanceId = await start('SleeperUnwatched')
      await eventually(() => running.has(instanceId), { what: 'the activity to start' })
      await client.cancelInstance(instanceId, 'stop it')
      const seen = await eventually(() => aborted.get(instanceId), { what: 'the activity to see its cancellation' })
      assert.deepEqual(seen, { aborted: true, reason: 'Error: activity cancelled', same: true })
    })
  })
}
