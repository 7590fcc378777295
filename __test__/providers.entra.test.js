'use strict'
// PostgresProvider.connectWithEntra / connectWithSchemaAndEntra. Azure is not
// reachable here, so a local HTTP server plays the App Service managed
// identity endpoint (IDENTITY_ENDPOINT / IDENTITY_HEADER, which azure_identity
// reads through duroxide-pg's credential chain) and hands out a token. With a
// token in hand, each connect goes on to the network step its name claims
// (the port, DNS), and the tests check that the token endpoint was asked
// first, so a failure at the token fetch cannot pass for them. Bad arguments
// are coded errors at the call.
const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const http = require('node:http')
const net = require('node:net')
const { PostgresProvider } = require('..')
const { closedPort, settlesWithin, coded } = require('./helpers')
const native = require('../lib/native')

const FULL_OPTIONS = { audience: 'https://example.invalid/.default', maxConnections: 2, acquireTimeoutMs: 1000, refreshIntervalMs: 60000 }
const IDENTITY_HEADER = 'dxt-identity-secret'

/** Token requests the fake identity endpoint has answered, oldest first. */
const tokenRequests = []
let identity

before(async () => {
  identity = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://localhost')
    tokenRequests.push({ resource: url.searchParams.get('resource'), secret: req.headers['x-identity-header'] })
    res.setHeader('content-type', 'application/json')
    const expiresOn = String(Math.floor(Date.now() / 1000) + 3600)
    res.end(JSON.stringify({ access_token: 'dxt-token', expires_on: expiresOn, token_type: 'Bearer', resource: url.searchParams.get('resource') }))
  })
  await new Promise((resolve) => identity.listen(0, '127.0.0.1', resolve))
  process.env.IDENTITY_ENDPOINT = `http://127.0.0.1:${identity.address().port}/token`
  process.env.IDENTITY_HEADER = IDENTITY_HEADER
})

after(async () => {
  delete process.env.IDENTITY_ENDPOINT
  delete process.env.IDENTITY_HEADER
  await new Promise((resolve) => identity.close(resolve))
})

/** Runs `connect` and returns its rejection plus the token requests it made. */
async function failedConnect(connect, what) {
  const before = tokenRequests.length
  let error
  await assert.rejects(settlesWithin(connect(), 20000, what), (err) => {
    error = err
    return true
  })
  return { error, tokens: tokenRequests.slice(before) }
}

/** The connect got its token (exactly one request, with the identity secret) and failed after it. */
function failedAfterToken({ error, tokens }, resource = 'https://ossrdbms-aad.database.windows.net') {
  assert.deepEqual(tokens, [{ resource, secret: IDENTITY_HEADER }], 'one token request, before the connection')
  assert.doesNotMatch(error.message, /credential|token/i, 'the failure is not the token fetch')
}

test('connectWithEntra to a port where nothing listens fetches a token, then fails on the connection with ERR_PROVIDER', async () => {
  const port = await closedPort()
  const r = await failedConnect(() => PostgresProvider.connectWithEntra('127.0.0.1', port, 'postgres', 'nobody', { acquireTimeoutMs: 1000 }), 'connectWithEntra')
  coded('ERR_PROVIDER', `127.0.0.1:${port}`, 'Entra')(r.error)
  failedAfterToken(r)
})

test('connectWithEntra reaches the port and asks it for TLS before it sends the token', async (t) => {
  // A listener that records what arrives and hangs up: the client's first
  // message is the 8-byte SSLRequest (length 8, code 80877103).
  const arrivals = []
  const listener = net.createServer((socket) => {
    socket.once('data', (chunk) => {
      arrivals.push(chunk.length >= 8 ? [chunk.readInt32BE(0), chunk.readInt32BE(4)] : [...chunk])
      socket.destroy()
    })
  })
  await new Promise((resolve) => listener.listen(0, '127.0.0.1', resolve))
  t.after(() => new Promise((resolve) => listener.close(resolve)))
  const { port } = listener.address()
  const r = await failedConnect(() => PostgresProvider.connectWithEntra('127.0.0.1', port, 'postgres', 'nobody', { acquireTimeoutMs: 1000 }), 'connectWithEntra')
  coded('ERR_PROVIDER', `127.0.0.1:${port}`, 'Entra')(r.error)
  failedAfterToken(r)
  assert.ok(arrivals.length >= 1, 'the connect reached the listening port')
  assert.deepEqual(arrivals[0], [8, 80877103], 'its first message is an SSLRequest')
})

test('connectWithSchemaAndEntra to an unresolvable host fetches a token, then fails on the DNS lookup with ERR_PROVIDER', async () => {
  const r = await failedConnect(() => PostgresProvider.connectWithSchemaAndEntra('no-such-host.invalid', 5432, 'postgres', 'nobody', 'tenant_a', FULL_OPTIONS), 'connectWithSchemaAndEntra')
  coded('ERR_PROVIDER', 'no-such-host.invalid:5432', 'Entra')(r.error)
  failedAfterToken(r, 'https://example.invalid')
  assert.match(r.error.message, /lookup|resolve|Name or service not known|nodename/i, 'the failure is name resolution')
})

test('every documented option is accepted, and the audience is the token request\'s resource', async () => {
  const port = await closedPort()
  const full = await failedConnect(() => PostgresProvider.connectWithEntra('127.0.0.1', port, 'postgres', 'nobody', FULL_OPTIONS), 'connect')
  coded('ERR_PROVIDER', `127.0.0.1:${port}`)(full.error)
  failedAfterToken(full, 'https://example.invalid')
  // No options: the default acquire timeout is long, so fail fast on DNS instead.
  const none = await failedConnect(() => PostgresProvider.connectWithEntra('no-such-host.invalid', 5432, 'postgres', 'nobody', undefined), 'connect')
  coded('ERR_PROVIDER', 'no-such-host.invalid:5432')(none.error)
  failedAfterToken(none)
})

test('bad ports, hosts, names and schemas are ERR_INVALID_ARGUMENT at the call', async () => {
  for (const port of [0, -1, 65536, 70000, 1.5, '5432', null, NaN]) {
    await assert.rejects(PostgresProvider.connectWithEntra('127.0.0.1', port, 'postgres', 'u'), coded('ERR_INVALID_ARGUMENT', 'port'))
  }
  for (const host of ['', null, 42]) {
    await assert.rejects(PostgresProvider.connectWithEntra(host, 5432, 'postgres', 'u'), coded('ERR_INVALID_ARGUMENT', 'host'))
  }
  await assert.rejects(PostgresProvider.connectWithEntra('h', 5432, '', 'u'), coded('ERR_INVALID_ARGUMENT', 'database'))
  await assert.rejects(PostgresProvider.connectWithEntra('h', 5432, 'db', ''), coded('ERR_INVALID_ARGUMENT', 'user'))
  await assert.rejects(
    PostgresProvider.connectWithSchemaAndEntra('h', 5432, 'db', 'u', 'a; drop table x'),
    coded('ERR_INVALID_ARGUMENT', 'a; drop table x'),
  )
  await assert.rejects(PostgresProvider.connectWithSchemaAndEntra('h', 5432, 'db', 'u', ''), coded('ERR_INVALID_ARGUMENT', 'schema'))
})

test('bad options are ERR_INVALID_OPTION naming the option', async () => {
  const bad = [
    [{ timeout: 1 }, 'timeout'],
    [{ maxConnections: 0 }, 'maxConnections'],
    [{ maxConnections: 2.5 }, 'maxConnections'],
    [{ acquireTimeoutMs: -1 }, 'acquireTimeoutMs'],
    [{ refreshIntervalMs: '1s' }, 'refreshIntervalMs'],
    [{ audience: '' }, 'audience'],
    ['fast', 'options'],
  ]
  for (const [options, name] of bad) {
    await assert.rejects(PostgresProvider.connectWithEntra('h', 5432, 'db', 'u', options), coded('ERR_INVALID_OPTION', name))
  }
})

test('the native layer checks host and port itself', async () => {
  await assert.rejects(native.connectPostgresEntra('', 5432, 'db', 'u', null, null), { code: 'ERR_INVALID_ARGUMENT', message: /^host/ })
  await assert.rejects(native.connectPostgresEntra('h', 0, 'db', 'u', null, null), { code: 'ERR_INVALID_ARGUMENT', message: /^port/ })
  await assert.rejects(native.connectPostgresEntra('h', 70000, 'db', 'u', null, null), { code: 'ERR_INVALID_ARGUMENT', message: /^port/ })
  await assert.rejects(native.connectPostgresEntra('h', 5432, 'db', 'u', 'a; drop table x', null), { code: 'ERR_INVALID_ARGUMENT', message: /^schema/ })
})
