'use strict'
// The `fastPaths` switch and what it reports (docs/fast-paths.md): on both
// stores, with least-privilege Postgres roles, `migrate`, cleanup and prune.
const test = require('node:test')
const assert = require('node:assert/strict')
const { spawnSync } = require('node:child_process')
const path = require('node:path')
const { SqliteProvider, PostgresProvider, Runtime, Client } = require('..')
const { DATABASE_URL, psql, uniqueName, sqliteFile, coded, onCleanup } = require('./helpers')

const POSTGRES_FUNCTIONS = ['tailFetch', 'workerFetch', 'turnAck', 'ackRides']
// Explicit: `npm test -- --fast-paths=off` opens providers that do not name
// it without fast paths. The defaults are checked on the native module,
// which the JS layer hands the options as given.
const ON = { fastPaths: true }
const native = require('../lib/native')
const CLI = path.join(__dirname, '..', 'bin', 'duroxide-node.js')

/** `url` with `user` in place of its user. */
function asRole(url, user) {
  const u = new URL(url)
  u.username = user
  u.password = ''
  return u.toString()
}

/** Our functions in `schema`, by name. */
function ourFunctions(schema) {
  return psql(
    `SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace ` +
      `WHERE n.nspname = '${schema}' AND p.proname LIKE 'duroxide_node_%' ORDER BY 1`,
  ).split('\n').filter(Boolean)
}

/** Runs `count` hello orchestrations on `provider` and returns their outputs. */
async function hellos(t, provider, count) {
  const rt = new Runtime(provider, { dispatcherPollIntervalMs: 5, orchestrationConcurrency: 2, workerConcurrency: 2 })
  rt.registerActivity('Greet', async (ctx, name) => `hello ${name}`)
  rt.registerOrchestration('Hello', function* (ctx, name) {
    return yield ctx.scheduleActivity('Greet', name)
  })
  await rt.start()
  onCleanup(t, () => rt.shutdown(0))
  const client = new Client(provider)
  for (let i = 0; i < count; i++) await client.startOrchestration(`h-${i}`, 'Hello', `n${i}`)
  const outputs = []
  for (let i = 0; i < count; i++) outputs.push((await client.waitForOrchestration(`h-${i}`, 30000)).output)
  await rt.shutdown(0)
  return outputs
}

const expectedHellos = (n) => Array.from({ length: n }, (_, i) => `hello n${i}`)

/** A login role of its own, dropped with the test (after its schema). */
function loginRole(t, prefix) {
  const role = uniqueName(prefix)
  psql(`CREATE ROLE ${role} LOGIN`)
  onCleanup(t, () => psql(`DROP OWNED BY ${role}; DROP ROLE IF EXISTS ${role}`))
  return role
}

test('a SQLite file uses every SQLite path by default and none with fastPaths: false', async (t) => {
  const store = await sqliteFile(t, 'dxfp')
  assert.deepEqual((await native.openSqlite(store.url)).fastPaths(), {
    enabled: true,
    active: ['tailFetch', 'directCalls', 'oneWriter', 'activityDescriptors', 'statusRead', 'wakeups'],
    unavailable: {},
  })
  const off = await SqliteProvider.open(store.url, { fastPaths: false })
  assert.deepEqual(off.fastPaths(), { enabled: false, active: [], unavailable: {} })
  assert.deepEqual(await hellos(t, off, 5), expectedHellos(5))
  const memory = await SqliteProvider.inMemory(ON)
  assert.deepEqual(memory.fastPaths().active, ['oneWriter', 'activityDescriptors', 'statusRead', 'wakeups'])
})

test('a Postgres provider uses its functions, kept connections and reads; fastPaths: false uses none', async (t) => {
  const schema = uniqueName('dxfp_pg')
  onCleanup(t, () => psql(`DROP SCHEMA IF EXISTS ${schema} CASCADE`))
  const on = await native.connectPostgres(DATABASE_URL, schema, { maxConnections: 4 })
  assert.deepEqual(on.fastPaths(), {
    enabled: true,
    active: [...POSTGRES_FUNCTIONS, 'keptConnections', 'activityDescriptors', 'statusRead', 'wakeups'],
    unavailable: {},
  })
  assert.equal(ourFunctions(schema).length, 6)
  const recorded = psql(`SELECT count(*) FROM ${schema}._duroxide_node_functions`)
  assert.equal(recorded, '6', 'each installed function is recorded')
  const off = await PostgresProvider.connectWithSchema(DATABASE_URL, schema, { maxConnections: 4, fastPaths: false })
  assert.deepEqual(off.fastPaths(), { enabled: false, active: [], unavailable: {} })
  assert.deepEqual(await hellos(t, off, 5), expectedHellos(5))
  // A pool too small to keep connections says so.
  const small = await PostgresProvider.connectWithSchema(DATABASE_URL, schema, { maxConnections: 2, ...ON })
  assert.match(small.fastPaths().unavailable.keptConnections, /pool of 2 connections keeps none/)
})

test("the runtime's health and metrics show the provider's fast paths", async (t) => {
  const store = await sqliteFile(t, 'dxfp_health')
  const provider = await SqliteProvider.open(store.url, ON)
  const rt = new Runtime(provider)
  rt.registerOrchestration('Nothing', function* () { return null })
  await rt.start()
  onCleanup(t, () => rt.shutdown(0))
  assert.deepEqual(rt.health().fastPaths, provider.fastPaths())
  const text = rt.metricsText()
  assert.match(text, /^duroxide_node_fast_path_active\{path="directCalls"\} 1$/m)
  assert.match(text, /^duroxide_node_fast_path_active\{path="oneWriter"\} 1$/m)
})

test('every provider constructor refuses unknown and mistyped options, naming them', async () => {
  await assert.rejects(SqliteProvider.open('sqlite:/tmp/never.db', { maxConnection: 3 }), coded('ERR_INVALID_OPTION', "'maxConnection'"))
  await assert.rejects(SqliteProvider.inMemory({ fastpaths: false }), coded('ERR_INVALID_OPTION', "'fastpaths'", 'did you mean fastPaths?'))
  await assert.rejects(SqliteProvider.open('sqlite:/tmp/never.db', { fastPaths: 'no' }), coded('ERR_INVALID_OPTION', 'fastPaths'))
  await assert.rejects(PostgresProvider.connect(DATABASE_URL, { relaxedDurabilty: true }), coded('ERR_INVALID_OPTION', 'did you mean relaxedDurability?'))
  await assert.rejects(PostgresProvider.connectWithSchema(DATABASE_URL, 'x', { listen: 1 }), coded('ERR_INVALID_OPTION', 'listen'))
  await assert.rejects(PostgresProvider.connectWithEntra('h', 5432, 'db', 'u', { fastPath: true }), coded('ERR_INVALID_OPTION', 'did you mean fastPaths?'))
  await assert.rejects(PostgresProvider.migrate(DATABASE_URL, { grant: 'x' }), coded('ERR_INVALID_OPTION', "'grant'"))
})

test('a least-privilege role runs with fast paths on a schema an admin migrated with `migrate`', { timeout: 120000 }, async (t) => {
  const schema = uniqueName('dxfp_lp')
  onCleanup(t, () => psql(`DROP SCHEMA IF EXISTS ${schema} CASCADE`))
  const role = loginRole(t, 'dxfp_app')
  const cli = spawnSync(process.execPath, [CLI, 'migrate', '--database-url', DATABASE_URL, '--schema', schema, '--grant-to', role, '--json'], { encoding: 'utf8' })
  assert.equal(cli.status, 0, cli.stderr)
  const report = JSON.parse(cli.stdout)
  assert.equal(report.schema, schema)
  assert.equal(report.installed.length, 6)
  assert.equal(report.grantedTo, role)
  // The application's role may not create anything there.
  assert.equal(psql(`SELECT has_schema_privilege('${role}', '${schema}', 'CREATE')`), 'f')
  const provider = await PostgresProvider.connectWithSchema(asRole(DATABASE_URL, role), schema, { maxConnections: 4, ...ON })
  assert.deepEqual(provider.fastPaths().unavailable, {})
  assert.ok(provider.fastPaths().active.includes('tailFetch'))
  assert.deepEqual(await hellos(t, provider, 50), expectedHellos(50))
})

test('a role without CREATE on a schema the crate alone migrated falls back with a WARN, and every call succeeds', { timeout: 120000 }, async (t) => {
  const schema = uniqueName('dxfp_crate')
  onCleanup(t, () => psql(`DROP SCHEMA IF EXISTS ${schema} CASCADE`))
  const role = loginRole(t, 'dxfp_app')
  // Migrated as the crate does, nothing of ours installed.
  await PostgresProvider.connectWithSchema(DATABASE_URL, schema, { maxConnections: 2, fastPaths: false })
  assert.deepEqual(ourFunctions(schema), [])
  psql(
    `GRANT USAGE ON SCHEMA ${schema} TO ${role}; ` +
      `GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA ${schema} TO ${role}; ` +
      `GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA ${schema} TO ${role}; ` +
      `GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA ${schema} TO ${role}`,
  )
  // In a child process, to read its log: the WARN names the path and the fix.
  const script = `
    const { PostgresProvider, Runtime, Client } = require(${JSON.stringify(path.join(__dirname, '..'))})
    ;(async () => {
      const provider = await PostgresProvider.connectWithSchema(${JSON.stringify(asRole(DATABASE_URL, role))}, ${JSON.stringify(schema)}, { maxConnections: 4, fastPaths: true })
      const rt = new Runtime(provider, { dispatcherPollIntervalMs: 5, logLevel: 'warn' })
      rt.registerActivity('Greet', async (ctx, name) => 'hello ' + name)
      rt.registerOrchestration('Hello', function* (ctx, name) { return yield ctx.scheduleActivity('Greet', name) })
      await rt.start()
      const client = new Client(provider)
      for (let i = 0; i < 50; i++) await client.startOrchestration('h-' + i, 'Hello', 'n' + i)
      const outputs = []
      for (let i = 0; i < 50; i++) outputs.push((await client.waitForOrchestration('h-' + i, 30000)).output)
      await rt.shutdown(1000)
      process.stdout.write(JSON.stringify({ fastPaths: provider.fastPaths(), outputs }))
    })().catch((e) => { console.error(e); process.exit(3) })`
  const child = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 90000 })
  assert.equal(child.status, 0, child.stderr)
  const { fastPaths, outputs } = JSON.parse(child.stdout)
  assert.deepEqual(outputs, expectedHellos(50))
  for (const p of POSTGRES_FUNCTIONS) {
    assert.match(fastPaths.unavailable[p], /could not install the functions.*permission denied.*duroxide-node migrate/)
  }
  assert.ok(fastPaths.active.includes('keptConnections'))
  const warns = child.stderr.split('\n').filter((l) => /fast path 'tailFetch'.*unavailable/.test(l))
  assert.equal(warns.length, 1, child.stderr)
  assert.doesNotMatch(child.stderr, /current transaction is aborted/)
  assert.deepEqual(ourFunctions(schema), [], 'the failed install left nothing behind')
})

test("migrations: 'verifyOnly' uses functions an admin installed and installs none itself", async (t) => {
  const schema = uniqueName('dxfp_verify')
  onCleanup(t, () => psql(`DROP SCHEMA IF EXISTS ${schema} CASCADE`))
  await PostgresProvider.connectWithSchema(DATABASE_URL, schema, { maxConnections: 2, fastPaths: false })
  const before = await PostgresProvider.connectWithSchema(DATABASE_URL, schema, { maxConnections: 4, migrations: 'verifyOnly', ...ON })
  assert.match(before.fastPaths().unavailable.tailFetch, /not installed.*verifyOnly.*duroxide-node migrate/)
  assert.deepEqual(ourFunctions(schema), [])
  await PostgresProvider.migrate(DATABASE_URL, { schema })
  const after = await PostgresProvider.connectWithSchema(DATABASE_URL, schema, { maxConnections: 4, migrations: 'verifyOnly', ...ON })
  assert.deepEqual(after.fastPaths().unavailable, {})
})

test('cleanupSchema removes our functions and their record, in public too', { timeout: 60000 }, async (t) => {
  // `public` of a database of its own: the crate's cleanup never drops it.
  const db = uniqueName('dxfp_db')
  psql(`CREATE DATABASE ${db}`)
  onCleanup(t, () => psql(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`))
  const url = new URL(DATABASE_URL)
  url.pathname = `/${db}`
  const provider = await PostgresProvider.connect(url.toString(), { maxConnections: 3, ...ON })
  const inDb = (sql) => psql(sql, { url: url.toString() })
  const ours = () => inDb("SELECT count(*) FROM pg_proc WHERE proname LIKE 'duroxide_node_%'")
  assert.equal(ours(), '6')
  await provider.cleanupSchema()
  assert.equal(ours(), '0')
  assert.equal(inDb("SELECT to_regclass('public._duroxide_node_functions') IS NULL"), 't')
  assert.equal(inDb("SELECT to_regclass('public.instances') IS NULL"), 't', "the crate's tables are gone too")
})

test('migrate --prune drops only functions of other versions that no provider used lately', async (t) => {
  const schema = uniqueName('dxfp_prune')
  onCleanup(t, () => psql(`DROP SCHEMA IF EXISTS ${schema} CASCADE`))
  await PostgresProvider.migrate(DATABASE_URL, { schema })
  // Two functions of an older package version: one a live provider still
  // marks as used, one nobody used for two days.
  for (const [name, seen] of [['duroxide_node_fetch_turn_v0', 'now()'], ['duroxide_node_ack_turn_v0', "now() - interval '2 days'"]]) {
    psql(
      `CREATE FUNCTION ${schema}.${name}(text) RETURNS void LANGUAGE sql AS 'SELECT 1'; ` +
        `INSERT INTO ${schema}._duroxide_node_functions (signature, file, sql_fingerprint, package_version, last_seen_at) ` +
        `VALUES ('${name}(text)', 'old.sql', '0', '0.0.1', ${seen})`,
    )
  }
  const cli = spawnSync(process.execPath, [CLI, 'migrate', '--database-url', DATABASE_URL, '--schema', schema, '--prune', '--json'], { encoding: 'utf8' })
  assert.equal(cli.status, 0, cli.stderr)
  assert.deepEqual(JSON.parse(cli.stdout).pruned, [{ signature: 'duroxide_node_ack_turn_v0(text)', packageVersion: '0.0.1' }])
  const left = ourFunctions(schema)
  assert.ok(left.includes('duroxide_node_fetch_turn_v0'), 'a function used lately stays')
  assert.ok(!left.includes('duroxide_node_ack_turn_v0'))
  assert.ok(left.includes('duroxide_node_fetch_turn_v2'), "this version's functions stay")
})
