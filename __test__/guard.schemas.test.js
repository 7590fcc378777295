'use strict'
// Start-up check on Postgres: other duroxide schemas in the same database
// share duroxide-pg's advisory-lock keys, so starting a runtime warns once
// per provider, counting them and naming a few.
const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { spawnSync } = require('node:child_process')
const { pgSchema, psql, uniqueName } = require('./helpers')

let ours
let other
// Schemas that look like duroxide's to the check (an `orchestrator_queue`
// table), so that the database holds more of them than the warning names.
const extras = []
before(async () => {
  ours = await pgSchema(null, 'dxguardsa')
  other = await pgSchema(null, 'dxguardsb')
  for (let i = 0; i < 4; i++) {
    const schema = uniqueName('dxguardsx')
    psql(`CREATE SCHEMA ${schema}; CREATE TABLE ${schema}.orchestrator_queue (id int)`)
    extras.push(schema)
  }
})
after(() => {
  ours.drop()
  other.drop()
  for (const schema of extras) psql(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
})

test('two runtimes starting on Postgres log one short WARN line: a count and a few names', () => {
  const run = spawnSync(process.execPath, [path.join(__dirname, 'fixtures', 'guard-schemas.js'), ours.url, ours.schema], {
    encoding: 'utf8',
    timeout: 60000,
  })
  assert.equal(run.status, 0, run.stderr)
  assert.equal(run.stdout, '', 'the warning goes to stderr, never stdout')
  const lines = run.stderr.split('\n').filter((l) => l.includes('other duroxide schemas share database'))
  assert.equal(lines.length, 1, `two runtimes, one warning:\n${run.stderr}`)
  const line = lines[0]
  assert.match(line, /WARN/)
  assert.ok(line.includes(`schema '${ours.schema}'`), line)
  assert.match(line, /advisory locks are keyed by instance id/)
  // At least the five made here, counted; three named, the rest counted.
  const count = Number(/(\d+) other duroxide schemas/.exec(line)?.[1])
  assert.ok(count >= 5, line)
  const list = new RegExp(`with schema '${ours.schema}' \\((.*) and (\\d+) more\\)`).exec(line)
  assert.ok(list, `names a few and counts the rest: ${line}`)
  const named = list[1].split(', ')
  assert.equal(named.length, 3, line)
  assert.equal(Number(list[2]), count - 3)
  for (const name of named) assert.equal(line.split(name).length - 1, 1, `${name} named once: ${line}`)
  assert.ok(line.length < 600, `a short line: ${line.length} characters`)
})
