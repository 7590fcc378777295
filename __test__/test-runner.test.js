'use strict'
// The test command (scripts/test.js): it must find every test file itself,
// since Node 21+ cannot take the __test__ directory (MODULE_NOT_FOUND), and a
// hung test must fail the run instead of stalling it.
const test = require('node:test')
const assert = require('node:assert/strict')
const { spawnSync } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { QUICK, listTests } = require('../scripts/test')

const root = path.join(__dirname, '..')
const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'))

test('npm test runs scripts/test.js, not `node --test` on a directory', () => {
  assert.match(pkg.scripts.test, /node scripts\/test\.js$/)
})

test('the runner lists every test file under __test__, nested ones and .mjs included, and no helpers', () => {
  const files = listTests(__dirname)
  for (const f of ['__test__/test-runner.test.js', '__test__/esm.test.mjs', '__test__/faults/poison.test.js']) {
    assert.ok(files.includes(f.split('/').join(path.sep)), `${f} is listed`)
  }
  assert.ok(files.every((f) => /\.test\.[cm]?js$/.test(f)), 'only *.test.js / *.test.mjs files')
  for (const q of QUICK) assert.ok(files.includes(path.join('__test__', q)), `quick file ${q} exists`)
})

/** Writes a test file named `name` (its lines) in a temporary directory, removed after `t`. */
function fixture(t, name, lines) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dx-runner-'))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  const file = path.join(dir, name)
  fs.writeFileSync(file, [...lines, ''].join('\n'))
  return file
}

/** Runs scripts/test.js on `file`, as `npm test` would. */
function runner(file, extraEnv = {}) {
  // NODE_TEST_CONTEXT would make the child think it runs inside this test and skip its files.
  const { NODE_TEST_CONTEXT: _, ...env } = process.env
  return spawnSync(process.execPath, [path.join(root, 'scripts', 'test.js'), file], {
    env: { ...env, ...extraEnv },
    encoding: 'utf8',
    timeout: 120000,
  })
}

test('a hung test fails the run after the test timeout instead of stalling it', (t) => {
  // The pending timer keeps the event loop alive, as a runtime left running would.
  const hung = fixture(t, 'hung.test.js', ["require('node:test')('hangs', () => new Promise((resolve) => setTimeout(resolve, 600000)))"])
  const run = runner(hung, { DUROXIDE_TEST_TIMEOUT_MS: '1000' })
  assert.equal(run.error, undefined, 'the run ended on its own')
  assert.equal(run.status, 1, run.stdout + run.stderr)
  assert.match(run.stdout, /cancelled 1|timed out|test timed out/i)
})

test('the tests that failed are named again at the end of the run, with their files', (t) => {
  const file = fixture(t, 'mixed.test.js', [
    "const test = require('node:test')",
    "test('passes', () => {})",
    "test.describe('a suite', () => { test('fails inside', () => { throw new Error('boom') }) })",
    // Node 20's --test-force-exit can end a test file before it has sent
    // its last few results to the runner, which then never reports them
    // (3 of 400 in one run): passing tests go last, so what may be lost is
    // not what this test looks for.
    "for (let i = 0; i < 10; i++) test(`passes after ${i}`, () => {})",
  ])
  const run = runner(file)
  assert.equal(run.status, 1, run.stdout + run.stderr)
  const summary = run.stderr.slice(run.stderr.indexOf('scripts/test.js: 2 failed'))
  assert.match(summary, /^scripts\/test\.js: 2 failed/, run.stderr)
  assert.match(summary, /not ok: fails inside \(.*mixed\.test\.js:3:\d+\)/)
  assert.match(summary, /not ok: a suite \(.*mixed\.test\.js:3:\d+\)/)
  assert.doesNotMatch(summary, /passes/)
})

test('regression: the failure list has every failure the run reported, not what a reporter file held at exit', (t) => {
  // The list used to come from a second reporter writing to a file, which
  // --test-force-exit cut short: of a file's 400 failures, 380 were listed
  // in most runs. It now comes from the TAP on the child's stdout, so it has
  // every failure that TAP reports (`# fail N`). Five runs, since the loss
  // was a race (5 of 6 runs lost some).
  const file = fixture(t, 'many.test.js', [
    "const test = require('node:test')",
    "for (let i = 0; i < 400; i++) test(`fails ${i}`, () => { throw new Error('boom '.repeat(50)) })",
  ])
  for (let run = 0; run < 5; run++) {
    const r = runner(file)
    assert.equal(r.status, 1, r.stderr)
    const reported = Number(/^# fail (\d+)$/m.exec(r.stdout)?.[1])
    assert.ok(reported > 0, r.stdout.slice(-500))
    assert.match(r.stderr, new RegExp(`^scripts/test\\.js: ${reported} failed`, 'm'), `run ${run}: TAP reported ${reported}`)
  }
})
