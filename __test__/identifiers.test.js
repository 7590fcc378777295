'use strict'
// One identifier rule at every entry point, the same on both stores: ids and
// names are non-empty, well-formed Unicode without control characters, of at
// most MAX_IDENTIFIER_BYTES UTF-8 bytes. Anything else is refused at the call
// with ERR_INVALID_ARGUMENT naming the argument and the rule; nothing is
// stored, no two strings name one instance, and no start waits forever on a
// name no handler can have.
const { describe, test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { backends, coded, scope, FAST, Client } = require('./helpers')
const dx = require('..')

const { Runtime, MAX_IDENTIFIER_BYTES } = dx
const RULE = 'an identifier is a non-empty, well-formed Unicode string without control characters (C0, DEL, C1) of at most 1000 UTF-8 bytes'

/** Strings every entry point refuses, and what the message says about each. */
const BAD = [
  ['a\u0000b', 'U+0000 at index 1'],
  ['Ec\u0000ho', 'U+0000 at index 2'],
  ['\u001b]0;title\u0007', 'U+001B at index 0'],
  ['tab\there', 'U+0009'],
  ['del\u007f', 'U+007F'],
  ['c1\u009b', 'U+009B'],
  ['x'.repeat(12 * 1024), '12288 bytes of UTF-8'],
  ['€'.repeat(334), '1002 bytes of UTF-8'],
  ['x\ud800y', 'unpaired surrogate U+D800 at index 1'],
  ['x\udc00y', 'unpaired surrogate U+DC00 at index 1'],
]

/** Valid at the edges: the byte limit in multibyte characters, spaces, symbols, astral characters. */
const GOOD = ['x'.repeat(MAX_IDENTIFIER_BYTES), '€'.repeat(333) + 'x', ' spaced id ', 'order/42?#&%', 'émoji 😀 名前', '\u200b\u202e']

const PARTS = (bad, shown) => (bad.includes('\ud800') || bad.includes('\udc00') ? [shown] : [shown, RULE])

function register(rt) {
  rt.registerActivity('Echo', async (ctx, x) => x)
  rt.registerOrchestration('Echo', function* (ctx, x) {
    return x
  })
  // Tries `call(ctx)` inside an orchestration; resolves to the error it threw or 'ok'.
  rt.registerOrchestration('Try', function* (ctx, { what, value }) {
    try {
      CALLS[what](ctx, value)
      return 'ok'
    } catch (err) {
      return { code: err.code, message: err.message }
    }
  })
  rt.registerOrchestration('WaitFor', function* (ctx, name) {
    return yield ctx.waitForEvent(name)
  })
  rt.registerOrchestration('Parent', function* (ctx) {
    return yield ctx.scheduleSubOrchestration('WaitFor', 'go')
  })
  rt.registerOrchestration('Names', function* (ctx, names) {
    const out = []
    for (const n of names) out.push(yield ctx.scheduleActivity('Echo', n))
    return out
  })
}

/** Every orchestration-context call that takes an identifier, by the argument it names. */
const CALLS = {
  'activity name': (ctx, v) => ctx.scheduleActivity(v, null),
  'activity name with retry': (ctx, v) => ctx.scheduleActivityWithRetry(v, null, { maxAttempts: 2 }),
  sessionId: (ctx, v) => ctx.scheduleActivityOnSession('Echo', null, v),
  tag: (ctx, v) => ctx.scheduleActivity('Echo', null).withTag(v),
  'event name': (ctx, v) => ctx.waitForEvent(v),
  'queue name': (ctx, v) => ctx.dequeueEvent(v),
  'sub-orchestration name': (ctx, v) => ctx.scheduleSubOrchestration(v, null),
  'sub-orchestration id': (ctx, v) => ctx.scheduleSubOrchestrationWithId('Echo', v, null),
  'detached name': (ctx, v) => ctx.startOrchestration(v, 'detached-x', null),
  'detached id': (ctx, v) => ctx.startOrchestration('Echo', v, null),
  'KV key': (ctx, v) => ctx.setValue(v, 'x'),
}

for (const [kind, open] of backends) {
  describe(`identifiers on ${kind}`, () => {
    let client
    let store
    const t = scope()
    after(() => t.close())

    before(async () => {
      store = await open(t)
      const rt = new Runtime(store.provider, FAST)
      register(rt)
      await rt.start()
      t.after(() => rt.shutdown(1000))
      client = new Client(store.provider)
    })

    test('the client refuses every bad id and name at the call, storing nothing', async () => {
      for (const [bad, shown] of BAD) {
        const parts = PARTS(bad, shown)
        await assert.rejects(client.startOrchestration(bad, 'Echo', 1), coded('ERR_INVALID_ARGUMENT', 'instanceId', ...parts))
        await assert.rejects(client.startOrchestrationVersioned(bad, 'Echo', 1, '1.0.0'), coded('ERR_INVALID_ARGUMENT', 'instanceId', ...parts))
        await assert.rejects(client.startOrchestration('ok-id', bad, 1), coded('ERR_INVALID_ARGUMENT', 'orchestrationName', ...parts))
        await assert.rejects(client.raiseEvent(bad, 'go', 1), coded('ERR_INVALID_ARGUMENT', 'instanceId', ...parts))
        await assert.rejects(client.raiseEvent('ok-id', bad, 1), coded('ERR_INVALID_ARGUMENT', 'eventName', ...parts))
        await assert.rejects(client.enqueueEvent(bad, 'q', 1), coded('ERR_INVALID_ARGUMENT', 'instanceId', ...parts))
        await assert.rejects(client.enqueueEvent('ok-id', bad, 1), coded('ERR_INVALID_ARGUMENT', 'queueName', ...parts))
        await assert.rejects(client.cancelInstance(bad), coded('ERR_INVALID_ARGUMENT', 'instanceId', ...parts))
      }
      assert.deepEqual(await client.listAllInstances(), [])
      assert.equal((await client.getSystemMetrics()).totalInstances, 0)
    })

    test('two ids that differ only in an unpaired surrogate never name one instance', async () => {
      await assert.rejects(client.startOrchestration('x\ud800y', 'Echo', 'first'), coded('ERR_INVALID_ARGUMENT', 'surrogate'))
      await assert.rejects(client.getStatus('x\udc00y'), coded('ERR_INVALID_ARGUMENT', 'surrogate'))
      await assert.rejects(client.waitForOrchestration('x\udc00y', 100), coded('ERR_INVALID_ARGUMENT', 'surrogate'))
      await assert.rejects(client.deleteInstance('x\udc00y'), coded('ERR_INVALID_ARGUMENT', 'surrogate'))
      await assert.rejects(client.deleteInstanceBulk({ instanceIds: ['x\udc00y'] }), coded('ERR_INVALID_ARGUMENT', 'filter.instanceIds[0]', 'surrogate'))
      // The character napi would have substituted is an ordinary, valid id.
      await client.startOrchestration('x\ufffdy', 'Echo', 'replacement')
      assert.equal((await client.waitForOrchestration('x\ufffdy', 20000)).output, 'replacement')
    })

    test('reads and deletes take ids a store may already hold, but never U+0000', async () => {
      assert.equal((await client.getStatus('legacy\u001b[2J')).status, 'NotFound')
      assert.equal((await client.getStatus('y'.repeat(5000))).status, 'NotFound')
      await assert.rejects(client.getInstanceInfo('legacy\u001b'), coded('ERR_NOT_FOUND'))
      await assert.rejects(client.getStatus('a\u0000b'), coded('ERR_INVALID_ARGUMENT', 'instanceId', 'U+0000'))
      await assert.rejects(client.getInstanceInfo('a\u0000b'), coded('ERR_INVALID_ARGUMENT', 'instanceId', 'U+0000'))
    })

    test('valid ids at the edges of the rule are taken and run on this store', async () => {
      for (const [i, id] of GOOD.entries()) {
        await client.startOrchestration(id, 'Echo', i)
        assert.equal((await client.waitForOrchestration(id, 20000)).output, i, JSON.stringify(id))
        assert.equal((await client.getInstanceInfo(id)).instanceId, id)
      }
      // Names at the edges too: registered, scheduled and echoed back.
      const names = ['€'.repeat(333) + 'x', 'émoji 😀']
      await client.startOrchestration('names', 'Names', names)
      assert.deepEqual((await client.waitForOrchestration('names', 20000)).output, names)
    })

    test('a generated sub-orchestration id past the limit, of a root id at it, still receives events', async () => {
      const root = 'r'.repeat(MAX_IDENTIFIER_BYTES)
      await client.startOrchestration(root, 'Parent', null)
      let child
      for (let i = 0; !child || (await client.getStatus(child)).status !== 'Running'; i++) {
        assert.ok(i < 2000, 'the child never ran')
        child = (await client.getInstanceTree(root).catch(() => ({ allIds: [] }))).allIds.find((id) => id !== root)
        await new Promise((r) => setTimeout(r, 10))
      }
      assert.ok(Buffer.byteLength(child) > MAX_IDENTIFIER_BYTES, child.slice(MAX_IDENTIFIER_BYTES))
      for (let i = 0; !(await client.readExecutionHistory(child, 1)).some((e) => e.kind === 'ExternalSubscribed'); i++) {
        assert.ok(i < 2000, 'the child never waited')
        await new Promise((r) => setTimeout(r, 10))
      }
      await client.raiseEvent(child, 'go', 'delivered')
      assert.equal((await client.waitForOrchestration(root, 20000)).output, 'delivered')
      // Only generated parts are exempt.
      await assert.rejects(client.raiseEvent(`${root}::sub::x`, 'go', 1), coded('ERR_INVALID_ARGUMENT', 'instanceId', '1008 bytes'))
    })

    test('every orchestration-context call refuses a bad identifier as a catchable error at the call', async () => {
      let n = 0
      for (const what of Object.keys(CALLS)) {
        for (const [bad, shown] of BAD) {
          const id = `try-${n++}`
          await client.startOrchestration(id, 'Try', { what, value: bad })
          const s = await client.waitForOrchestration(id, 20000)
          assert.equal(s.status, 'Completed', `${what}: ${s.error}`)
          assert.equal(s.output.code, 'ERR_INVALID_ARGUMENT', `${what} ${JSON.stringify(bad)}`)
          for (const part of [shown]) assert.ok(s.output.message.includes(part), `${what}: ${s.output.message}`)
        }
        // A valid one is accepted by the same call.
        const id = `try-${n++}`
        await client.startOrchestration(id, 'Try', { what, value: 'fine-name' })
        assert.equal((await client.waitForOrchestration(id, 20000)).output, 'ok', what)
      }
    })

    test('names at registration and in definitions follow the rule', () => {
      const rt = new Runtime(store.provider, FAST)
      for (const [bad, shown] of BAD) {
        const parts = PARTS(bad, shown)
        assert.throws(() => rt.registerActivity(bad, async () => 1), coded('ERR_INVALID_ARGUMENT', 'name', ...parts))
        assert.throws(() => rt.registerOrchestration(bad, function* () {}), coded('ERR_INVALID_ARGUMENT', 'name', ...parts))
        assert.throws(() => rt.registerOrchestrationVersioned(bad, '2.0.0', function* () {}), coded('ERR_INVALID_ARGUMENT', 'name', ...parts))
        assert.throws(() => dx.defineActivity(bad, async () => 1), coded('ERR_INVALID_ARGUMENT', 'name', ...parts))
        assert.throws(() => dx.defineOrchestration(bad, function* () {}), coded('ERR_INVALID_ARGUMENT', 'name', ...parts))
        assert.throws(() => dx.defineEvent(bad), coded('ERR_INVALID_ARGUMENT', 'name', ...parts))
        assert.throws(() => dx.defineKey(bad), coded('ERR_INVALID_ARGUMENT', 'key', ...parts))
      }
      for (const good of GOOD) {
        rt.registerActivity(good, async () => 1)
        dx.defineEvent(good)
      }
    })
  })
}
