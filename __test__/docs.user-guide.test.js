'use strict'
// The ```ts blocks of docs/user-guide.md, joined in order, are one module
// that compiles under tsc --strict against the package's own types, so the
// guide cannot drift from the API.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { spawnSync } = require('node:child_process')

const root = path.join(__dirname, '..')
const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc')

/** The ```ts blocks of a markdown text, in order. */
function tsBlocks(markdown) {
  return [...markdown.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1])
}

test('the user guide has TypeScript blocks for every pattern it names', () => {
  const guide = fs.readFileSync(path.join(root, 'docs', 'user-guide.md'), 'utf8')
  for (const heading of ['Fan-out / fan-in', 'Human in the loop', 'Sessions', 'Eternal orchestrations', 'Versioning a running orchestration', 'Fleets']) {
    assert.match(guide, new RegExp(`^## ${heading}`, 'm'), heading)
  }
  assert.ok(tsBlocks(guide).length >= 7)
})

test('the user guide TypeScript compiles under tsc --strict', (t) => {
  const guide = fs.readFileSync(path.join(root, 'docs', 'user-guide.md'), 'utf8')
  // Inside the package, so 'duroxide-node' resolves to it through "exports".
  const dir = fs.mkdtempSync(path.join(root, '__test__', '.user-guide-'))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  fs.writeFileSync(path.join(dir, 'guide.ts'), tsBlocks(guide).join('\n'))
  fs.writeFileSync(
    path.join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        noEmit: true,
        strict: true,
        exactOptionalPropertyTypes: true,
        noUncheckedIndexedAccess: true,
        target: 'ES2022',
        lib: ['ES2022'],
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        types: ['node'],
        typeRoots: [path.join(root, 'node_modules', '@types')],
      },
      include: ['guide.ts'],
    }),
  )
  const r = spawnSync(process.execPath, [tsc, '-p', path.join(dir, 'tsconfig.json')], { encoding: 'utf8', timeout: 120000 })
  assert.equal(r.status, 0, `tsc failed:\n${r.stdout}${r.stderr}`)
})
