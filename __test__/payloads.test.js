'use strict'
// Payloads come back exactly on both stores: inputs, event and queue data,
// activity results, sub-orchestration and continue-as-new inputs and outputs,
// with NUL and every other control character and unpaired surrogates as
// JSON.stringify writes them. `maxPayloadBytes` refuses an oversized input or
// event at the call and fails an oversized result or output with a clear
// error; text stored as given refuses U+0000; a failure message holding it
// is stored with U+FFFD and stops nothing else.
const { describe, test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { backends, coded, scope, FAST, Client } = require('./helpers')
const dx = require('..')

const { Runtime } = dx

const CONTROLS = Array.from({ length: 0x20 }, (_, i) => String.fromCharCode(i)).join('') + '\u007f' + Array.from({ length: 0x20 }, (_, i) => String.fromCharCode(0x80 + i)).join('')
const STRINGS = ['x\u0000y', CONTROLS, 'lone \ud800 high', 'lone \udfff low', '\udc00\ud800 reversed', 'pair 😀 kept', '\\u0000 as text', '"quoted" \\ back']
/** What each test sends: every string alone and inside structures. */
const VALUES = [...STRINGS, { [CONTROLS]: STRINGS, nested: [{ s: 'x\u0000y' }, null, 1.5, -2, true] }, [STRINGS, ['\u0000']]]

const LIMIT = 4096

function register(rt) {
  rt.registerActivity('Echo', async (ctx, x) => x)
  rt.registerActivity('Big', async (ctx, n) => 'y'.repeat(n))
  rt.registerActivity('ClientLimit', async (ctx) => ctx.getClient().effectiveOptions().maxPayloadBytes)
  rt.registerActivity('Throw', async (ctx, message) => {
    throw new Error(message)
  })
  rt.registerOrchestration('Echo', function* (ctx, x) {
    return x
  })
  rt.registerOrchestration('Every', function* (ctx, x) {
    const activity = yield ctx.scheduleActivity('Echo', x)
    const sub = yield ctx.scheduleSubOrchestration('Echo', x)
    const event = yield ctx.waitForEvent('go')
    const queued = yield ctx.dequeueEvent('q')
    return { input: x, activity, sub, event, queued }
  })
  rt.registerOrchestration('ClientLimit', function* (ctx) {
    return yield ctx.scheduleActivity('ClientLimit', null)
  })
  rt.registerOrchestration('Again', function* (ctx, x) {
    if (!x.again) return x.value
    return yield ctx.continueAsNew({ again: false, value: x.value })
  })
  rt.registerOrchestration('BigInput', function* (ctx, n) {
    try {
      ctx.scheduleActivity('Echo', 'x'.repeat(n))
      return 'scheduled'
    } catch (err) {
      return { code: err.code, message: err.message }
    }
  })
  rt.registerOrchestration('BigResult', function* (ctx, n) {
    return (yield ctx.scheduleActivityWithRetry('Big', n, { maxAttempts: 3 })).length
  })
  rt.registerOrchestration('BigOutput', function* (ctx, n) {
    return 'z'.repeat(n)
  })
  rt.registerOrchestration('StoredText', function* (ctx, what) {
    try {
      if (what === 'value') ctx.setValue('k', 'a\u0000b')
      else if (what === 'status') ctx.setCustomStatus('a\u0000b')
      else ctx.setValue('k', 'x\ud800')
      return 'stored'
    } catch (err) {
      return { code: err.code, message: err.message }
    }
  })
  rt.registerOrchestration('Fails', function* (ctx, message) {
    return yield ctx.scheduleActivity('Throw', message)
  })
  rt.registerOrchestration('Throws', function* (ctx, message) {
    throw new Error(message)
  })
}

for (const [kind, open] of backends) {
  describe(`payloads on ${kind}`, () => {
    let client
    /** A store for constructors that refuse their options before using it. */
    let memory
    const t = scope()
    after(() => t.close())

    before(async () => {
      const store = await open(t)
      const rt = new Runtime(store.provider, { ...FAST, maxPayloadBytes: LIMIT })
      register(rt)
      await rt.start()
      t.after(() => rt.shutdown(1000))
      client = new Client(store.provider, { maxPayloadBytes: LIMIT })
      memory = await dx.SqliteProvider.inMemory()
    })

    test('every value round-trips through input, activity, sub-orchestration, event and queue', async () => {
      for (const [i, value] of VALUES.entries()) {
        const id = `every-${i}`
        await client.startOrchestration(id, 'Every', value)
        await client.enqueueEvent(id, 'q', value)
        // Raised once the instance waits: an event for an instance that has not run yet may be dropped.
        for (let n = 0; (await client.readExecutionHistory(id, 1).catch(() => [])).every((e) => e.kind !== 'ExternalSubscribed'); n++) {
          await new Promise((r) => setTimeout(r, 10))
        }
        await client.raiseEvent(id, 'go', value)
        const s = await client.waitForOrchestration(id, 20000)
        assert.equal(s.status, 'Completed', s.error)
        assert.deepStrictEqual(s.output, { input: value, activity: value, sub: value, event: value, queued: value }, JSON.stringify(value))
        // The raw status is the JSON text JSON.stringify writes.
        assert.equal((await client.getStatus(id)).output, JSON.stringify(s.output))
      }
      for (const [i, value] of VALUES.entries()) {
        await client.startOrchestration(`again-${i}`, 'Again', { again: true, value })
        assert.deepStrictEqual((await client.waitForOrchestration(`again-${i}`, 20000)).output, value)
      }
    })

    test('an input or event over maxPayloadBytes is refused at the call, and nothing is stored', async () => {
      assert.equal(client.effectiveOptions().maxPayloadBytes, LIMIT)
      const fits = 'x'.repeat(LIMIT - 2) // with its quotes, exactly LIMIT bytes of JSON
      const over = 'x'.repeat(LIMIT - 1)
      await assert.rejects(client.startOrchestration('big-in', 'Echo', over), coded('ERR_INVALID_ARGUMENT', 'input', `${LIMIT + 1} bytes`, `${LIMIT} bytes`, 'maxPayloadBytes'))
      await assert.rejects(client.startOrchestrationVersioned('big-in', 'Echo', over, '1.0.0'), coded('ERR_INVALID_ARGUMENT', 'input'))
      // Bytes of UTF-8, not characters.
      await assert.rejects(client.startOrchestration('big-in', 'Echo', '€'.repeat(LIMIT / 3)), coded('ERR_INVALID_ARGUMENT', 'input'))
      assert.equal((await client.getStatus('big-in')).status, 'NotFound')
      await client.startOrchestration('fits', 'Echo', fits)
      assert.equal((await client.waitForOrchestration('fits', 20000)).output, fits)
      await assert.rejects(client.raiseEvent('fits', 'go', over), coded('ERR_INVALID_ARGUMENT', 'data', 'maxPayloadBytes'))
      await assert.rejects(client.enqueueEvent('fits', 'q', over), coded('ERR_INVALID_ARGUMENT', 'data', 'maxPayloadBytes'))
      for (const bad of [0, -1, 1.5, '4096', 134217729]) {
        assert.throws(() => new Client(memory, { maxPayloadBytes: bad }), coded('ERR_INVALID_OPTION', 'maxPayloadBytes'))
        assert.throws(() => new Runtime(memory, { maxPayloadBytes: bad }), coded('ERR_INVALID_OPTION', 'maxPayloadBytes'))
      }
      assert.throws(() => new Client(memory, { maxPayload: 1 }), coded('ERR_INVALID_OPTION', 'maxPayload', 'maxPayloadBytes'))
      assert.equal(new Client(memory).effectiveOptions().maxPayloadBytes, dx.DEFAULT_MAX_PAYLOAD_BYTES)
    })

    test('a task input over the limit throws at the call; a result or output over it fails the orchestration', async () => {
      await client.startOrchestration('task-in', 'BigInput', LIMIT)
      const tried = (await client.waitForOrchestration('task-in', 20000)).output
      assert.equal(tried.code, 'ERR_INVALID_ARGUMENT')
      assert.match(tried.message, /^input is 4098 bytes of JSON, over the limit of 4096 bytes \(the maxPayloadBytes option\)$/)
      await client.startOrchestration('task-in-ok', 'BigInput', LIMIT - 2)
      assert.equal((await client.waitForOrchestration('task-in-ok', 20000)).output, 'scheduled')

      await client.startOrchestration('result', 'BigResult', LIMIT)
      const result = await client.waitForOrchestration('result', 20000)
      assert.equal(result.status, 'Failed')
      assert.equal(result.error, "the result of activity 'Big' is 4098 bytes of JSON, over the limit of 4096 bytes (the maxPayloadBytes option)")
      // Not retried: running the activity again gives the same result.
      const history = await client.readExecutionHistory('result', 1)
      assert.equal(history.filter((e) => e.kind === 'ActivityScheduled').length, 1)

      await client.startOrchestration('output', 'BigOutput', LIMIT)
      const output = await client.waitForOrchestration('output', 20000)
      assert.equal(output.status, 'Failed')
      assert.equal(output.error, "the orchestration's output is 4098 bytes of JSON, over the limit of 4096 bytes (the maxPayloadBytes option)")
      await client.startOrchestration('output-ok', 'BigOutput', LIMIT - 2)
      assert.equal((await client.waitForOrchestration('output-ok', 20000)).output.length, LIMIT - 2)
      // An activity's client has its runtime's limit.
      await client.startOrchestration('client-limit', 'ClientLimit', null)
      assert.equal((await client.waitForOrchestration('client-limit', 20000)).output, LIMIT)
    })

    test('text stored as given refuses U+0000 and unpaired surrogates at the call', async () => {
      for (const [what, shown] of [['value', 'value has U+0000 at index 1'], ['status', 'status has U+0000 at index 1'], ['surrogate', 'value is not well-formed Unicode']]) {
        await client.startOrchestration(`text-${what}`, 'StoredText', what)
        const s = await client.waitForOrchestration(`text-${what}`, 20000)
        assert.equal(s.output.code, 'ERR_INVALID_ARGUMENT', what)
        assert.ok(s.output.message.startsWith(shown), s.output.message)
      }
      await assert.rejects(client.cancelInstance('any', 'why\u0000'), coded('ERR_INVALID_ARGUMENT', 'reason', 'U+0000'))
    })

    test('a failure message holding U+0000 fails its instance alone, with U+FFFD in its place', async () => {
      await client.startOrchestration('fails', 'Fails', 'card\u0000declined\u001b')
      await client.startOrchestration('throws', 'Throws', 'bad\u0000thing')
      const fails = await client.waitForOrchestration('fails', 20000)
      assert.equal(fails.status, 'Failed')
      assert.equal(fails.error, 'card\ufffddeclined\u001b')
      const throws = await client.waitForOrchestration('throws', 20000)
      assert.equal(throws.error, 'bad\ufffdthing')
      assert.equal(throws.errorCategory, 'application')
      // Other instances go on.
      for (let i = 0; i < 3; i++) {
        await client.startOrchestration(`after-${i}`, 'Echo', i)
        assert.equal((await client.waitForOrchestration(`after-${i}`, 20000)).output, i)
      }
    })

    // Last: on SQLite a start made right after a cancellation can wait out
    // the long poll (a missed wake-up of the store, not of these rules).
    test('a cancel reason is stored as given, control characters but U+0000 included', async () => {
      await client.startOrchestration('cancel-me', 'Every', 1)
      await client.cancelInstance('cancel-me', 'why \u001b fine')
      const s = await client.waitForOrchestration('cancel-me', 20000)
      assert.equal(s.status, 'Failed')
      assert.ok(s.error.includes('why \u001b fine'), s.error)
    })
  })
}
