'use strict'
// PostgresProvider.connectWithEntra / connectWithSchemaAndEntra. Azure is not
// reachable here, so these check the contract around it: bad arguments are
// coded errors at the call, and an unreachable server (or no Azure identity)
// is a clear ERR_PROVIDER that arrives promptly instead of a hang or a crash.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const { PostgresProvider } = require('..')
const { closedPort, settlesWithin, coded } = require('./helpers')
const native = require('../lib/native')

const FULL_OPTIONS = { audience: 'https://example.invalid/.default', maxConnections: 2, acquireTimeoutMs: 1000, refreshIntervalMs: 60000 }

test('connectWithEntra to a port where nothing listens is a prompt ERR_PROVIDER', async () => {
  const port = await closedPort()
  const attempt = PostgresProvider.connectWithEntra('127.0.0.1', port, 'postgres', 'nobody', { acquireTimeoutMs: 1000 })
  await assert.rejects(settlesWithin(attempt, 20000, 'connectWithEntra'), coded('ERR_PROVIDER', `127.0.0.1:${port}`, 'Entra'))
})

test('connectWithSchemaAndEntra to an unresolvable host is a prompt ERR_PROVIDER', async () => {
  const attempt = PostgresProvider.connectWithSchemaAndEntra('no-such-host.invalid', 5432, 'postgres', 'nobody', 'tenant_a', FULL_OPTIONS)
  await assert.rejects(settlesWithin(attempt, 20000, 'connectWithSchemaAndEntra'), coded('ERR_PROVIDER', 'no-such-host.invalid:5432', 'Entra'))
})

test('every documented option is accepted (the failure is the connection, not the options)', async () => {
  const port = await closedPort()
  await assert.rejects(
    settlesWithin(PostgresProvider.connectWithEntra('127.0.0.1', port, 'postgres', 'nobody', FULL_OPTIONS), 20000, 'connect'),
    coded('ERR_PROVIDER'),
  )
  await assert.rejects(
    settlesWithin(PostgresProvider.connectWithEntra('127.0.0.1', port, 'postgres', 'nobody', undefined), 20000, 'connect'),
    coded('ERR_PROVIDER'),
  )
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
  await assert.rejects(native.connectPostgresEntra('', 5432, 'db', 'u', null, null), /\[ERR_INVALID_ARGUMENT\] host/)
  await assert.rejects(native.connectPostgresEntra('h', 0, 'db', 'u', null, null), /\[ERR_INVALID_ARGUMENT\] port/)
  await assert.rejects(native.connectPostgresEntra('h', 70000, 'db', 'u', null, null), /\[ERR_INVALID_ARGUMENT\] port/)
  await assert.rejects(native.connectPostgresEntra('h', 5432, 'db', 'u', 'a; drop table x', null), /\[ERR_INVALID_ARGUMENT\] schema/)
})
