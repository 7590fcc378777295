'use strict'
// Structured failures: a thrown Error keeps its name, stack and JSON
// `details` across the bridge; a failed activity or sub-orchestration throws
// ActivityFailedError / SubOrchestrationFailedError in the orchestration;
// race/all say which task failed; the client sees the same structure. The
// message text is what it was before (drop-in): `err.message`, status
// `error`, history `data` and instance `output` all read as they did.
const { describe, test } = require('node:test')
const assert = require('node:assert/strict')
const { backends, clientWithRuntime, startRuntime, uniqueName, Client } = require('./helpers')
const { replayHistory } = require('../testing')
const {
  Runtime,
  ActivityFailedError,
  SubOrchestrationFailedError,
  OrchestrationFailedError,
  DuroxideError,
} = require('..')

class PaymentError extends Error {
  constructor(message, details) {
    super(message)
    this.name = 'PaymentError'
    this.details = details
  }
}

/** The fields of a task error an orchestration can return (errors do not serialize). */
function fieldsOf(e) {
  return {
    cls: e.constructor.name,
    isDuroxide: e instanceof DuroxideError,
    code: e.code,
    message: e.message,
    activityName: e.activityName,
    orchestrationName: e.orchestrationName,
    errorName: e.errorName,
    errorStack: e.errorStack,
    details: e.details,
    category: e.category,
    nonRetryable: e.nonRetryable,
    index: e.index,
    // A caught error passed on into durable data encodes as the plain Error did.
    json: JSON.stringify(e),
    keys: Object.keys(e),
  }
}

function register(rt) {
  rt.registerActivity('Charge', async function chargeCard(ctx, order) {
    throw new PaymentError('card declined', { order, reason: 'insufficient funds' })
  })
  rt.registerActivity('Echo', async (ctx, x) => x)
  rt.registerActivity('ThrowString', async () => {
    throw 'plain string failure' // eslint-disable-line no-throw-literal
  })
  rt.registerOrchestration('CatchActivity', function* (ctx, order) {
    try {
      yield ctx.scheduleActivity('Charge', order)
      return 'unreachable'
    } catch (e) {
      return fieldsOf(e)
    }
  })
  rt.registerOrchestration('Uncaught', function* (ctx, order) {
    return yield ctx.scheduleActivity('Charge', order)
  })
  rt.registerOrchestration('Child', function* () {
    const err = new RangeError('child gave up')
    err.details = { step: 3 }
    throw err
  })
  rt.registerOrchestration('CatchChildReal', function* (ctx) {
    try {
      yield ctx.scheduleSubOrchestration('Child', null)
      return 'unreachable'
    } catch (e) {
      return fieldsOf(e)
    }
  })
  rt.registerOrchestration('RethrowChild', function* (ctx, order) {
    return yield ctx.scheduleSubOrchestration('Uncaught', order)
  })
  rt.registerOrchestration('AllAndRace', function* (ctx) {
    const all = yield ctx.all([ctx.scheduleActivity('Echo', 1), ctx.scheduleActivity('Charge', 2)])
    let race
    try {
      yield ctx.race(ctx.scheduleTimer(60000), ctx.scheduleActivity('Charge', 3))
    } catch (e) {
      race = fieldsOf(e)
    }
    return {
      all,
      allError: fieldsOf(all[1].error),
      allJson: JSON.stringify(all),
      race,
    }
  })
  // Schedules a different activity depending on what the failure carried.
  rt.registerOrchestration('BranchOnFailure', function* (ctx, order) {
    try {
      yield ctx.scheduleActivity('Charge', order)
    } catch (e) {
      if (e.errorName === 'PaymentError' && e.details?.reason === 'insufficient funds') {
        yield ctx.scheduleActivity('Echo', 'declined')
        return 'declined'
      }
      yield ctx.scheduleActivity('Echo', 'other')
      return 'other'
    }
  })
  rt.registerOrchestration('CatchString', function* (ctx) {
    try {
      yield ctx.scheduleActivity('ThrowString', null)
    } catch (e) {
      return fieldsOf(e)
    }
  })
}

for (const [backend, open] of backends) {
  describe(`structured failures (${backend})`, () => {
    test('a failed activity throws ActivityFailedError with the same message and the thrown error kept', async (t) => {
      const client = await clientWithRuntime(t, open, register)
      const id = uniqueName('catch')
      await client.startOrchestration(id, 'CatchActivity', { n: 7 })
      const s = await client.waitForOrchestration(id, 30000)
      assert.equal(s.status, 'Completed', s.error)
      const e = s.output
      assert.equal(e.cls, 'ActivityFailedError')
      assert.equal(e.isDuroxide, true)
      assert.equal(e.code, 'ERR_ACTIVITY_FAILED')
      assert.equal(e.message, 'card declined', 'message unchanged')
      assert.equal(e.activityName, 'Charge')
      assert.equal(e.errorName, 'PaymentError')
      assert.deepEqual(e.details, { order: { n: 7 }, reason: 'insufficient funds' })
      assert.equal(e.category, 'application')
      assert.equal(e.nonRetryable, false)
      assert.equal(e.json, '{}', 'JSON as the plain Error yield threw before')
      assert.deepEqual(e.keys, [])
      assert.match(e.errorStack, /PaymentError: card declined/)
      assert.match(e.errorStack, /chargeCard/, 'the stack is the activity\'s')

      // History keeps its shape: the message reads as before, the structure is beside it.
      const history = await client.readExecutionHistory(id, 1)
      const failed = history.find((h) => h.kind === 'ActivityFailed')
      const data = JSON.parse(failed.data)
      assert.equal(data.Application.message, 'card declined')
      assert.equal(data.Application.kind, 'ActivityFailed')
      assert.equal(data.Application.retryable, false)
      assert.equal(data.Application.error.name, 'PaymentError')
      assert.deepEqual(data.Application.error.details, { order: { n: 7 }, reason: 'insufficient funds' })
    })

    test('an uncaught activity failure reaches the client with the same message and structure', async (t) => {
      const client = await clientWithRuntime(t, open, register)
      const id = uniqueName('uncaught')
      await client.startOrchestration(id, 'Uncaught', { n: 1 })
      const s = await client.waitForOrchestration(id, 30000)
      assert.equal(s.status, 'Failed')
      assert.equal(s.error, 'card declined', 'status error unchanged')
      assert.equal(s.errorCategory, 'application')
      assert.equal(s.failure.message, 'card declined')
      assert.equal(s.failure.category, 'application')
      assert.equal(s.failure.errorName, 'PaymentError')
      assert.equal(s.failure.activityName, 'Charge')
      assert.deepEqual(s.failure.details, { order: { n: 1 }, reason: 'insufficient funds' })
      assert.match(s.failure.errorStack, /chargeCard/)
      assert.equal((await client.getStatus(id)).error, 'card declined')
      assert.equal((await client.getInstanceInfo(id)).output, 'card declined')
      assert.equal((await client.getExecutionInfo(id, 1)).output, 'card declined')
      const history = await client.readExecutionHistory(id, 1)
      const failed = JSON.parse(history.find((h) => h.kind === 'OrchestrationFailed').data)
      assert.equal(failed.Application.message, 'card declined')

      await assert.rejects(client.waitForOrchestrationTyped(id, 30000), (err) => {
        assert.ok(err instanceof OrchestrationFailedError)
        assert.equal(err.message, `orchestration '${id}' failed: card declined`)
        assert.equal(err.errorName, 'PaymentError')
        assert.equal(err.activityName, 'Charge')
        assert.equal(err.category, 'application')
        assert.equal(err.errorCategory, 'application')
        assert.deepEqual(err.details, { order: { n: 1 }, reason: 'insufficient funds' })
        return true
      })
    })

    test('a failed sub-orchestration throws SubOrchestrationFailedError carrying what the child threw', async (t) => {
      const client = await clientWithRuntime(t, open, register)
      const id = uniqueName('child')
      await client.startOrchestration(id, 'CatchChildReal', null)
      const s = await client.waitForOrchestration(id, 30000)
      assert.equal(s.status, 'Completed', s.error)
      const e = s.output
      assert.equal(e.cls, 'SubOrchestrationFailedError')
      assert.equal(e.code, 'ERR_SUB_ORCHESTRATION_FAILED')
      assert.equal(e.message, 'child gave up')
      assert.equal(e.orchestrationName, 'Child')
      assert.equal(e.errorName, 'RangeError')
      assert.deepEqual(e.details, { step: 3 })
      assert.equal(e.category, 'application')

      // A parent that rethrows its child's activity failure still names the activity.
      const id2 = uniqueName('rethrow')
      await client.startOrchestration(id2, 'RethrowChild', { n: 2 })
      const s2 = await client.waitForOrchestration(id2, 30000)
      assert.equal(s2.status, 'Failed')
      assert.equal(s2.error, 'card declined')
      assert.equal(s2.failure.errorName, 'PaymentError')
      assert.equal(s2.failure.activityName, 'Charge')
      assert.equal(s2.failure.orchestrationName, 'Uncaught')
    })

    test('all and race say which task failed; all results compare and serialize as before', async (t) => {
      const client = await clientWithRuntime(t, open, register)
      const id = uniqueName('allrace')
      await client.startOrchestration(id, 'AllAndRace', null)
      const s = await client.waitForOrchestration(id, 30000)
      assert.equal(s.status, 'Completed', s.error)
      const { all, allError, allJson, race } = s.output
      assert.deepEqual(all, [{ ok: 1 }, { err: 'card declined' }])
      assert.equal(allJson, '[{"ok":1},{"err":"card declined"}]')
      assert.equal(allError.cls, 'ActivityFailedError')
      assert.equal(allError.index, 1)
      assert.equal(allError.activityName, 'Charge')
      assert.deepEqual(allError.details, { order: 2, reason: 'insufficient funds' })
      assert.equal(race.cls, 'ActivityFailedError')
      assert.equal(race.index, 1)
      assert.equal(race.json, '{}')
      assert.equal(allError.json, '{}')
      assert.equal(race.message, 'card declined')
      assert.equal(race.errorName, 'PaymentError')
    })

    // Replay from readExecutionHistory entries rebuilds failures from `data`, where
    // the structure sits beside the message; code that branches on it must replay
    // the way it ran.
    test('the replay check hands replayed code the same structured failure, from entries or an export', async (t) => {
      const store = await open(t)
      await startRuntime(t, store.provider, register)
      const client = new Client(store.provider)
      const id = uniqueName('replay')
      await client.startOrchestration(id, 'BranchOnFailure', { n: 3 })
      const s = await client.waitForOrchestration(id, 30000)
      assert.equal(s.status, 'Completed', s.error)
      assert.equal(s.output, 'declined')
      const rt = new Runtime(store.provider)
      register(rt)
      const entries = await client.readExecutionHistory(id, 1)
      assert.deepEqual(await replayHistory(rt, entries, { instanceId: id }), { ok: true })
      assert.deepEqual(await replayHistory(rt, await client.exportHistory(id)), { ok: true })
    })

    test('a thrown non-Error keeps its message and has no structure to carry', async (t) => {
      const client = await clientWithRuntime(t, open, register)
      const id = uniqueName('string')
      await client.startOrchestration(id, 'CatchString', null)
      const s = await client.waitForOrchestration(id, 30000)
      assert.equal(s.status, 'Completed', s.error)
      assert.equal(s.output.cls, 'ActivityFailedError')
      assert.equal(s.output.message, 'plain string failure')
      assert.equal(s.output.errorName, 'Error')
      assert.equal(s.output.details, undefined)
    })
  })
}

test('the error classes are exported with their codes', () => {
  assert.equal(new ActivityFailedError('x', { activityName: 'A', details: { a: 1 } }).details.a, 1)
  assert.equal(new SubOrchestrationFailedError('x', { orchestrationName: 'O' }).orchestrationName, 'O')
})
