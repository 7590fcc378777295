'use strict'
// Start-up check on Postgres (issue 5, item 6): other duroxide schemas in the
// same database share duroxide-pg's advisory-lock keys, so starting a runtime
// warns once, naming them.
const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { spawnSync } = require('node:child_process')
const { pgSchema } = require('./helpers')

let ours
let other
before(async () => {
  ours = await pgSchema(null, 'dxguardsa')
  other = await pgSchema(null, 'dxguardsb')
})
after(() => {
  ours.drop()
  other.drop()
})

test('two runtimes starting on Postgres log one WARN line naming the other duroxide schemas', () => {
  const run = spawnSync(process.execPath, [path.join(__dirname, 'fixtures', 'guard-schemas.js'), ours.url, ours.schema], {
    encoding: 'utf8',
    timeout: 60000,
  })
  assert.equal(run.status, 0, run.stderr)
  assert.equal(run.stdout, '', 'the warning goes to stderr, never stdout')
  const lines = run.stderr.split('\n').filter((l) => l.includes('other duroxide schemas share database'))
  assert.equal(lines.length, 1, `two runtimes, one warning:\n${run.stderr}`)
  assert.match(lines[0], /WARN/)
  assert.ok(lines[0].includes(`schema '${ours.schema}'`), lines[0])
  assert.ok(lines[0].includes(other.schema), `names ${other.schema}: ${lines[0]}`)
  assert.match(lines[0], /advisory locks are keyed by instance id/)
})
