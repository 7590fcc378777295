'use strict'
// initTracing installs the process-wide log subscriber, so every case runs in
// a child process of its own: logs go to the chosen file and nothing to
// stdout; an unusable path and a second subscriber fail with the message
// texts existing callers match on.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { execFileSync } = require('node:child_process')

const ROOT = path.join(__dirname, '..')

function tempDir(t) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dxtrace-'))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  return dir
}

/** Runs `body` in a fresh Node process with the package as `dx`; returns its stdout and stderr. */
function child(body, { env = {} } = {}) {
  const script = `const dx = require(${JSON.stringify(ROOT)});\n${body}`
  const cleanEnv = { ...process.env, ...env }
  delete cleanEnv.RUST_LOG
  try {
    const stdout = execFileSync(process.execPath, ['-e', script], { env: cleanEnv, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 60000 })
    return { stdout, stderr: '' }
  } catch (err) {
    throw new Error(`child failed (${err.status}): ${err.stderr}\n${err.stdout}`)
  }
}

/** A child that runs one orchestration with traces after `setup` (which may call initTracing). */
const RUN_ORCHESTRATION = `
;(async () => {
  const p = await dx.SqliteProvider.inMemory()
  const rt = new dx.Runtime(p, { dispatcherPollIntervalMs: 5 })
  rt.registerActivity('Act', async (ctx) => { ctx.traceInfo('activity-info-marker'); return 1 })
  rt.registerOrchestration('Orch', function* (ctx) {
    ctx.traceInfo('orch-info-marker')
    ctx.traceWarn('orch-warn-marker')
    return yield ctx.scheduleActivity('Act', null)
  })
  await rt.start()
  const c = new dx.Client(p)
  await c.startOrchestration('t1', 'Orch', null)
  const s = await c.waitForOrchestration('t1', 20000)
  await rt.shutdown(1000)
  if (s.status !== 'Completed') { console.error('orchestration ' + JSON.stringify(s)); process.exit(2) }
})().catch((e) => { console.error(e); process.exit(3) })
`

test('initTracing writes runtime logs to the file and nothing to stdout', (t) => {
  const log = path.join(tempDir(t), 'runtime.log')
  const { stdout } = child(`dx.initTracing({ logFile: ${JSON.stringify(log)}, logLevel: 'info', logFormat: 'json' })\n${RUN_ORCHESTRATION}`)
  assert.equal(stdout, '', 'the library writes nothing to stdout')
  const text = fs.readFileSync(log, 'utf8')
  for (const marker of ['orch-info-marker', 'orch-warn-marker', 'activity-info-marker']) {
    assert.ok(text.includes(marker), `log file should contain ${marker}:\n${text}`)
  }
  for (const line of text.trim().split('\n')) assert.doesNotThrow(() => JSON.parse(line), `json format line: ${line}`)
})

test('logLevel filters what reaches the file', (t) => {
  const log = path.join(tempDir(t), 'warn.log')
  const { stdout } = child(`dx.initTracing({ logFile: ${JSON.stringify(log)}, logLevel: 'warn', logFormat: 'compact' })\n${RUN_ORCHESTRATION}`)
  assert.equal(stdout, '')
  const text = fs.readFileSync(log, 'utf8')
  assert.ok(text.includes('orch-warn-marker'), text)
  assert.ok(!text.includes('orch-info-marker'), 'info traces are below the warn level')
  assert.ok(!text.includes('activity-info-marker'))
})

test('an unusable path, bad options and a second call fail with their messages', (t) => {
  const log = path.join(tempDir(t), 'ok.log')
  const { stdout } = child(`
    const out = {}
    const attempt = (key, options) => {
      try { dx.initTracing(options); out[key] = 'ok' } catch (e) { out[key] = { code: e.code, message: e.message, isError: e instanceof Error } }
    }
    attempt('badPath', { logFile: '/nonexistent-dir/sub/x.log' })
    attempt('badLevel', { logFile: ${JSON.stringify(log)}, logLevel: 'loud' })
    attempt('badFormat', { logFile: ${JSON.stringify(log)}, logFormat: 'xml' })
    attempt('noFile', {})
    attempt('notObject', 'x.log')
    attempt('first', { logFile: ${JSON.stringify(log)} })
    attempt('second', { logFile: ${JSON.stringify(log)} })
    process.stdout.write(JSON.stringify(out))
  `)
  const out = JSON.parse(stdout)
  assert.ok(out.badPath.message.includes('Failed to open log file'), out.badPath.message)
  assert.ok(out.badPath.message.includes('/nonexistent-dir/sub/x.log'))
  assert.equal(out.badPath.code, 'ERR_INVALID_ARGUMENT')
  assert.equal(out.badPath.isError, true)
  assert.equal(out.badLevel.code, 'ERR_INVALID_OPTION')
  assert.ok(out.badLevel.message.includes('logLevel') && out.badLevel.message.includes('loud'))
  assert.equal(out.badFormat.code, 'ERR_INVALID_OPTION')
  assert.ok(out.badFormat.message.includes('logFormat') && out.badFormat.message.includes('xml'))
  assert.equal(out.noFile.code, 'ERR_INVALID_ARGUMENT')
  assert.ok(out.noFile.message.includes('logFile'))
  assert.equal(out.notObject.code, 'ERR_INVALID_ARGUMENT')
  // The failed attempts installed nothing, so the first good call succeeds.
  assert.equal(out.first, 'ok')
  assert.ok(out.second.message.includes('Failed to init tracing'), out.second.message)
  assert.equal(out.second.code, 'ERR_RUNTIME_STATE')
})

test('initTracing after a runtime started fails: its stderr logger is already installed', (t) => {
  const log = path.join(tempDir(t), 'late.log')
  const { stdout } = child(`
    ;(async () => {
      const p = await dx.SqliteProvider.inMemory()
      const rt = new dx.Runtime(p)
      await rt.start()
      let result = 'ok'
      try { dx.initTracing({ logFile: ${JSON.stringify(log)} }) } catch (e) { result = e.message }
      await rt.shutdown(0)
      process.stdout.write(JSON.stringify({ result }))
    })()
  `)
  assert.ok(JSON.parse(stdout).result.includes('Failed to init tracing'))
})
