'use strict'
// The README's quickstart runs and prints a completed result; nothing else on stdout.
const test = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { execFileSync } = require('node:child_process')

test('quickstart prints a completed greeting and only that on stdout', () => {
  const out = execFileSync(process.execPath, [path.join(__dirname, '..', 'examples', 'quickstart.js')], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 60000,
  })
  const lines = out.trim().split('\n')
  assert.equal(lines.length, 1, `stdout should hold one line, got: ${out}`)
  assert.match(lines[0], /^hello-\d+: Completed -> "Hello, duroxide!"$/)
})
