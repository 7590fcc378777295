'use strict'
// The dashboard's security baseline, over HTTP and in Chromium: read-only
// refuses every write (403) and renders no write control, a cross-origin
// POST is refused (a form and fetches from a page of another site), no CORS
// header is ever sent, the CSP allows no inline script, a token is required
// off loopback (and the CLI's server generates one), a loopback server
// without a token answers only to loopback host names, passwords in store
// URLs are not shown, and options are checked.
const { describe, test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const http = require('node:http')
const { sqliteFile, eventually, Client } = require('./helpers')
const { openStore } = require('./fixtures/store')
const { Runtime, createDashboard } = require('..')
const { serveDashboard } = require('../lib/dashboard/server')
const { register } = require('./fixtures/dashboard-seed')
const { serve, api } = require('./fixtures/dashboard-serve')
const { openBrowser } = require('./fixtures/browser')

const WRITES = ['raise', 'cancel', 'delete', 'prune', 'bulk']

/** A raw request with any Host header (fetch will not send a forged one). */
function rawGet(port, path, host) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, headers: { Host: host } }, (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode))
    })
    req.on('error', reject)
    req.end()
  })
}

describe('dashboard security', () => {
  let store
  let rt
  let client
  let browser
  const servers = []

  before(async () => {
    store = await openStore(sqliteFile)
    rt = new Runtime(store.provider, { dispatcherPollIntervalMs: 10 })
    register(rt)
    await rt.start()
    client = new Client(store.provider)
    for (const id of ['guard-w1', 'guard-w2', 'guard-w3']) await client.startOrchestration(id, 'Waiter', null)
    for (const id of ['guard-w1', 'guard-w2', 'guard-w3']) {
      await eventually(async () => (await client.getStatus(id)).customStatus === 'waiting for go', { what: id })
    }
    browser = await openBrowser()
  })
  after(async () => {
    if (browser) await browser.close()
    for (const s of servers) await s.close()
    if (rt) await rt.shutdown(1000)
    if (store) await store.release()
  })

  async function start(options, serveOptions) {
    const s = await serve(createDashboard(store.provider, options), serveOptions)
    servers.push(s)
    return s
  }

  test('read-only: every write answers 403, the page renders no write control', async () => {
    const web = await start({ readOnly: true })
    for (const route of WRITES) {
      const r = await api(web.base, route, { method: 'POST', body: { instanceId: 'guard-w1', eventName: 'go', action: 'cancel', instanceIds: ['guard-w1'], completedBefore: '1d' } })
      assert.equal(r.status, 403, route)
      assert.equal(r.body.error.code, 'ERR_READ_ONLY', route)
    }
    const page = browser.page
    await page.goto(`${web.base}#/instance?id=guard-w1`)
    await page.waitForFunction(() => document.getElementById('status')?.textContent === 'Running')
    assert.equal(await page.locator('#raise, #cancel, #delete').count(), 0)
    assert.equal(await page.locator('#mode').textContent(), 'read-only')
    // The page's own fetch, with every header a write needs, is refused too.
    const fromPage = await page.evaluate(async () => {
      const res = await fetch('api/cancel', { method: 'POST', headers: { 'Content-Type': 'application/json', 'X-Duroxide-Dashboard': '1' }, body: JSON.stringify({ instanceId: 'guard-w1' }) })
      return { status: res.status, body: await res.json() }
    })
    assert.deepEqual([fromPage.status, fromPage.body.error.code], [403, 'ERR_READ_ONLY'])
    await browser.shot('read-only')
    await page.goto(`${web.base}#/instances`)
    await page.locator('#instances tbody tr[data-id]').first().waitFor()
    assert.equal(await page.locator('#instances input[type=checkbox], #bulk-cancel, #bulk-delete, #prune').count(), 0)
    assert.equal((await client.getStatus('guard-w1')).status, 'Running')
  })

  test('a cross-origin POST is refused: a form and fetches from a page of another site', async () => {
    const web = await start({})
    // The other site: localhost is not 127.0.0.1's site.
    const attacker = await serve((req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/html' })
      res.end(`<!doctype html><title>other site</title>
<form id="f" method="POST" action="${web.base}api/cancel" enctype="text/plain">
<input name='{"instanceId":"guard-w2","x":"' value='"}'></form>
<script>
(async () => {
  const target = ${JSON.stringify(`${web.base}api/cancel`)}
  const body = JSON.stringify({ instanceId: 'guard-w2' })
  await fetch(target, { method: 'POST', mode: 'no-cors', headers: { 'Content-Type': 'text/plain' }, body }).catch(() => {})
  let corsBlocked = false
  await fetch(target, { method: 'POST', headers: { 'Content-Type': 'application/json', 'X-Duroxide-Dashboard': '1' }, body }).catch(() => { corsBlocked = true })
  document.title = corsBlocked ? 'cors-blocked' : 'cors-allowed'
})()
</script>`)
    }, { host: 'localhost' })
    servers.push(attacker)
    const page = browser.page
    await page.goto(attacker.base)
    await page.waitForFunction(() => document.title.startsWith('cors-'))
    assert.equal(await page.title(), 'cors-blocked')
    const [response] = await Promise.all([page.waitForNavigation(), page.evaluate(() => document.getElementById('f').submit())])
    assert.equal(response.status(), 403)
    assert.equal(JSON.parse(await response.text()).error.code, 'ERR_CROSS_ORIGIN')
    await browser.shot('cross-origin-refused')
    assert.equal((await client.getStatus('guard-w2')).status, 'Running')

    // Over HTTP: a foreign Origin, a cross-site fetch, no dashboard header, a form body.
    const body = { instanceId: 'guard-w2' }
    const refused = [
      { Origin: 'http://evil.example' },
      { 'Sec-Fetch-Site': 'cross-site' },
      { 'X-Duroxide-Dashboard': '' },
      { 'Content-Type': 'application/x-www-form-urlencoded' },
    ]
    for (const headers of refused) {
      const r = await api(web.base, 'cancel', { method: 'POST', body, headers })
      assert.equal(r.status, 403, JSON.stringify(headers))
      assert.equal(r.body.error.code, 'ERR_CROSS_ORIGIN', JSON.stringify(headers))
    }
    assert.equal((await client.getStatus('guard-w2')).status, 'Running')
    // The same write from the dashboard's own origin goes through.
    const own = await api(web.base, 'cancel', { method: 'POST', body, headers: { Origin: web.base.slice(0, -1), 'Sec-Fetch-Site': 'same-origin' } })
    assert.equal(own.status, 200, JSON.stringify(own.body))
    await eventually(async () => (await client.getStatus('guard-w2')).status === 'Failed', { what: 'guard-w2 cancelled' })
  })

  test('no CORS headers, a CSP without inline scripts, on pages, assets, API answers and refusals', async () => {
    const web = await start({})
    const origin = { Origin: 'http://evil.example' }
    const answers = [
      await fetch(web.base, { headers: origin }),
      await fetch(`${web.base}app.js`, { headers: origin }),
      await fetch(`${web.base}api/overview`, { headers: origin }),
      await fetch(`${web.base}api/cancel`, { method: 'OPTIONS', headers: { ...origin, 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'x-duroxide-dashboard' } }),
      await fetch(`${web.base}api/cancel`, { method: 'POST', headers: origin, body: '{}' }),
    ]
    for (const res of answers) {
      for (const name of res.headers.keys()) assert.ok(!name.startsWith('access-control-'), `${res.url}: ${name}`)
      const csp = res.headers.get('content-security-policy')
      assert.match(csp, /script-src 'self'/)
      assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/)
      assert.equal(res.headers.get('x-content-type-options'), 'nosniff')
    }
    assert.equal(answers[3].status, 405)
    const html = await (await fetch(web.base)).text()
    assert.doesNotMatch(html, /<script>|<script [^>]*>[^<]+<\/script>|\son[a-z]+=/i, 'the page has no inline script or handler')
  })

  test('a token is required off loopback: generated by the server, 401 without it, a cookie after ?token=', async () => {
    const served = await serveDashboard(store.provider, { host: '0.0.0.0', port: 0 })
    servers.push(served)
    assert.ok(served.token && served.token.length >= 32)
    const port = served.server.address().port
    const base = `http://127.0.0.1:${port}/`
    for (const path of ['', 'app.js', 'api/overview']) {
      const res = await fetch(`${base}${path}`)
      assert.equal(res.status, 401, path)
    }
    assert.equal((await fetch(`${base}api/overview`, { headers: { Authorization: 'Bearer wrong' } })).status, 401)
    assert.equal((await fetch(`${base}api/overview`, { headers: { Authorization: `Bearer ${served.token}` } })).status, 200)
    const page = browser.page
    const denied = await page.goto(base)
    assert.equal(denied.status(), 401)
    await browser.shot('token-required')
    await page.goto(`${base}?token=${encodeURIComponent(served.token)}`)
    await page.locator('.count .n').first().waitFor()
    assert.equal(new URL(page.url()).search, '', 'the token is taken out of the address bar')
    await page.reload()
    await page.locator('.count .n').first().waitFor()
    // An explicit token applies on loopback too.
    const withToken = await serveDashboard(store.provider, { port: 0, token: 'a-token-of-twenty-chars' })
    servers.push(withToken)
    assert.equal((await fetch(withToken.url.replace(/\?.*$/, 'api/config'))).status, 401)
    assert.match(withToken.url, /\?token=a-token-of-twenty-chars$/)
  })

  test('without a token, a loopback server answers only to loopback host names (DNS rebinding)', async () => {
    const served = await serveDashboard(store.provider, { port: 0 })
    servers.push(served)
    assert.equal(served.token, undefined)
    const port = served.server.address().port
    assert.equal(await rawGet(port, '/api/config', `127.0.0.1:${port}`), 200)
    assert.equal(await rawGet(port, '/api/config', `localhost:${port}`), 200)
    assert.equal(await rawGet(port, '/api/config', `attacker.example:${port}`), 403)
  })

  test('passwords in a store label and in error messages are not shown', async () => {
    const web = await start({ label: 'postgres://app:s3cret-pw@db.internal:5432/prod' })
    const config = await api(web.base, 'config')
    assert.equal(config.body.label, 'postgres://app:***@db.internal:5432/prod')
    assert.doesNotMatch(JSON.stringify(config.body), /s3cret/)
  })

  test('options and requests are checked, with the name of what is wrong', async () => {
    assert.throws(() => createDashboard(store.provider, { readonly: true }), { code: 'ERR_INVALID_OPTION', message: /unknown option 'readonly'/ })
    assert.throws(() => createDashboard(store.provider, { basePath: 'dash/' }), { code: 'ERR_INVALID_OPTION', message: /basePath must be/ })
    assert.throws(() => createDashboard(store.provider, { runtime: {} }), { code: 'ERR_INVALID_OPTION', message: /runtime must be a Runtime/ })
    assert.throws(() => createDashboard({}, {}), { code: 'ERR_INVALID_ARGUMENT', message: /createDashboard\(\) expects a SqliteProvider or PostgresProvider/ })
    const web = await start({})
    const bad = [
      ['instances', { status: 'Done' }, /search.status 'Done'/],
      ['instances', { limit: '0' }, /search.limit/],
      ['instances', { cursor: 'p.1.x' }, /search.cursor/],
      ['instances', { sort: 'x' }, /unknown list parameter 'sort'/],
      ['instance', {}, /'id' parameter/],
    ]
    for (const [route, query, message] of bad) {
      const r = await api(web.base, route, { query })
      assert.equal(r.status, 400, `${route} ${JSON.stringify(query)}`)
      assert.equal(r.body.error.code, 'ERR_INVALID_ARGUMENT')
      assert.match(r.body.error.message, message)
    }
    const missing = await api(web.base, 'instance', { query: { id: 'nope' } })
    assert.deepEqual([missing.status, missing.body.error.code], [404, 'ERR_NOT_FOUND'])
    const notJson = await api(web.base, 'raise', { method: 'POST', body: '[1' })
    assert.deepEqual([notJson.status, notJson.body.error.code], [400, 'ERR_INVALID_ARGUMENT'])
    const finished = await api(web.base, 'raise', { method: 'POST', body: { instanceId: 'guard-w2', eventName: 'go' } })
    assert.deepEqual([finished.status, finished.body.error.code], [409, 'ERR_RUNTIME_STATE'])
  })
})
