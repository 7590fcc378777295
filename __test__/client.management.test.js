'use strict'
// Client management on a SQLite file and on Postgres: listing, inspecting,
// deleting and pruning instances, each result checked field by field.
const { describe, test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { backends, clientWithRuntime, eventually, Client, scope, coded } = require('./helpers')

const STATUSES = 'Running, Completed, Failed, ContinuedAsNew'

function register(rt) {
  rt.registerActivity('Echo', async (ctx, x) => x)
  rt.registerOrchestration('Child', function* (ctx, x) {
    return x * 2
  })
  rt.registerOrchestration('Main', function* (ctx, input) {
    const echoed = yield ctx.scheduleActivity('Echo', input)
    const doubled = yield ctx.scheduleSubOrchestrationWithId('Child', `${ctx.instanceId}-child`, 21)
    return { echoed, doubled }
  })
  rt.registerOrchestration('Counter', function* (ctx, n) {
    if (n < 3) return yield ctx.continueAsNew(n + 1)
    return n
  })
  rt.registerOrchestration('Fail', function* () {
    throw new Error('boom')
  })
  rt.registerOrchestration('Waiter', function* (ctx) {
    return yield ctx.waitForEvent('go')
  })
  // ctx.getClient() inside an activity reads another instance.
  rt.registerActivity('Inspect', async (ctx, otherId) => {
    const client = ctx.getClient()
    const [status, info] = await Promise.all([client.getStatus(otherId), client.getInstanceInfo(otherId)])
    return { status: status.status, error: status.error, name: info.orchestrationName, isClient: client instanceof Client }
  })
  rt.registerOrchestration('Inspector', function* (ctx, otherId) {
    return yield ctx.scheduleActivity('Inspect', otherId)
  })
}

for (const [kind, open] of backends) {
  describe(`client management on ${kind}`, () => {
    let client
    let t0
    const ids = {}
    const t = scope()
    after(() => t.close())

    before(async () => {
      client = await clientWithRuntime(t, open, register)
      t0 = Date.now()
      for (const [key, name, input] of [
        ['main', 'Main', 'hi'],
        ['counter', 'Counter', 0],
        ['counter2', 'Counter', 0],
        ['fail', 'Fail', null],
      ]) {
        ids[key] = `${key}-${kind}`
        await client.startOrchestration(ids[key], name, input)
      }
      ids.waiter = `waiter-${kind}`
      await client.startOrchestration(ids.waiter, 'Waiter', null)
      for (const key of ['main', 'counter', 'counter2', 'fail']) await client.waitForOrchestration(ids[key], 20000)
      await eventually(async () => (await client.getStatus(ids.waiter)).status === 'Running', { what: 'waiter running' })
      ids.child = `${ids.main}-child`
    })

    test('listAllInstances returns every instance id, children included', async () => {
      const all = await client.listAllInstances()
      assert.ok(Array.isArray(all))
      assert.deepEqual([...all].sort(), Object.values(ids).sort())
    })

    test('listInstancesByStatus filters by the current execution status', async () => {
      const sorted = async (s) => (await client.listInstancesByStatus(s)).sort()
      assert.deepEqual(await sorted('Completed'), [ids.child, ids.counter, ids.counter2, ids.main].sort())
      assert.deepEqual(await sorted('Failed'), [ids.fail])
      assert.deepEqual(await sorted('Running'), [ids.waiter])
      // Continue-as-new leaves the current (last) execution Completed.
      assert.deepEqual(await sorted('ContinuedAsNew'), [])
    })

    test('listInstancesByStatus rejects unknown statuses, listing the valid ones', async () => {
      for (const bad of ['running', 'Done', '', 5, undefined]) {
        await assert.rejects(client.listInstancesByStatus(bad), coded('ERR_INVALID_ARGUMENT', STATUSES))
      }
    })

    test('getInstanceInfo of a completed root instance', async () => {
      const info = await client.getInstanceInfo(ids.main)
      assert.deepEqual(Object.keys(info).sort(), [
        'createdAt', 'currentExecutionId', 'instanceId', 'orchestrationName', 'orchestrationVersion', 'output',
        'status', 'updatedAt',
      ])
      assert.equal(info.instanceId, ids.main)
      assert.equal(info.orchestrationName, 'Main')
      assert.equal(info.orchestrationVersion, '1.0.0')
      assert.equal(info.currentExecutionId, 1)
      assert.equal(info.status, 'Completed')
      // As stored: the JSON text of the output (getStatus does the same).
      assert.equal(typeof info.output, 'string')
      assert.deepEqual(JSON.parse(info.output), { echoed: 'hi', doubled: 42 })
      assert.ok(Number.isInteger(info.createdAt) && info.createdAt >= t0 - 1000 && info.createdAt <= Date.now())
      assert.ok(Number.isInteger(info.updatedAt) && info.updatedAt >= info.createdAt && info.updatedAt <= Date.now())
    })

    test('getInstanceInfo of a sub-orchestration names its parent', async () => {
      const info = await client.getInstanceInfo(ids.child)
      assert.equal(info.parentInstanceId, ids.main)
      assert.equal(info.orchestrationName, 'Child')
      assert.equal(info.output, '42')
    })

    test('getInstanceInfo of failed, continued and running instances', async () => {
      const failed = await client.getInstanceInfo(ids.fail)
      assert.equal(failed.status, 'Failed')
      assert.ok(failed.output.includes('boom'), failed.output)
      const counter = await client.getInstanceInfo(ids.counter)
      assert.equal(counter.currentExecutionId, 4)
      assert.equal(counter.status, 'Completed')
      assert.equal(counter.output, '3')
      const waiter = await client.getInstanceInfo(ids.waiter)
      assert.equal(waiter.status, 'Running')
      assert.equal(waiter.output, undefined)
    })

    test('getInstanceInfo rejects missing instances and bad ids', async () => {
      await assert.rejects(client.getInstanceInfo('no-such-instance'), coded('ERR_NOT_FOUND', 'no-such-instance'))
      await assert.rejects(client.getInstanceInfo(''), coded('ERR_INVALID_ARGUMENT', 'instanceId'))
      await assert.rejects(client.getInstanceInfo(42), coded('ERR_INVALID_ARGUMENT', 'instanceId'))
    })

    test('getExecutionInfo of continued and final executions', async () => {
      const first = await client.getExecutionInfo(ids.counter, 1)
      assert.equal(first.executionId, 1)
      assert.equal(first.status, 'ContinuedAsNew')
      assert.equal(first.output, '1', 'a continued execution stores the next input')
      assert.equal(first.eventCount, 2)
      assert.ok(Number.isInteger(first.startedAt) && first.startedAt >= t0 - 1000)
      // duroxide-pg leaves completed_at empty for continued executions; SQLite fills it.
      if (first.completedAt !== undefined) assert.ok(first.completedAt >= first.startedAt)

      const last = await client.getExecutionInfo(ids.counter, 4)
      assert.deepEqual(Object.keys(last).sort(), ['completedAt', 'eventCount', 'executionId', 'output', 'startedAt', 'status'])
      assert.equal(last.executionId, 4)
      assert.equal(last.status, 'Completed')
      assert.equal(last.output, '3')
      assert.equal(last.eventCount, 2)
      assert.ok(last.startedAt >= first.startedAt)
      assert.ok(last.completedAt >= last.startedAt)

      const running = await client.getExecutionInfo(ids.waiter, 1)
      assert.equal(running.status, 'Running')
      assert.equal(running.completedAt, undefined)
      assert.equal(running.output, undefined)
    })

    test('getExecutionInfo rejects missing executions and bad execution ids', async () => {
      await assert.rejects(client.getExecutionInfo(ids.counter, 9), coded('ERR_NOT_FOUND', 'execution 9', ids.counter))
      await assert.rejects(client.getExecutionInfo('no-such-instance', 1), coded('ERR_NOT_FOUND', 'no-such-instance'))
      for (const bad of [0, -1, 1.5, '1', null, NaN]) {
        await assert.rejects(client.getExecutionInfo(ids.counter, bad), coded('ERR_INVALID_ARGUMENT', 'executionId'))
      }
    })

    test('listExecutions lists execution ids in ascending order', async () => {
      assert.deepEqual(await client.listExecutions(ids.counter), [1, 2, 3, 4])
      assert.deepEqual(await client.listExecutions(ids.main), [1])
      assert.deepEqual(await client.listExecutions('no-such-instance'), [])
      await assert.rejects(client.listExecutions(''), coded('ERR_INVALID_ARGUMENT', 'instanceId'))
    })

    test('readExecutionHistory returns kinds, links and payloads', async () => {
      const events = await client.readExecutionHistory(ids.main, 1)
      assert.deepEqual(events.map((e) => e.kind), [
        'OrchestrationStarted', 'ActivityScheduled', 'ActivityCompleted',
        'SubOrchestrationScheduled', 'SubOrchestrationCompleted', 'OrchestrationCompleted',
      ])
      events.forEach((e, i) => {
        for (const key of Object.keys(e)) assert.ok(['eventId', 'kind', 'sourceEventId', 'timestampMs', 'data'].includes(key), key)
        assert.equal(e.eventId, i + 1)
        assert.ok(Number.isInteger(e.timestampMs) && e.timestampMs >= t0 - 1000)
        if (i > 0) assert.ok(e.timestampMs >= events[i - 1].timestampMs)
        assert.equal(typeof e.data, 'string')
      })
      const [started, scheduled, completed, subScheduled, subCompleted, done] = events
      assert.equal(started.sourceEventId, undefined)
      assert.equal(scheduled.sourceEventId, undefined)
      assert.equal(completed.sourceEventId, scheduled.eventId)
      assert.equal(subCompleted.sourceEventId, subScheduled.eventId)
      const startData = JSON.parse(started.data)
      assert.equal(startData.name, 'Main')
      assert.equal(startData.version, '1.0.0')
      assert.equal(startData.input, 'hi')
      assert.deepEqual(JSON.parse(scheduled.data), { name: 'Echo', input: 'hi' })
      assert.deepEqual(JSON.parse(completed.data), 'hi')
      assert.equal(JSON.parse(subScheduled.data).instance, ids.child)
      assert.deepEqual(JSON.parse(subCompleted.data), 42)
      assert.deepEqual(JSON.parse(done.data), { echoed: 'hi', doubled: 42 })
    })

    test('readExecutionHistory of a continued execution and of nothing', async () => {
      const kinds = (await client.readExecutionHistory(ids.counter, 2)).map((e) => e.kind)
      assert.deepEqual(kinds, ['OrchestrationStarted', 'OrchestrationContinuedAsNew'])
      const failed = await client.readExecutionHistory(ids.fail, 1)
      assert.equal(failed.at(-1).kind, 'OrchestrationFailed')
      assert.ok(failed.at(-1).data.includes('boom'))
      assert.deepEqual(await client.readExecutionHistory('no-such-instance', 1), [])
      await assert.rejects(client.readExecutionHistory(ids.main, 0), coded('ERR_INVALID_ARGUMENT', 'executionId'))
    })

    test('getInstanceTree returns the root and its descendants', async () => {
      const tree = await client.getInstanceTree(ids.main)
      assert.deepEqual(Object.keys(tree).sort(), ['allIds', 'rootId', 'size'])
      assert.equal(tree.rootId, ids.main)
      assert.deepEqual([...tree.allIds].sort(), [ids.child, ids.main].sort())
      assert.equal(tree.size, 2)
      assert.deepEqual(await client.getInstanceTree(ids.fail), { rootId: ids.fail, allIds: [ids.fail], size: 1 })
      await assert.rejects(client.getInstanceTree('no-such-instance'), coded('ERR_NOT_FOUND', 'no-such-instance'))
    })

    test('ctx.getClient() inside an activity reads another instance', async () => {
      const id = `inspector-${kind}`
      await client.startOrchestration(id, 'Inspector', ids.fail)
      const done = await client.waitForOrchestration(id, 20000)
      assert.deepEqual(done.output, { status: 'Failed', error: 'boom', name: 'Fail', isClient: true })
      await client.deleteInstance(id)
    })

    test('pruneExecutions keeps the newest executions', async () => {
      const r = await client.pruneExecutions(ids.counter, { keepLast: 2 })
      assert.deepEqual(r, { instancesProcessed: 1, executionsDeleted: 2, eventsDeleted: 4 })
      assert.deepEqual(await client.listExecutions(ids.counter), [3, 4])
      const again = await client.pruneExecutions(ids.counter, { keepLast: 2 })
      assert.equal(again.executionsDeleted, 0)
      // Still readable after pruning.
      assert.equal((await client.getInstanceInfo(ids.counter)).output, '3')
    })

    test('pruneExecutions rejects missing instances and bad options', async () => {
      await assert.rejects(client.pruneExecutions('no-such-instance'), coded('ERR_NOT_FOUND', 'no-such-instance'))
      await assert.rejects(client.pruneExecutions(ids.counter, { keepLast: -1 }), coded('ERR_INVALID_OPTION', 'options.keepLast'))
      await assert.rejects(client.pruneExecutions(ids.counter, { keepLast: 2 ** 31 }), coded('ERR_INVALID_OPTION', 'options.keepLast'))
      await assert.rejects(client.pruneExecutions(ids.counter, { keep: 1 }), coded('ERR_INVALID_OPTION', 'options.keep'))
      await assert.rejects(client.pruneExecutions(ids.counter, { completedBefore: 'yesterday' }), coded('ERR_INVALID_OPTION', 'options.completedBefore'))
      await assert.rejects(client.pruneExecutions(ids.counter, 3), coded('ERR_INVALID_ARGUMENT', 'options'))
    })

    test('pruneExecutionsBulk prunes every matching instance', async () => {
      const r = await client.pruneExecutionsBulk({ instanceIds: [ids.counter2] }, {})
      assert.deepEqual(r, { instancesProcessed: 1, executionsDeleted: 3, eventsDeleted: 6 })
      assert.deepEqual(await client.listExecutions(ids.counter2), [4])
      await assert.rejects(client.pruneExecutionsBulk({ limit: 1.5 }), coded('ERR_INVALID_OPTION', 'filter.limit'))
    })

    test('deleteInstance refuses running instances, children and unknown ids', async () => {
      await assert.rejects(client.deleteInstance(ids.waiter), coded('ERR_RUNTIME_STATE', ids.waiter, 'force'))
      await assert.rejects(client.deleteInstance(ids.child), coded('ERR_INVALID_ARGUMENT', ids.child))
      await assert.rejects(client.deleteInstance('no-such-instance'), coded('ERR_NOT_FOUND', 'no-such-instance'))
      await assert.rejects(client.deleteInstance(ids.main, 'yes'), coded('ERR_INVALID_ARGUMENT', 'force'))
      // Nothing was deleted by the refused calls.
      assert.equal((await client.getStatus(ids.waiter)).status, 'Running')
      assert.equal((await client.getInstanceInfo(ids.child)).status, 'Completed')
    })

    test('deleteInstance removes a root with its sub-orchestrations', async () => {
      const r = await client.deleteInstance(ids.main)
      assert.deepEqual(Object.keys(r).sort(), ['eventsDeleted', 'executionsDeleted', 'instancesDeleted', 'queueMessagesDeleted'])
      assert.equal(r.instancesDeleted, 2)
      assert.equal(r.executionsDeleted, 2)
      assert.equal(r.eventsDeleted, 6 + 2) // the root's six events and the child's two
      assert.equal(r.queueMessagesDeleted, 0)
      assert.equal((await client.getStatus(ids.main)).status, 'NotFound')
      await assert.rejects(client.getInstanceInfo(ids.child), coded('ERR_NOT_FOUND'))
      // Other instances are untouched.
      assert.equal((await client.getStatus(ids.fail)).status, 'Failed')
    })

    test('deleteInstance with force removes a running instance', async () => {
      const r = await client.deleteInstance(ids.waiter, true)
      assert.equal(r.instancesDeleted, 1)
      assert.equal((await client.getStatus(ids.waiter)).status, 'NotFound')
    })

    test('deleteInstanceBulk applies instanceIds, completedBefore and limit', async () => {
      const none = await client.deleteInstanceBulk({ instanceIds: [ids.fail], completedBefore: 1 })
      assert.deepEqual(none, { instancesDeleted: 0, executionsDeleted: 0, eventsDeleted: 0, queueMessagesDeleted: 0 })
      const limited = await client.deleteInstanceBulk({ instanceIds: [ids.fail, ids.counter], limit: 1 })
      assert.equal(limited.instancesDeleted, 1)
      const rest = await client.deleteInstanceBulk({ instanceIds: [ids.fail, ids.counter], completedBefore: new Date(Date.now() + 60000) })
      assert.equal(rest.instancesDeleted, 1)
      assert.equal((await client.getStatus(ids.fail)).status, 'NotFound')
      assert.equal((await client.getStatus(ids.counter)).status, 'NotFound')
      assert.equal((await client.getStatus(ids.counter2)).status, 'Completed')
    })

    test('deleteInstanceBulk rejects malformed filters', async () => {
      await assert.rejects(client.deleteInstanceBulk('all'), coded('ERR_INVALID_ARGUMENT', 'filter'))
      await assert.rejects(client.deleteInstanceBulk({ ids: [] }), coded('ERR_INVALID_OPTION', 'filter.ids'))
      await assert.rejects(client.deleteInstanceBulk({ instanceIds: 'a' }), coded('ERR_INVALID_OPTION', 'filter.instanceIds'))
      await assert.rejects(client.deleteInstanceBulk({ instanceIds: [''] }), coded('ERR_INVALID_OPTION', 'filter.instanceIds[0]'))
      await assert.rejects(client.deleteInstanceBulk({ limit: -1 }), coded('ERR_INVALID_OPTION', 'filter.limit'))
      await assert.rejects(client.deleteInstanceBulk({ completedBefore: -5 }), coded('ERR_INVALID_OPTION', 'filter.completedBefore'))
      assert.equal((await client.getStatus(ids.counter2)).status, 'Completed')
    })
  })
}
