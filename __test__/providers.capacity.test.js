'use strict'
// A fleet that outgrows the server's connection slots. Regression: a connect
// against a server refusing connections (SQLSTATE 53300) failed after the
// pool's 30 s timeout with "pool timed out while waiting for an open
// connection", hiding the cause. A role with a CONNECTION LIMIT gives the same
// refusal as max_connections without starving the other tests of slots.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const { spawn } = require('node:child_process')
const { DATABASE_URL, psql, uniqueName, eventually } = require('./helpers')
const { PostgresProvider } = require('..')

function roleUrl(role) {
  const url = new URL(DATABASE_URL)
  url.username = role
  url.password = ''
  return url.toString()
}

test('a server out of connection slots is reported as such, with the pool size and the way out', async (t) => {
  const role = uniqueName('dxcap')
  const schema = uniqueName('dxcap')
  psql(`CREATE ROLE ${role} LOGIN CONNECTION LIMIT 1; GRANT CREATE ON DATABASE ${new URL(DATABASE_URL).pathname.slice(1)} TO ${role}`)
  // The role's one slot, held by another client for the length of the test.
  const holder = spawn('psql', [roleUrl(role), '-c', 'SELECT pg_sleep(120)'], { stdio: 'ignore' })
  t.after(() => {
    holder.kill('SIGKILL')
    psql(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
    psql(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '${role}'`)
    psql(`REVOKE CREATE ON DATABASE ${new URL(DATABASE_URL).pathname.slice(1)} FROM ${role}; DROP ROLE IF EXISTS ${role}`)
  })
  await eventually(() => psql(`SELECT count(*) FROM pg_stat_activity WHERE usename = '${role}'`) === '1', {
    what: 'the holder connection',
  })

  await assert.rejects(PostgresProvider.connectWithSchema(roleUrl(role), schema, { maxConnections: 4 }), (err) => {
    assert.equal(err.code, 'ERR_PROVIDER')
    assert.match(err.message, /SQLSTATE 53300/)
    assert.match(err.message, /too many connections/)
    assert.match(err.message, /pool needs up to 4 connections/)
    assert.match(err.message, /maxConnections/)
    assert.doesNotMatch(err.message, /pool timed out/)
    return true
  })
})
