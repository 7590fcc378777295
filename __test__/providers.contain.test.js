'use strict'
// Containment of unreadable queue messages (src/providers/contain.rs,
// docs/api-reference.md, "Unreadable messages"): a message no fetch can read, written by hand or by a
// service using the duroxide crate directly, is set aside with one ERROR
// naming its instance, and every other instance runs as usual; with the
// fast paths on and off, on both stores.
const test = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { spawnSync, execFileSync } = require('node:child_process')
const { SqliteProvider, PostgresProvider } = require('..')
const { DATABASE_URL, psql, uniqueName, sqliteFile, onCleanup } = require('./helpers')

const ROOT = path.join(__dirname, '..')
const BASELINE = path.join(ROOT, 'target', 'debug', 'duroxide-bench-baseline')
const ORDINARY = 20

/** A start of `instance` whose input holds U+0000, as serde writes it. */
const nulStart = (instance) =>
  JSON.stringify({ StartOrchestration: { instance, orchestration: 'Hello', input: '"x\u0000y"', version: null, parent_instance: null, parent_id: null, parent_execution_id: null, execution_id: 1 } })

/**
 * Runs a runtime (fast paths `fastPaths`) in a child process on the store,
 * starts ORDINARY hellos and waits for each; returns what it saw and logged.
 */
function runFleetMember(store, fastPaths) {
  const open = store.backend === 'sqlite'
    ? `SqliteProvider.open(${JSON.stringify(store.url)}, { fastPaths: ${fastPaths} })`
    : `PostgresProvider.connectWithSchema(${JSON.stringify(DATABASE_URL)}, ${JSON.stringify(store.schema)}, { maxConnections: 4, fastPaths: ${fastPaths} })`
  const script = `
    const { SqliteProvider, PostgresProvider, Runtime, Client } = require(${JSON.stringify(ROOT)})
    ;(async () => {
      const provider = await ${open}
      const rt = new Runtime(provider, { dispatcherPollIntervalMs: 5, logLevel: 'error' })
      rt.registerActivity('Greet', async (ctx, name) => 'hello ' + name)
      rt.registerOrchestration('Hello', function* (ctx, name) { return yield ctx.scheduleActivity('Greet', name) })
      await rt.start()
      const client = new Client(provider)
      const outputs = []
      for (let i = 0; i < ${ORDINARY}; i++) {
        await client.startOrchestration('ok-' + i, 'Hello', 'n' + i)
        outputs.push((await client.waitForOrchestration('ok-' + i, 30000)).output)
      }
      const health = rt.health()
      const metrics = rt.metricsText()
      await rt.shutdown(1000)
      process.stdout.write(JSON.stringify({ outputs, health, metrics, setAside: await client.listSetAside() }))
    })().catch((e) => { console.error(e); process.exit(3) })`
  const child = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 120000 })
  assert.equal(child.status, 0, child.stderr)
  return { ...JSON.parse(child.stdout), log: child.stderr }
}

/** Checks one member's run: every ordinary instance done, the bad ones set aside and named once. */
function assertContained(run, bad) {
  assert.deepEqual(run.outputs, Array.from({ length: ORDINARY }, (_, i) => `hello n${i}`))
  const listed = run.setAside.map((m) => `${m.queue}:${m.instanceId}`).sort()
  assert.deepEqual(listed, bad.map((b) => `${b.queue}:${b.instance}`).sort())
  for (const b of bad) {
    const m = run.setAside.find((s) => s.instanceId === b.instance)
    assert.match(m.reason, b.why, b.instance)
    const errors = run.log.split('\n').filter((l) => l.includes('ERROR') && l.includes(`instance '${b.instance}'`))
    assert.equal(errors.length, 1, `one ERROR naming ${b.instance}:\n${run.log}`)
  }
  assert.match(run.metrics, /^duroxide_node_messages_set_aside_total\{queue="orchestrator"\} [1-9]/m)
  assert.equal(run.health.status, 'degraded')
  assert.ok(run.health.reasons.some((r) => /set aside/.test(r)), run.health.reasons.join('; '))
}

for (const fastPaths of [true, false]) {
  test(`Postgres, fast paths ${fastPaths ? 'on' : 'off'}: messages by hand and by the crate's own client are set aside; the rest runs`, { timeout: 180000 }, async (t) => {
    const schema = uniqueName('dxcontain')
    onCleanup(t, () => psql(`DROP SCHEMA IF EXISTS ${schema} CASCADE`))
    await PostgresProvider.connectWithSchema(DATABASE_URL, schema, { maxConnections: 2, fastPaths })
    // By hand: text that is not a work item, in both queues.
    psql(
      `INSERT INTO ${schema}.orchestrator_queue (instance_id, work_item, visible_at, created_at) VALUES ('hand-1', 'not a work item', now(), now()); ` +
        `INSERT INTO ${schema}.worker_queue (work_item, visible_at, created_at, instance_id) VALUES ('{"ActivityExecute":', now(), now(), 'hand-2')`,
    )
    // By a service on the crate: a start whose input holds U+0000.
    execFileSync('cargo', ['build', '-p', 'duroxide-bench-baseline'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] })
    const spec = { workload: 'start', store: 'postgres', url: DATABASE_URL, schema, instance: 'crate-nul', orchestration: 'Hello', input: '"x\u0000y"' }
    execFileSync(BASELINE, [JSON.stringify(spec)], { stdio: ['ignore', 'ignore', 'inherit'] })
    const run = runFleetMember({ backend: 'postgres', schema }, fastPaths)
    assertContained(run, [
      { queue: 'orchestrator', instance: 'hand-1', why: /does not parse/ },
      { queue: 'worker', instance: 'hand-2', why: /does not parse/ },
      { queue: 'orchestrator', instance: 'crate-nul', why: /U\+0000/ },
    ])
    // Nothing was deleted: the messages are still in their queues.
    assert.equal(psql(`SELECT count(*) FROM ${schema}.orchestrator_queue WHERE visible_at = 'infinity'`), '2')
  })

  test(`SQLite, fast paths ${fastPaths ? 'on' : 'off'}: messages by hand are set aside; the rest runs`, { timeout: 120000 }, async (t) => {
    const store = await sqliteFile(t, 'dxcontain')
    await SqliteProvider.open(store.url, { fastPaths })
    execFileSync('sqlite3', [store.file,
      "INSERT INTO worker_queue (work_item, visible_at, instance_id) VALUES ('not a work item', 0, 'hand-w');" +
        "INSERT INTO orchestrator_queue (instance_id, work_item, visible_at) VALUES ('hand-o', '{\"StartOrchestration\":', 0);" +
        // U+0000 is readable on SQLite: a start like that runs.
        `INSERT INTO orchestrator_queue (instance_id, work_item, visible_at) VALUES ('nul-ok', '${nulStart('nul-ok')}', 0);`,
    ])
    const run = runFleetMember({ backend: 'sqlite', url: store.url }, fastPaths)
    assert.deepEqual(run.outputs, Array.from({ length: ORDINARY }, (_, i) => `hello n${i}`))
    const listed = run.setAside.map((m) => `${m.queue}:${m.instanceId}`).sort()
    assert.ok(listed.includes('worker:hand-w'), listed.join(', '))
    assert.ok(!listed.includes('orchestrator:nul-ok'), 'a U+0000 input is stored as it is on SQLite')
    const errors = run.log.split('\n').filter((l) => l.includes('ERROR') && l.includes("instance 'hand-w'"))
    assert.equal(errors.length, 1, run.log)
  })
}

// Regression: duroxide's SQLite fetch takes the instance of the oldest
// message; a cancel for a sub-orchestration whose start was never sent (its
// parent was cancelled first) was released "for the next poll" every time,
// and no other instance of the file ever ran again.
for (const fastPaths of [true, false]) {
  test(`SQLite, fast paths ${fastPaths ? 'on' : 'off'}: a cancel for a child that never started does not stop the queue`, { timeout: 120000 }, async (t) => {
    const store = await sqliteFile(t, 'dxorphan')
    await SqliteProvider.open(store.url, { fastPaths })
    const cancel = JSON.stringify({ CancelInstance: { instance: 'gone::sub::5', reason: 'parent canceled' } })
    execFileSync('sqlite3', [store.file, `INSERT INTO orchestrator_queue (instance_id, work_item, visible_at) VALUES ('gone::sub::5', '${cancel}', 0)`])
    const run = runFleetMember({ backend: 'sqlite', url: store.url }, fastPaths)
    assert.deepEqual(run.outputs, Array.from({ length: ORDINARY }, (_, i) => `hello n${i}`))
    // The cancel is kept, for a start that would still come.
    assert.equal(execFileSync('sqlite3', [store.file, "SELECT count(*) FROM orchestrator_queue WHERE instance_id = 'gone::sub::5'"], { encoding: 'utf8' }).trim(), '1')
  })
}
