'use strict'
// createDashboard mounted under a basePath in an application's server, the
// way Express mounts a handler (req.url stripped of the mount path, the
// whole one in req.originalUrl, next() for what is not its own, a body
// already parsed by express.json()), and as http.createServer's handler:
// the page works in Chromium at '<basePath>/', '<basePath>' redirects
// there, other paths go on to the application.
const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const http = require('node:http')
const { sqliteFile, eventually, Client } = require('./helpers')
const { openStore } = require('./fixtures/store')
const { Runtime, createDashboard } = require('..')
const { openBrowser } = require('./fixtures/browser')

const MOUNT = '/ops/duroxide'

let store
let rt
let client
let server
let base
let browser

/** An Express-like app: a JSON body parser, the dashboard at MOUNT, then the app's own routes. */
function app(dashboard) {
  return (req, res) => {
    const next = () => {
      res.writeHead(200, { 'Content-Type': 'text/plain' })
      res.end('the application')
    }
    const chunks = []
    req.on('data', (c) => chunks.push(c))
    req.on('end', () => {
      if (String(req.headers['content-type']).startsWith('application/json') && chunks.length > 0) {
        req.body = JSON.parse(Buffer.concat(chunks).toString('utf8'))
      }
      if (req.url === MOUNT || req.url.startsWith(`${MOUNT}/`) || req.url.startsWith(`${MOUNT}?`)) {
        req.originalUrl = req.url
        req.url = req.url.slice(MOUNT.length) || '/'
        return dashboard(req, res, next)
      }
      next()
    })
  }
}

before(async () => {
  store = await openStore(sqliteFile)
  rt = new Runtime(store.provider, { dispatcherPollIntervalMs: 10 })
  rt.registerOrchestration('Wait', function* (ctx) {
    return yield ctx.waitForEvent('go')
  })
  await rt.start()
  client = new Client(store.provider)
  await client.startOrchestration('mounted-1', 'Wait', null)
  await eventually(async () => (await client.getStatus('mounted-1')).status === 'Running', { what: 'mounted-1 running' })
  server = http.createServer(app(createDashboard(store.provider, { basePath: MOUNT, runtime: rt })))
  await new Promise((r) => server.listen(0, '127.0.0.1', r))
  base = `http://127.0.0.1:${server.address().port}`
  browser = await openBrowser()
})
after(async () => {
  if (browser) await browser.close()
  if (server) {
    server.closeAllConnections()
    await new Promise((r) => server.close(r))
  }
  if (rt) await rt.shutdown(1000)
  if (store) await store.release()
})

test('mounted under a basePath: the page works there, the mount path redirects, the rest is the application\'s', async () => {
  const bare = await fetch(`${base}${MOUNT}?x=1`, { redirect: 'manual' })
  assert.equal(bare.status, 308)
  assert.equal(bare.headers.get('location'), `${MOUNT}/?x=1`)
  assert.equal(await (await fetch(`${base}/elsewhere`)).text(), 'the application')
  assert.equal(await (await fetch(`${base}${MOUNT}x`)).text(), 'the application')
  const { page } = browser
  await page.goto(`${base}${MOUNT}/#/instances`)
  await page.locator('#instances tr[data-id="mounted-1"]').waitFor()
  await page.goto(`${base}${MOUNT}/#/instance?id=mounted-1`)
  await page.waitForFunction(() => document.getElementById('status')?.textContent === 'Running')
  // A write whose JSON body the application's parser already read.
  await page.locator('#raise').click()
  await page.locator('dialog input[name=eventName]').fill('go')
  await page.locator('dialog textarea[name=data]').fill('"mounted"')
  await page.locator('dialog [data-role=confirm]').click()
  await page.waitForFunction(() => document.getElementById('status')?.textContent === 'Completed')
  assert.equal((await client.getStatus('mounted-1')).output, '"mounted"')
})

test('a handler of its own (http.createServer) serves at / and answers 404 outside its basePath', async () => {
  const own = http.createServer(createDashboard(store.provider, { basePath: MOUNT }))
  await new Promise((r) => own.listen(0, '127.0.0.1', r))
  try {
    const at = `http://127.0.0.1:${own.address().port}`
    assert.equal((await fetch(`${at}/`)).status, 404)
    assert.equal((await fetch(`${at}${MOUNT}/`)).status, 200)
    assert.equal((await fetch(`${at}${MOUNT}/api/config`)).status, 200)
    assert.equal((await fetch(`${at}${MOUNT}/nope.js`)).status, 404)
  } finally {
    own.closeAllConnections()
    await new Promise((r) => own.close(r))
  }
})
