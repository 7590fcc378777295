'use strict'
// The duroxide-node CLI run as a child process against a real SQLite file and
// a real Postgres schema holding instances a runtime created in this test:
// each command's --json output, its exit code, ERR_NOT_FOUND for unknown ids,
// the --yes guard of destructive commands, and that read commands change
// nothing in the store.
const { describe, test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { backends, eventually, psql, uniqueName, DATABASE_URL, Client } = require('./helpers')
const { openStore } = require('./fixtures/store')
const { Runtime } = require('..')
const { runCli, onTerminal } = require('./fixtures/cli-run')

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
    ctx.setCustomStatus('waiting for go')
    return yield ctx.waitForEvent('go')
  })
}

/** What the store holds, read through the public API: equal before and after a read-only command. */
async function snapshot(client) {
  const ids = (await client.listAllInstances()).sort()
  const instances = []
  for (const id of ids) {
    const executions = await client.listExecutions(id)
    const histories = []
    for (const n of executions) histories.push(await client.readExecutionHistory(id, n))
    instances.push({ info: await client.getInstanceInfo(id), status: await client.getStatus(id), executions, histories })
  }
  return { metrics: await client.getSystemMetrics(), queues: await client.getQueueDepths(), instances }
}

/** A runtime on `provider` with this file's handlers; polled slowly, it only has to drive a few instances. */
async function startRuntime(provider) {
  const rt = new Runtime(provider, { dispatcherPollIntervalMs: 20 })
  register(rt)
  await rt.start()
  return rt
}

for (const [kind, open] of backends) {
  describe(`cli commands on ${kind}`, () => {
    let client
    let store
    /** Only runs while instances are created and while raise and cancel need one to act. */
    let rt
    const ids = {}
    /** The store arguments: a flag for the URL, the schema from the environment on Postgres. */
    let storeArgs
    let storeEnv
    /** The store before the first command; the read-only tests run first and must leave it as it was. */
    let untouched
    const cli = (...args) => runCli([...args, ...storeArgs], { env: storeEnv })

    before(async () => {
      store = await openStore(open)
      client = new Client(store.provider)
      rt = await startRuntime(store.provider)
      storeArgs = ['--database-url', store.url]
      storeEnv = store.schema ? { DUROXIDE_SCHEMA: store.schema } : {}
      for (const [key, name, input] of [
        ['main', 'Main', 'hi'],
        ['counter', 'Counter', 0],
        ['fail', 'Fail', null],
        ['waiter', 'Waiter', null],
        ['waiter2', 'Waiter', null],
      ]) {
        ids[key] = `${key}-${kind}`
        await client.startOrchestration(ids[key], name, input)
      }
      ids.child = `${ids.main}-child`
      for (const key of ['main', 'counter', 'fail']) await client.waitForOrchestration(ids[key], 20000)
      for (const key of ['waiter', 'waiter2']) {
        await eventually(async () => (await client.getStatus(ids[key])).customStatus === 'waiting for go', { what: `${key} waiting` })
      }
      // The read-only tests run on a store that nothing else writes to.
      await rt.shutdown(1000)
      rt = undefined
      untouched = await snapshot(client)
    })
    after(async () => {
      if (rt) await rt.shutdown(1000)
      if (store) await store.release()
    })

    test('list --json lists every instance with its status; --status, --name and --limit narrow it', async () => {
      const all = await cli('list', '--json')
      assert.equal(all.code, 0, all.stderr)
      const byId = Object.fromEntries(all.json.instances.map((i) => [i.instanceId, i]))
      assert.deepEqual(Object.keys(byId).sort(), Object.values(ids).sort())
      assert.equal(byId[ids.main].status, 'Completed')
      assert.equal(byId[ids.main].orchestrationName, 'Main')
      assert.equal(byId[ids.fail].status, 'Failed')
      assert.equal(byId[ids.waiter].status, 'Running')
      assert.equal(byId[ids.counter].currentExecutionId, 4)
      assert.equal(byId[ids.child].parentInstanceId, ids.main)
      assert.equal(all.json.truncated, false)

      const failed = await cli('list', '--status', 'Failed', '--json')
      assert.deepEqual(failed.json.instances.map((i) => i.instanceId), [ids.fail])
      const waiters = await cli('list', '--name', 'Waiter', '--json')
      assert.deepEqual(waiters.json.instances.map((i) => i.instanceId).sort(), [ids.waiter, ids.waiter2].sort())
      const one = await cli('list', '--limit', '1', '--json')
      assert.equal(one.json.instances.length, 1)
      assert.equal(one.json.truncated, true)
    })

    test('list prints a table without --json', async () => {
      const r = await cli('list', '--status', 'Running')
      assert.equal(r.code, 0, r.stderr)
      const lines = r.stdout.trim().split('\n')
      assert.match(lines[0], /^INSTANCE\s+ORCHESTRATION\s+VERSION\s+STATUS/)
      assert.deepEqual(lines.slice(1).map((l) => l.split(/\s+/)[0]).sort(), [ids.waiter, ids.waiter2].sort())
      assert.ok(lines.slice(1).every((l) => /\bWaiter\s+1\.0\.0\s+Running\b/.test(l)), r.stdout)
    })

    if (kind === 'postgres') {
      test('a Postgres schema that does not exist is an error and is not created', async () => {
        const schema = uniqueName('cli_absent')
        try {
          const r = await runCli(['list', '--json', '--database-url', DATABASE_URL, '--schema', schema])
          assert.equal(r.code, 1)
          assert.equal(r.error.code, 'ERR_PROVIDER')
          assert.match(r.error.message, new RegExp(`no duroxide store in schema '${schema}'`))
          assert.equal(psql(`SELECT count(*) FROM information_schema.schemata WHERE schema_name = '${schema}'`), '0')
        } finally {
          psql(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
        }
      })
    } else {
      test('the store URL is read from DUROXIDE_DATABASE_URL', async () => {
        const r = await runCli(['list', '--status', 'Completed', '--json'], { env: { DUROXIDE_DATABASE_URL: store.url } })
        assert.equal(r.code, 0, r.stderr)
        assert.ok(r.json.instances.some((i) => i.instanceId === ids.counter || i.instanceId === ids.main), r.stdout)
      })
    }

    test('show --json: status with the parsed output, executions and tree', async () => {
      const main = await cli('show', ids.main, '--json')
      assert.equal(main.code, 0, main.stderr)
      assert.equal(main.json.status.status, 'Completed')
      assert.deepEqual(main.json.status.output, { echoed: 'hi', doubled: 42 })
      assert.equal(main.json.instance.orchestrationName, 'Main')
      assert.deepEqual(main.json.executions.map((e) => [e.executionId, e.status]), [[1, 'Completed']])
      assert.deepEqual(main.json.tree, { rootId: ids.main, allIds: [ids.main, ids.child], size: 2 })

      const counter = await cli('show', ids.counter, '--json')
      assert.deepEqual(counter.json.executions.map((e) => e.status), ['ContinuedAsNew', 'ContinuedAsNew', 'ContinuedAsNew', 'Completed'])
      assert.equal(counter.json.status.output, 3)

      const failed = await cli('show', ids.fail, '--json')
      assert.equal(failed.json.status.status, 'Failed')
      assert.match(failed.json.status.error, /boom/)

      const waiter = await cli('show', ids.waiter, '--json')
      assert.equal(waiter.json.status.status, 'Running')
      assert.equal(waiter.json.status.customStatus, 'waiting for go')
      assert.equal(waiter.json.status.output, undefined)
    })

    test('show prints the status, error and executions as text', async () => {
      const r = await cli('show', ids.fail)
      assert.equal(r.code, 0, r.stderr)
      assert.match(r.stdout, /^status:\s+Failed$/m)
      assert.match(r.stdout, /^error:\s+boom$/m)
      assert.match(r.stdout, /^EXEC\s+STATUS\s+EVENTS/m)
    })

    test('history --json: the events of the current execution with data parsed; --execution picks one', async () => {
      const r = await cli('history', ids.main, '--json')
      assert.equal(r.code, 0, r.stderr)
      assert.equal(r.json.executionId, 1)
      const kinds = r.json.events.map((e) => e.kind)
      assert.deepEqual(kinds, [
        'OrchestrationStarted', 'ActivityScheduled', 'ActivityCompleted',
        'SubOrchestrationScheduled', 'SubOrchestrationCompleted', 'OrchestrationCompleted',
      ])
      assert.deepEqual(r.json.events[0].data, { name: 'Main', version: '1.0.0', input: 'hi' })
      assert.deepEqual(r.json.events[1].data, { name: 'Echo', input: 'hi' })
      assert.equal(r.json.events[2].sourceEventId, r.json.events[1].eventId)
      assert.deepEqual(r.json.events[5].data, { echoed: 'hi', doubled: 42 })

      const first = await cli('history', ids.counter, '--execution', '1', '--json')
      assert.equal(first.code, 0, first.stderr)
      assert.equal(first.json.executionId, 1)
      assert.deepEqual(first.json.executions, [1, 2, 3, 4])
      assert.deepEqual(first.json.events.map((e) => e.kind), ['OrchestrationStarted', 'OrchestrationContinuedAsNew'])
      assert.equal(first.json.events[0].data.input, 0)
      const current = await cli('history', ids.counter, '--json')
      assert.equal(current.json.executionId, 4)
      assert.equal(current.json.events[0].data.input, 3)
    })

    test('history prints a readable timeline', async () => {
      const r = await cli('history', ids.main)
      assert.equal(r.code, 0, r.stderr)
      assert.match(r.stdout, /#2\s+\S+\s+\+\d+\.\d{3}s\s+ActivityScheduled\s+Echo input="hi"/)
      assert.match(r.stdout, /ActivityCompleted\s+#2\s+result="hi"/)
      assert.match(r.stdout, /SubOrchestrationScheduled\s+Child as main-\w+-child input=21/)
      assert.match(r.stdout, /OrchestrationCompleted\s+output=\{/)
    })

    test('unknown ids and executions fail with ERR_NOT_FOUND and exit code 1', async () => {
      for (const args of [
        ['show', 'no-such-instance'],
        ['history', 'no-such-instance'],
        ['history', ids.counter, '--execution', '9'],
        ['raise', 'no-such-instance', 'go'],
        ['cancel', 'no-such-instance'],
        ['delete', 'no-such-instance', '--yes'],
      ]) {
        const r = await cli(...args, '--json')
        assert.equal(r.code, 1, `${args.join(' ')}: ${r.stderr}`)
        assert.equal(r.stdout, '')
        assert.equal(r.error.code, 'ERR_NOT_FOUND', args.join(' '))
        assert.match(r.error.message, args[1] === ids.counter ? /execution 9/ : /no-such-instance/)
      }
      const text = await cli('show', 'no-such-instance')
      assert.equal(text.code, 1)
      assert.match(text.stderr, /^duroxide-node: error \[ERR_NOT_FOUND\]: .*no-such-instance/)
    })

    test('stats --json counts instances by status and reports queue depths', async () => {
      const r = await cli('stats', '--json')
      assert.equal(r.code, 0, r.stderr)
      const metrics = await client.getSystemMetrics()
      assert.equal(r.json.backend, kind)
      assert.equal(r.json.instances.total, metrics.totalInstances)
      assert.equal(r.json.totalExecutions, metrics.totalExecutions)
      assert.equal(r.json.totalEvents, metrics.totalEvents)
      for (const s of ['Running', 'Completed', 'Failed', 'ContinuedAsNew']) {
        assert.equal(r.json.instances.byStatus[s], (await client.listInstancesByStatus(s)).length, s)
      }
      assert.deepEqual(Object.keys(r.json.queues).sort(), ['orchestratorQueue', 'timerQueue', 'workerQueue'])
      assert.ok(Object.values(r.json.queues).every((n) => Number.isInteger(n) && n >= 0))
    })

    test('the read commands above changed nothing in the store', async () => {
      // list, show, history and stats ran in the tests before this one, with
      // and without --json, on success and on unknown ids.
      assert.deepEqual(await snapshot(client), untouched)
    })

    test('raise delivers JSON data to a running instance; refuses finished ones and bad JSON', async () => {
      rt = await startRuntime(store.provider)
      const r = await cli('raise', ids.waiter, 'go', '{"approved":true}', '--json')
      assert.equal(r.code, 0, r.stderr)
      assert.deepEqual(r.json, {
        instanceId: ids.waiter,
        eventName: 'go',
        data: { approved: true },
        raised: true,
        delivery: 'to the open wait',
        waitsFor: { events: ['go'], mailboxes: [] },
      })
      const done = await client.waitForOrchestration(ids.waiter, 20000)
      assert.deepEqual(done.output, { approved: true })

      const finished = await cli('raise', ids.main, 'go', '--json')
      assert.equal(finished.code, 1)
      assert.equal(finished.error.code, 'ERR_RUNTIME_STATE')
      const bad = await cli('raise', ids.waiter2, 'go', '{nope')
      assert.equal(bad.code, 2)
      assert.match(bad.stderr, /\[ERR_INVALID_ARGUMENT\].*not JSON text/)
      assert.match(bad.stderr, /Usage: duroxide-node raise/)
      assert.equal((await client.getStatus(ids.waiter2)).status, 'Running')
    })

    test('raise warns when the instance does not wait for the name, and --strict refuses', async () => {
      const before = (await client.readExecutionHistory(ids.waiter2, 1)).length
      const strict = await cli('raise', ids.waiter2, 'aproval', '1', '--strict')
      assert.equal(strict.code, 1)
      assert.match(strict.stderr, /\[ERR_RUNTIME_STATE\]: instance '[^']+' is not waiting for 'aproval' \(it waits for 'go'\); nothing was raised/)
      assert.equal(await client.getQueueDepths().then((q) => q.orchestratorQueue), 0, 'nothing was queued')
      assert.equal((await client.readExecutionHistory(ids.waiter2, 1)).length, before)

      const warned = await cli('raise', ids.waiter2, 'aproval', '1')
      assert.equal(warned.code, 0, warned.stderr)
      assert.match(warned.stderr, /warning: instance '[^']+' is not waiting for 'aproval' \(it waits for 'go'\); raised anyway \(kept until waited for\)/)
      assert.match(warned.stdout, /^delivery:\s+kept until waited for$/m)
      const json = await cli('raise', ids.waiter2, 'aproval', '2', '--json')
      assert.equal(json.code, 0, json.stderr)
      assert.equal(json.stderr, '')
      assert.match(json.json.warning, /not waiting for 'aproval'/)
    })

    test('delete needs --yes without a terminal, --force for a running instance, and a root id', async () => {
      const noYes = await cli('delete', ids.fail)
      assert.equal(noYes.code, 2)
      assert.match(noYes.stderr, /--yes/)
      assert.equal((await client.getStatus(ids.fail)).status, 'Failed')

      const running = await cli('delete', ids.waiter2, '--yes', '--json')
      assert.equal(running.code, 1)
      assert.equal(running.error.code, 'ERR_RUNTIME_STATE')
      assert.match(running.error.message, /--force/)
      const child = await cli('delete', ids.child, '--yes', '--json')
      assert.equal(child.code, 1)
      assert.equal(child.error.code, 'ERR_INVALID_ARGUMENT')
      assert.equal((await client.getStatus(ids.child)).status, 'Completed')

      const r = await cli('delete', ids.fail, '--yes', '--json')
      assert.equal(r.code, 0, r.stderr)
      assert.equal(r.json.instanceId, ids.fail)
      assert.equal(r.json.instancesDeleted, 1)
      assert.ok(r.json.eventsDeleted >= 2, JSON.stringify(r.json))
      assert.equal((await client.getStatus(ids.fail)).status, 'NotFound')
    })

    test('cancel fails a running instance with the reason', async () => {
      const r = await cli('cancel', ids.waiter2, '--reason', 'operator said so', '--json')
      assert.equal(r.code, 0, r.stderr)
      assert.deepEqual(r.json, { instanceId: ids.waiter2, cancelRequested: true, reason: 'operator said so' })
      const done = await client.waitForOrchestration(ids.waiter2, 20000)
      assert.equal(done.status, 'Failed')
      assert.match(done.error, /operator said so/)
      assert.equal(done.failure.cancelled, true)
      assert.equal(done.failure.reason, 'operator said so')
      const shown = await cli('show', ids.waiter2)
      assert.match(shown.stdout, /^status:\s+Failed \(cancelled\)$/m)
      assert.match(shown.stdout, /^cancelled:\s+operator said so$/m)
      const shownJson = await cli('show', ids.waiter2, '--json')
      assert.equal(shownJson.json.status.failure.cancelled, true)
      assert.equal(shownJson.json.status.failure.reason, 'operator said so')
      const history = await cli('history', ids.waiter2)
      assert.match(history.stdout, /OrchestrationFailed\s+cancelled: operator said so$/m)
      const again = await cli('cancel', ids.waiter2, '--json')
      assert.equal(again.code, 1)
      assert.equal(again.error.code, 'ERR_RUNTIME_STATE')
    })

    if (kind === 'sqlite') {
      test('on a terminal delete asks first: no keeps the instance, yes deletes it', async () => {
        const no = await onTerminal(['delete', ids.main, ...storeArgs], 'n')
        assert.equal(no.code, 1, no.output)
        assert.match(no.output, new RegExp(`Delete Completed instance '${ids.main}' and 1 sub-orchestration\\(s\\)\\? \\[y/N\\]`))
        assert.match(no.output, /\[ERR_ABORTED\]: delete: not confirmed; nothing was deleted/)
        assert.equal((await client.getStatus(ids.main)).status, 'Completed')
        const yes = await onTerminal(['delete', ids.main, ...storeArgs], 'y')
        assert.equal(yes.code, 0, yes.output)
        assert.match(yes.output, /^instances:\s+2\s*$/m)
        assert.equal((await client.getStatus(ids.main)).status, 'NotFound')
        assert.equal((await client.getStatus(ids.child)).status, 'NotFound')
      })
    }

    test('prune deletes old executions with --keep-last, and with --instances whole finished instances', async () => {
      const noYes = await cli('prune', '--completed-before', '2999-01-01')
      assert.equal(noYes.code, 2)
      assert.deepEqual(await client.listExecutions(ids.counter), [1, 2, 3, 4])

      // The counter's executions all ended moments ago, none a day ago.
      const none = await cli('prune', '--completed-before', '1d', '--yes', '--json')
      assert.equal(none.code, 0, none.stderr)
      assert.equal(none.json.executionsDeleted, 0)
      assert.deepEqual(await client.listExecutions(ids.counter), [1, 2, 3, 4])

      const future = new Date(Date.now() + 60000).toISOString()
      const r = await cli('prune', '--completed-before', future, '--keep-last', '2', '--yes', '--json')
      assert.equal(r.code, 0, r.stderr)
      assert.equal(r.json.mode, 'executions')
      assert.equal(r.json.executionsDeleted, 2)
      assert.equal(r.json.instancesProcessed, 1)
      assert.deepEqual(await client.listExecutions(ids.counter), [3, 4])
      const rest = await cli('prune', '--completed-before', future, '--yes', '--json')
      assert.equal(rest.json.executionsDeleted, 1)
      assert.deepEqual(await client.listExecutions(ids.counter), [4])
      assert.equal((await client.getStatus(ids.counter)).output, '3')

      // Nothing finished a day ago: nothing goes.
      const old = await cli('prune', '--instances', '--completed-before', '1d', '--yes', '--json')
      assert.equal(old.code, 0, old.stderr)
      assert.equal(old.json.instancesDeleted, 0)
      assert.equal((await client.getStatus(ids.counter)).status, 'Completed')

      // Every instance left has finished by now.
      const left = (await client.listAllInstances()).length
      const all = await cli('prune', '--instances', '--completed-before', future, '--yes', '--json')
      assert.equal(all.code, 0, all.stderr)
      assert.equal(all.json.mode, 'instances')
      assert.equal(all.json.instancesDeleted, left)
      assert.deepEqual(await client.listAllInstances(), [])
    })

  })
}
