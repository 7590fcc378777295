'use strict'
// historyWarnEvents: once an execution's history passes the limit, the
// runtime logs one WARN naming the instance and ctx.continueAsNew, once per
// instance; an instance under the limit gets none, and 0 turns it off. A
// child process, so its stderr can be read.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const { execFile } = require('node:child_process')
const path = require('node:path')

const child = (options) => `
const { SqliteProvider, Runtime, Client } = require(${JSON.stringify(path.join(__dirname, '..'))})
;(async () => {
  const provider = await SqliteProvider.inMemory()
  const rt = new Runtime(provider, { dispatcherPollIntervalMs: 5, ...${JSON.stringify(options)} })
  rt.registerActivity('Step', async (ctx, i) => i)
  rt.registerOrchestration('Loop', function* (ctx, n) {
    let sum = 0
    for (let i = 0; i < n; i++) sum += yield ctx.scheduleActivity('Step', i)
    return sum
  })
  await rt.start()
  const client = new Client(provider)
  await client.startOrchestration('long-1', 'Loop', 30)
  await client.startOrchestration('short-1', 'Loop', 2)
  const a = await client.waitForOrchestration('long-1', 30000)
  const b = await client.waitForOrchestration('short-1', 30000)
  const events = (await client.readExecutionHistory('long-1', 1)).length
  await rt.shutdown(1000)
  process.stdout.write('RESULT ' + JSON.stringify([a.status, a.output, b.status, b.output, events]) + '\\n')
})().catch((e) => { process.stderr.write('child failed: ' + e.stack + '\\n'); process.exitCode = 1 })
`

function run(options) {
  const env = { ...process.env }
  delete env.RUST_LOG
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['-e', child(options)], { env, timeout: 60000, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) =>
      err ? reject(Object.assign(err, { stdout, stderr })) : resolve({ stdout, stderr }),
    )
  })
}

const ours = (stderr) => stderr.split('\n').filter((l) => /\bWARN\b/.test(l) && l.includes('historyWarnEvents'))

test('past historyWarnEvents, one WARN names the instance and continueAsNew; none under it', async () => {
  const { stdout, stderr } = await run({ historyWarnEvents: 20 })
  const [statusA, outA, statusB, outB, events] = JSON.parse(stdout.replace(/^RESULT /, ''))
  assert.deepEqual([statusA, outA, statusB, outB], ['Completed', 435, 'Completed', 1])
  assert.ok(events > 40, `the long history has ${events} events, well past the limit`)
  const warnings = ours(stderr)
  const long = warnings.filter((l) => l.includes("instance 'long-1'"))
  assert.equal(long.length, 1, `one WARN for long-1:\n${stderr.slice(0, 3000)}`)
  assert.match(long[0], /ctx\.continueAsNew/)
  assert.match(long[0], /historyWarnEvents \(20\)/)
  assert.deepEqual(warnings.filter((l) => l.includes('short-1')), [], 'no WARN for the instance under the limit')
  assert.equal(warnings.length, 1)
})

test('historyWarnEvents: 0 never warns', async () => {
  const { stdout, stderr } = await run({ historyWarnEvents: 0 })
  assert.match(stdout, /^RESULT \["Completed",435,"Completed",1,/)
  assert.deepEqual(ours(stderr), [])
})
