'use strict'
// W3C trace context: client.startOrchestration(..., { traceparent, tracestate })
// reaches ctx.traceContext of the orchestration, its activities, its
// sub-orchestrations and the next execution after continue-as-new; it is
// durable (a second runtime replaying the instance sees it), and the inputs
// user code sees are the ones it passed.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const { Runtime, Client, defineOrchestration } = require('..')
const { backends, sqliteFile, sqliteQuery, startRuntime, coded, eventually, FAST } = require('./helpers')
const { runCli } = require('./fixtures/cli-run')

const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'
const TRACESTATE = 'rojo=00f067aa0ba902b7,congo=t61rcWkgMzE'

function register(rt) {
  rt.registerActivity('Seen', async (ctx, input) => ({ input, trace: ctx.traceContext }))
  rt.registerOrchestration('Child', function* (ctx, input) {
    const act = yield ctx.scheduleActivity('Seen', input)
    return { input, trace: ctx.traceContext, act }
  })
  rt.registerOrchestration('Parent', function* (ctx, input) {
    if (ctx.executionId === 1) {
      const act = yield ctx.scheduleActivity('Seen', { n: input.n })
      const child = yield ctx.scheduleSubOrchestration('Child', 'child-input')
      const [raced] = yield ctx.all([ctx.scheduleActivity('Seen', 'in-all')])
      yield ctx.continueAsNew({ n: input.n + 1, first: { input, trace: ctx.traceContext, act, child, raced } })
      return null
    }
    return { second: { input: input.n, trace: ctx.traceContext }, first: input.first }
  })
}

for (const [backend, open] of backends) {
  test(`traceparent reaches every context of the instance (${backend})`, async (t) => {
    const store = await open(t)
    await startRuntime(t, store.provider, register)
    const client = new Client(store.provider)
    await client.startOrchestration('tr-1', 'Parent', { n: 1 }, { traceparent: TRACEPARENT, tracestate: TRACESTATE })
    const s = await client.waitForOrchestration('tr-1', 30000)
    assert.equal(s.status, 'Completed', JSON.stringify(s))
    const trace = { traceparent: TRACEPARENT, tracestate: TRACESTATE }
    const { first, second } = s.output
    assert.deepEqual(first.input, { n: 1 }, 'the orchestration sees its own input')
    assert.deepEqual(first.trace, trace)
    assert.deepEqual(first.act, { input: { n: 1 }, trace }, 'activities see their input and the trace')
    assert.deepEqual(first.child.input, 'child-input')
    assert.deepEqual(first.child.trace, trace, 'sub-orchestrations carry it')
    assert.deepEqual(first.child.act, { input: 'child-input', trace }, 'and their activities')
    assert.deepEqual(first.raced, { ok: { input: 'in-all', trace } }, 'tasks inside all() carry it')
    assert.deepEqual(second, { input: 2, trace }, 'continue-as-new carries it to the next execution')

    await client.startOrchestration('tr-2', 'Child', 'plain')
    const plain = await client.waitForOrchestration('tr-2', 30000)
    assert.deepEqual(plain.output, { input: 'plain', trace: null, act: { input: 'plain', trace: null } }, 'no trace: null')
  })
}

test('the trace context survives a restart: a second runtime replays the instance with it', async (t) => {
  const store = await sqliteFile(t, 'dxtrace')
  const reg = (rt) =>
    rt.registerOrchestration('Wait', function* (ctx) {
      const before = ctx.traceContext
      yield ctx.waitForEvent('go')
      return { before, after: ctx.traceContext }
    })
  const rt1 = new Runtime(store.provider, { ...FAST, orchestrationCacheSize: 0 })
  reg(rt1)
  await rt1.start()
  const client = new Client(store.provider)
  await client.startOrchestrationVersioned('tw-1', 'Wait', null, '1.0.0', { traceparent: TRACEPARENT })
  await eventually(async () => (await client.getStatus('tw-1')).status === 'Running', { what: 'the first turn' })
  await rt1.shutdown(1000)

  await startRuntime(t, store.provider, reg, { orchestrationCacheSize: 0 })
  await client.raiseEvent('tw-1', 'go', null)
  const s = await client.waitForOrchestration('tw-1', 30000)
  assert.equal(s.status, 'Completed', JSON.stringify(s))
  assert.deepEqual(s.output, { before: { traceparent: TRACEPARENT }, after: { traceparent: TRACEPARENT } })
})

test('a malformed traceparent or tracestate is refused, naming the option', async (t) => {
  const store = await sqliteFile(t, 'dxtrace')
  const client = new Client(store.provider)
  for (const bad of [
    'nope',
    '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7',
    '00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01',
    'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
    '00-00000000000000000000000000000000-00f067aa0ba902b7-01',
  ]) {
    await assert.rejects(client.startOrchestration('bad-1', 'X', null, { traceparent: bad }), coded('ERR_INVALID_ARGUMENT', 'options.traceparent'))
  }
  await assert.rejects(
    client.startOrchestration('bad-1', 'X', null, { traceparent: TRACEPARENT, tracestate: 'a\nb' }),
    coded('ERR_INVALID_ARGUMENT', 'options.tracestate'),
  )
  await assert.rejects(client.startOrchestration('bad-1', 'X', null, { traceparent: 7 }), coded('ERR_INVALID_ARGUMENT', 'options.traceparent'))
  await assert.rejects(client.startOrchestration('bad-1', 'X', null, { traceParent: TRACEPARENT }), coded('ERR_INVALID_OPTION', 'traceParent'))
  await assert.rejects(client.startOrchestration('bad-1', 'X', null, { tracestate: TRACESTATE }), coded('ERR_INVALID_ARGUMENT', 'traceparent'))
  await assert.rejects(
    client.startOrchestrationVersioned('bad-1', 'X', null, '1.0.0', { traceparent: 'x' }),
    coded('ERR_INVALID_ARGUMENT', 'options.traceparent'),
  )
  assert.equal((await client.getStatus('bad-1')).status, 'NotFound', 'nothing was started')
})

test('the typed client.start forwards the trace context (and checks it)', async (t) => {
  const store = await sqliteFile(t, 'dxtrace')
  const Typed = defineOrchestration('Typed', function* (ctx, input) {
    return { input, trace: ctx.traceContext }
  })
  const Pinned = defineOrchestration('Pinned', { version: '2.0.0' }, function* (ctx) {
    return ctx.traceContext
  })
  await startRuntime(t, store.provider, (rt) => rt.register(Typed, Pinned))
  const client = new Client(store.provider)
  const h = await client.start(Typed, 'ty-1', { a: 1 }, { traceparent: TRACEPARENT, tracestate: TRACESTATE })
  assert.deepEqual(await h.result(), { input: { a: 1 }, trace: { traceparent: TRACEPARENT, tracestate: TRACESTATE } })
  const pinned = await client.start(Pinned, 'ty-2', undefined, { traceparent: TRACEPARENT })
  assert.deepEqual(await pinned.result(), { traceparent: TRACEPARENT }, 'a versioned definition carries it too')
  const plain = await client.start(Typed, 'ty-3', 'x')
  assert.deepEqual(await plain.result(), { input: 'x', trace: null })
  await assert.rejects(client.start(Typed, 'ty-4', null, { traceparent: 'nope' }), coded('ERR_INVALID_ARGUMENT', 'options.traceparent'))
  await assert.rejects(client.start(Typed, 'ty-4', null, { traceParent: TRACEPARENT }), coded('ERR_INVALID_OPTION', 'traceParent'))
})

// The envelope is the bridge's: every reader shows the input the app passed,
// and an app that never passes a traceparent stores exactly what it stored before.
test('readers show the app its own inputs; without a traceparent nothing is wrapped', async (t) => {
  const store = await sqliteFile(t, 'dxtrace')
  const reg = (rt) => {
    rt.registerActivity('Echo', async (ctx, x) => x)
    rt.registerOrchestration('Kid', function* (ctx, x) {
      return x
    })
    rt.registerOrchestration('Shown', function* (ctx, input) {
      if (ctx.executionId === 1) {
        yield ctx.scheduleActivity('Echo', { act: input.n })
        yield ctx.scheduleSubOrchestrationWithId('Kid', `${ctx.instanceId}-kid`, { kid: input.n })
        return yield ctx.continueAsNew({ n: input.n + 1 })
      }
      return input
    })
  }
  await startRuntime(t, store.provider, reg)
  const client = new Client(store.provider)
  await client.startOrchestration('rd-traced', 'Shown', { n: 1 }, { traceparent: TRACEPARENT, tracestate: TRACESTATE })
  await client.startOrchestration('rd-plain', 'Shown', { n: 1 })
  for (const id of ['rd-traced', 'rd-plain']) {
    const s = await client.waitForOrchestration(id, 30000)
    assert.deepEqual(s.output, { n: 2 }, `${id}: getStatus`)

    const first = await client.readExecutionHistory(id, 1)
    const data = (kind) => JSON.parse(first.find((e) => e.kind === kind).data)
    assert.deepEqual(data('OrchestrationStarted').input, { n: 1 }, `${id}: OrchestrationStarted`)
    assert.deepEqual(data('ActivityScheduled').input, { act: 1 }, `${id}: ActivityScheduled`)
    assert.deepEqual(data('SubOrchestrationScheduled').input, { kid: 1 }, `${id}: SubOrchestrationScheduled`)
    const second = await client.readExecutionHistory(id, 2)
    assert.deepEqual(JSON.parse(second[0].data).input, { n: 2 }, `${id}: the next execution's OrchestrationStarted`)
    const kid = await client.readExecutionHistory(`${id}-kid`, 1)
    assert.deepEqual(JSON.parse(kid[0].data).input, { kid: 1 }, `${id}: the sub-orchestration's OrchestrationStarted`)

    const can = await client.getExecutionInfo(id, 1)
    assert.equal(can.status, 'ContinuedAsNew')
    assert.equal(can.output, JSON.stringify({ n: 2 }), `${id}: a continued execution's output is the next input`)

    for (const args of [['history', id, '--execution', '1'], ['show', id], ['list']]) {
      const r = await runCli([...args, '--json', '--database-url', store.url])
      assert.equal(r.code, 0, r.stderr)
      assert.doesNotMatch(r.stdout, /duroxideTraceContext/, `${id}: cli ${args[0]}`)
    }
  }

  // The raw rows: the traced instance holds envelopes, the plain one holds the app's bytes.
  const rows = (id) => sqliteQuery(store.file, `SELECT event_data FROM history WHERE instance_id LIKE '${id}%' ORDER BY instance_id, execution_id, event_id`)
  assert.match(rows('rd-traced'), /duroxideTraceContext/)
  const plain = rows('rd-plain')
  assert.doesNotMatch(plain, /duroxideTraceContext/)
  assert.ok(plain.includes(JSON.stringify(JSON.stringify({ act: 1 }))), `the activity input is stored as the app encoded it: ${plain}`)
})

test('a traced instance passes the replay check, and a divergence shows the app its own input', async (t) => {
  const { replayHistory } = require('../testing')
  const store = await sqliteFile(t, 'dxtrace')
  const code = (activity) => (rt) => {
    rt.registerActivity('Echo', async (ctx, x) => x)
    rt.registerActivity('Other', async (ctx, x) => x)
    rt.registerOrchestration('Replayed', function* (ctx, input) {
      return yield ctx.scheduleActivity(activity, { got: input })
    })
    return rt
  }
  await startRuntime(t, store.provider, code('Echo'))
  const client = new Client(store.provider)
  await client.startOrchestration('rp-1', 'Replayed', 5, { traceparent: TRACEPARENT })
  assert.equal((await client.waitForOrchestration('rp-1', 30000)).status, 'Completed')
  const same = code('Echo')(new Runtime(store.provider))
  assert.deepEqual(await replayHistory(same, await client.exportHistory('rp-1')), { ok: true }, 'exported history')
  assert.deepEqual(await replayHistory(same, await client.readExecutionHistory('rp-1', 1), { instanceId: 'rp-1' }), { ok: true }, 'entries')
  const changed = await replayHistory(code('Other')(new Runtime(store.provider)), await client.exportHistory('rp-1'))
  assert.equal(changed.ok, false)
  assert.match(changed.divergence.message, /activity 'Echo' \(input \{"got":5\}\)/)
  assert.doesNotMatch(JSON.stringify(changed.divergence), /duroxideTraceContext/)
})
