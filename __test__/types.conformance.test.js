'use strict'
// What the package really returns conforms to what index.d.ts declares: every
// context property, task result, client result and runtime result of a real
// run, on each backend, is checked field by field against its declared type
// (extra, missing or mistyped fields fail). Editors show these types, so a
// drift here is a bug users would code against.
const test = require('node:test')
const assert = require('node:assert/strict')
const { backends, startRuntime } = require('./helpers')
const { Client, OrchestrationFailedError } = require('..')
const dts = require('./dts')

/** Mismatches of `value` against what `cls.method` is declared to produce. */
const against = (cls, method, value) => dts.conformance(value, dts.methodResult(cls, method), `${cls}.${method}`)

/** Mismatches of every declared property of a context object. */
function contextProblems(cls, ctx) {
  return dts.classMembers(cls).properties.flatMap((p) => dts.conformance(ctx[p], dts.propertyType(cls, p), `${cls}.${p}`))
}

function register(rt) {
  rt.registerActivity('Probe', async (ctx) => [...contextProblems('ActivityContext', ctx), ...against('ActivityContext', 'tag', ctx.tag())])
  rt.registerActivity('Boom', async () => {
    throw new Error('boom')
  })
  rt.registerOrchestration('Child', function* (ctx, n) {
    return n + 1
  })
  rt.registerOrchestration('Fails', function* () {
    throw new Error('failed on purpose')
  })
  rt.registerOrchestration('Shapes', function* (ctx, input) {
    ctx.setValue('k', 'v')
    if (input.round === 0) yield ctx.continueAsNew({ round: 1 })
    const problems = contextProblems('OrchestrationContext', ctx)
    const check = (method, value) => problems.push(...against('OrchestrationContext', method, value))
    ctx.setValue('obj', { a: 1 })
    check('getValue', ctx.getValue('k'))
    check('getValue', ctx.getValue('missing'))
    check('getKvAllValues', ctx.getKvAllValues())
    check('getKvAllKeys', ctx.getKvAllKeys())
    check('getKvLength', ctx.getKvLength())
    check('pruneKvValuesUpdatedBefore', ctx.pruneKvValuesUpdatedBefore(0))
    check('getCustomStatus', ctx.getCustomStatus())
    problems.push(...(yield ctx.scheduleActivity('Probe', null)))
    problems.push(...(yield ctx.scheduleActivity('Probe', null).withTag('t1')))
    check('newGuid', yield ctx.newGuid())
    check('utcNow', yield ctx.utcNow())
    check('scheduleTimer', yield ctx.scheduleTimer(1))
    check('getValueFromInstance', yield ctx.getValueFromInstance(ctx.instanceId, 'k'))
    check('getValueFromInstance', yield ctx.getValueFromInstance('no-such-instance', 'k'))
    check('startOrchestration', yield ctx.startOrchestration('Child', `${ctx.instanceId}-detached`, 1))
    check('all', yield ctx.all([ctx.scheduleSubOrchestration('Child', 1), ctx.scheduleActivity('Boom', null), ctx.scheduleTimer(1)]))
    check('race', yield ctx.race(ctx.scheduleTimer(1), ctx.waitForEvent('never')))
    check('race', yield ctx.race([ctx.all([ctx.newGuid()])]))
    ctx.setCustomStatus('waiting')
    check('getCustomStatus', ctx.getCustomStatus())
    yield ctx.waitForEvent('Go')
    return { problems }
  })
}

for (const [backend, open] of backends) {
  test(`${backend}: results of a real run conform to index.d.ts`, async (t) => {
    assert.deepEqual(dts.diagnostics(), []) // loads the compiler before any orchestration turn needs it
    const { provider } = await open(t)
    const rt = await startRuntime(t, provider, register, { workerTagFilter: { defaultAnd: ['t1'] } })
    const client = new Client(provider)
    const check = (method, value) => assert.deepEqual(against('Client', method, value), [], method)
    const id = `shapes-${backend}-${process.pid}`

    check('startOrchestration', await client.startOrchestration(id, 'Shapes', { round: 0 }))
    check('waitForStatusChange', await client.waitForStatusChange(id, 0, 20, 20000))
    check('getStatus', await client.getStatus(id))
    check('getStatus', await client.getStatus('no-such-instance'))
    check('raiseEvent', await client.raiseEvent(id, 'Go', { go: true }))
    const done = await client.waitForOrchestration(id, 20000)
    check('waitForOrchestration', done)
    assert.equal(done.status, 'Completed')
    assert.deepEqual(done.output.problems, [], 'context properties and task results')
    check('getStatus', await client.getStatus(id))

    check('getValue', await client.getValue(id, 'k'))
    check('getValue', await client.getValue(id, 'missing'))
    check('waitForValue', await client.waitForValue(id, 'k', 5000))
    check('getKvAllValues', await client.getKvAllValues(id))
    check('getSystemMetrics', await client.getSystemMetrics())
    check('getQueueDepths', await client.getQueueDepths())
    check('getOrchestrationStats', await client.getOrchestrationStats(id))
    check('getOrchestrationStats', await client.getOrchestrationStats('no-such-instance'))
    check('listAllInstances', await client.listAllInstances())
    for (const s of ['Running', 'Completed', 'Failed', 'ContinuedAsNew']) check('listInstancesByStatus', await client.listInstancesByStatus(s))
    const info = await client.getInstanceInfo(id)
    check('getInstanceInfo', info)
    assert.equal(info.currentExecutionId, 2)
    check('getExecutionInfo', await client.getExecutionInfo(id, 1))
    check('getExecutionInfo', await client.getExecutionInfo(id, 2))
    check('listExecutions', await client.listExecutions(id))
    check('readExecutionHistory', await client.readExecutionHistory(id, 1))
    check('readExecutionHistory', await client.readExecutionHistory(id, 2))
    check('getInstanceTree', await client.getInstanceTree(id))

    await client.startOrchestration(`${id}-f`, 'Fails')
    const failed = await client.waitForOrchestration(`${id}-f`, 20000)
    check('waitForOrchestration', failed)
    assert.equal(failed.status, 'Failed')
    check('getInstanceInfo', await client.getInstanceInfo(`${id}-f`))
    await assert.rejects(client.waitForOrchestrationTyped(`${id}-f`, 5000), (err) => {
      assert.ok(err instanceof OrchestrationFailedError)
      assert.deepEqual(dts.conformance(err.errorCategory, dts.propertyType('OrchestrationFailedError', 'errorCategory')), [])
      assert.deepEqual(dts.conformance(err.code, dts.propertyType('OrchestrationFailedError', 'code')), [])
      return true
    })

    assert.deepEqual(against('Runtime', 'effectiveOptions', rt.effectiveOptions()), [], 'effectiveOptions')
    assert.deepEqual(against('Runtime', 'metricsSnapshot', rt.metricsSnapshot()), [], 'metricsSnapshot')
    assert.deepEqual(against('Runtime', 'health', rt.health()), [], 'health')
    assert.deepEqual(against('Runtime', 'metricsText', rt.metricsText()), [], 'metricsText')

    check('pruneExecutions', await client.pruneExecutions(id, { keepLast: 1 }))
    check('pruneExecutionsBulk', await client.pruneExecutionsBulk({ instanceIds: [id] }, { keepLast: 1 }))
    check('deleteInstance', await client.deleteInstance(id, true))
    check('deleteInstanceBulk', await client.deleteInstanceBulk({ instanceIds: [`${id}-f`] }))
  })
}

test('effectiveOptions declares every option the native layer reports, and RuntimeOptions accepts them all', async () => {
  const { SqliteProvider, Runtime } = require('..')
  const rt = new Runtime(await SqliteProvider.inMemory(), { workerTagFilter: 'tags', workerTagFilterTags: ['b', 'a'] })
  const effective = rt.effectiveOptions()
  assert.deepEqual(Object.keys(effective).sort(), dts.propertiesOf('EffectiveOptions'))
  // The input type has the same names plus the legacy flat tag list.
  assert.deepEqual(dts.propertiesOf('RuntimeOptions'), [...Object.keys(effective), 'workerTagFilterTags'].sort())
  assert.deepEqual(dts.conformsTo(effective, 'EffectiveOptions'), [])
  assert.deepEqual(dts.conformsTo(effective, 'RuntimeOptions'), [])
})
