'use strict'
// Client basics: starting (plain and versioned), status, waiting, events,
// cancellation, status-change waits, typed aliases and argument errors.
const { describe, test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { backends, FAST, eventually, uniqueName } = require('./helpers')
const { startSuiteRuntime, stopSuiteRuntime } = require('./fixtures/store')
const { Client, OrchestrationFailedError } = require('..')

function register(rt) {
  rt.registerOrchestration('Echo', function* (ctx, input) {
    return { input, version: ctx.orchestrationVersion }
  })
  rt.registerOrchestrationVersioned('Versioned', '1.0.0', function* () { return 'v1' })
  rt.registerOrchestrationVersioned('Versioned', '1.5.0', function* () { return 'v1.5' })
  rt.registerOrchestration('Fails', function* (ctx, why) {
    throw new Error(`failed because ${why}`)
  })
  rt.registerOrchestration('Waits', function* (ctx) {
    ctx.setCustomStatus('waiting for go')
    const go = yield ctx.waitForEvent('go')
    const queued = yield ctx.dequeueEvent('q')
    return { go, queued }
  })
  rt.registerOrchestration('Steps', function* (ctx) {
    for (let i = 1; i <= 3; i++) {
      ctx.setCustomStatus(`step ${i}`)
      yield ctx.waitForEvent('next')
    }
    return 'stepped'
  })
}

for (const [kind, open] of backends) {
  describe(`Client on ${kind}`, { concurrency: true }, () => {
    let store, rt, client
    const id = (p) => uniqueName(`${kind}-${p}`)
    before(async () => ({ store, rt, client } = await startSuiteRuntime(open, register, FAST)))
    after(() => stopSuiteRuntime({ store, rt }))

    test('startOrchestration + waitForOrchestration: output parsed; getStatus keeps the JSON text', async () => {
      const i = id('echo')
      assert.equal(await client.startOrchestration(i, 'Echo', { a: [1, 2] }), undefined)
      const done = await client.waitForOrchestration(i)
      assert.equal(done.status, 'Completed')
      assert.deepEqual(done.output, { input: { a: [1, 2] }, version: '1.0.0' })
      assert.equal(typeof done.customStatusVersion, 'number')
      const s = await client.getStatus(i)
      assert.equal(s.status, 'Completed')
      assert.deepEqual(JSON.parse(s.output), done.output)
      assert.equal(s.error, undefined)
    })

    test('inputs: undefined arrives as null; strings and numbers round-trip', async () => {
      for (const [input, expected] of [[undefined, null], ['not json {', 'not json {'], [0, 0], ['"quoted"', '"quoted"']]) {
        const i = id('input')
        await client.startOrchestration(i, 'Echo', input)
        assert.deepEqual((await client.waitForOrchestration(i)).output.input, expected)
      }
    })

    test('startOrchestrationVersioned pins the version; plain start takes the latest', async () => {
      const pinned = id('v')
      const latest = id('v')
      await client.startOrchestrationVersioned(pinned, 'Versioned', null, '1.0.0')
      await client.startOrchestration(latest, 'Versioned')
      assert.equal((await client.waitForOrchestration(pinned)).output, 'v1')
      assert.equal((await client.waitForOrchestration(latest)).output, 'v1.5')
    })

    test('a failed instance: status Failed with the error message', async () => {
      const i = id('fails')
      await client.startOrchestration(i, 'Fails', 'reasons')
      const done = await client.waitForOrchestration(i)
      assert.equal(done.status, 'Failed')
      assert.equal(done.error, 'failed because reasons')
      assert.equal(done.output, undefined)
      assert.equal((await client.getStatus(i)).error, 'failed because reasons')
    })

    test('getStatus of an unknown instance is NotFound; waiting on a running one times out with ERR_TIMEOUT', async () => {
      assert.equal((await client.getStatus(id('nobody'))).status, 'NotFound')
      const i = id('slow')
      await client.startOrchestration(i, 'Waits')
      await eventually(async () => (await client.getStatus(i)).status === 'Running', { what: 'running' })
      await assert.rejects(client.waitForOrchestration(i, 50), (err) => err.code === 'ERR_TIMEOUT' && /50 ms/.test(err.message))
      await client.cancelInstance(i)
      assert.equal((await client.waitForOrchestration(i)).status, 'Failed')
    })

    test('raiseEvent and enqueueEvent deliver their data', async () => {
      const i = id('waits')
      await client.startOrchestration(i, 'Waits')
      // Queued messages persist until dequeued, so this one can go first.
      await client.enqueueEvent(i, 'q', ['queued', 1])
      await eventually(async () => (await client.getStatus(i)).customStatus === 'waiting for go', { what: 'the wait' })
      assert.equal((await client.getStatus(i)).status, 'Running')
      await client.raiseEvent(i, 'go', { go: true })
      const done = await client.waitForOrchestration(i)
      assert.deepEqual(done.output, { go: { go: true }, queued: ['queued', 1] })
      assert.equal(done.customStatus, 'waiting for go')
    })

    test('raiseEvent without data delivers null', async () => {
      const i = id('nodata')
      await client.startOrchestration(i, 'Waits')
      await client.enqueueEvent(i, 'q')
      await eventually(async () => (await client.getStatus(i)).customStatus === 'waiting for go', { what: 'the wait' })
      await client.raiseEvent(i, 'go')
      assert.deepEqual((await client.waitForOrchestration(i)).output, { go: null, queued: null })
    })

    test('cancelInstance fails a running instance with the reason', async () => {
      const i = id('cancel')
      await client.startOrchestration(i, 'Waits')
      await eventually(async () => (await client.getStatus(i)).status === 'Running', { what: 'running' })
      await client.cancelInstance(i, 'operator said so')
      const done = await client.waitForOrchestration(i)
      assert.equal(done.status, 'Failed')
      assert.match(done.error, /operator said so/)
    })

    test('waitForStatusChange returns each new custom status; times out with ERR_TIMEOUT', async () => {
      const i = id('steps')
      await client.startOrchestration(i, 'Steps')
      let version = 0
      for (let step = 1; step <= 3; step++) {
        const s = await client.waitForStatusChange(i, version, 10, 20000)
        assert.equal(s.customStatus, `step ${step}`)
        assert.ok(s.customStatusVersion > version)
        version = s.customStatusVersion
        if (step === 1) {
          await assert.rejects(client.waitForStatusChange(i, version, 10, 100), (err) => err.code === 'ERR_TIMEOUT')
        }
        await client.raiseEvent(i, 'next')
      }
      assert.equal((await client.waitForOrchestration(i)).output, 'stepped')
    })

    test('typed aliases: start, events and waitForOrchestrationTyped (rejects when Failed)', async () => {
      const ok = id('typed')
      await client.startOrchestrationTyped(ok, 'Echo', { n: 1 })
      assert.deepEqual(await client.waitForOrchestrationTyped(ok), { input: { n: 1 }, version: '1.0.0' })
      const v = id('typed-v')
      await client.startOrchestrationVersionedTyped(v, 'Versioned', null, '1.0.0')
      assert.equal(await client.waitForOrchestrationTyped(v), 'v1')
      const w = id('typed-w')
      await client.startOrchestration(w, 'Waits')
      await client.enqueueEventTyped(w, 'q', 7)
      await eventually(async () => (await client.getStatus(w)).customStatus === 'waiting for go', { what: 'the wait' })
      await client.raiseEventTyped(w, 'go', 8)
      assert.deepEqual(await client.waitForOrchestrationTyped(w), { go: 8, queued: 7 })
      const bad = id('typed-fail')
      await client.startOrchestration(bad, 'Fails', 'typed')
      await assert.rejects(client.waitForOrchestrationTyped(bad), (err) => {
        assert.ok(err instanceof OrchestrationFailedError)
        assert.equal(err.code, 'ERR_ORCHESTRATION_FAILED')
        assert.match(err.message, /failed because typed/)
        return true
      })
    })

    test('bad arguments are refused with ERR_INVALID_ARGUMENT naming them', async () => {
      const cases = [
        [() => client.startOrchestration('', 'Echo'), /instanceId/],
        [() => client.startOrchestration(5, 'Echo'), /instanceId/],
        [() => client.startOrchestration(id('x'), ''), /orchestrationName/],
        [() => client.startOrchestration('sub::1', 'Echo'), /reserved/],
        [() => client.startOrchestration(id('x'), 'Echo', 10n), /input cannot be encoded as JSON/],
        [() => client.startOrchestrationVersioned(id('x'), 'Echo', null, 'v2'), /version 'v2' is not semver/],
        [() => client.getStatus(''), /instanceId/],
        [() => client.waitForOrchestration(id('x'), -1), /timeoutMs/],
        [() => client.waitForStatusChange(id('x'), -1), /lastSeenVersion/],
        [() => client.raiseEvent(id('x'), ''), /eventName/],
        [() => client.enqueueEvent(id('x'), null), /queueName/],
        [() => client.cancelInstance(id('x'), 5), /reason/],
      ]
      for (const [fn, pattern] of cases) {
        await assert.rejects(fn(), (err) => {
          assert.equal(err.code, 'ERR_INVALID_ARGUMENT', err.message)
          assert.match(err.message, pattern)
          return true
        })
      }
      assert.throws(() => new Client({}), (err) => err.code === 'ERR_INVALID_ARGUMENT' && /SqliteProvider or PostgresProvider/.test(err.message))
    })
  })
}
