'use strict'
// `duroxide-node replay --module <file>` run as a child process against real
// SQLite and Postgres stores holding instances recorded by the fixture's
// 'v1' code: exit 0 when every instance replays clean, exit 1 with the
// divergence when the module's code changed, --json output, --status and
// --limit, and that the command runs no activity and writes nothing.
const { describe, test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { backends, eventually, rowCounts, Client } = require('./helpers')
const { openStore } = require('./fixtures/store')
const { Runtime } = require('..')
const { runCli } = require('./fixtures/cli-run')
const workflows = require('./fixtures/replay/workflows')

const MODULES = path.join(__dirname, 'fixtures', 'replay')
const moduleFile = (name) => path.join(MODULES, name)

for (const [kind, open] of backends) {
  describe(`cli replay on ${kind}`, () => {
    let store
    let cli
    let activityLog

    before(async () => {
      store = await openStore(open)
      const client = new Client(store.provider)
      const rt = workflows.register(new Runtime(store.provider, { dispatcherPollIntervalMs: 5 }), 'v1')
      await rt.start()
      try {
        await client.startOrchestration('o1', 'Order', { sku: 'x-1', qty: 2 })
        await client.startOrchestration('a1', 'Approval', { sku: 'x-2', qty: 1 })
        await client.waitForOrchestration('o1', 20000)
        await eventually(async () => (await client.readExecutionHistory('a1', 1)).some((e) => e.kind === 'ExternalSubscribed'), {
          what: 'a1 waiting for approve',
        })
      } finally {
        await rt.shutdown(200)
      }
      activityLog = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'cli-replay-')), 'activities.log')
      const env = { REPLAY_ACTIVITY_LOG: activityLog, ...(store.schema ? { DUROXIDE_SCHEMA: store.schema } : {}) }
      cli = (...args) => runCli(['replay', ...args, '--database-url', store.url], { env })
    })

    after(async () => {
      if (activityLog) fs.rmSync(path.dirname(activityLog), { recursive: true, force: true })
      if (store) await store.release()
    })

    test('unchanged code: exit 0, every instance ok (CommonJS and ES modules)', async () => {
      const r = await cli('--module', moduleFile('v1.js'), '--json')
      assert.equal(r.code, 0, r.stderr)
      assert.equal(r.json.checked, 2)
      assert.equal(r.json.diverged, 0)
      assert.deepEqual(r.json.results.map((x) => [x.instanceId, x.executionId, x.ok]).sort(), [['a1', 1, true], ['o1', 1, true]])
      const table = await cli('--module', moduleFile('v1.mjs'))
      assert.equal(table.code, 0, table.stderr)
      assert.match(table.stdout, /^INSTANCE\s+EXEC\s+REPLAY/m)
      assert.match(table.stdout, /^o1\s+1\s+ok/m)
      assert.match(table.stdout, /^2 checked, 0 diverged$/m)
    })

    test('changed code: exit 1 with the divergence, as JSON and as a table', async () => {
      const r = await cli('--module', moduleFile('swapped.js'), '--json')
      assert.equal(r.code, 1, r.stderr)
      assert.equal(r.json.checked, 2)
      assert.equal(r.json.diverged, 1)
      const o1 = r.json.results.find((x) => x.instanceId === 'o1')
      assert.equal(o1.ok, false)
      assert.equal(o1.divergence.index, 3)
      assert.equal(o1.divergence.eventId, 4)
      assert.equal(JSON.parse(o1.divergence.recorded.data).name, 'Charge')
      assert.equal(JSON.parse(o1.divergence.scheduled.data).name, 'Refund')
      assert.equal(r.json.results.find((x) => x.instanceId === 'a1').ok, true)

      const table = await cli('--module', moduleFile('timer-before.js'))
      assert.equal(table.code, 1, table.stderr)
      assert.match(table.stdout, /^o1\s+1\s+DIVERGED\s+#4\s+at event 4 the history has activity 'Charge'.*a timer/m)
      // One numbering: `history` shows the same event as #4 too.
      const history = await runCli(['history', 'o1', '--database-url', store.url], { env: store.schema ? { DUROXIDE_SCHEMA: store.schema } : {} })
      assert.equal(history.code, 0, history.stderr)
      assert.match(history.stdout, /^#4\s.*ActivityScheduled\s.*Charge/m)
      assert.match(table.stdout, /^1 checked, 1 diverged$|^2 checked, 1 diverged$/m)
    })

    test('--status and --limit pick the instances checked', async () => {
      const running = await cli('--module', moduleFile('swapped.js'), '--status', 'Running', '--json')
      assert.equal(running.code, 0, running.stderr)
      assert.deepEqual(running.json.results.map((x) => x.instanceId), ['a1'])
      const one = await cli('--module', moduleFile('v1.js'), '--limit', '1', '--json')
      assert.equal(one.code, 0, one.stderr)
      assert.equal(one.json.checked, 1)
    })

    test('replay runs no activity and writes nothing', async () => {
      const rows = rowCounts(store)
      for (const m of ['v1.js', 'swapped.js', 'timer-before.js']) await cli('--module', moduleFile(m), '--json')
      assert.deepEqual(rowCounts(store), rows)
      assert.equal(fs.existsSync(activityLog), false, 'an activity ran during replay')
    })

    test('a module that cannot be loaded or registers nothing fails with ERR_INVALID_ARGUMENT', async () => {
      const missing = await cli('--module', moduleFile('nope.js'), '--json')
      assert.equal(missing.code, 1)
      assert.equal(missing.error.code, 'ERR_INVALID_ARGUMENT')
      assert.match(missing.error.message, /cannot load --module/)
      const noRegister = await cli('--module', moduleFile('no-register.js'), '--json')
      assert.equal(noRegister.code, 1)
      assert.equal(noRegister.error.code, 'ERR_INVALID_ARGUMENT')
      assert.match(noRegister.error.message, /exports no register\(runtime\)/)
    })
  })
}
