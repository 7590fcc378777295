'use strict'
// The mistake warnings (determinismGuard 'warn', a dropped task) of an app
// that configures no logging go to stderr through the runtime's default log,
// never stdout: a child process prints exactly its own line on stdout.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const { execFile } = require('node:child_process')
const path = require('node:path')

const CHILD = `
const { SqliteProvider, Runtime, Client } = require(${JSON.stringify(path.join(__dirname, '..'))})
;(async () => {
  const provider = await SqliteProvider.inMemory()
  const rt = new Runtime(provider, { dispatcherPollIntervalMs: 5 })
  rt.registerActivity('Audit', async () => 'ok')
  rt.registerOrchestration('Sloppy', function* (ctx) {
    const stamp = typeof Date.now() + typeof new Date() + typeof Math.random()
    ctx.scheduleActivity('Audit', 'never yielded')
    yield ctx.scheduleActivity('Audit', 'yielded')
    return stamp
  })
  await rt.start()
  const client = new Client(provider)
  await client.startOrchestration('sloppy-1', 'Sloppy', null)
  const s = await client.waitForOrchestration('sloppy-1', 30000)
  await rt.shutdown(1000)
  process.stdout.write('RESULT ' + JSON.stringify([s.status, s.output]) + '\\n')
})().catch((e) => { process.stderr.write('child failed: ' + e.stack + '\\n'); process.exitCode = 1 })
`

test("determinismGuard 'warn' and the dropped-task warning write to stderr, never stdout", async () => {
  const env = { ...process.env }
  delete env.RUST_LOG
  const { stdout, stderr } = await new Promise((resolve, reject) => {
    execFile(process.execPath, ['-e', CHILD], { env, timeout: 60000, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) =>
      err ? reject(Object.assign(err, { stdout, stderr })) : resolve({ stdout, stderr }),
    )
  })
  assert.equal(stdout, 'RESULT ["Completed","numberobjectnumber"]\n')
  const warnings = stderr.split('\n').filter((l) => /\bWARN\b/.test(l) && l.includes("orchestration 'Sloppy' (instance 'sloppy-1')"))
  for (const needle of ['called Date.now()', 'called new Date()', 'called Math.random()', 'never yielded']) {
    assert.equal(warnings.filter((l) => l.includes(needle)).length, 1, `one WARN line with ${needle}:\n${stderr.slice(0, 3000)}`)
  }
})
