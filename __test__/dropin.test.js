'use strict'
// Drop-in behaviour that applications written against api.md rely on
// (issue 8): tasks tagged in place, and orchestrations that are not
// generator functions refused when they are registered.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const { sqliteFile, startRuntime, FAST, coded, uniqueName, Client } = require('./helpers')
const dx = require('..')

const ctxFor = () => new dx.OrchestrationContext({}, { instanceId: 'i', executionId: 1, orchestrationName: 'O', orchestrationVersion: '1.0.0' })

test('withTag sets the tag on the task itself and returns that same task', () => {
  const task = ctxFor().scheduleActivity('Work', null)
  assert.equal(task.tag, undefined)
  assert.strictEqual(task.withTag('cpu'), task)
  assert.equal(task.tag, 'cpu')
  assert.throws(() => task.withTag('gpu'), coded('ERR_INVALID_ARGUMENT', "already has tag 'cpu'"))
  assert.equal(task.tag, 'cpu')
})

test('an activity tagged after it was created runs on the worker that accepts the tag', async (t) => {
  const store = await sqliteFile(t)
  // This runtime's workers take only 'gpu' activities: an untagged one would
  // never run, and the timer would win the race.
  await startRuntime(t, store.provider, (rt) => {
    rt.registerActivity('Where', async (ctx) => ctx.tag())
    rt.registerOrchestration('TagInPlace', function* (ctx) {
      const task = ctx.scheduleActivity('Where', null)
      task.withTag('gpu')
      const r = yield ctx.race(task, ctx.scheduleTimer(20000))
      return r
    })
  }, { ...FAST, workerTagFilter: { tags: ['gpu'] } })
  const client = new Client(store.provider)
  const id = uniqueName('tag-in-place')
  await client.startOrchestration(id, 'TagInPlace')
  const s = await client.waitForOrchestration(id, 30000)
  assert.equal(s.status, 'Completed', s.error)
  assert.deepEqual(s.output, { index: 0, value: 'gpu' })
})

test('registerOrchestration refuses an async or plain function, naming the orchestration', async (t) => {
  const store = await sqliteFile(t)
  const rt = new dx.Runtime(store.provider, FAST)
  t.after(() => rt.shutdown(0))
  const refused = [
    ['AsyncOrch', async function () { return 1 }, 'an async function'],
    ['PlainOrch', function () { return 1 }, 'PlainOrch'],
    ['ArrowOrch', () => 1, 'ArrowOrch'],
    ['AsyncGenOrch', async function* () { yield 1 }, 'AsyncGenOrch'],
  ]
  for (const [name, fn, mention] of refused) {
    assert.throws(() => rt.registerOrchestration(name, fn), coded('ERR_INVALID_ARGUMENT', `'${name}'`, 'generator function', mention))
    assert.throws(() => rt.registerOrchestrationVersioned(name, '2.0.0', fn), coded('ERR_INVALID_ARGUMENT', `'${name}'`))
    assert.throws(() => rt.registerOrchestrationTyped(name, fn), coded('ERR_INVALID_ARGUMENT', `'${name}'`))
  }
  // Nothing was half-registered: the same names take generator functions,
  // bound ones included, and run.
  rt.registerOrchestration('AsyncOrch', function* () { return 'generator ran' })
  rt.registerOrchestration('PlainOrch', function* () { return this.label }.bind({ label: 'bound ran' }))
  await rt.start()
  const client = new Client(store.provider)
  for (const [name, expected] of [['AsyncOrch', 'generator ran'], ['PlainOrch', 'bound ran']]) {
    const id = uniqueName(name)
    await client.startOrchestration(id, name)
    const s = await client.waitForOrchestration(id, 30000)
    assert.deepEqual([s.status, s.output], ['Completed', expected], s.error)
  }
})
