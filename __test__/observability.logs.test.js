'use strict'
// Logs into the application's logger: initTracing({ sink }) hands structured
// records to JS without keeping the process alive, and ctx.log lines are
// emitted exactly once per instance, never while replaying: with the
// generator cache, without it (every turn replays the generator from the
// start), and across a restart on another runtime. initTracing installs the
// process-wide subscriber, so each case runs in a child process.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { execFileSync } = require('node:child_process')
const { Runtime } = require('..')
const { sqliteFile, coded } = require('./helpers')

const ROOT = path.join(__dirname, '..')

function tempDir(t) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dxlogs-'))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  return dir
}

/**
 * Runs `body` in a fresh Node process with the package as `dx` and a sink
 * that collects records into `records`; the body ends by calling
 * `done(extra)`, which writes `{ records, extra }` to the output file once
 * the sink has drained. Returns that object and the child's stdout.
 */
function child(t, body, { sinkLevel = 'debug' } = {}) {
  const out = path.join(tempDir(t), 'out.json')
  const script = `
const dx = require(${JSON.stringify(ROOT)})
const fs = require('node:fs')
const records = []
const stats = dx.initTracing({ sink: (r) => records.push(r), logLevel: ${JSON.stringify(sinkLevel)} })
function done(extra) {
  // Records still queued reach the sink on a later turn of the event loop.
  setTimeout(() => fs.writeFileSync(${JSON.stringify(out)}, JSON.stringify({ records, extra, dropped: stats.droppedRecords, sinkErrors: stats.sinkErrors })), 200)
}
;(async () => {
${body}
})().catch((e) => { console.error(e); process.exit(3) })
`
  const env = { ...process.env }
  delete env.RUST_LOG
  let stdout
  try {
    stdout = execFileSync(process.execPath, ['-e', script], { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 60000 })
  } catch (err) {
    throw new Error(`child failed (${err.status} ${err.signal}): ${err.stderr}\n${err.stdout}`)
  }
  return { ...JSON.parse(fs.readFileSync(out, 'utf8')), stdout }
}

const ORCHESTRATION = `
  rt.registerActivity('Charge', async (ctx, amount) => {
    ctx.log.warn('charging', { amount, card: 'visa' })
    return amount * 2
  })
  rt.registerOrchestration('Order', function* (ctx, input) {
    ctx.log.info('order received', { orderId: input.orderId, nested: { a: [1, 2] } })
    const charged = yield ctx.scheduleActivity('Charge', input.amount)
    ctx.log.debug('charged', { charged })
    yield ctx.scheduleTimer(20)
    ctx.log.error('after timer', { err: new Error('boom') })
    const again = yield ctx.scheduleActivity('Charge', 1)
    ctx.log.info('done', { again })
    return charged + again
  })
`

function lines(records, message) {
  return records.filter((r) => r.message === message && r.target === 'duroxide::orchestration')
}

for (const [label, cacheSize] of [['with the generator cache', 1000], ['without it (full replays)', 0]]) {
  test(`ctx.log reaches the sink once per line, ${label}`, (t) => {
    const { records, extra, stdout, dropped } = child(
      t,
      `
  const p = await dx.SqliteProvider.inMemory()
  const rt = new dx.Runtime(p, { dispatcherPollIntervalMs: 5, orchestrationCacheSize: ${cacheSize} })
  ${ORCHESTRATION}
  await rt.start()
  const c = new dx.Client(p)
  await c.startOrchestration('order-1', 'Order', { orderId: 'A-7', amount: 21 })
  const s = await c.waitForOrchestration('order-1', 20000)
  await rt.shutdown(1000)
  done(s)
`,
    )
    assert.equal(stdout, '', 'the library writes nothing to stdout')
    assert.equal(extra.status, 'Completed', JSON.stringify(extra))
    assert.equal(extra.output, 44)
    assert.equal(dropped, 0)
    for (const message of ['order received', 'charged', 'after timer', 'done']) {
      assert.equal(lines(records, message).length, 1, `'${message}' once: ${JSON.stringify(lines(records, message))}`)
    }
    const first = lines(records, 'order received')[0]
    assert.equal(first.level, 'info')
    assert.equal(typeof first.timestamp, 'number')
    assert.ok(Math.abs(first.timestamp - Date.now()) < 10 * 60_000, 'epoch milliseconds')
    assert.equal(first.fields.instance_id, 'order-1')
    assert.equal(first.fields.orchestration_name, 'Order')
    assert.equal(first.fields.orchestration_version, '1.0.0')
    assert.equal(first.fields.orderId, 'A-7')
    assert.deepEqual(first.fields.nested, { a: [1, 2] })
    assert.equal(lines(records, 'charged')[0].level, 'debug')
    assert.deepEqual(lines(records, 'charged')[0].fields.charged, 42)
    const err = lines(records, 'after timer')[0]
    assert.equal(err.level, 'error')
    assert.deepEqual(err.fields.err, { name: 'Error', message: 'boom' })

    const charging = records.filter((r) => r.message === 'charging')
    assert.equal(charging.length, 2, 'activities are not replayed: one line per execution')
    assert.equal(charging[0].target, 'duroxide::activity')
    assert.equal(charging[0].level, 'warn')
    assert.equal(charging[0].fields.activity_name, 'Charge')
    assert.equal(charging[0].fields.instance_id, 'order-1')
    assert.equal(charging[0].fields.card, 'visa')
    assert.deepEqual(charging.map((r) => r.fields.amount).sort(), [1, 21])
    assert.ok(records.some((r) => r.target.startsWith('duroxide::runtime')), 'the runtime\'s own records reach the sink too')
  })
}

test('ctx.log is silent while a restarted runtime replays the instance', (t) => {
  const dir = tempDir(t)
  const db = `sqlite:${path.join(dir, 'restart.db')}`
  const { records, extra } = child(
    t,
    `
  const register = (rt) => rt.registerOrchestration('Approve', function* (ctx) {
    ctx.log.info('waiting for approval', { step: 1 })
    const by = yield ctx.waitForEvent('approved')
    ctx.log.info('approved', { by })
    return by
  })
  const p = await dx.SqliteProvider.open(${JSON.stringify(db)})
  const c = new dx.Client(p)
  const rt1 = new dx.Runtime(p, { dispatcherPollIntervalMs: 5 })
  register(rt1)
  await rt1.start()
  await c.startOrchestration('ap-1', 'Approve', null)
  for (let i = 0; i < 400 && (await c.getStatus('ap-1')).status !== 'Running'; i++) await new Promise((r) => setTimeout(r, 25))
  await rt1.shutdown(1000)
  const rt2 = new dx.Runtime(p, { dispatcherPollIntervalMs: 5 })
  register(rt2)
  await rt2.start()
  await c.raiseEvent('ap-1', 'approved', 'ann')
  const s = await c.waitForOrchestration('ap-1', 20000)
  await rt2.shutdown(1000)
  done(s)
`,
  )
  assert.equal(extra.status, 'Completed', JSON.stringify(extra))
  assert.equal(lines(records, 'waiting for approval').length, 1, 'the replay on the second runtime logs nothing')
  assert.equal(lines(records, 'approved').length, 1)
  assert.equal(lines(records, 'approved')[0].fields.by, 'ann')
})

test('a sink never keeps the process alive, and one that throws does not stop the runtime', (t) => {
  // The child ends its script with the sink installed and nothing else to
  // do: it must exit by itself (execFileSync would time out otherwise).
  const { extra, sinkErrors } = child(
    t,
    `
  const p = await dx.SqliteProvider.inMemory()
  const rt = new dx.Runtime(p, { dispatcherPollIntervalMs: 5 })
  rt.registerOrchestration('Hi', function* (ctx) { ctx.log.info('hi'); return 1 })
  await rt.start()
  const c = new dx.Client(p)
  await c.startOrchestration('hi-1', 'Hi', null)
  const s = await c.waitForOrchestration('hi-1', 20000)
  await rt.shutdown(1000)
  done(s)
`,
  )
  assert.equal(extra.status, 'Completed')
  assert.equal(sinkErrors, 0)

  const out = path.join(tempDir(t), 'throwing.json')
  const env = { ...process.env }
  delete env.RUST_LOG
  const result = execFileSync(
    process.execPath,
    [
      '-e',
      `
const dx = require(${JSON.stringify(ROOT)})
const stats = dx.initTracing({ sink: () => { throw new Error('sink broke') } })
;(async () => {
  const p = await dx.SqliteProvider.inMemory()
  const rt = new dx.Runtime(p, { dispatcherPollIntervalMs: 5 })
  rt.registerOrchestration('Hi', function* (ctx) { ctx.log.info('hi'); return 1 })
  await rt.start()
  const c = new dx.Client(p)
  await c.startOrchestration('hi-1', 'Hi', null)
  const s = await c.waitForOrchestration('hi-1', 20000)
  await rt.shutdown(1000)
  setTimeout(() => require('node:fs').writeFileSync(${JSON.stringify(out)}, JSON.stringify({ status: s.status, sinkErrors: stats.sinkErrors })), 200)
})()
`,
    ],
    { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 60000 },
  )
  assert.equal(result, '')
  const got = JSON.parse(fs.readFileSync(out, 'utf8'))
  assert.equal(got.status, 'Completed')
  assert.ok(got.sinkErrors > 0, 'the throws are counted')
})

test('initTracing refuses a sink that is not a function, and an empty options object', () => {
  // Both checks happen before anything is installed, so this process may run them.
  const { initTracing } = require('..')
  assert.throws(() => initTracing({ sink: 'console' }), coded('ERR_INVALID_ARGUMENT', 'sink'))
  assert.throws(() => initTracing({}), coded('ERR_INVALID_ARGUMENT', 'logFile', 'sink'))
})

test('ctx.log refuses fields that are not an object', async (t) => {
  const store = await sqliteFile(t, 'dxlogs')
  const rt = new Runtime(store.provider, { dispatcherPollIntervalMs: 5 })
  let error
  rt.registerOrchestration('BadFields', function* (ctx) {
    try {
      ctx.log.info('x', 'not an object')
    } catch (err) {
      error = err
    }
    return 1
  })
  await rt.start()
  t.after(() => rt.shutdown(0))
  const { Client } = require('..')
  const c = new Client(store.provider)
  await c.startOrchestration('bf-1', 'BadFields', null)
  assert.equal((await c.waitForOrchestration('bf-1', 20000)).status, 'Completed')
  assert.ok(coded('ERR_INVALID_ARGUMENT', 'fields')(error))
})
