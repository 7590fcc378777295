// `duroxide-node/testing` from ESM and CommonJS: the same named exports, and
// the very same objects, through the file and through the package name.
import test from 'node:test'
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'

import * as byFile from '../testing.mjs'
import * as byName from 'duroxide-node/testing'
import testingDefault from 'duroxide-node/testing'

const require = createRequire(import.meta.url)
const cjs = require('../testing.js')

test('the ESM testing entry exports every CommonJS export, and nothing else besides default', () => {
  assert.ok(Object.keys(cjs).length > 0, 'the testing entry exports something')
  for (const ns of [byFile, byName]) {
    const named = Object.keys(ns).filter((k) => k !== 'default').sort()
    assert.deepEqual(named, Object.keys(cjs).sort())
  }
  assert.equal(require('duroxide-node/testing'), cjs)
  assert.equal(testingDefault, cjs)
})

test('ESM and CJS testing exports are the same objects', () => {
  for (const key of Object.keys(cjs)) {
    assert.equal(byFile[key], cjs[key], `testing.mjs ${key}`)
    assert.equal(byName[key], cjs[key], `'duroxide-node/testing' ${key}`)
  }
  for (const name of ['replayHistory', 'replayInstances', 'importHistory']) {
    assert.equal(typeof cjs[name], 'function', name)
  }
})
