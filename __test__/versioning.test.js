'use strict'
// Orchestration versioning end to end, on a SQLite file and on Postgres: new
// instances start on the highest registered version, a running instance keeps
// its version across a restart that adds a newer one, continueAsNewVersioned
// moves an instance forward, and versioned sub-orchestrations and detached
// starts run the version they ask for.
const { describe, test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { backends, startRuntime, eventually, Client, FAST, DATABASE_URL, scope } = require('./helpers')
const { Runtime, SqliteProvider, PostgresProvider } = require('..')

function* flowV1(ctx) {
  ctx.setCustomStatus('v1 waiting')
  const e = yield ctx.waitForEvent('go')
  return { code: 'v1', version: ctx.orchestrationVersion, e }
}

/** Every version reports which code ran it. */
const versioned = (code) =>
  function* (ctx, input) {
    return { code, version: ctx.orchestrationVersion, input }
  }

function registerAll(rt) {
  rt.registerOrchestrationVersioned('Flow', '1.0.0', flowV1)
  rt.registerOrchestrationVersioned('Flow', '2.0.0', versioned('v2'))
  rt.registerOrchestrationVersioned('Calc', '1.0.0', versioned('calc-1'))
  rt.registerOrchestrationVersioned('Calc', '1.5.0', versioned('calc-1.5'))
  rt.registerOrchestrationVersioned('Calc', '2.0.0', versioned('calc-2'))
  // Execution 1 on 1.0.0 moves itself to 2.0.0.
  rt.registerOrchestrationVersioned('Upgrader', '1.0.0', function* (ctx, n) {
    return yield ctx.continueAsNewVersioned(n + 1, '2.0.0')
  })
  rt.registerOrchestrationVersioned('Upgrader', '2.0.0', function* (ctx, n) {
    return { n, version: ctx.orchestrationVersion, executionId: ctx.executionId }
  })
  rt.registerOrchestration('Parent', function* (ctx) {
    const latest = yield ctx.scheduleSubOrchestration('Calc', 'latest')
    const old = yield ctx.scheduleSubOrchestrationVersioned('Calc', '1.0.0', 'old')
    const mid = yield ctx.scheduleSubOrchestrationVersionedWithId('Calc', '1.5.0', `${ctx.instanceId}-mid`, 'mid')
    yield ctx.startOrchestrationVersioned('Calc', '1.0.0', `${ctx.instanceId}-detached-old`, 'detached')
    yield ctx.startOrchestration('Calc', `${ctx.instanceId}-detached-latest`, 'detached')
    return { latest, old, mid }
  })
}

async function reopen(kind, store) {
  return kind === 'sqlite'
    ? SqliteProvider.open(store.url)
    : PostgresProvider.connectWithSchema(DATABASE_URL, store.schema, { maxConnections: 4 })
}

for (const [kind, open] of backends) {
  describe(`versioning on ${kind}`, () => {
    let store
    let client
    const t = scope()
    after(() => t.close())

    before(async () => {
      store = await open(t)
      client = new Client(store.provider)
    })

    test('a running instance keeps its version across a restart that adds a newer one', async () => {
      const first = new Runtime(store.provider, FAST)
      first.registerOrchestrationVersioned('Flow', '1.0.0', flowV1)
      await first.start()
      try {
        await client.startOrchestration('flow-old', 'Flow', null)
        await eventually(async () => (await client.getStatus('flow-old')).customStatus === 'v1 waiting', { what: 'v1 waiting' })
      } finally {
        await first.shutdown(1000)
      }
      assert.equal((await client.getInstanceInfo('flow-old')).orchestrationVersion, '1.0.0')

      const provider = await reopen(kind, store)
      await startRuntime(t, provider, registerAll)
      const c2 = new Client(provider)
      await c2.raiseEvent('flow-old', 'go', 'late')
      const done = await c2.waitForOrchestration('flow-old', 20000)
      assert.equal(done.status, 'Completed', done.error)
      assert.deepEqual(done.output, { code: 'v1', version: '1.0.0', e: 'late' })
      const info = await c2.getInstanceInfo('flow-old')
      assert.equal(info.orchestrationVersion, '1.0.0')

      await c2.startOrchestration('flow-new', 'Flow', 'fresh')
      const fresh = await c2.waitForOrchestration('flow-new', 20000)
      assert.deepEqual(fresh.output, { code: 'v2', version: '2.0.0', input: 'fresh' })
      assert.equal((await c2.getInstanceInfo('flow-new')).orchestrationVersion, '2.0.0')
    })

    test('new instances start on the highest version; explicit versions are honoured', async () => {
      await client.startOrchestration('calc-latest', 'Calc', 1)
      await client.startOrchestrationVersioned('calc-old', 'Calc', 2, '1.0.0')
      await client.startOrchestrationVersioned('calc-mid', 'Calc', 3, '1.5.0')
      assert.deepEqual((await client.waitForOrchestration('calc-latest', 20000)).output, { code: 'calc-2', version: '2.0.0', input: 1 })
      assert.deepEqual((await client.waitForOrchestration('calc-old', 20000)).output, { code: 'calc-1', version: '1.0.0', input: 2 })
      assert.deepEqual((await client.waitForOrchestration('calc-mid', 20000)).output, { code: 'calc-1.5', version: '1.5.0', input: 3 })
      assert.equal((await client.getInstanceInfo('calc-mid')).orchestrationVersion, '1.5.0')
    })

    test('continueAsNewVersioned moves an instance to the new version', async () => {
      await client.startOrchestrationVersioned('upgrader', 'Upgrader', 1, '1.0.0')
      const done = await client.waitForOrchestration('upgrader', 20000)
      assert.deepEqual(done.output, { n: 2, version: '2.0.0', executionId: 2 })
      const info = await client.getInstanceInfo('upgrader')
      assert.equal(info.orchestrationVersion, '2.0.0')
      assert.equal(info.currentExecutionId, 2)
      const [started1] = await client.readExecutionHistory('upgrader', 1)
      const [started2] = await client.readExecutionHistory('upgrader', 2)
      assert.equal(JSON.parse(started1.data).version, '1.0.0')
      assert.equal(JSON.parse(started2.data).version, '2.0.0')
    })

    test('versioned sub-orchestrations and detached starts run the requested version', async () => {
      await client.startOrchestration('parent', 'Parent', null)
      const done = await client.waitForOrchestration('parent', 20000)
      assert.equal(done.status, 'Completed', done.error)
      assert.deepEqual(done.output, {
        latest: { code: 'calc-2', version: '2.0.0', input: 'latest' },
        old: { code: 'calc-1', version: '1.0.0', input: 'old' },
        mid: { code: 'calc-1.5', version: '1.5.0', input: 'mid' },
      })
      assert.equal((await client.getInstanceInfo('parent-mid')).orchestrationVersion, '1.5.0')
      assert.deepEqual((await client.waitForOrchestration('parent-detached-old', 20000)).output, { code: 'calc-1', version: '1.0.0', input: 'detached' })
      assert.deepEqual((await client.waitForOrchestration('parent-detached-latest', 20000)).output, { code: 'calc-2', version: '2.0.0', input: 'detached' })
      assert.equal((await client.getInstanceInfo('parent-detached-old')).orchestrationVersion, '1.0.0')
    })
  })
}
