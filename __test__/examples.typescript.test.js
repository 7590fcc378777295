'use strict'
// examples/typescript compiles under tsc --strict (as `npm run typecheck`
// also checks) and, compiled to a temp dir, runs the order checkout to an
// approval on a SQLite file, printing one line on stdout.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { execFileSync } = require('node:child_process')

const root = path.join(__dirname, '..')
const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc')

test('the TypeScript checkout example compiles and runs to an approval', (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dx-ts-example-'))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  const outDir = path.join(dir, 'dist')
  execFileSync(process.execPath, [tsc, '-p', path.join(root, 'examples', 'typescript', 'tsconfig.json'), '--outDir', outDir], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 120000,
  })
  // The compiled CommonJS requires 'duroxide-node': point it at this checkout.
  fs.mkdirSync(path.join(dir, 'node_modules'))
  fs.symlinkSync(root, path.join(dir, 'node_modules', 'duroxide-node'), 'dir')

  const out = execFileSync(process.execPath, [path.join(outDir, 'checkout.js'), path.join(dir, 'checkout.db')], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 60000,
  })
  const lines = out.trim().split('\n')
  assert.equal(lines.length, 1, `stdout should hold one line, got: ${out}`)
  assert.match(lines[0], /^order-\d+: approved by ann, charged 42 at \d{4}-\d\d-\d\dT[\d:.]+Z$/)
})
