'use strict'
// Regression: `process.exit()` right after a Postgres runtime's `shutdown()`
// ended with a segmentation fault in about half the exits. The TLS of our
// Postgres connections is the OpenSSL Node exports; `process.exit()` runs
// OpenSSL's exit handler, which frees its tables, while a Tokio thread of the
// native module was still opening a connection (loading the CA store). The
// module now stops its threads from an exit handler of its own, which runs
// first (`src/tokio_runtime.rs`), and waits until every thread of the
// runtime is gone: napi-rs's own stop waits 100 ms, which a connect loading
// the CA store outlasts on a loaded machine (CI saw 1 of 8 exits crash).
const { test } = require('node:test')
const assert = require('node:assert/strict')
const { spawn, spawnSync } = require('node:child_process')
const path = require('node:path')
const { DATABASE_URL, uniqueName, psql, onCleanup } = require('./helpers')

// A runtime with more slots than the connect warmed connections for, so
// connections open around its start and shutdown; then the exit.
const CHILD = `
const { PostgresProvider, Runtime } = require(${JSON.stringify(path.join(__dirname, '..'))})
;(async () => {
  const provider = await PostgresProvider.connectWithSchema(process.env.URL, process.env.SCHEMA)
  const rt = new Runtime(provider, { orchestrationConcurrency: 4, workerConcurrency: 8, logLevel: 'error' })
  rt.registerActivity('A', async () => 1)
  rt.registerOrchestration('O', function* () { return 1 })
  await rt.start()
  await rt.shutdown(1000)
  process.exit(7)
})()
`

test('process.exit() right after shutdown() exits with its code, not a segmentation fault in OpenSSL', (t) => {
  const schema = uniqueName('dxexit')
  onCleanup(t, () => psql(`DROP SCHEMA IF EXISTS ${schema} CASCADE`))
  const env = { ...process.env, URL: DATABASE_URL, SCHEMA: schema }
  // Without the exit handler, 9 of 20 such exits crashed on this machine.
  // Without its wait for the threads, quiet exits passed and 3 of 30 crashed
  // beside busy processes, so three keep the cores busy here.
  const busy = [0, 1, 2].map(() => spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }))
  t.after(() => busy.forEach((b) => b.kill('SIGKILL')))
  const exits = []
  for (let i = 0; i < 12; i++) {
    const child = spawnSync(process.execPath, ['-e', CHILD], { env, encoding: 'utf8', timeout: 60000 })
    exits.push({ status: child.status, signal: child.signal, stderr: child.stderr.slice(-500) })
  }
  assert.deepEqual(
    exits.filter((e) => e.status !== 7),
    [],
  )
})
