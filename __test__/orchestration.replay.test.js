'use strict'
// ctx.isReplaying and the replay suppression of ctx.trace*. Without the
// generator cache the generator is run again from the start on every turn,
// and only the code past the end of the stored history is new; with it, the
// live generator resumes and each point runs once, never replaying. Runs in a child process whose log file is read
// afterwards (initTracing is process-wide).
const { test } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { execFileSync } = require('node:child_process')

const ROOT = path.join(__dirname, '..')

// Two activities, so three turns: at each point the handler records
// isReplaying and writes a trace line naming the turn and the point.
const CHILD = `
const dx = require(${JSON.stringify(ROOT)})
dx.initTracing({ logFile: process.env.DXT_LOG, logLevel: 'info', logFormat: 'compact' })
;(async () => {
  const p = await dx.SqliteProvider.inMemory()
  const rt = new dx.Runtime(p, { dispatcherPollIntervalMs: 5, orchestrationCacheSize: Number(process.env.DXT_CACHE) })
  const turns = []
  rt.registerActivity('Step', async (ctx, n) => n)
  rt.registerOrchestration('Steps', function* (ctx) {
    const turn = turns.length + 1
    const seen = []
    turns.push(seen)
    const point = (name) => {
      seen.push(ctx.isReplaying)
      ctx.traceInfo('replay-marker ' + name + ' in turn ' + turn)
    }
    point('start')
    yield ctx.scheduleActivity('Step', 1)
    point('after-1')
    yield ctx.scheduleActivity('Step', 2)
    point('after-2')
    return 'done'
  })
  await rt.start()
  const c = new dx.Client(p)
  await c.startOrchestration('replay-1', 'Steps', null)
  const s = await c.waitForOrchestration('replay-1', 20000)
  await rt.shutdown(1000)
  process.stdout.write(JSON.stringify({ status: s.status, turns }))
})().catch((e) => { console.error(e); process.exit(3) })
`

function run(t, cacheSize) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dxreplay-'))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  const log = path.join(dir, 'runtime.log')
  const env = { ...process.env, DXT_LOG: log, DXT_CACHE: String(cacheSize) }
  const stdout = execFileSync(process.execPath, ['-e', CHILD], { env, encoding: 'utf8', timeout: 60000 })
  const { status, turns } = JSON.parse(stdout)
  const markers = fs.readFileSync(log, 'utf8').split('\n').map((l) => /replay-marker (\S+ in turn \d+)/.exec(l)).filter(Boolean).map((m) => m[1].trim())
  return { status, turns, markers }
}

test('without the generator cache, isReplaying is true for the points a turn re-runs from history and false for the new code, and traces are written once', (t) => {
  const { status, turns, markers } = run(t, 0)
  assert.equal(status, 'Completed')
  assert.deepEqual(turns, [
    [false],
    [true, false],
    [true, true, false],
  ])
  // Only the non-replayed point of each turn reaches the log.
  assert.deepEqual(markers, ['start in turn 1', 'after-1 in turn 2', 'after-2 in turn 3'])
})

test('with the generator cache, each point runs once, never replaying, and traces are written once', (t) => {
  const { status, turns, markers } = run(t, 100)
  assert.equal(status, 'Completed')
  assert.deepEqual(turns, [[false, false, false]])
  assert.deepEqual(markers, ['start in turn 1', 'after-1 in turn 1', 'after-2 in turn 1'])
})
