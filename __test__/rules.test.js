'use strict'
// Argument rules live in one place (src/rules.rs) and errors carry their
// code as data: the JS layer checks types only, contradictory task options
// are refused instead of one being dropped, and native errors reach JS with
// `code` set rather than a message prefix.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const { sqliteFile, coded, Client } = require('./helpers')
const dx = require('..')
const native = require('../lib/native')
const { fromNative } = require('../lib/errors')
const { nativeProviderOf } = require('../lib/providers')

const ctxFor = () => new dx.OrchestrationContext({}, { instanceId: 'i', executionId: 1, orchestrationName: 'O', orchestrationVersion: '1.0.0' })

test('scheduleActivity refuses option keys it does not know, naming the key', () => {
  const ctx = ctxFor()
  assert.throws(() => ctx.scheduleActivity('A', null, { tag: 'gpu' }), coded('ERR_INVALID_ARGUMENT', 'options.tag', 'sessionId'))
  assert.throws(() => ctx.scheduleActivity('A', null, { sessionID: 's' }), coded('ERR_INVALID_ARGUMENT', 'options.sessionID'))
  assert.equal(ctx.scheduleActivity('A', null, { sessionId: 's' }).descriptor.sessionId, 's')
})

test('a tag with a retry policy is refused, never scheduled without its tag', () => {
  const ctx = ctxFor()
  const retried = ctx.scheduleActivityWithRetry('A', null, { maxAttempts: 2 })
  assert.throws(() => retried.withTag('gpu'), coded('ERR_INVALID_ARGUMENT', "activity 'A'", 'tag', 'retry'))
  assert.equal(retried.tag, undefined)
  // The rule is the native one, so a descriptor that skips the JS layer is refused too.
  assert.throws(
    () => native.validateTask({ kind: 'activity', name: 'A', input: 'null', tag: 'gpu', retry: { maxAttempts: 2 } }),
    { code: 'ERR_INVALID_ARGUMENT', message: /both a tag and a retry policy/ },
  )
})

test('millisecond durations have one contract on the client and in orchestrations', async (t) => {
  const store = await sqliteFile(t)
  const client = new Client(store.provider)
  for (const bad of [1.5, -1]) {
    await assert.rejects(client.waitForOrchestration('x', bad), coded('ERR_INVALID_ARGUMENT', 'timeoutMs', 'non-negative integer'))
    await assert.rejects(client.waitForValue('x', 'k', bad), coded('ERR_INVALID_ARGUMENT', 'timeoutMs', 'non-negative integer'))
    assert.throws(() => ctxFor().scheduleTimer(bad), coded('ERR_INVALID_ARGUMENT', 'delayMs', 'non-negative integer'))
    assert.throws(
      () => ctxFor().scheduleActivityWithRetry('A', null, { maxAttempts: 2, timeoutMs: bad }),
      coded('ERR_INVALID_ARGUMENT', 'retry.timeoutMs', 'non-negative integer'),
    )
  }
  // What JSON cannot carry is a type error, named before crossing.
  await assert.rejects(client.waitForOrchestration('x', Infinity), coded('ERR_INVALID_ARGUMENT', 'timeoutMs'))
  assert.throws(() => ctxFor().scheduleTimer(NaN), coded('ERR_INVALID_ARGUMENT', 'delayMs'))
})

test('native errors carry their code as a property, and the JS class follows the code alone', async (t) => {
  const store = await sqliteFile(t)
  const nativeClient = new native.NativeClient(nativeProviderOf(store.provider, 'test'))
  // Async (a rejected promise) and sync (a throw) native calls alike.
  await assert.rejects(nativeClient.getStatus(''), (err) => {
    assert.equal(err.code, 'ERR_INVALID_ARGUMENT')
    assert.equal(err.message, 'instanceId must be a non-empty string')
    return true
  })
  await assert.rejects(nativeClient.getInstanceInfo('missing'), { code: 'ERR_NOT_FOUND', message: "instance 'missing' not found" })
  assert.throws(() => native.validateTask({ kind: 'timer', delayMs: -1 }), { code: 'ERR_INVALID_ARGUMENT', message: /^delayMs/ })
  // lib/errors.js reads the code, not the message.
  const byCode = fromNative(Object.assign(new Error('gone'), { code: 'ERR_NOT_FOUND' }))
  assert.ok(byCode instanceof dx.NotFoundError)
  assert.equal(byCode.message, 'gone')
  const prefixOnly = fromNative(Object.assign(new Error('[ERR_NOT_FOUND] gone'), { code: 'GenericFailure' }))
  assert.ok(!(prefixOnly instanceof dx.NotFoundError))
  assert.equal(prefixOnly.code, 'ERR_INTERNAL')
})

test('the Client is one class that exposes no native handle or provider', async (t) => {
  const store = await sqliteFile(t)
  const client = new Client(store.provider)
  assert.equal(client._nativeClient, undefined)
  assert.equal(client._provider, undefined)
  assert.deepEqual(Object.keys(client), [])
  // Management methods are the class's own, not patched onto its prototype.
  const own = Object.getOwnPropertyNames(Client.prototype)
  for (const m of ['getValue', 'listInstancesByStatus', 'readExecutionHistory', 'deleteInstanceBulk', 'pruneExecutions']) {
    assert.ok(own.includes(m), m)
    assert.equal(Object.getOwnPropertyDescriptor(Client.prototype, m).enumerable, false, `${m} is a class method`)
  }
})
