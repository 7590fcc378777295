'use strict'
// No internal encoding reaches people: a failure's structure (lib/failure.js,
// src/bridge/failure.rs) travels after a \u001e separator inside duroxide's
// failure text, and duroxide logs that text in many fields and shapes. Every
// log output (stderr in each format, a log file, an initTracing sink) at
// debug level, the error messages and the CLI show the failure's message
// without it. Logs are process-wide, so each output runs in a child process.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { spawnSync } = require('node:child_process')
const { runCli } = require('./fixtures/cli-run')

const FIXTURE = path.join(__dirname, 'fixtures', 'failure-logs.js')

/** Any trace of the structure: its tag, or the separator raw or escaped. */
const LEAK = /\$duroxide|\u001e|\\u001e|\\u\{1e\}/

function tempDir(t) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dxclean-'))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  return dir
}

function run(t, mode) {
  const dir = tempDir(t)
  const out = path.join(dir, 'out.json')
  const db = path.join(dir, 'app.db')
  const env = { ...process.env }
  delete env.RUST_LOG
  const r = spawnSync(process.execPath, [FIXTURE, mode, out, db], { env, encoding: 'utf8', timeout: 60000 })
  assert.equal(r.status, 0, `child failed: ${r.stderr}`)
  assert.equal(r.stdout, '', 'nothing on stdout')
  const result = JSON.parse(fs.readFileSync(out, 'utf8'))
  const log = mode === 'file' ? fs.readFileSync(`${out}.log`, 'utf8') : mode === 'sink' ? JSON.stringify(result.records) : r.stderr
  return { ...result, log, db }
}

for (const mode of ['compact', 'json', 'pretty', 'file', 'sink']) {
  test(`failure logs carry the message without the structure (${mode})`, (t) => {
    const { log } = run(t, mode)
    // The failures were logged (or the test would prove nothing)...
    assert.match(log, /card declined/)
    assert.match(log, /no funds/)
    assert.match(log, /attempt 1\/2 failed: card declined/)
    // ...and no line carries the encoding.
    const leaks = log.split('\n').filter((l) => LEAK.test(l))
    assert.deepEqual(leaks, [], `lines with the internal encoding:\n${leaks.join('\n')}`)
  })
}

test('error messages, statuses and the CLI show the message alone', async (t) => {
  const { statuses, typedMessage, db } = run(t, 'compact')
  assert.deepEqual(statuses.map((s) => s.status), ['Failed', 'Failed', 'Failed', 'Failed'])
  for (const s of statuses) {
    assert.doesNotMatch(JSON.stringify({ error: s.error, message: s.failure?.message }), LEAK)
    assert.match(s.error, /card declined|no funds/)
  }
  assert.match(typedMessage, /no funds/)
  assert.doesNotMatch(typedMessage, LEAK)
  const url = `sqlite:${db}`
  for (const args of [['list'], ['show', 'Rethrown-1'], ['show', 'Parent-1'], ['history', 'Retried-1'], ['history', 'Throws-1']]) {
    for (const json of [[], ['--json']]) {
      const r = await runCli([...args, ...json, '--database-url', url])
      assert.equal(r.code, 0, r.stderr)
      assert.doesNotMatch(r.stdout + r.stderr, LEAK, `${args.join(' ')} ${json.join(' ')}:\n${r.stdout}`)
    }
  }
  const shown = await runCli(['show', 'Throws-1', '--database-url', url])
  assert.match(shown.stdout, /no funds/)
})
