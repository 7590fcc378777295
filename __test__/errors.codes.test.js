'use strict'
// Bad input, on Postgres (and SQLite where it differs): every throw and
// rejection carries a stable `code` and names what was wrong, arrives at the
// call that caused it, never as a Rust panic, and leaves the process and the
// stored instances unharmed.
const { describe, test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { pgSchema, startRuntime, eventually, psql, Client, FAST, DATABASE_URL, scope, coded, settlesWithin, closedPort } = require('./helpers')
const dx = require('..')
const native = require('../lib/native')
const { nativeProviderOf } = require('../lib/providers')

const { Runtime, PostgresProvider, SqliteProvider } = dx

const fn = function* () {}

test('the limit constants are the crate values, read from the native module', () => {
  const expected = { MAX_WORKER_TAGS: 5, MAX_TAG_NAME_BYTES: 256, MAX_KV_KEYS: 150, MAX_KV_VALUE_BYTES: 65536, MAX_CUSTOM_STATUS_BYTES: 262144 }
  for (const [name, value] of Object.entries(expected)) {
    assert.equal(dx[name], value, name)
    assert.equal(native[name], value, `native ${name}`)
  }
})

describe('bad input on postgres', () => {
  let pg
  let client
  const t = scope()
  after(() => t.close())

  // The native client without the JS layer: errors carry their code themselves.
  const nativeClient = () => new native.NativeClient(nativeProviderOf(pg.provider, 'test'))

  before(async () => {
    pg = await pgSchema(t)
    await startRuntime(t, pg.provider, (rt) => {
      rt.registerActivity('Echo', async (ctx, x) => x)
      rt.registerOrchestration('Done', function* (ctx, x) {
        return yield ctx.scheduleActivity('Echo', x)
      })
      rt.registerOrchestration('Wait', function* (ctx) {
        return yield ctx.waitForEvent('never')
      })
      rt.registerOrchestration('BigValue', function* (ctx, size) {
        ctx.setValue('big', 'x'.repeat(size))
        return yield ctx.scheduleActivity('Echo', 'after-set')
      })
      rt.registerOrchestration('ManyKeys', function* (ctx, count) {
        for (let i = 0; i < count; i++) ctx.setValue(`k${i}`, 'v')
        return yield ctx.scheduleActivity('Echo', 'after-keys')
      })
      rt.registerOrchestration('BigStatus', function* (ctx, size) {
        ctx.setCustomStatus('s'.repeat(size))
        return yield ctx.scheduleActivity('Echo', 'after-status')
      })
      rt.registerOrchestration('LongTag', function* (ctx, size) {
        return yield ctx.scheduleActivity('Echo', 'tagged').withTag('t'.repeat(size))
      })
    })
    client = new Client(pg.provider)
    await client.startOrchestration('survivor', 'Done', 'kept')
    assert.equal((await client.waitForOrchestration('survivor', 20000)).status, 'Completed')
  })

  test('empty and non-string instance ids and names', async () => {
    for (const id of ['', 5, null, undefined, {}]) {
      await assert.rejects(client.startOrchestration(id, 'Done', null), coded('ERR_INVALID_ARGUMENT', 'instanceId'))
      await assert.rejects(client.getStatus(id), coded('ERR_INVALID_ARGUMENT', 'instanceId'))
      await assert.rejects(client.raiseEvent(id, 'e', null), coded('ERR_INVALID_ARGUMENT', 'instanceId'))
      await assert.rejects(client.cancelInstance(id), coded('ERR_INVALID_ARGUMENT', 'instanceId'))
      await assert.rejects(client.getInstanceInfo(id), coded('ERR_INVALID_ARGUMENT', 'instanceId'))
    }
    for (const name of ['', 7, null]) {
      await assert.rejects(client.startOrchestration('x', name, null), coded('ERR_INVALID_ARGUMENT', 'orchestrationName'))
      await assert.rejects(client.raiseEvent('x', name, null), coded('ERR_INVALID_ARGUMENT', 'eventName'))
      await assert.rejects(client.enqueueEvent('x', name, null), coded('ERR_INVALID_ARGUMENT', 'queueName'))
    }
    await assert.rejects(client.cancelInstance('x', 5), coded('ERR_INVALID_ARGUMENT', 'reason'))
    const rt = new Runtime(pg.provider)
    assert.throws(() => rt.registerActivity('', async () => 1), coded('ERR_INVALID_ARGUMENT', 'name'))
    assert.throws(() => rt.registerActivity(3, async () => 1), coded('ERR_INVALID_ARGUMENT', 'name'))
    assert.throws(() => rt.registerActivity('A', 'not a function'), coded('ERR_INVALID_ARGUMENT', 'activity'))
    assert.throws(() => rt.registerOrchestration('', fn), coded('ERR_INVALID_ARGUMENT', 'name'))
    assert.throws(() => rt.registerOrchestration('O', null), coded('ERR_INVALID_ARGUMENT', 'orchestration'))
    assert.throws(() => new Client({}), coded('ERR_INVALID_ARGUMENT', 'SqliteProvider or PostgresProvider'))
  })

  test('reserved sub:: instance ids, from the client and from an orchestration', async () => {
    for (const id of ['sub::1', 'root::sub::2']) {
      await assert.rejects(client.startOrchestration(id, 'Done', null), coded('ERR_INVALID_ARGUMENT', id, 'sub::'))
      await assert.rejects(client.startOrchestrationVersioned(id, 'Done', null, '1.0.0'), coded('ERR_INVALID_ARGUMENT', 'sub::'))
    }
    // The native layer checks too, for any caller that skips the JS layer.
    await assert.rejects(nativeClient().startOrchestration('sub::3', 'Done', 'null'), { code: 'ERR_INVALID_ARGUMENT', message: /sub::/ })
    // Inside an orchestration the task constructors throw at the call, catchably.
    const ctx = new dx.OrchestrationContext({}, { instanceId: 'i', executionId: 1, orchestrationName: 'P', orchestrationVersion: '1.0.0' })
    assert.throws(() => ctx.startOrchestration('Done', 'sub::x', null), coded('ERR_INVALID_ARGUMENT', 'sub::x'))
    assert.throws(() => ctx.scheduleSubOrchestrationWithId('Done', 'a::sub::b', null), coded('ERR_INVALID_ARGUMENT', 'a::sub::b'))
  })

  test('invalid schema names are refused before any SQL runs', async () => {
    for (const schema of ['a; drop table x', '1abc', 'x'.repeat(64), 'has space']) {
      await assert.rejects(PostgresProvider.connectWithSchema(DATABASE_URL, schema), coded('ERR_INVALID_ARGUMENT', 'schema'))
    }
    await assert.rejects(PostgresProvider.connectWithSchema(DATABASE_URL, ''), coded('ERR_INVALID_ARGUMENT', 'schema'))
    assert.equal(psql("SELECT count(*) FROM information_schema.schemata WHERE schema_name LIKE 'a;%' OR schema_name = '1abc'"), '0')
    await assert.rejects(native.connectPostgres(DATABASE_URL, 'a; drop table x', null), { code: 'ERR_INVALID_ARGUMENT', message: /^schema/ })
  })

  test('non-numeric or negative timeouts', async () => {
    // (A plain object is the options form of the waits, checked below.)
    for (const bad of [-1, 'soon', NaN, Infinity, []]) {
      await assert.rejects(client.waitForOrchestration('survivor', bad), coded('ERR_INVALID_ARGUMENT', 'timeoutMs'))
      await assert.rejects(client.waitForValue('survivor', 'k', bad), coded('ERR_INVALID_ARGUMENT', 'timeoutMs'))
      await assert.rejects(client.waitForStatusChange('survivor', 0, 10, bad), coded('ERR_INVALID_ARGUMENT', 'timeoutMs'))
      await assert.rejects(client.waitForStatusChange('survivor', 0, bad, 10), coded('ERR_INVALID_ARGUMENT', 'pollIntervalMs'))
      await assert.rejects(client.waitForStatusChange('survivor', bad, 10, 10), coded('ERR_INVALID_ARGUMENT', 'lastSeenVersion'))
    }
    for (const signal of [undefined, new AbortController().signal]) {
      for (const bad of [-1, 'soon', 1.5]) {
        await assert.rejects(client.waitForOrchestration('survivor', { timeoutMs: bad, signal }), coded('ERR_INVALID_ARGUMENT', 'timeoutMs'))
        await assert.rejects(client.waitForValue('survivor', 'k', { timeoutMs: bad, signal }), coded('ERR_INVALID_ARGUMENT', 'timeoutMs'))
        await assert.rejects(client.waitForStatusChange('survivor', 0, { pollIntervalMs: bad, signal }), coded('ERR_INVALID_ARGUMENT', 'pollIntervalMs'))
      }
    }
    await assert.rejects(new Runtime(pg.provider).shutdown(-5), coded('ERR_INVALID_ARGUMENT', 'timeoutMs'))
    // The native layer refuses them as well.
    await assert.rejects(nativeClient().waitForOrchestration('survivor', -1), { code: 'ERR_INVALID_ARGUMENT', message: /^timeoutMs/ })
  })

  test('unknown status strings', async () => {
    await assert.rejects(client.listInstancesByStatus('Pending'), coded('ERR_INVALID_ARGUMENT', 'Pending', 'Running, Completed, Failed, ContinuedAsNew'))
    await assert.rejects(nativeClient().listInstancesByStatus('completed'), { code: 'ERR_INVALID_ARGUMENT', message: /Running, Completed, Failed, ContinuedAsNew/ })
  })

  test('KV values, KV key counts, custom status and tags over the crate limits fail the orchestration', async () => {
    const { MAX_KV_VALUE_BYTES, MAX_KV_KEYS, MAX_CUSTOM_STATUS_BYTES, MAX_TAG_NAME_BYTES } = dx
    const cases = [
      ['big-ok', 'BigValue', MAX_KV_VALUE_BYTES, null],
      ['big-over', 'BigValue', MAX_KV_VALUE_BYTES + 1, `KV value for key 'big' (${MAX_KV_VALUE_BYTES + 1} bytes) exceeds limit (${MAX_KV_VALUE_BYTES} bytes)`],
      ['keys-ok', 'ManyKeys', MAX_KV_KEYS, null],
      ['keys-over', 'ManyKeys', MAX_KV_KEYS + 1, `KV key count (${MAX_KV_KEYS + 1}) exceeds limit (${MAX_KV_KEYS})`],
      ['status-over', 'BigStatus', MAX_CUSTOM_STATUS_BYTES + 1, `Custom status size (${MAX_CUSTOM_STATUS_BYTES + 1} bytes) exceeds limit (${MAX_CUSTOM_STATUS_BYTES} bytes)`],
      ['tag-over', 'LongTag', MAX_TAG_NAME_BYTES + 1, `tag size (${MAX_TAG_NAME_BYTES + 1} bytes) exceeds limit (${MAX_TAG_NAME_BYTES} bytes)`],
    ]
    for (const [id, name, size] of cases) await client.startOrchestration(id, name, size)
    for (const [id, , , failure] of cases) {
      const s = await client.waitForOrchestration(id, 20000)
      if (failure === null) {
        assert.equal(s.status, 'Completed', `${id}: ${s.error}`)
      } else {
        assert.equal(s.status, 'Failed', id)
        assert.ok(s.error.includes(failure), `${id}: '${s.error}' should include '${failure}'`)
      }
    }
    assert.equal((await client.getValue('big-ok', 'big') ?? '').length, MAX_KV_VALUE_BYTES)
  })

  test('more worker tags than MAX_WORKER_TAGS is ERR_INVALID_OPTION at construction', () => {
    const six = Array.from({ length: dx.MAX_WORKER_TAGS + 1 }, (_, i) => `tag${i}`)
    assert.throws(() => new Runtime(pg.provider, { workerTagFilter: { tags: six } }), coded('ERR_INVALID_OPTION', 'workerTagFilter', String(dx.MAX_WORKER_TAGS)))
    assert.throws(() => new Runtime(pg.provider, { workerTagFilter: { defaultAnd: six } }), coded('ERR_INVALID_OPTION', String(dx.MAX_WORKER_TAGS)))
    assert.throws(() => new Runtime(pg.provider, { workerTagFilter: 'tags', workerTagFilterTags: six }), coded('ERR_INVALID_OPTION', String(dx.MAX_WORKER_TAGS)))
    assert.doesNotThrow(() => new Runtime(pg.provider, { workerTagFilter: { tags: six.slice(0, dx.MAX_WORKER_TAGS) } }))
  })

  test('waitForOrchestration on a missing instance waits out its timeout, then rejects ERR_NOT_FOUND', async () => {
    await assert.rejects(
      settlesWithin(client.waitForOrchestration('never-started', 300), 20000, 'waitForOrchestration'),
      coded('ERR_NOT_FOUND', 'never-started'),
    )
    // A running instance times out instead; a just-started one is waited for.
    await client.startOrchestration('waits', 'Wait', null)
    await eventually(async () => (await client.getStatus('waits')).status === 'Running', { what: 'waits running' })
    await assert.rejects(client.waitForOrchestration('waits', 100), coded('ERR_TIMEOUT', 'waits'))
    await client.startOrchestration('fresh', 'Done', 'quick')
    assert.equal((await client.waitForOrchestration('fresh', 20000)).output, 'quick')
  })

  test('a connection string to a port where nothing listens is a prompt ERR_PROVIDER', async () => {
    const port = await closedPort()
    const url = `postgresql://postgres@127.0.0.1:${port}/postgres`
    await assert.rejects(settlesWithin(PostgresProvider.connect(url), 20000, 'connect'), coded('ERR_PROVIDER', `127.0.0.1:${port}`))
    await assert.rejects(settlesWithin(PostgresProvider.connectWithSchema(url, 'tenant_x'), 20000, 'connectWithSchema'), coded('ERR_PROVIDER'))
    await assert.rejects(
      settlesWithin(PostgresProvider.connect('postgresql://postgres@no-such-host.invalid/postgres'), 20000, 'connect'),
      coded('ERR_PROVIDER', 'no-such-host.invalid'),
    )
  })

  test('versions that are not semver, registered twice or out of order', async () => {
    // A schema of its own: the suite's runtime has no 'Versioned', and on a
    // shared queue it could take the start (and back off) before this one.
    const own = await pgSchema(t)
    const rt = new Runtime(own.provider, FAST)
    assert.throws(() => rt.registerOrchestrationVersioned('Versioned', 'v2', fn), coded('ERR_INVALID_ARGUMENT', "'v2'", 'semver'))
    assert.throws(() => rt.registerOrchestrationVersioned('Versioned', '2', fn), coded('ERR_INVALID_ARGUMENT', 'semver'))
    rt.registerOrchestrationVersioned('Versioned', '2.0.0', function* () {
      return 'v2 ran'
    })
    assert.throws(() => rt.registerOrchestrationVersioned('Versioned', '2.0.0', fn), coded('ERR_INVALID_ARGUMENT', 'already registered'))
    assert.throws(() => rt.registerOrchestrationVersioned('Versioned', '1.0.0', fn), coded('ERR_INVALID_ARGUMENT', '1.0.0', 'ascending'))
    rt.registerActivity('Twice', async () => 1)
    assert.throws(() => rt.registerActivity('Twice', async () => 1), coded('ERR_INVALID_ARGUMENT', 'already registered'))
    await assert.rejects(client.startOrchestrationVersioned('bad-version', 'Versioned', null, 'v2'), coded('ERR_INVALID_ARGUMENT', 'v2'))
    const ctx = new dx.OrchestrationContext({}, { instanceId: 'i', executionId: 1, orchestrationName: 'X', orchestrationVersion: '1.0.0' })
    assert.throws(() => ctx.scheduleSubOrchestrationVersioned('Versioned', 'v2', null), coded('ERR_INVALID_ARGUMENT', 'v2'))
    assert.throws(() => ctx.continueAsNewVersioned(null, '1.0'), coded('ERR_INVALID_ARGUMENT', '1.0'))
    // The refused registrations left the good one intact: the runtime starts and runs it.
    await rt.start()
    t.after(() => rt.shutdown(0))
    const ownClient = new Client(own.provider)
    await ownClient.startOrchestration('versioned-ok', 'Versioned', null)
    assert.equal((await ownClient.waitForOrchestration('versioned-ok', 20000)).output, 'v2 ran')
    await assert.rejects(async () => rt.registerOrchestration('Late', fn), coded('ERR_RUNTIME_STATE', 'already started'))
  })

  test('stored instances are unharmed by all of the above', async () => {
    const s = await client.getStatus('survivor')
    assert.equal(s.status, 'Completed')
    assert.equal(JSON.parse(s.output), 'kept')
    const info = await client.getInstanceInfo('survivor')
    assert.equal(info.status, 'Completed')
    assert.equal((await client.readExecutionHistory('survivor', 1)).at(-1).kind, 'OrchestrationCompleted')
  })
})

describe('bad input on sqlite', () => {
  test('urls that are not sqlite: and directories that do not exist', async () => {
    await assert.rejects(SqliteProvider.open('postgres://x'), coded('ERR_INVALID_ARGUMENT', 'sqlite:'))
    await assert.rejects(SqliteProvider.open(''), coded('ERR_INVALID_ARGUMENT', 'url'))
    await assert.rejects(SqliteProvider.open('sqlite:/nonexistent-dir/x.db'), coded('ERR_PROVIDER', '/nonexistent-dir'))
  })
})
