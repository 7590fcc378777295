'use strict'
// The dashboard's list and overview queries (src/client/search.rs,
// src/client/overview.rs) through its API, on a real SQLite file and a real
// Postgres schema: each filter applied in the store, keyset pages that visit
// every instance once in creation order (also when creation times tie),
// counts by status and per time bucket, and that none of it writes.
const { describe, test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { backends, eventually, psql, rowCounts, Client } = require('./helpers')
const { openStore } = require('./fixtures/store')
const { Runtime, createDashboard } = require('..')
const { serve, api } = require('./fixtures/dashboard-serve')

const BATCH = 23

function register(rt) {
  rt.registerOrchestration('Note', function* (ctx, note) {
    return { note }
  })
  rt.registerOrchestrationVersioned('Note', '2.0.0', function* (ctx, note) {
    return { note, v: 2 }
  })
  rt.registerOrchestration('Decline', function* () {
    throw new Error('Card Declined by issuer')
  })
  rt.registerOrchestration('Hold', function* (ctx) {
    ctx.setCustomStatus('Held for REVIEW')
    return yield ctx.waitForEvent('release')
  })
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
/** Waits until the clock is in a later whole second than `ms` (SQLite keeps creation times in seconds). */
const nextSecond = (ms) => sleep(Math.ceil((ms + 1) / 1000) * 1000 - Date.now() + 50)

for (const [kind, open] of backends) {
  describe(`dashboard list and overview on ${kind}`, () => {
    let store
    let client
    let web
    const times = {}
    let untouched

    /** Every page of a search, following nextCursor. */
    async function walk(query) {
      const seen = []
      let cursor
      let pages = 0
      do {
        const r = await api(web.base, 'instances', { query: { ...query, ...(cursor ? { cursor } : {}) } })
        assert.equal(r.status, 200, JSON.stringify(r.body))
        assert.ok(r.body.instances.length <= Number(query.limit ?? 50))
        seen.push(...r.body.instances)
        cursor = r.body.nextCursor
        pages++
        assert.ok(pages < 100, 'paging ends')
      } while (cursor)
      return seen
    }
    const list = async (query) => (await walk(query)).map((i) => i.instanceId).sort()

    before(async () => {
      store = await openStore(open)
      const rt = new Runtime(store.provider, { dispatcherPollIntervalMs: 10 })
      register(rt)
      await rt.start()
      client = new Client(store.provider)
      times.start = Date.now()
      // Version 1.0.0 by name: a plain start takes the highest registered version.
      for (let i = 0; i < BATCH; i++) await client.startOrchestrationVersioned(`page-${i}`, 'Note', `note ${i}`, '1.0.0')
      await client.startOrchestration('declined-1', 'Decline', null)
      await client.startOrchestration('hold-1', 'Hold', null)
      await client.startOrchestrationVersioned('note-v2', 'Note', 'Blue Whale', '2.0.0')
      for (let i = 0; i < BATCH; i++) await client.waitForOrchestration(`page-${i}`, 20000)
      for (const id of ['declined-1', 'note-v2']) await client.waitForOrchestration(id, 20000)
      await eventually(async () => (await client.getStatus('hold-1')).customStatus === 'Held for REVIEW', { what: 'hold-1 waiting' })
      times.firstDone = Date.now()
      await nextSecond(times.firstDone)
      times.second = Date.now()
      await client.startOrchestrationVersioned('late-1', 'Note', 'late', '1.0.0')
      await client.waitForOrchestration('late-1', 20000)
      await rt.shutdown(1000)
      web = await serve(createDashboard(store.provider, { readOnly: true }))
      untouched = rowCounts(store)
    })
    after(async () => {
      if (web) await web.close()
      if (store) await store.release()
    })

    test('keyset pages visit every instance once, newest or oldest first', async () => {
      const all = await client.listAllInstances()
      for (const order of ['newest', 'oldest']) {
        const seen = await walk({ limit: 4, order })
        const ids = seen.map((i) => i.instanceId)
        assert.equal(new Set(ids).size, ids.length, 'no instance twice')
        assert.deepEqual([...ids].sort(), [...all].sort())
        // SQLite pages in the order instance rows were written (their first
        // turn's commit), Postgres by the creation time it shows; SQLite's
        // shown time is the first event's, taken before that commit, so two
        // instances whose first turns ran together may differ slightly.
        const slack = kind === 'sqlite' ? 1000 : 0
        for (let i = 1; i < seen.length; i++) {
          const [a, b] = [seen[i - 1].createdAt, seen[i].createdAt]
          const ok = order === 'newest' ? a + slack >= b : a <= b + slack
          assert.ok(ok, `${order}: ${seen[i - 1].instanceId} (${a}) then ${seen[i].instanceId} (${b})`)
        }
        assert.equal(ids[order === 'newest' ? 0 : ids.length - 1], 'late-1')
      }
      const one = seen0(await walk({ prefix: 'declined-1' }))
      assert.equal(one.status, 'Failed')
      assert.equal(one.orchestrationName, 'Decline')
      assert.equal(one.orchestrationVersion, '1.0.0')
      assert.ok(one.completedAt >= one.createdAt)
      const hold = seen0(await walk({ prefix: 'hold-1' }))
      assert.equal(hold.completedAt, undefined)
      assert.equal(hold.customStatus, 'Held for REVIEW')
    })

    test('each filter is applied in the store', async () => {
      const batch = Array.from({ length: BATCH }, (_, i) => `page-${i}`)
      assert.deepEqual(await list({ status: 'Running' }), ['hold-1'])
      assert.deepEqual(await list({ status: 'Failed' }), ['declined-1'])
      assert.deepEqual(await list({ name: 'Note', version: '2.0.0' }), ['note-v2'])
      assert.deepEqual(await list({ name: 'Note', version: '1.0.0', limit: 5 }), [...batch, 'late-1'].sort())
      assert.deepEqual(await list({ prefix: 'page-1' }), batch.filter((id) => id.startsWith('page-1')).sort())
      // Text, ignoring case: in the custom status, the output, the error.
      assert.deepEqual(await list({ text: 'held for review' }), ['hold-1'])
      assert.deepEqual(await list({ text: 'BLUE whale' }), ['note-v2'])
      assert.deepEqual(await list({ text: 'card declined' }), ['declined-1'])
      assert.deepEqual(await list({ text: 'note 1', prefix: 'page-1', status: 'Completed' }), batch.filter((id) => id.startsWith('page-1')).sort())
      // Creation and completion ranges: late-1 alone was created and completed after `second`.
      assert.deepEqual(await list({ createdFrom: times.second }), ['late-1'])
      assert.deepEqual(await list({ completedFrom: times.second }), ['late-1'])
      const early = await list({ createdFrom: times.start - 1000, createdTo: times.firstDone })
      assert.ok(!early.includes('late-1'))
      assert.deepEqual(early, [...batch, 'declined-1', 'hold-1', 'note-v2'].sort())
      assert.deepEqual(await list({ completedTo: times.firstDone, status: 'Completed' }), [...batch, 'note-v2'].sort())
      assert.deepEqual(await list({ createdTo: times.start - 5000 }), [])
    })

    // SQLite pages by rowid, which never ties.
    if (kind === 'postgres') test('instances created at the same moment are paged by id', async () => {
      // Every batch instance at one creation time: only the id orders them.
      psql(`UPDATE ${store.schema}.instances SET created_at = '2026-01-01T00:00:00Z' WHERE instance_id LIKE 'page-%'`)
      try {
        const seen = await walk({ limit: 3, prefix: 'page-' })
        assert.deepEqual(seen.map((i) => i.instanceId), Array.from({ length: BATCH }, (_, i) => `page-${i}`).sort().reverse())
      } finally {
        psql(`UPDATE ${store.schema}.instances SET created_at = now() WHERE instance_id LIKE 'page-%'`)
      }
    })

    test('the overview counts by status and per time bucket', async () => {
      const { body: o } = await api(web.base, 'overview')
      assert.deepEqual(o.byStatus, { running: 1, completed: BATCH + 2, failed: 1, continuedAsNew: 0 })
      assert.equal(o.buckets.length, 30)
      assert.equal(o.bucketMs, 30000)
      const sum = (k) => o.buckets.reduce((n, b) => n + b[k], 0)
      assert.equal(sum('started'), BATCH + 4)
      assert.equal(sum('completed'), BATCH + 2)
      assert.equal(sum('failed'), 1)
      assert.equal(o.totals.instances, BATCH + 4)
      assert.ok(o.buckets[29].startMs <= Date.now() && Date.now() < o.buckets[29].startMs + 30000)
      assert.equal(o.fastPaths === undefined, typeof store.provider.fastPaths !== 'function')
    })

    test('none of the reads wrote to the store', async () => {
      await api(web.base, 'instance', { query: { id: 'page-1' } })
      await api(web.base, 'history', { query: { id: 'page-1' } })
      assert.deepEqual(rowCounts(store), untouched)
    })
  })
}

function seen0(list) {
  assert.equal(list.length, 1)
  return list[0]
}
