'use strict'
// No runtime log line reaches stdout: a child process that logs at debug level
// (orchestration and activity traces, failing activities, provider chatter)
// prints exactly its own line on stdout; the logs are on stderr.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { execFile } = require('node:child_process')
const { backends, sqliteFile, uniqueName, DATABASE_URL, psql } = require('./helpers')

const EXPECTED_STDOUT = 'RESULT ["Completed",{"loud":"QUIET PLEASE","failed":"activity-failure-for-the-log"}]\n'

function runChild(url, options, extraEnv = {}) {
  // The child's filter comes from logLevel unless the test sets RUST_LOG.
  const env = { ...process.env, ...extraEnv }
  if (!('RUST_LOG' in extraEnv)) delete env.RUST_LOG
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [path.join(__dirname, 'fixtures', 'child-runtime.js'), 'work', url, JSON.stringify(options)],
      { env, timeout: 60000, maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) => (err ? reject(Object.assign(err, { stdout, stderr })) : resolve({ stdout, stderr })),
    )
  })
}

async function target(t, kind) {
  if (kind === 'sqlite') return `sqlite:${(await sqliteFile(t)).file}`
  const schema = uniqueName('dxlog')
  t.after(() => psql(`DROP SCHEMA IF EXISTS ${schema} CASCADE`))
  return `${DATABASE_URL}#${schema}`
}

const TRACES = [
  'orchestration-trace-info', 'orchestration-trace-warn', 'orchestration-trace-error', 'orchestration-trace-debug',
  'activity-trace-info', 'activity-trace-warn', 'activity-trace-error', 'activity-trace-debug',
]

for (const [kind] of backends) {
  for (const logFormat of ['pretty', 'json', 'compact']) {
    test(`logLevel 'debug', logFormat '${logFormat}': stdout holds only the script's line, traces go to stderr (${kind})`, async (t) => {
      const { stdout, stderr } = await runChild(await target(t, kind), { logLevel: 'debug', logFormat })
      assert.equal(stdout, EXPECTED_STDOUT)
      for (const trace of TRACES) assert.ok(stderr.includes(trace), `stderr lacks ${trace}:\n${stderr.slice(0, 3000)}`)
      assert.ok(stderr.includes('activity-failure-for-the-log'), 'the failing activity is logged on stderr')
      if (logFormat === 'json') {
        const line = stderr.split('\n').find((l) => l.includes('orchestration-trace-info'))
        assert.equal(JSON.parse(line).fields.message.startsWith('orchestration-trace-info'), true)
      }
    })
  }

  test(`RUST_LOG=trace floods stderr, never stdout (${kind})`, async (t) => {
    const { stdout, stderr } = await runChild(await target(t, kind), {}, { RUST_LOG: 'trace' })
    assert.equal(stdout, EXPECTED_STDOUT)
    assert.ok(stderr.split('\n').length > 50, 'RUST_LOG=trace should produce plenty of log lines')
    // Dependency chatter (sqlx queries) is enabled too, and also stays on stderr.
    assert.match(stderr, / DEBUG sqlx::query/)
  })
}

const LOG_LINE = /\b(ERROR|WARN|INFO|DEBUG|TRACE)\b/

// Regression: with logLevel 'off', duroxide's own WARN lines still printed.
test("logLevel 'off' silences every runtime log line, the runtime's own warnings included", async (t) => {
  const { stdout, stderr } = await runChild(await target(t, 'sqlite'), { logLevel: 'off' })
  assert.equal(stdout, EXPECTED_STDOUT)
  for (const trace of TRACES) assert.ok(!stderr.includes(trace), `stderr has ${trace}`)
  assert.deepEqual(stderr.split('\n').filter((l) => LOG_LINE.test(l)), [])
})

test("logLevel 'error' shows errors only", async (t) => {
  const { stderr } = await runChild(await target(t, 'sqlite'), { logLevel: 'error' })
  const lines = stderr.split('\n').filter((l) => LOG_LINE.test(l))
  assert.ok(lines.some((l) => l.includes('orchestration-trace-error')), stderr.slice(0, 2000))
  assert.deepEqual(lines.filter((l) => !/\bERROR\b/.test(l)), [])
})

// A caught activity failure is the application's business, not an operator's:
// at the default level it is logged at INFO, and WARN stays for what needs a look.
test('a handled activity failure is logged at INFO, not WARN', async (t) => {
  const { stderr } = await runChild(await target(t, 'sqlite'), {})
  const about = stderr.split('\n').filter((l) => l.includes('activity-failure-for-the-log'))
  assert.ok(about.some((l) => /\bINFO\b/.test(l)), stderr.slice(0, 2000))
  assert.deepEqual(about.filter((l) => /\bWARN\b/.test(l)), [])
})
