'use strict'
// Every typed alias of api.md on Runtime, OrchestrationContext and Client
// exists, is the same operation as its plain form, and works end to end on
// Postgres (results arrive parsed either way).
const { describe, test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { pgSchema, clientWithRuntime, eventually, Client, scope } = require('./helpers')
const { Runtime, OrchestrationContext } = require('..')

const RUNTIME_ALIASES = ['registerActivity', 'registerOrchestration', 'registerOrchestrationVersioned']
const CONTEXT_ALIASES = [
  'scheduleActivity', 'scheduleActivityOnSession', 'scheduleActivityWithRetry', 'scheduleActivityWithRetryOnSession',
  'scheduleSubOrchestration', 'scheduleSubOrchestrationWithId', 'waitForEvent', 'dequeueEvent', 'startOrchestration',
  'startOrchestrationVersioned', 'continueAsNew', 'all', 'race',
]
const CLIENT_ALIASES = ['startOrchestration', 'startOrchestrationVersioned', 'raiseEvent', 'enqueueEvent']

test('each typed alias is its plain method', () => {
  for (const [cls, names] of [[Runtime, RUNTIME_ALIASES], [OrchestrationContext, CONTEXT_ALIASES], [Client, CLIENT_ALIASES]]) {
    for (const name of names) {
      assert.equal(typeof cls.prototype[`${name}Typed`], 'function', `${cls.name}.${name}Typed`)
      assert.equal(cls.prototype[`${name}Typed`], cls.prototype[name], `${cls.name}.${name}Typed behaves as ${name}`)
    }
  }
  assert.equal(typeof Client.prototype.waitForOrchestrationTyped, 'function')
})

function register(rt) {
  rt.registerActivityTyped('Add', async (ctx, { a, b }) => ({ sum: a + b, session: ctx.sessionId }))
  rt.registerActivityTyped('Fail', async () => {
    throw new Error('typed activity failed')
  })
  rt.registerOrchestrationTyped('Child', function* (ctx, { n }) {
    return { doubled: n * 2, version: ctx.orchestrationVersion }
  })
  rt.registerOrchestrationVersionedTyped('VChild', '1.0.0', function* (ctx, { n }) {
    return { n, version: ctx.orchestrationVersion }
  })
  rt.registerOrchestrationVersionedTyped('VChild', '2.0.0', function* (ctx, { n }) {
    return { n, version: ctx.orchestrationVersion }
  })
  rt.registerOrchestrationTyped('Typed', function* (ctx, input) {
    if (input.round === 1) return { ...input.carried, round: 1, executionId: ctx.executionId }
    const out = {}
    out.activity = yield ctx.scheduleActivityTyped('Add', { a: 1, b: 2 })
    out.onSession = yield ctx.scheduleActivityOnSessionTyped('Add', { a: 2, b: 2 }, 'sess-a')
    out.withRetry = yield ctx.scheduleActivityWithRetryTyped('Add', { a: 3, b: 3 }, { maxAttempts: 2 })
    out.withRetryOnSession = yield ctx.scheduleActivityWithRetryOnSessionTyped('Add', { a: 4, b: 4 }, { maxAttempts: 2 }, 'sess-b')
    out.sub = yield ctx.scheduleSubOrchestrationTyped('Child', { n: 5 })
    out.subWithId = yield ctx.scheduleSubOrchestrationWithIdTyped('Child', `${ctx.instanceId}-child`, { n: 6 })
    out.message = yield ctx.dequeueEventTyped('inbox')
    ctx.setCustomStatus('waiting-for-event')
    out.event = yield ctx.waitForEventTyped('signal')
    out.detached = yield ctx.startOrchestrationTyped('Child', `${ctx.instanceId}-detached`, { n: 7 })
    out.detachedVersioned = yield ctx.startOrchestrationVersionedTyped('VChild', '1.0.0', `${ctx.instanceId}-vdetached`, { n: 8 })
    out.all = yield ctx.allTyped([ctx.scheduleActivityTyped('Add', { a: 1, b: 1 }), ctx.scheduleActivityTyped('Fail', null)])
    out.race = yield ctx.raceTyped(ctx.scheduleActivityTyped('Add', { a: 5, b: 5 }), ctx.scheduleTimer(60000))
    return yield ctx.continueAsNewTyped({ round: 1, carried: out })
  })
  rt.registerOrchestrationTyped('Broken', function* () {
    throw new Error('typed orchestration failed')
  })
  rt.registerOrchestrationTyped('Slow', function* (ctx) {
    return yield ctx.waitForEventTyped('never')
  })
}

describe('typed aliases on postgres', () => {
  let client
  const t = scope()
  after(() => t.close())

  before(async () => {
    client = await clientWithRuntime(t, pgSchema, register)
  })

  test('context, runtime and client aliases run a whole orchestration', async () => {
    const id = 'typed-1'
    await client.startOrchestrationTyped(id, 'Typed', { round: 0 })
    await client.enqueueEventTyped(id, 'inbox', { m: [1, 2] })
    await eventually(async () => (await client.getStatus(id)).customStatus === 'waiting-for-event', { what: 'event subscription' })
    await client.raiseEventTyped(id, 'signal', { ok: true })
    const out = await client.waitForOrchestrationTyped(id, 20000)
    assert.deepEqual(out, {
      activity: { sum: 3, session: null },
      onSession: { sum: 4, session: 'sess-a' },
      withRetry: { sum: 6, session: null },
      withRetryOnSession: { sum: 8, session: 'sess-b' },
      sub: { doubled: 10, version: '1.0.0' },
      subWithId: { doubled: 12, version: '1.0.0' },
      message: { m: [1, 2] },
      event: { ok: true },
      detached: null,
      detachedVersioned: null,
      all: [{ ok: { sum: 2, session: null } }, { err: 'typed activity failed' }],
      race: { index: 0, value: { sum: 10, session: null } },
      round: 1,
      executionId: 2,
    })
    assert.deepEqual(await client.waitForOrchestrationTyped(`${id}-detached`, 20000), { doubled: 14, version: '1.0.0' })
    assert.deepEqual(await client.waitForOrchestrationTyped(`${id}-vdetached`, 20000), { n: 8, version: '1.0.0' })
  })

  test('startOrchestrationVersionedTyped starts the requested version', async () => {
    await client.startOrchestrationVersionedTyped('typed-v1', 'VChild', { n: 1 }, '1.0.0')
    await client.startOrchestrationTyped('typed-latest', 'VChild', { n: 2 })
    assert.deepEqual(await client.waitForOrchestrationTyped('typed-v1', 20000), { n: 1, version: '1.0.0' })
    assert.deepEqual(await client.waitForOrchestrationTyped('typed-latest', 20000), { n: 2, version: '2.0.0' })
  })

  test('waitForOrchestrationTyped returns the parsed output; the plain form wraps it', async () => {
    await client.startOrchestration('typed-plain', 'Child', { n: 21 })
    const plain = await client.waitForOrchestration('typed-plain', 20000)
    assert.equal(plain.status, 'Completed')
    assert.deepEqual(plain.output, { doubled: 42, version: '1.0.0' })
    assert.deepEqual(await client.waitForOrchestrationTyped('typed-plain', 20000), plain.output)
  })

  test('waitForOrchestrationTyped rejects when the orchestration failed', async () => {
    await client.startOrchestrationTyped('typed-broken', 'Broken', null)
    await assert.rejects(client.waitForOrchestrationTyped('typed-broken', 20000), (err) => {
      assert.equal(err.code, 'ERR_ORCHESTRATION_FAILED')
      assert.ok(err.message.includes('typed orchestration failed'), err.message)
      assert.ok(err.message.includes('typed-broken'), err.message)
      return true
    })
  })

  test('waitForOrchestrationTyped rejects with ERR_TIMEOUT while still running', async () => {
    await client.startOrchestrationTyped('typed-slow', 'Slow', null)
    await eventually(async () => (await client.getStatus('typed-slow')).status === 'Running', { what: 'slow running' })
    await assert.rejects(client.waitForOrchestrationTyped('typed-slow', 100), (err) => err.code === 'ERR_TIMEOUT')
  })
})
