// ESM consumers: `import { Runtime } from 'duroxide-node'` works, through the
// file and through the package name (a self-reference resolved by package.json
// "exports"), and yields the very objects CommonJS `require` gives.
import test from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'

import * as byFile from '../index.mjs'
import * as byName from 'duroxide-node'
import defaultExport, { Runtime, SqliteProvider, Client, MAX_KV_KEYS, initTracing, DuroxideError } from 'duroxide-node'

const require = createRequire(import.meta.url)
const cjs = require('../index.js')
const here = path.dirname(fileURLToPath(import.meta.url))

test('the ESM entry exports every CommonJS export, and nothing else besides default', () => {
  for (const ns of [byFile, byName]) {
    const named = Object.keys(ns).filter((k) => k !== 'default').sort()
    assert.deepEqual(named, Object.keys(cjs).sort())
  }
})

test('ESM and CJS exports are the same objects', () => {
  for (const key of Object.keys(cjs)) {
    assert.equal(byFile[key], cjs[key], `index.mjs ${key}`)
    assert.equal(byName[key], cjs[key], `'duroxide-node' ${key}`)
  }
  assert.equal(defaultExport, cjs, 'the default export is module.exports')
  assert.equal(byFile.default, cjs)
  assert.equal(Runtime, cjs.Runtime)
  assert.equal(Client, cjs.Client)
  assert.equal(initTracing, cjs.initTracing)
  assert.equal(MAX_KV_KEYS, 150)
})

test('the package name resolves to the ESM entry for import and to index.js for require', () => {
  assert.equal(fileURLToPath(import.meta.resolve('duroxide-node')), path.join(here, '..', 'index.mjs'))
  assert.equal(require.resolve('duroxide-node'), path.join(here, '..', 'index.js'))
})

test('an error thrown through the ESM entry is the CJS class', async () => {
  await assert.rejects(SqliteProvider.open(''), (err) => {
    assert.ok(err instanceof DuroxideError)
    assert.ok(err instanceof cjs.InvalidArgumentError)
    assert.equal(err.code, 'ERR_INVALID_ARGUMENT')
    return true
  })
})

test('an orchestration registered through the ESM import runs to completion', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dx-esm-'))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  const provider = await SqliteProvider.open(`sqlite:${path.join(dir, 'esm.db')}`)
  const rt = new Runtime(provider, { dispatcherPollIntervalMs: 5 })
  rt.registerActivity('Shout', async (_ctx, s) => s.toUpperCase())
  rt.registerOrchestration('EsmHello', function* (ctx, name) {
    const loud = yield ctx.scheduleActivity('Shout', name)
    return `hello ${loud}`
  })
  await rt.start()
  t.after(() => rt.shutdown(0))
  const client = new Client(provider)
  await client.startOrchestration('esm-1', 'EsmHello', 'esm')
  const status = await client.waitForOrchestration('esm-1', 20000)
  assert.equal(status.status, 'Completed')
  assert.equal(status.output, 'hello ESM')
})
