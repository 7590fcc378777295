'use strict'
// Providers: SQLite URLs and files, in-memory databases, Postgres connect
// forms and options, fast and coded errors for bad input, and one provider
// shared by several runtimes and a client.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { backends, FAST, uniqueName, DATABASE_URL, psql } = require('./helpers')
const { openStore } = require('./fixtures/store')
const { SqliteProvider, PostgresProvider, Runtime, Client } = require('..')

function tempDir(t) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dxprov-'))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  return dir
}

/** Runs one orchestration with an activity on `provider`; returns its output. */
async function roundTrip(t, provider, input = 'x') {
  const rt = new Runtime(provider, FAST)
  rt.registerActivity('Up', async (ctx, s) => s.toUpperCase())
  rt.registerOrchestration('Up', function* (ctx, s) { return yield ctx.scheduleActivity('Up', s) })
  await rt.start()
  try {
    const client = new Client(provider)
    const id = uniqueName('rt')
    await client.startOrchestration(id, 'Up', input)
    const s = await client.waitForOrchestration(id, 20000)
    assert.equal(s.status, 'Completed', s.error)
    return s.output
  } finally {
    await rt.shutdown(0)
  }
}

async function rejectsWith(promise, code, pattern) {
  await assert.rejects(promise, (err) => {
    assert.equal(err.code, code, err.message)
    if (pattern) assert.match(err.message, pattern)
    return true
  })
}

// ---- SQLite ---------------------------------------------------------------------------
test('SqliteProvider.open creates the file named by a sqlite: URL', async (t) => {
  const file = path.join(tempDir(t), 'new.db')
  assert.equal(fs.existsSync(file), false)
  const provider = await SqliteProvider.open(`sqlite:${file}`)
  assert.equal(fs.existsSync(file), true)
  assert.equal(await roundTrip(t, provider, 'file'), 'FILE')
})

test('a ?mode=rwc suffix is not part of the file name; sqlite:/// and relative paths work', async (t) => {
  const dir = tempDir(t)
  await SqliteProvider.open(`sqlite:${path.join(dir, 'q.db')}?mode=rwc`)
  assert.deepEqual(fs.readdirSync(dir).filter((f) => f.includes('?')), [])
  assert.ok(fs.existsSync(path.join(dir, 'q.db')))
  await SqliteProvider.open(`sqlite://${path.join(dir, 'slashes.db')}`)
  assert.ok(fs.existsSync(path.join(dir, 'slashes.db')))
  const cwd = process.cwd()
  process.chdir(dir)
  try {
    await SqliteProvider.open('sqlite:./relative.db')
  } finally {
    process.chdir(cwd)
  }
  assert.ok(fs.existsSync(path.join(dir, 'relative.db')))
})

test('data written through one provider is there when the file is opened again', async (t) => {
  const url = `sqlite:${path.join(tempDir(t), 'again.db')}`
  const first = await SqliteProvider.open(url)
  const id = uniqueName('persist')
  const rt = new Runtime(first, FAST)
  rt.registerOrchestration('P', function* () { return 'kept' })
  await rt.start()
  await new Client(first).startOrchestration(id, 'P')
  await new Client(first).waitForOrchestration(id, 20000)
  await rt.shutdown(0)
  const second = await SqliteProvider.open(url)
  assert.equal((await new Client(second).getStatus(id)).output, '"kept"')
})

test('SqliteProvider.inMemory works, and two in-memory databases are separate', async (t) => {
  const a = await SqliteProvider.inMemory()
  const b = await SqliteProvider.inMemory()
  assert.equal(await roundTrip(t, a, 'mem'), 'MEM')
  const rt = new Runtime(a, FAST)
  rt.registerOrchestration('Only', function* () { return 1 })
  await rt.start()
  t.after(() => rt.shutdown(0))
  await new Client(a).startOrchestration('only-in-a', 'Only')
  await new Client(a).waitForOrchestration('only-in-a', 20000)
  assert.equal((await new Client(b).getStatus('only-in-a')).status, 'NotFound')
})

test('bad SQLite URLs are refused with a code', async (t) => {
  await rejectsWith(SqliteProvider.open('postgres://x/y'), 'ERR_INVALID_ARGUMENT', /must start with 'sqlite:'/)
  await rejectsWith(SqliteProvider.open('sqlite:'), 'ERR_INVALID_ARGUMENT', /names no file/)
  await rejectsWith(SqliteProvider.open('sqlite::memory:'), 'ERR_INVALID_ARGUMENT', /inMemory/)
  await rejectsWith(SqliteProvider.open(''), 'ERR_INVALID_ARGUMENT', /url/)
  await rejectsWith(SqliteProvider.open(42), 'ERR_INVALID_ARGUMENT', /url/)
  const missing = path.join(tempDir(t), 'no', 'such', 'dir', 'x.db')
  await rejectsWith(SqliteProvider.open(`sqlite:${missing}`), 'ERR_PROVIDER', /does not exist/)
})

// ---- Postgres ---------------------------------------------------------------------------
/** A throwaway database, so connect() can use its public schema. */
function tempDatabase(t) {
  const name = uniqueName('dxdb')
  psql(`CREATE DATABASE ${name}`)
  t.after(() => psql(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))
  const url = new URL(DATABASE_URL)
  url.pathname = `/${name}`
  return { name, url: url.toString() }
}

test('PostgresProvider.connect uses the public schema of the database', async (t) => {
  const db = tempDatabase(t)
  const provider = await PostgresProvider.connect(db.url)
  assert.equal(await roundTrip(t, provider, 'public'), 'PUBLIC')
  const tables = psql(`SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public' AND table_name = 'instances'`, { url: db.url })
  assert.equal(tables, '1')
  const second = await PostgresProvider.connect(db.url, { maxConnections: 1, migrations: 'verifyOnly' })
  assert.equal(await roundTrip(t, second, 'again'), 'AGAIN')
})

test('a runtime start opens and warms a connection for each of its slots before it returns', async (t) => {
  const db = tempDatabase(t)
  // The database's backends (other than this query's own) that started after `after`.
  const opened = (after = 'epoch') =>
    Number(psql(`SELECT count(*) FROM pg_stat_activity WHERE datname = '${db.name}' AND pid <> pg_backend_pid() AND backend_start > '${after}'`))
  const provider = await PostgresProvider.connect(db.url, { maxConnections: 12 })
  const connected = opened()
  assert.ok(connected < 8, `the connect left ${connected} connections open`)
  const rt = new Runtime(provider, { orchestrationConcurrency: 4, workerConcurrency: 8, logLevel: 'warn' })
  rt.registerActivity('Up', async (ctx, s) => s.toUpperCase())
  rt.registerOrchestration('Up', function* (ctx, s) { return yield ctx.scheduleActivity('Up', s) })
  t.after(() => rt.shutdown(1000))
  await rt.start()
  const started = new Date().toISOString()
  const client = new Client(provider)
  const ids = Array.from({ length: 60 }, (_, i) => `warm-${i}`)
  await Promise.all(ids.map((id) => client.startOrchestration(id, 'Up', id)))
  for (const id of ids) assert.equal((await client.waitForOrchestration(id, 30000)).output, id.toUpperCase())
  // 11 of the pool's 12 were open when start() returned. Since then the
  // pool may have opened its twelfth, which no warm-up takes, and once in
  // six runs here one more; without the warm-up it opened up to seven
  // under these turns (or, when the dispatchers' first looks won the race,
  // before start() returned).
  const [all, since] = [opened(), opened(started)]
  assert.ok(all - since >= 11, `${all - since} connections were open when start() returned`)
  assert.ok(since <= 2, `${since} connections opened after start() returned`)
})

test('connectWithSchema creates the schema; maxConnections bounds the pool; migrations verifyOnly needs applied migrations', async (t) => {
  const db = tempDatabase(t)
  const schema = uniqueName('dxs')
  await rejectsWith(
    PostgresProvider.connectWithSchema(db.url, schema, { migrations: 'verifyOnly' }),
    'ERR_PROVIDER',
    /migrations not initialized/,
  )
  const provider = await PostgresProvider.connectWithSchema(db.url, schema, { maxConnections: 2, migrations: 'apply' })
  assert.equal(psql(`SELECT count(*) FROM information_schema.schemata WHERE schema_name = '${schema}'`, { url: db.url }), '1')
  const rt = new Runtime(provider, { ...FAST, orchestrationConcurrency: 4, workerConcurrency: 4 })
  rt.registerActivity('Up', async (ctx, s) => s.toUpperCase())
  rt.registerOrchestration('Up', function* (ctx, s) { return yield ctx.scheduleActivity('Up', s) })
  await rt.start()
  let open
  try {
    const client = new Client(provider)
    const ids = Array.from({ length: 8 }, (_, i) => `pool-${i}`)
    await Promise.all(ids.map((id) => client.startOrchestration(id, 'Up', id)))
    await Promise.all(ids.map((id) => client.waitForOrchestration(id, 20000)))
    // psql's own session is the one extra connection; the provider's LISTEN
    // connection (providers/wakeup) is not part of the pool.
    open = Number(psql(`SELECT count(*) FROM pg_stat_activity WHERE datname = '${db.name}' AND application_name <> 'duroxide_node_wakeup'`, { url: db.url }))
  } finally {
    await rt.shutdown(0)
  }
  assert.ok(open <= 3, `${open - 1} pool connections for maxConnections 2`)
  // Now that they are applied, verifyOnly accepts the schema.
  const verifying = await PostgresProvider.connectWithSchema(db.url, schema, { migrations: 'verifyOnly' })
  assert.equal((await new Client(verifying).getStatus('pool-0')).status, 'Completed')
})

test('many concurrent connectWithSchema calls on an empty schema all succeed', async (t) => {
  const schema = uniqueName('dxrace')
  t.after(() => psql(`DROP SCHEMA IF EXISTS ${schema} CASCADE`))
  const providers = await Promise.all(Array.from({ length: 4 }, () => PostgresProvider.connectWithSchema(DATABASE_URL, schema)))
  assert.equal(await roundTrip(t, providers[3], 'race'), 'RACE')
})

test('bad Postgres input fails fast with a code', async () => {
  await rejectsWith(PostgresProvider.connect('mysql://root:secret@127.0.0.1:3306/db'), 'ERR_INVALID_ARGUMENT', /postgres:\/\/ or postgresql:\/\//)
  await rejectsWith(PostgresProvider.connect('not a url'), 'ERR_INVALID_ARGUMENT', /postgres:\/\//)
  await rejectsWith(PostgresProvider.connect('postgresql://postgres@127.0.0.1:1/postgres'), 'ERR_PROVIDER', /127\.0\.0\.1:1/)
  await rejectsWith(PostgresProvider.connectWithSchema(DATABASE_URL, 'a; drop table x'), 'ERR_INVALID_ARGUMENT', /a; drop table x/)
  await rejectsWith(PostgresProvider.connectWithSchema(DATABASE_URL, '1abc'), 'ERR_INVALID_ARGUMENT', /not a valid schema name/)
  await rejectsWith(PostgresProvider.connect(DATABASE_URL, { maxConnections: 0 }), 'ERR_INVALID_OPTION', /maxConnections/)
  await rejectsWith(PostgresProvider.connect(DATABASE_URL, { migrations: 'skip' }), 'ERR_INVALID_OPTION', /migrations/)
  await rejectsWith(PostgresProvider.connect(DATABASE_URL, { poolSize: 3 }), 'ERR_INVALID_OPTION', /poolSize/)
  await rejectsWith(PostgresProvider.connect(DATABASE_URL, 'fast'), 'ERR_INVALID_OPTION', /options must be an object/)
  await rejectsWith(PostgresProvider.connect(undefined), 'ERR_INVALID_ARGUMENT', /databaseUrl/)
  await rejectsWith(PostgresProvider.connectWithSchema(DATABASE_URL, ''), 'ERR_INVALID_ARGUMENT', /schema/)
})

test('the error for a refused URL does not repeat its password', async () => {
  await rejectsWith(PostgresProvider.connect('mysql://root:hunter2@127.0.0.1/db'), 'ERR_INVALID_ARGUMENT')
  await assert.rejects(PostgresProvider.connect('mysql://root:hunter2@127.0.0.1/db'), (err) => !err.message.includes('hunter2'))
})

// ---- sharing ----------------------------------------------------------------------------
for (const [kind, open] of backends) {
  test(`one provider is shared by two runtimes and a client (${kind})`, async (t) => {
    const store = await openStore(open)
    const runtimes = []
    t.after(async () => {
      for (const rt of runtimes) await rt.shutdown(0)
      await store.release()
    })
    // Runtimes sharing a store must register the same handlers (a runtime
    // without one abandons the message with backoff), so both have both.
    for (let i = 0; i < 2; i++) {
      const rt = new Runtime(store.provider, FAST)
      rt.registerOrchestration('Split', function* (ctx, n) { return yield ctx.scheduleActivity('Square', n) })
      rt.registerActivity('Square', async (ctx, n) => n * n)
      await rt.start()
      runtimes.push(rt)
    }
    const client = new Client(store.provider)
    const ids = [3, 4, 5, 6, 7, 8].map((n) => [uniqueName('split'), n])
    await Promise.all(ids.map(([id, n]) => client.startOrchestration(id, 'Split', n)))
    const outputs = await Promise.all(ids.map(async ([id]) => (await client.waitForOrchestration(id, 20000)).output))
    assert.deepEqual(outputs, [9, 16, 25, 36, 49, 64])
  })
}
