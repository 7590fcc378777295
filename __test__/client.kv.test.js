'use strict'
// Client KV reads (getValue, waitForValue, getKvAllValues) on a SQLite file
// and on Postgres, against values an orchestration stores.
const { describe, test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { backends, clientWithRuntime, scope, coded } = require('./helpers')

function register(rt) {
  rt.registerOrchestration('Kv', function* (ctx) {
    ctx.setValue('greeting', 'hello')
    ctx.setValue('obj', { a: 1 })
    ctx.setValue('n', 42)
    yield ctx.waitForEvent('go')
    ctx.setValue('late', 'yes')
    ctx.clearValue('n')
    yield ctx.waitForEvent('done')
    return 'ok'
  })
}

for (const [kind, open] of backends) {
  describe(`client KV on ${kind}`, () => {
    let client
    const id = `kv-${kind}`
    const t = scope()
    after(() => t.close())

    before(async () => {
      client = await clientWithRuntime(t, open, register)
      await client.startOrchestration(id, 'Kv', null)
      await client.waitForValue(id, 'greeting', 20000)
    })

    test('getValue returns the stored string, or null', async () => {
      assert.equal(await client.getValue(id, 'greeting'), 'hello')
      // Non-string values are stored JSON-encoded, as ctx.getValue returns them.
      assert.equal(await client.getValue(id, 'obj'), '{"a":1}')
      assert.equal(await client.getValue(id, 'n'), '42')
      assert.equal(await client.getValue(id, 'missing'), null)
      assert.equal(await client.getValue('no-such-instance', 'greeting'), null)
    })

    test('getKvAllValues returns every key as an object', async () => {
      const all = await client.getKvAllValues(id)
      assert.equal(Object.getPrototypeOf(all), Object.prototype)
      assert.deepEqual(all, { greeting: 'hello', obj: '{"a":1}', n: '42' })
      assert.deepEqual(await client.getKvAllValues('no-such-instance'), {})
    })

    test('waitForValue rejects with ERR_TIMEOUT naming the key and instance', async () => {
      await assert.rejects(client.waitForValue(id, 'late', 100), coded('ERR_TIMEOUT', "'late'", id, '100 ms'))
    })

    test('waitForValue resolves once the orchestration sets the key', async () => {
      const waiting = client.waitForValue(id, 'late', 20000)
      await client.raiseEvent(id, 'go', null)
      assert.equal(await waiting, 'yes')
      // The clear in the same turn is visible too.
      assert.equal(await client.getValue(id, 'n'), null)
      assert.deepEqual(await client.getKvAllValues(id), { greeting: 'hello', obj: '{"a":1}', late: 'yes' })
    })

    test('waitForValue with the default timeout returns a value already set', async () => {
      assert.equal(await client.waitForValue(id, 'greeting'), 'hello')
    })

    test('values stay readable after the orchestration completes', async () => {
      await client.raiseEvent(id, 'done', null)
      assert.equal((await client.waitForOrchestration(id, 20000)).status, 'Completed')
      assert.equal(await client.getValue(id, 'late'), 'yes')
    })

    test('bad arguments are ERR_INVALID_ARGUMENT naming the argument', async () => {
      await assert.rejects(client.getValue('', 'k'), coded('ERR_INVALID_ARGUMENT', 'instanceId'))
      await assert.rejects(client.getValue(7, 'k'), coded('ERR_INVALID_ARGUMENT', 'instanceId'))
      await assert.rejects(client.getValue(id, ''), coded('ERR_INVALID_ARGUMENT', 'key'))
      await assert.rejects(client.getValue(id), coded('ERR_INVALID_ARGUMENT', 'key'))
      await assert.rejects(client.waitForValue(id, 'k', -5), coded('ERR_INVALID_ARGUMENT', 'timeoutMs'))
      await assert.rejects(client.waitForValue(id, 'k', '10'), coded('ERR_INVALID_ARGUMENT', 'timeoutMs'))
      await assert.rejects(client.waitForValue(id, 'k', NaN), coded('ERR_INVALID_ARGUMENT', 'timeoutMs'))
      await assert.rejects(client.getKvAllValues(null), coded('ERR_INVALID_ARGUMENT', 'instanceId'))
    })
  })
}
