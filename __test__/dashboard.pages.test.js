'use strict'
// The dashboard's pages in a real headless Chromium, on a SQLite store that
// a runtime of this process wrote (fixtures/dashboard-seed.js): the list
// filtered on the server and the detail with its timeline and tree, raising
// an event and cancelling from the page (the status changes without a
// reload), and an instance whose id and payloads carry HTML shown as text.
// Each scenario saves a screenshot (fixtures/browser.js).
const { describe, test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { sqliteFile, eventually, Client } = require('./helpers')
const { openStore } = require('./fixtures/store')
const { Runtime, createDashboard } = require('..')
const { register, seed, HTML_ID, HTML_TEXT } = require('./fixtures/dashboard-seed')
const { serve } = require('./fixtures/dashboard-serve')
const { openBrowser } = require('./fixtures/browser')

const pageErrors = (b) => b.errors.filter((e) => !/Failed to load resource/.test(e))

describe('dashboard pages on SQLite, in Chromium', () => {
  let store
  let rt
  let client
  let ids
  let web
  let browser
  let page

  before(async () => {
    store = await openStore(sqliteFile)
    rt = new Runtime(store.provider, { dispatcherPollIntervalMs: 10 })
    register(rt)
    await rt.start()
    client = new Client(store.provider)
    ids = await seed(client, (fn, what) => eventually(fn, { what }))
    web = await serve(createDashboard(store.provider, { runtime: rt, label: store.url }))
    browser = await openBrowser()
    page = browser.page
  })
  after(async () => {
    if (browser) await browser.close()
    if (web) await web.close()
    if (rt) await rt.shutdown(1000)
    if (store) await store.release()
  })

  test('overview: counts by status, the activity chart and the runtime', async () => {
    await page.goto(web.base)
    await page.locator('.count[data-status="Running"] .n').waitFor()
    await page.locator('.chart canvas').first().waitFor()
    const running = Number(await page.locator('.count[data-status="Running"] .n').textContent())
    const failed = Number(await page.locator('.count[data-status="Failed"] .n').textContent())
    assert.equal(running, 3) // the parent and two waiters
    assert.equal(failed, 1)
    await page.locator('.guard').waitFor()
    assert.match(await page.locator('.badge.h-ok, .badge.h-degraded').textContent(), /ok|degraded/)
    await browser.shot('overview')
    assert.deepEqual(pageErrors(browser), [])
  })

  test('the overview lists the fast store paths when the provider reports them', async () => {
    // Until the providers report their fast paths, this provider object is
    // given the method (its documented shape); once they do, theirs is used.
    const own = typeof store.provider.fastPaths === 'function'
    if (!own) {
      store.provider.fastPaths = () => ({ enabled: true, active: ['tail-fetch', 'direct-writes'], unavailable: { 'kept-connections': 'Postgres only' } })
    }
    try {
      const reported = await store.provider.fastPaths()
      await page.goto(web.base)
      await page.locator('.fp-enabled').waitFor()
      assert.equal(await page.locator('.fp-enabled').textContent(), reported.enabled ? 'enabled' : 'disabled')
      const chips = await page.locator('.chips .chip').allTextContents()
      assert.deepEqual(chips, reported.active)
      const rows = await page.locator('.fast-paths tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent)))
      assert.deepEqual(rows, Object.entries(reported.unavailable))
    } finally {
      if (!own) delete store.provider.fastPaths
    }
    if (!own) {
      // Without the method, nothing is shown for it.
      await page.goto(`${web.base}#/instances`)
      await page.goto(web.base)
      await page.locator('.count .n').first().waitFor()
      assert.equal(await page.locator('.fp-enabled').count(), 0)
    }
  })

  test('the Live button pauses the refresh and resumes it', async () => {
    await page.goto(`${web.base}#/instances?name=Counter`)
    await page.locator('#instances tr[data-id="counter-1"]').waitFor()
    let listReads = 0
    const count = (req) => { if (req.url().includes('/api/instances')) listReads++ }
    page.on('request', count)
    try {
      await page.locator('#live').click()
      assert.equal(await page.locator('#live').textContent(), 'Paused')
      await client.startOrchestration('counter-paused', 'Counter', 2)
      await client.waitForOrchestration('counter-paused', 20000)
      listReads = 0
      // Two refresh periods (2 s each) pass without a read or the new row.
      await new Promise((r) => setTimeout(r, 4500))
      assert.equal(listReads, 0)
      assert.equal(await page.locator('#instances tr[data-id="counter-paused"]').count(), 0)
      await page.locator('#live').click()
      assert.equal(await page.locator('#live').textContent(), 'Live')
      await page.locator('#instances tr[data-id="counter-paused"]').waitFor()
    } finally {
      page.off('request', count)
    }
  })

  test('list → filter → detail: the timeline has its bars (retries visible) and the tree links both ways', async () => {
    await page.goto(`${web.base}#/instances`)
    await page.locator('#instances tbody tr[data-id]').first().waitFor()
    assert.equal(await page.locator('#instances tbody tr[data-id]').count(), (await client.listAllInstances()).length)
    const form = page.locator('#filters')
    await form.locator('select[name=status]').selectOption('Running')
    await form.locator('input[name=name]').fill('Parent')
    await form.locator('button[type=submit]').click()
    await page.waitForFunction(() => document.querySelectorAll('#instances tbody tr[data-id]').length === 1)
    assert.equal(await page.locator('#instances tbody tr[data-id]').getAttribute('data-id'), ids.parent)
    // Text in the custom status, found by the store's query.
    await form.locator('input[name=name]').fill('')
    await form.locator('select[name=status]').selectOption('')
    await form.locator('input[name=text]').fill('WAITING FOR GO')
    await form.locator('button[type=submit]').click()
    await page.waitForFunction(() => document.querySelectorAll('#instances tbody tr[data-id]').length === 2)
    await form.locator('input[name=text]').fill('')
    await form.locator('input[name=prefix]').fill('order-parent-1-child')
    await form.locator('button[type=submit]').click()
    await page.waitForFunction(() => document.querySelectorAll('#instances tbody tr[data-id]').length === 3)
    await browser.shot('list-filtered')

    await page.goto(`${web.base}#/instances?name=Parent`)
    await page.locator(`#instances a.id[title="${ids.parent}"]`).first().click()
    await page.locator('#timeline .tl-bar').first().waitFor()
    // 3 sub-orchestrations, the timer, 3 attempts of Flaky with 2 backoff timers, the wait.
    assert.equal(await page.locator('#timeline .tl-bar.k-sub').count(), 3)
    assert.equal(await page.locator('#timeline .tl-bar.k-activity').count(), 3)
    assert.equal(await page.locator('#timeline .tl-bar.k-activity.o-failed').count(), 2)
    assert.equal(await page.locator('#timeline .tl-bar.k-wait.o-pending').count(), 1)
    assert.match(await page.locator('#timeline').textContent(), /Flaky attempt 3/)
    await browser.shot('detail-timeline')

    await page.locator('[data-tab=tree]').click()
    await page.locator('#tree').waitFor()
    for (let i = 0; i < 3; i++) assert.equal(await page.locator(`#tree a[title="${ids.parent}-child-${i}"]`).count(), 1)
    await page.locator(`#tree a[title="${ids.parent}-child-1"]`).click()
    await page.waitForFunction((id) => document.getElementById('instance-id')?.textContent === id, `${ids.parent}-child-1`)
    await page.locator('[data-tab=tree]').click()
    // From the child, the tree goes up to its parent.
    await page.locator(`#tree a[title="${ids.parent}"]`).first().waitFor()
    await browser.shot('detail-tree')

    await page.goto(`${web.base}#/instance?id=${encodeURIComponent(ids.parent)}&tab=history&kind=ActivityFailed`)
    await page.locator('.history-row').first().waitFor()
    assert.equal(await page.locator('.history-row').count(), 2)
    assert.deepEqual(pageErrors(browser), [])
  })

  test('raising an event from the page completes the instance, shown without a reload', async () => {
    await page.goto(`${web.base}#/instance?id=${encodeURIComponent(ids.parent)}`)
    await page.waitForFunction(() => document.getElementById('status')?.textContent === 'Running')
    await page.evaluate(() => { window.__sameDocument = true })
    await page.locator('#raise').click()
    await page.locator('dialog input[name=eventName]').fill('approve')
    await page.locator('dialog textarea[name=data]').fill('{"by": "ops"}')
    await page.locator('dialog [data-role=confirm]').click()
    await page.waitForFunction(() => document.getElementById('status')?.textContent === 'Completed')
    assert.equal(await page.evaluate(() => window.__sameDocument), true)
    const status = await client.getStatus(ids.parent)
    assert.equal(status.status, 'Completed')
    assert.deepEqual(JSON.parse(status.output).approval, { by: 'ops' })
    await page.locator('[data-tab=timeline]').click()
    await page.waitForFunction(() => document.querySelector('#timeline .tl-bar.k-wait.o-ok') !== null)
    await browser.shot('raise-event')
  })

  test('cancel from the detail page and from a list selection', async () => {
    await page.goto(`${web.base}#/instance?id=${encodeURIComponent(ids.waiter)}`)
    await page.waitForFunction(() => document.getElementById('status')?.textContent === 'Running')
    await page.locator('#cancel').click()
    await page.locator('dialog input[name=reason]').fill('not needed')
    await page.locator('dialog [data-role=confirm]').click()
    await page.waitForFunction(() => document.getElementById('status')?.textContent === 'Failed')
    assert.match((await client.getStatus(ids.waiter)).error, /not needed/)
    await browser.shot('cancel')

    await page.goto(`${web.base}#/instances?name=Waiter&status=Running`)
    await page.locator(`#instances tr[data-id="${ids.waiter2}"] input[type=checkbox]`).check()
    await page.locator('#bulk-cancel').click()
    await page.locator('dialog [data-role=confirm]').click()
    await eventually(async () => (await client.getStatus(ids.waiter2)).status === 'Failed', { what: 'waiter-2 cancelled' })
    await page.waitForFunction(() => document.querySelectorAll('#instances tbody tr[data-id]').length === 0)
  })

  test('an instance whose id and payloads carry HTML is shown as text and runs nothing', async () => {
    await page.goto(`${web.base}#/instances?name=Html`)
    const link = page.locator('#instances tbody a.id').first()
    await link.waitFor()
    assert.equal(await link.textContent(), HTML_ID)
    await link.click()
    await page.waitForFunction((id) => document.getElementById('instance-id')?.textContent === id, HTML_ID)
    await page.locator('[data-tab=tree]').click()
    await page.locator('#tree').waitFor()
    const text = await page.locator('main').textContent()
    assert.ok(text.includes(HTML_TEXT.replace(/"/g, '\\"')), 'the input and output show the markup as text')
    assert.ok(text.includes(HTML_TEXT), 'the custom status shows the markup as text')
    assert.equal(await page.locator('main img, main script, main b').count(), 0)
    assert.equal(await page.evaluate(() => window.__xss), undefined)
    await page.locator('[data-tab=history]').click()
    await page.locator('.history-row').first().click()
    await page.locator('.event-panel pre').waitFor()
    assert.equal(await page.locator('main img, main script, main b').count(), 0)
    assert.equal(await page.evaluate(() => window.__xss), undefined)
    await browser.shot('html-as-text')
    assert.deepEqual(pageErrors(browser), [])
  })
})
