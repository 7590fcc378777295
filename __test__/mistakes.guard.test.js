'use strict'
// Mistakes in orchestration code, caught where they are made: returning a
// task, using a task as a string, a task never yielded, and Date.now() /
// new Date() / Math.random() inside a generator step (determinismGuard).
// Warnings go to the runtime's log (here a file via initTracing), never
// stdout; each is reported once per orchestration name (and call kind).
const { test, describe, before } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { sqliteFile, clientWithRuntime, uniqueName, eventually, coded } = require('./helpers')
const { Runtime, initTracing } = require('..')

const logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dxmistakes-'))
const logFile = path.join(logDir, 'runtime.log')
before(() => initTracing({ logFile, logLevel: 'warn' }))
process.on('exit', () => fs.rmSync(logDir, { recursive: true, force: true }))

const log = () => (fs.existsSync(logFile) ? fs.readFileSync(logFile, 'utf8') : '')
const count = (text, needle) => text.split(needle).length - 1

const RealDate = Date
const realNow = Date.now
const realRandom = Math.random

async function finish(client, name, input = null) {
  const id = uniqueName(name.toLowerCase())
  await client.startOrchestration(id, name, input)
  return { id, status: await client.waitForOrchestration(id, 30000) }
}

describe('tasks used wrongly', () => {
  function register(rt) {
    rt.registerActivity('Audit', async () => 'audited')
    rt.registerOrchestration('ReturnsTask', function* (ctx) {
      return ctx.scheduleActivity('Audit', 1)
    })
    rt.registerOrchestration('TaskAsString', function* (ctx) {
      const out = {}
      try {
        out.template = `order-${ctx.newGuid()}`
      } catch (e) {
        out.template = { code: e.code, message: e.message }
      }
      try {
        out.plus = 'x' + ctx.utcNow()
      } catch (e) {
        out.plus = e.code
      }
      out.yielded = typeof (yield ctx.newGuid())
      return out
    })
    rt.registerOrchestration('DropsTask', function* (ctx) {
      ctx.scheduleActivity('Audit', 'forgotten')
      const kept = ctx.scheduleActivity('Audit', 'kept')
      const later = ctx.scheduleActivity('Audit', 'later')
      yield kept
      yield ctx.all([later])
      return 'done'
    })
    rt.registerOrchestration('EternalDrops', function* (ctx, round) {
      if (round > 0) return 'done' // only the execution that continues as new drops a task
      ctx.scheduleTimer(10)
      yield ctx.continueAsNew(round + 1)
    })
    rt.registerOrchestration('YieldsEverything', function* (ctx) {
      const a = ctx.scheduleActivity('Audit', 'a')
      const b = ctx.scheduleActivity('Audit', 'b')
      yield a
      yield ctx.race(b, ctx.scheduleTimer(60000))
      return 'done'
    })
  }

  test('returning a task fails the orchestration with the fix in the message', async (t) => {
    const client = await clientWithRuntime(t, sqliteFile, register)
    const { status } = await finish(client, 'ReturnsTask')
    assert.equal(status.status, 'Failed')
    assert.match(status.error, /returned a task \(activity\) instead of its result; did you mean `return yield \.\.\.`\?/)
    assert.doesNotMatch(log(), /'ReturnsTask' \(instance/, 'a returned task is not also reported as dropped')
  })

  test('a task used as a string throws with the hint to yield it', async (t) => {
    const client = await clientWithRuntime(t, sqliteFile, register)
    const { status } = await finish(client, 'TaskAsString')
    assert.equal(status.status, 'Completed', status.error)
    assert.equal(status.output.template.code, 'ERR_INVALID_ARGUMENT')
    assert.match(status.output.template.message, /newGuid task is not its result; yield it first/)
    assert.equal(status.output.plus, 'ERR_INVALID_ARGUMENT')
    assert.equal(status.output.yielded, 'string')
  })

  test('a task never yielded is reported once per orchestration name, naming it', async (t) => {
    const client = await clientWithRuntime(t, sqliteFile, register)
    const first = await finish(client, 'DropsTask')
    assert.equal(first.status.status, 'Completed', first.status.error)
    await finish(client, 'DropsTask')
    const ok = await finish(client, 'YieldsEverything')
    assert.equal(ok.status.status, 'Completed', ok.status.error)
    const text = await eventually(() => log().includes("orchestration 'DropsTask'") && log(), { what: 'the dropped-task warning' })
    assert.equal(count(text, "orchestration 'DropsTask' (instance"), 1, 'once per orchestration name')
    assert.match(text, /created 1 task\(s\) it never yielded \(activity 'Audit'\)/)
    assert.match(text, new RegExp(`instance '${first.id}'`))
    assert.equal(count(text, "'YieldsEverything'"), 0, 'tasks yielded later, or through race/all, are not dropped')
  })

  test('an execution that continues as new reports what it dropped', async (t) => {
    const client = await clientWithRuntime(t, sqliteFile, register)
    const { id, status } = await finish(client, 'EternalDrops', 0)
    assert.equal(status.status, 'Completed', status.error)
    const text = await eventually(() => log().includes("orchestration 'EternalDrops'") && log(), { what: 'the dropped-task warning' })
    assert.match(text, new RegExp(`'EternalDrops' \\(instance '${id}'\\) created 1 task\\(s\\) it never yielded \\(timer\\)`))
  })
})

describe('determinismGuard', () => {
  function register(rt) {
    rt.registerActivity('Now', async () => {
      // Activities run outside generator steps: the globals are untouched.
      return { now: Date.now === realNow, date: Date === RealDate, random: Math.random === realRandom }
    })
    rt.registerOrchestration('ReadsClock', function* (ctx) {
      const t0 = Date.now()
      const d = new Date()
      const r = Math.random()
      const fixed = new Date(0).toISOString() // with an argument it is deterministic
      const isDate = d instanceof Date && new Date(5) instanceof RealDate
      const patched = Date.now !== realNow
      const inActivity = yield ctx.scheduleActivity('Now', null)
      return { t0: typeof t0, r: typeof r, fixed, isDate, patched, inActivity }
    })
  }

  test("'warn' (the default) reports each call once per orchestration name with the instance and the replacement", async (t) => {
    const client = await clientWithRuntime(t, sqliteFile, register)
    const first = await finish(client, 'ReadsClock')
    await finish(client, 'ReadsClock')
    assert.equal(first.status.status, 'Completed', first.status.error)
    const out = first.status.output
    assert.deepEqual(out, {
      t0: 'number',
      r: 'number',
      fixed: '1970-01-01T00:00:00.000Z',
      isDate: true,
      patched: true,
      inActivity: { now: true, date: true, random: true },
    })
    const text = await eventually(() => log().includes('called Math.random()') && log(), { what: 'the guard warnings' })
    assert.equal(count(text, "orchestration 'ReadsClock'"), 3, 'one line per call kind')
    assert.match(text, new RegExp(`'ReadsClock' \\(instance '${first.id}'\\) called Date\\.now\\(\\).*use \`yield ctx\\.utcNow\\(\\)\` instead`))
    assert.match(text, /called new Date\(\).*ctx\.utcNow\(\)/)
    assert.match(text, /called Math\.random\(\).*ctx\.newGuid\(\)/)
    // Restored after every step.
    assert.equal(Date, RealDate)
    assert.equal(Date.now, realNow)
    assert.equal(Math.random, realRandom)
  })

  test("'throw' fails the call with ERR_NONDETERMINISTIC; 'off' leaves the globals alone; each runtime decides for its own steps", async (t) => {
    const strict = await clientWithRuntime(t, sqliteFile, register, { determinismGuard: 'throw' })
    const lax = await clientWithRuntime(t, sqliteFile, register, { determinismGuard: 'off' })
    const a = await finish(strict, 'ReadsClock')
    assert.equal(a.status.status, 'Failed')
    assert.match(a.status.error, /called Date\.now\(\) in orchestration code.*ctx\.utcNow\(\)/)
    assert.equal(a.status.failure.errorName, 'NondeterministicError')
    const b = await finish(lax, 'ReadsClock')
    assert.equal(b.status.status, 'Completed', b.status.error)
    assert.equal(b.status.output.patched, false)
  })

  test('effectiveOptions shows it and a bad value is ERR_INVALID_OPTION naming the option', async (t) => {
    const db = await sqliteFile(t)
    assert.equal(new Runtime(db.provider).effectiveOptions().determinismGuard, 'warn')
    assert.equal(new Runtime(db.provider, { determinismGuard: 'off' }).effectiveOptions().determinismGuard, 'off')
    assert.throws(() => new Runtime(db.provider, { determinismGuard: 'loud' }), coded('ERR_INVALID_OPTION', 'determinismGuard', "'loud'"))
    assert.throws(() => new Runtime(db.provider, { determinismGuard: true }), coded('ERR_INVALID_OPTION', 'determinismGuard'))
  })
})
