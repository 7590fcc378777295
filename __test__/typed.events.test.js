'use strict'
// Typed events are not lost when they arrive early: `client.raise(id, ev, x)`
// is kept until the instance's next `ctx.waitFor(ev)` takes it, in order and
// across continue-as-new; a waitFor that loses a race takes nothing. The
// string-named raiseEvent/waitForEvent keep duroxide's one-shot semantics.
// Instances whose histories recorded typed waits as one-shot waits (the
// mapping before this) still replay and still get their events. On SQLite
// and Postgres.
const { describe, test } = require('node:test')
const assert = require('node:assert/strict')
const { backends, startRuntime, eventually, FAST } = require('./helpers')
const { Client, Runtime, defineEvent, defineOrchestration } = require('..')
const { replayHistory } = require('../testing')

const go = defineEvent('go')

const collect = defineOrchestration('Collect', function* (ctx, n) {
  const got = []
  for (let i = 0; i < n; i++) got.push(yield* ctx.waitFor(go))
  return got
})

// Takes one event per execution, then continues as new until it has `n`.
const chain = defineOrchestration('Chain', function* (ctx, state) {
  const got = [...state.got, yield* ctx.waitFor(go)]
  if (got.length < state.n) return yield* ctx.continueAsNewTyped({ n: state.n, got })
  return got
})

// A wait that loses a race to a timer, then a wait that takes the event.
const raced = defineOrchestration('Raced', function* (ctx) {
  const first = yield ctx.race(ctx.waitFor(go), ctx.timer(1))
  ctx.setCustomStatus('raced')
  const second = yield* ctx.waitFor(go)
  return { first: first.index, second }
})

// Both events are kept before the race: the losing wait had a claim on the
// 'other' event and must give it back to the next wait.
const other = defineEvent('other')
const twoKept = defineOrchestration('TwoKept', function* (ctx) {
  const first = yield ctx.race(ctx.waitFor(go), ctx.waitFor(other))
  const next = yield* ctx.waitFor(other)
  return { first: first.index, value: first.value, next }
})

// The string-named wait, raced with a timer: an event raised (and taken in
// by a turn) before the wait was open is dropped, as duroxide drops it.
const next = defineEvent('next')
const oneShot = defineOrchestration('OneShot', function* (ctx) {
  ctx.setCustomStatus('ready')
  yield* ctx.waitFor(next)
  const r = yield ctx.race(ctx.waitForEvent('go'), ctx.timer(300))
  return r.index === 0 ? 'event' : 'timer'
})

const register = (rt) => rt.register(collect, chain, raced, twoKept, oneShot)

async function statusReaches(handle, wanted) {
  let s = await handle.status()
  while (s.customStatus !== wanted) s = await handle.waitForStatusChange(s.customStatusVersion, { timeoutMs: 20000 })
}

for (const [backend, open] of backends) {
  describe(`typed events on ${backend}`, () => {
    test('events raised before the instance waits are kept, in order', async (t) => {
      const store = await open(t)
      const client = new Client(store.provider)
      // Raised while the start still waits in the queue (no runtime yet).
      const h = await client.start(collect, 'early', 3)
      for (const n of [1, 2, 3]) await client.raise('early', go, n)
      await startRuntime(t, store.provider, register)
      assert.deepEqual(await h.result({ timeoutMs: 20000 }), [1, 2, 3])
      const kinds = (await client.readExecutionHistory('early', 1)).map((e) => e.kind)
      assert.ok(kinds.includes('QueueSubscribed') && !kinds.includes('ExternalSubscribed'), kinds.join(' '))
    })

    test('kept events carry across continue-as-new', async (t) => {
      const store = await open(t)
      const client = new Client(store.provider)
      const h = await client.start(chain, 'chained', { n: 2, got: [] })
      await client.raise('chained', go, 'a')
      await client.raise('chained', go, 'b')
      await startRuntime(t, store.provider, register)
      assert.deepEqual(await h.result({ timeoutMs: 20000 }), ['a', 'b'])
      assert.deepEqual(await client.listExecutions('chained'), [1, 2])
    })

    test('a waitFor that loses a race takes nothing; the next wait gets the event', async (t) => {
      const store = await open(t)
      await startRuntime(t, store.provider, register)
      const client = new Client(store.provider)
      const h = await client.start(raced, 'raced', null)
      await statusReaches(h, 'raced')
      await client.raise('raced', go, 'late')
      assert.deepEqual(await h.result({ timeoutMs: 20000 }), { first: 1, second: 'late' })
    })

    test('a waitFor that loses a race to another kept event leaves its own event for the next wait', async (t) => {
      const store = await open(t)
      const client = new Client(store.provider)
      const h = await client.start(twoKept, 'two-kept', null)
      await client.raise('two-kept', go, 'g')
      await client.raise('two-kept', other, 'o')
      await startRuntime(t, store.provider, register)
      assert.deepEqual(await h.result({ timeoutMs: 20000 }), { first: 0, value: 'g', next: 'o' })
    })

    test('raiseEvent before waitForEvent opens is dropped (duroxide semantics, unchanged)', async (t) => {
      const store = await open(t)
      await startRuntime(t, store.provider, register)
      const client = new Client(store.provider)
      const h = await client.start(oneShot, 'one-shot', null)
      await statusReaches(h, 'ready')
      await client.raiseEvent('one-shot', 'go', 1)
      await eventually(async () => (await client.readExecutionHistory('one-shot', 1)).some((e) => e.kind === 'ExternalEvent'), {
        what: 'the event in history',
      })
      await client.raise('one-shot', next, null)
      assert.equal(await h.result({ timeoutMs: 20000 }), 'timer')
    })
  })
}

// Before typed waits used the mailbox, `ctx.waitFor(ev)` was exactly
// `ctx.waitForEvent(ev.name)`; this orchestration records those histories.
function* legacyBody(ctx) {
  ctx.setCustomStatus('first')
  const a = yield ctx.waitForEvent('go')
  ctx.setCustomStatus('second')
  const b = yield ctx.waitForEvent('go')
  return [a, b]
}
function* typedBody(ctx) {
  ctx.setCustomStatus('first')
  const a = yield* ctx.waitFor(go)
  ctx.setCustomStatus('second')
  const b = yield* ctx.waitFor(go)
  return [a, b]
}

for (const [backend, open] of backends) {
  test(`histories recorded by the one-shot mapping still replay and get their events (${backend})`, async (t) => {
    const store = await open(t)
    const client = new Client(store.provider)
    const old = new Runtime(store.provider, FAST).registerOrchestration('Approval', legacyBody)
    await old.start()
    await client.startOrchestration('legacy', 'Approval', null)
    await client.startOrchestration('legacy-2', 'Approval', null)
    const typed = client.handle(defineOrchestration('Approval', typedBody), 'legacy')
    await statusReaches(typed, 'first')
    await statusReaches(client.handle(defineOrchestration('Approval', typedBody), 'legacy-2'), 'first')
    await old.shutdown(1000)

    // The recorded one-shot wait replays against today's typed code.
    const kinds = (await client.readExecutionHistory('legacy', 1)).map((e) => e.kind)
    assert.ok(kinds.includes('ExternalSubscribed'), `the old mapping recorded a one-shot wait: ${kinds}`)
    const history = await client.exportHistory('legacy')
    const check = new Runtime(store.provider).registerOrchestration('Approval', typedBody)
    assert.deepEqual(await replayHistory(check, history), { ok: true })

    for (const cacheSize of [undefined, 0]) {
      const id = cacheSize === 0 ? 'legacy-2' : 'legacy'
      const rt = await startRuntime(t, store.provider, (r) => r.registerOrchestration('Approval', typedBody), { orchestrationCacheSize: cacheSize })
      const h = client.handle(defineOrchestration('Approval', typedBody), id)
      // The open one-shot wait gets the first raise; the next wait, past the
      // recorded history, takes from the mailbox, where the second raise
      // (made before the instance took the first) is kept.
      await client.raise(id, go, 'a')
      await client.raise(id, go, 'b')
      assert.deepEqual(await h.result({ timeoutMs: 20000 }), ['a', 'b'])
      assert.deepEqual((await client.readExecutionHistory(id, 1)).filter((e) => /Subscribed/.test(e.kind)).map((e) => e.kind), [
        'ExternalSubscribed',
        'QueueSubscribed',
      ])
      await rt.shutdown(1000)
    }
  })
}
