'use strict'
// The string-named startOrchestration of an id that exists keeps its drop-in
// behaviour (it resolves; the instance keeps its first input), and the
// runtime that drops the start logs one WARN naming the instance, in place
// of duroxide's terse line. A child process, so its stderr can be read.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const { execFile } = require('node:child_process')
const path = require('node:path')

const CHILD = `
const { SqliteProvider, Runtime, Client } = require(${JSON.stringify(path.join(__dirname, '..'))})
;(async () => {
  const provider = await SqliteProvider.inMemory()
  const rt = new Runtime(provider, { dispatcherPollIntervalMs: 5 })
  rt.registerOrchestration('Quick', function* (ctx, n) { return n })
  await rt.start()
  const client = new Client(provider)
  await client.startOrchestration('order-7', 'Quick', 1)
  await client.waitForOrchestration('order-7', 30000)
  await client.startOrchestration('order-7', 'Quick', 2)
  // The runtime takes the second start off the queue (and drops it).
  for (let i = 0; i < 3000 && (await client.getQueueDepths()).orchestratorQueue > 0; i++) {
    await new Promise((r) => setTimeout(r, 10))
  }
  const s = await client.getStatus('order-7')
  await rt.shutdown(1000)
  process.stdout.write('RESULT ' + JSON.stringify([s.status, s.output]) + '\\n')
})().catch((e) => { process.stderr.write('child failed: ' + e.stack + '\\n'); process.exitCode = 1 })
`

test('a string-named start of an existing id resolves, keeps the first input, and one WARN names the id', async () => {
  const env = { ...process.env }
  delete env.RUST_LOG
  const { stdout, stderr } = await new Promise((resolve, reject) => {
    execFile(process.execPath, ['-e', CHILD], { env, timeout: 60000, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) =>
      err ? reject(Object.assign(err, { stdout, stderr })) : resolve({ stdout, stderr }),
    )
  })
  assert.equal(stdout, 'RESULT ["Completed","1"]\n')
  const warnings = stderr.split('\n').filter((l) => /\bWARN\b/.test(l))
  const ours = warnings.filter((l) => l.includes("as instance 'order-7' was ignored and its input discarded: the instance already exists"))
  assert.equal(ours.length, 1, `one WARN naming the instance:\n${stderr.slice(0, 3000)}`)
  assert.match(ours[0], /ERR_ALREADY_EXISTS/)
  assert.deepEqual(warnings.filter((l) => l.includes('Ignoring duplicate StartOrchestration')), [], "duroxide's own line is not a WARN")
})
