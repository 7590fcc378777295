'use strict'
// The failure text format of lib/failure.js (read by src/bridge/failure.rs
// too): what an application never sees, but whose edge cases decide whether
// it sees the right message: details that are not JSON, a message that
// contains the separator, a huge stack, a thrown non-Error.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const { encodeFailure, decodeFailure } = require('../lib/failure')
const { NonRetryableError } = require('..')

test('a thrown Error round-trips its message, name, details and NonRetryableError-ness', () => {
  const text = encodeFailure("activity 'A'", new NonRetryableError('no more', { details: { code: 7 } }))
  const { message, info } = decodeFailure(text)
  assert.equal(message, 'no more')
  assert.equal(info.name, 'NonRetryableError')
  assert.deepEqual(info.details, { code: 7 })
  assert.equal(info.nonRetryable, true)
  assert.match(info.stack, /NonRetryableError: no more/)
})

test('details that are not JSON are dropped, not fatal', () => {
  const cyclic = {}
  cyclic.self = cyclic
  for (const details of [cyclic, 10n, () => 1]) {
    const err = new Error('still reported')
    err.details = details
    const { message, info } = decodeFailure(encodeFailure('x', err))
    assert.equal(message, 'still reported')
    assert.equal(info.details, undefined)
  }
})

test('details longer than 32 KiB of JSON are dropped; up to it they are kept', () => {
  const big = new Error('big')
  big.details = { blob: 'x'.repeat(40 * 1024) }
  assert.equal(decodeFailure(encodeFailure('x', big)).info.details, undefined)
  const fits = new Error('fits')
  fits.details = { blob: 'x'.repeat(30 * 1024) }
  assert.equal(decodeFailure(encodeFailure('x', fits)).info.details.blob.length, 30 * 1024)
})

test('a message containing the separator keeps it; a plain text has no structure', () => {
  const { message, info } = decodeFailure(encodeFailure('x', new Error('a\u001eb\u001e{"$duroxide":1}')))
  assert.equal(message, 'a\u001eb\u001e{"$duroxide":1}')
  assert.equal(info.name, 'Error')
  assert.deepEqual(decodeFailure('plain'), { message: 'plain', info: null })
  assert.deepEqual(decodeFailure('a\u001e{"other":1}'), { message: 'a\u001e{"other":1}', info: null })
})

test('a huge stack is cut; a thrown non-Error keeps the old message and carries nothing', () => {
  const err = new Error('deep')
  err.stack = 'x'.repeat(100_000)
  assert.ok(decodeFailure(encodeFailure('x', err)).info.stack.length <= 4001)
  assert.equal(encodeFailure("activity 'A'", 'just a string'), 'just a string')
  assert.equal(encodeFailure("activity 'A'", { code: 1 }), "activity 'A' threw a non-Error value: a plain object {\"code\":1}")
})
