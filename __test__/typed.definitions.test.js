'use strict'
// The typed definitions end to end on SQLite and Postgres: `yield*` gives
// each task's result, join/all/race keep their shapes, child orchestrations
// run by definition (pinned version), typed custom status and KV read back as
// set, continue-as-new carries the input, and a typed handle starts, reads
// and raises. Bad definitions fail with a code naming what was wrong.
const { describe, test } = require('node:test')
const assert = require('node:assert/strict')
const { backends, clientWithRuntime, coded } = require('./helpers')
const dts = require('./dts')

/** The value conforms to the declared TypedOrchestrationStatus union (fields exact). */
const conformsToStatus = (s) => assert.deepEqual(dts.conformsTo(s, 'TypedOrchestrationStatus'), [], JSON.stringify(s))
const {
  Runtime,
  SqliteProvider,
  OrchestrationContext,
  defineActivity,
  defineOrchestration,
  defineEvent,
  defineStatus,
  defineKey,
} = require('..')

const charge = defineActivity('Charge', async (ctx, o) => ({ orderId: o.id, amount: o.amount, at: new Date(0) }))
const boom = defineActivity('Boom', async (ctx, why) => {
  throw new Error(`boom: ${why}`)
})
const approved = defineEvent('approved')
const inbox = defineEvent('inbox')
const progress = defineStatus()
const cartKey = defineKey('cart')
const textKey = defineKey('text')

const refundV1 = defineOrchestration('Refund', { version: '1.0.0' }, function* (ctx, r) {
  return { refunded: r.orderId, version: ctx.orchestrationVersion }
})
const refundV2 = defineOrchestration('Refund', { version: '2.0.0' }, function* (ctx, r) {
  return { refunded: r.orderId, version: ctx.orchestrationVersion }
})

const checkout = defineOrchestration('Checkout', { status: progress }, function* (ctx, o) {
  ctx.setCustomStatus(progress, { step: 'charging' })
  ctx.setValue(cartKey, { items: 2 })
  ctx.setValue(textKey, '42') // a typed key stores strings as JSON too
  const out = {}
  out.receipt = yield* ctx.call(charge, o)
  out.joined = yield* ctx.join([ctx.call(charge, { id: 'j', amount: 1 }), ctx.timer(5)])
  out.plainJoin = yield ctx.join([ctx.timer(1), ctx.call(charge, { id: 'p', amount: 2 })])
  out.all = yield* ctx.all([ctx.call(charge, { id: 'a', amount: 3 }), ctx.call(boom, 'in all')])
  try {
    yield* ctx.join([ctx.timer(1), ctx.call(boom, 'first'), ctx.call(boom, 'second')])
    out.joinFailure = 'none'
  } catch (err) {
    out.joinFailure = err.message
  }
  out.childV1 = yield* ctx.callOrchestration(refundV1, out.receipt)
  out.childLatest = yield* ctx.callOrchestration(refundV2, out.receipt, { instanceId: `${ctx.instanceId}-refund` })
  out.detached = yield* ctx.startDetached(refundV1, `${ctx.instanceId}-detached`, out.receipt)
  out.timerRace = yield* ctx.race(ctx.waitFor(approved), ctx.timer(10))
  out.message = yield* ctx.dequeue(inbox)
  ctx.setCustomStatus(progress, { step: 'waiting' })
  out.eventRace = yield* ctx.race(ctx.waitFor(approved), ctx.timer(60_000))
  out.status = ctx.getCustomStatus(progress)
  out.cart = ctx.getValue(cartKey)
  out.text = ctx.getValue(textKey)
  out.textRaw = ctx.getValue('text')
  ctx.setCustomStatus(progress, { step: 'done' })
  return out
})

const counter = defineOrchestration('Counter', function* (ctx, n) {
  if (n.count < 3) return yield* ctx.continueAsNew({ count: n.count + 1 })
  return { count: n.count, executionId: ctx.executionId }
})

const defs = [charge, boom, refundV1, refundV2, checkout, counter]

for (const [backend, open] of backends) {
  describe(`typed definitions on ${backend}`, () => {
    test('the order-checkout flow: typed start, yield* results, status, KV, raise, result', async (t) => {
      const client = await clientWithRuntime(t, open, (rt) => rt.register(...defs))
      const h = await client.start(checkout, 'order-1', { id: 'o-1', amount: 5 })
      assert.equal(h.instanceId, 'order-1')
      assert.equal(h.definition, checkout)
      await client.enqueue('order-1', inbox, { text: 'hello' })

      // Raise only once the orchestration waits (a one-shot event raised
      // earlier is not delivered): watch the typed custom status.
      let s = await h.status()
      while (!(s.customStatus && s.customStatus.step === 'waiting') && s.status !== 'Completed' && s.status !== 'Failed') {
        s = await h.waitForStatusChange(s.customStatusVersion, { timeoutMs: 20000, signal: AbortSignal.timeout(30000) })
      }
      assert.deepEqual(s.customStatus, { step: 'waiting' }, 'the custom status arrives parsed')
      assert.equal(s.status, 'Running')
      assert.equal('output' in s, false)
      conformsToStatus(s)
      await client.raise('order-1', approved, { by: 'ann' })

      const out = await h.result({ signal: AbortSignal.timeout(30000) })
      const receipt = { orderId: 'o-1', amount: 5, at: '1970-01-01T00:00:00.000Z' }
      assert.deepEqual(out.receipt, receipt, 'yield* ctx.call gives the activity output as it survives JSON')
      assert.deepEqual(out.joined, [{ orderId: 'j', amount: 1, at: receipt.at }, null], 'join gives the values in order')
      assert.deepEqual(out.plainJoin, [null, { orderId: 'p', amount: 2, at: receipt.at }], 'a plain yield of join gives the same values')
      assert.deepEqual(out.all, [{ ok: { orderId: 'a', amount: 3, at: receipt.at } }, { err: 'boom: in all' }], 'all keeps its { ok } | { err } shape')
      assert.match(out.joinFailure, /boom: first/, 'join throws the first failure in task order')
      assert.deepEqual(out.childV1, { refunded: 'o-1', version: '1.0.0' }, 'a versioned definition calls its own version')
      assert.deepEqual(out.childLatest, { refunded: 'o-1', version: '2.0.0' })
      assert.deepEqual(out.timerRace, { index: 1, value: null }, 'race: the timer won at index 1')
      assert.deepEqual(out.message, { text: 'hello' })
      assert.deepEqual(out.eventRace, { index: 0, value: { by: 'ann' } }, 'race: the event won at index 0')
      assert.deepEqual(out.status, { step: 'waiting' })
      assert.deepEqual(out.cart, { items: 2 })
      assert.equal(out.text, '42', 'a typed string key reads back as the string set')
      assert.equal(out.textRaw, '"42"', 'and is stored as JSON')

      const done = await h.status()
      assert.equal(done.status, 'Completed')
      assert.deepEqual(done.output, out, 'the handle parses the output')
      assert.deepEqual(done.customStatus, { step: 'done' })
      conformsToStatus(done)
      for await (const info of client.list({ name: 'Checkout' })) assert.deepEqual(dts.conformsTo(info, 'InstanceInfo'), [])
      assert.deepEqual(await h.value(cartKey), { items: 2 })
      assert.deepEqual(await client.getValue('order-1', cartKey), { items: 2 })
      assert.equal(await client.getValue('order-1', 'cart'), '{"items":2}', 'the string-named read is unchanged')
      const child = await client.handle(refundV2, 'order-1-refund').status()
      assert.deepEqual(child.output, { refunded: 'o-1', version: '2.0.0' })
      assert.equal(out.detached, null)
      const detached = await client.handle(refundV1, 'order-1-detached').result({ timeoutMs: 30000 })
      assert.deepEqual(detached, { refunded: 'o-1', version: '1.0.0' }, 'startDetached starts the definition at its version')
    })

    test('typed continue-as-new carries the input to the next execution', async (t) => {
      const client = await clientWithRuntime(t, open, (rt) => rt.register(...defs))
      const h = await client.start(counter, 'counter-1', { count: 0 })
      assert.deepEqual(await h.result({ timeoutMs: 30000 }), { count: 3, executionId: 4 })
    })

    test('a failed orchestration rejects result() with OrchestrationFailedError', async (t) => {
      const failing = defineOrchestration('Failing', function* (ctx) {
        yield* ctx.call(boom, 'in orchestration')
      })
      const client = await clientWithRuntime(t, open, (rt) => rt.register(boom, failing))
      const h = await client.start(failing, 'fail-1')
      await assert.rejects(h.result({ timeoutMs: 30000 }), coded('ERR_ORCHESTRATION_FAILED', 'fail-1', 'boom: in orchestration'))
      const s = await h.wait()
      assert.equal(s.status, 'Failed')
      conformsToStatus(s)
      assert.match(s.error, /boom: in orchestration/)
    })
  })
}

describe('definitions', () => {
  test('tasks are iterable: yield* yields the task itself once', () => {
    const ctx = Object.create(OrchestrationContext.prototype)
    const task = ctx.scheduleTimer(5)
    const it = task[Symbol.iterator]()
    const first = it.next()
    assert.equal(first.done, false)
    assert.equal(first.value, task, 'the driver sees the same single task')
    assert.deepEqual(it.next('result'), { done: true, value: 'result' })
  })

  test('define* refuse bad arguments with ERR_INVALID_ARGUMENT naming them', () => {
    assert.throws(() => defineActivity(42, async () => {}), coded('ERR_INVALID_ARGUMENT', 'name'))
    assert.throws(() => defineActivity('A', 'nope'), coded('ERR_INVALID_ARGUMENT', "activity 'A'"))
    assert.throws(() => defineOrchestration('O', async function () {}), coded('ERR_INVALID_ARGUMENT', "orchestration 'O'", 'generator'))
    assert.throws(() => defineOrchestration('O', { versoin: '1.0.0' }, function* () {}), coded('ERR_INVALID_ARGUMENT', 'versoin'))
    assert.throws(() => defineOrchestration('O', { status: {} }, function* () {}), coded('ERR_INVALID_ARGUMENT', 'defineStatus'))
    assert.throws(() => defineEvent(undefined), coded('ERR_INVALID_ARGUMENT', 'name'))
    assert.throws(() => defineKey(''), coded('ERR_INVALID_ARGUMENT', 'key'))
  })

  test('ctx helpers refuse what is not a definition, and unknown options', () => {
    const ctx = Object.create(OrchestrationContext.prototype)
    assert.throws(() => ctx.call('Charge', 1), coded('ERR_INVALID_ARGUMENT', 'defineActivity', 'string-named'))
    assert.throws(() => ctx.call(approved, 1), coded('ERR_INVALID_ARGUMENT', 'defineActivity'))
    assert.throws(() => ctx.call(charge, 1, { retries: 3 }), coded('ERR_INVALID_ARGUMENT', 'retries'))
    assert.throws(() => ctx.callOrchestration(charge, 1), coded('ERR_INVALID_ARGUMENT', 'defineOrchestration'))
    assert.throws(() => ctx.waitFor('approved'), coded('ERR_INVALID_ARGUMENT', 'defineEvent'))
    assert.throws(() => ctx.join('nope'), coded('ERR_INVALID_ARGUMENT', 'join()'))
  })

  test('runtime.register registers definitions and refuses anything else', async () => {
    const rt = new Runtime(await SqliteProvider.inMemory())
    assert.equal(rt.register(charge, refundV1, refundV2), rt)
    assert.throws(() => rt.register(approved), coded('ERR_INVALID_ARGUMENT', 'argument 0', 'not an activity or orchestration definition'))
    assert.throws(() => rt.register(charge), (err) => err.code !== undefined && /Charge/.test(err.message), 'a second registration of a name is refused as before')
    await rt.shutdown(0)
  })
})
