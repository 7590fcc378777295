'use strict'
// The dashboard's pages in Chromium against Postgres while two other
// processes write: each child (fixtures/dashboard-seed.js) runs a runtime
// on the schema and keeps starting instances. The overview and the list
// follow what they write live, the detail shows the parent's timeline and
// tree, and an event raised from the page is processed by their runtimes.
const { describe, test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { spawn } = require('node:child_process')
const { pgSchema, eventually, Client } = require('./helpers')
const { openStore } = require('./fixtures/store')
const { createDashboard } = require('..')
const { seed } = require('./fixtures/dashboard-seed')
const { serve } = require('./fixtures/dashboard-serve')
const { openBrowser } = require('./fixtures/browser')

const SEED = path.join(__dirname, 'fixtures', 'dashboard-seed.js')

/** A writer process; resolves once its runtime runs and it has begun starting instances. */
function writer(url, schema, prefix) {
  const child = spawn(process.execPath, [SEED, url, schema, prefix, '400'], { stdio: ['ignore', 'pipe', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (d) => (stderr += d))
  const exited = new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal, stderr })))
  const ready = new Promise((resolve, reject) => {
    child.stdout.on('data', (d) => String(d).includes('writing') && resolve())
    exited.then((r) => reject(new Error(`writer ${prefix} exited ${r.code}: ${r.stderr}`)))
  })
  return { child, ready, exited, prefix }
}

describe('dashboard pages on Postgres while two processes write', () => {
  let store
  let client
  let web
  let browser
  let ids
  const writers = []

  before(async () => {
    store = await openStore((t) => pgSchema(t, 'dxt_dash'))
    for (const prefix of ['w1', 'w2']) writers.push(writer(store.url, store.schema, prefix))
    await Promise.all(writers.map((w) => w.ready))
    client = new Client(store.provider)
    // The writers' runtimes run these.
    ids = await seed(client, (fn, what) => eventually(fn, { what, timeoutMs: 30000 }))
    web = await serve(createDashboard(store.provider, { label: `${store.url} (schema ${store.schema})` }))
    browser = await openBrowser()
  })
  after(async () => {
    if (browser) await browser.close()
    if (web) await web.close()
    for (const w of writers) w.child.kill('SIGTERM')
    await Promise.all(writers.map((w) => w.exited))
    if (store) await store.release()
  })

  test('the overview and the list follow the writers live', async () => {
    const page = browser.page
    await page.goto(web.base)
    await page.locator('.count[data-status="Completed"] .n').waitFor()
    const completed = () => page.locator('.count[data-status="Completed"] .n').textContent().then((t) => Number(t.replace(/,/g, '')))
    const first = await completed()
    // No reload: the live refresh shows the writers' newer instances.
    await page.waitForFunction((n) => Number(document.querySelector('.count[data-status="Completed"] .n').textContent.replace(/,/g, '')) > n, first, { timeout: 20000 })
    await browser.shot('postgres-overview')

    await page.goto(`${web.base}#/instances?prefix=w2-`)
    await page.locator('#instances tbody tr[data-id]').first().waitFor()
    const rows = await page.locator('#instances tbody tr[data-id]').evaluateAll((trs) => trs.map((tr) => tr.dataset.id))
    assert.ok(rows.length > 0 && rows.every((id) => id.startsWith('w2-')), rows.join(','))
    const top = rows[0]
    await page.waitForFunction((id) => document.querySelector('#instances tbody tr[data-id]')?.dataset.id !== id, top, { timeout: 20000 })
    await browser.shot('postgres-list')
  })

  test('the parent\'s detail shows its timeline and tree, and an event raised from the page completes it', async () => {
    const page = browser.page
    await page.goto(`${web.base}#/instance?id=${encodeURIComponent(ids.parent)}`)
    await page.locator('#timeline .tl-bar').first().waitFor()
    assert.equal(await page.locator('#timeline .tl-bar.k-sub').count(), 3)
    assert.ok(await page.locator('#timeline .tl-bar.k-activity.o-failed').count() >= 1)
    await page.locator('#raise').click()
    await page.locator('dialog input[name=eventName]').fill('approve')
    await page.locator('dialog [data-role=confirm]').click()
    await page.waitForFunction(() => document.getElementById('status')?.textContent === 'Completed', null, { timeout: 20000 })
    await page.locator('[data-tab=tree]').click()
    await page.locator(`#tree a[title="${ids.parent}-child-0"]`).waitFor()
    await browser.shot('postgres-detail')
    assert.deepEqual(browser.errors.filter((e) => !/Failed to load resource/.test(e)), [])
  })
})
