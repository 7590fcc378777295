'use strict'
// Item 7: four processes start at once against an empty schema. The
// migrations run once, every process starts, and the fleet works.
const test = require('node:test')
const assert = require('node:assert/strict')
const { PostgresProvider } = require('../..')
const { uniqueName, psql, pgSchema, DATABASE_URL, Client } = require('../helpers')
const { Worker, effectsDir, waitAll } = require('./harness')

test('four processes connecting to an empty schema at once: migrations once, all start', { timeout: 120000 }, async (t) => {
  const schema = uniqueName('dxf_migr')
  t.after(() => psql(`DROP SCHEMA IF EXISTS ${schema} CASCADE`))
  assert.equal(psql(`SELECT count(*) FROM information_schema.schemata WHERE schema_name = '${schema}'`), '0')

  const cfg = { backend: 'postgres', url: DATABASE_URL, schema, effectsDir: effectsDir(t), options: { dispatcherPollIntervalMs: 10 } }
  const fleet = [0, 1, 2, 3].map((i) => new Worker(t, cfg, { name: `starter-${i}` }))
  const ready = await Promise.allSettled(fleet.map((w) => w.ready(90000)))
  assert.deepEqual(ready.filter((r) => r.status === 'rejected').map((r) => r.reason.message), [], 'every process started')

  const rows = psql(`SELECT version, count(*) FROM ${schema}._duroxide_migrations GROUP BY version ORDER BY version`)
    .split('\n').map((l) => l.split('|').map(Number))
  assert.deepEqual(rows.filter(([, n]) => n !== 1), [], 'no migration recorded twice')
  // The same migrations as a schema one process created alone. (A second
  // concurrent apply would have failed its process's connect above.)
  const reference = await pgSchema(t, 'dxf_migr_ref')
  const want = psql(`SELECT version FROM ${reference.schema}._duroxide_migrations ORDER BY version`).split('\n').map(Number)
  assert.deepEqual(rows.map(([v]) => v), want)

  // The migrated schema works for the whole fleet.
  const provider = await PostgresProvider.connectWithSchema(DATABASE_URL, schema)
  const client = new Client(provider)
  const ids = []
  for (let i = 0; i < 12; i++) {
    ids.push(`m-${i}`)
    await client.startOrchestration(`m-${i}`, 'Hello', i)
  }
  const statuses = await waitAll(client, ids, 60000)
  for (const [id, s] of statuses) assert.equal(s.status, 'Completed', `${id}: ${s.error ?? ''}`)
  const stops = await Promise.all(fleet.map((w) => w.stop(5000)))
  for (const s of stops) assert.ok(s.exit, 'a member did not exit on its own after shutdown')
})
