#!/usr/bin/env node
'use strict'
// The test command (`npm test`). Lists the test files itself and passes them
// to `node --test` by name: given a directory, Node 21+ loads it as a module
// (MODULE_NOT_FOUND) and Node 20 does not expand globs, so naming files is
// the one form Node 20, 22 and 24 all accept.
//
//   node scripts/test.js            every test file under __test__/
//   node scripts/test.js --quick    the QUICK subset (run on the other Node majors in CI)
//   node scripts/test.js FILE...    just these files
//   node scripts/test.js --fast-paths=off [FILE...]
//                                   the same with every provider that does not
//                                   name `fastPaths` opened with `fastPaths: false`
//                                   (__test__/fixtures/fast-paths-off.js, preloaded in
//                                   the test processes and the processes they start)
//
// Files run one at a time (they share Postgres and some start child
// processes). A test that hangs fails after TEST_TIMEOUT_MS instead of
// stalling CI: --test-force-exit ends a file once its tests are over, since a
// timed-out test may leave a runtime or child process holding the event loop.
//
// The names (and locations) of the tests that failed are repeated at the end
// of the run: a CI log that shows only the tail of 575 tests still says which
// one failed. They are read from a TAP reporter on the child's stdout, a pipe
// to this process. Not from a reporter writing to a file: --test-force-exit
// exits as soon as the reporters close, before a file stream has written its
// last lines (a file of 400 failing tests: 20 missing from the list in 3 of
// 5 runs). Writes to a pipe are synchronous on Linux, so the list has what
// the TAP has. (Node 20 may still lose a file's last few results before
// they reach its runner, so they are not in its TAP: 3 of those 400 in one
// run of 12.)
// Output is TAP, echoed to stdout (Node 23+ defaults to spec everywhere;
// naming the reporter keeps CI logs alike); on a terminal, the spec reporter
// writes to stderr instead and the TAP is only read.
const { spawn } = require('node:child_process')
const fs = require('node:fs')
const path = require('node:path')

const root = path.join(__dirname, '..')
const testDir = path.join(root, '__test__')

/**
 * Fast files that still load the binary, both entry points and a real
 * orchestration; and how the process exits, which differs between Node majors.
 */
const QUICK = [
  'exports.test.js',
  'esm.test.mjs',
  'quickstart.test.js',
  'client.basic.test.js',
  'orchestration.bridge.test.js',
  'packaging.install.test.js',
  'packaging.engines.test.js',
  'runtime.exit.test.js',
  'test-runner.test.js',
]

/**
 * Node 24 applies --test-timeout to each test (tests with their own `timeout`
 * keep it); Node 20 and 22 apply it to each file as a whole. So it must exceed
 * the slowest file (the fault tests allow themselves up to 300 s; the whole
 * suite takes 8 to 11 minutes). DUROXIDE_TEST_TIMEOUT_MS overrides it, e.g.
 * for the soak runs.
 */
const TEST_TIMEOUT_MS = Number(process.env.DUROXIDE_TEST_TIMEOUT_MS) || 600_000

const TEST_FILE = /\.test\.[cm]?js$/

/** Every test file under dir, sorted, as paths relative to the repository root. */
function listTests(dir) {
  const out = []
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name)
    if (entry.isDirectory()) out.push(...listTests(full))
    else if (TEST_FILE.test(entry.name)) out.push(path.relative(root, full))
  }
  return out.sort()
}

async function main(argv) {
  const [major, minor] = process.versions.node.split('.').map(Number)
  if (major < 20 || (major === 20 && minor < 14)) {
    process.stderr.write(`scripts/test.js: Node ${process.version} lacks --test-force-exit; use Node 20.14+, 22 or 24\n`)
    return 2
  }
  const quick = argv.includes('--quick')
  const fastPathsOff = argv.includes('--fast-paths=off')
  const named = argv.filter((a) => a !== '--quick' && a !== '--fast-paths=off')
  if (quick && named.length > 0) throw new Error('scripts/test.js: give --quick or file names, not both')
  const files = quick ? QUICK.map((f) => path.join('__test__', f)) : named.length > 0 ? named : listTests(testDir)
  for (const f of files) {
    if (!fs.existsSync(path.resolve(root, f))) throw new Error(`scripts/test.js: no test file ${f}`)
  }
  const env = { ...process.env }
  if (fastPathsOff) {
    const preload = path.join(testDir, 'fixtures', 'fast-paths-off.js')
    env.NODE_OPTIONS = `${env.NODE_OPTIONS ?? ''} --require ${JSON.stringify(preload)}`.trim()
  }
  process.stderr.write(`scripts/test.js: ${files.length} file(s) on Node ${process.version}${fastPathsOff ? ', fast paths off' : ''}\n`)
  const terminal = Boolean(process.stdout.isTTY)
  const args = [
    '--test',
    '--test-concurrency=1',
    `--test-timeout=${TEST_TIMEOUT_MS}`,
    '--test-force-exit',
    ...(terminal ? ['--test-reporter=spec', '--test-reporter-destination=stderr'] : []),
    '--test-reporter=tap',
    '--test-reporter-destination=stdout',
    ...files,
  ]
  const child = spawn(process.execPath, args, { cwd: root, env, stdio: ['inherit', 'pipe', 'inherit'] })
  const failures = new Failures()
  let partial = ''
  child.stdout.setEncoding('utf8')
  child.stdout.on('data', (chunk) => {
    if (!terminal) process.stdout.write(chunk)
    const lines = (partial + chunk).split('\n')
    partial = lines.pop()
    for (const line of lines) failures.read(line)
  })
  const status = await new Promise((resolve, reject) => {
    child.on('error', reject)
    child.on('close', (code) => resolve(code))
  })
  if (partial) failures.read(partial)
  process.stderr.write(failures.summary())
  return status ?? 1
}

/**
 * Collects the failed tests of a TAP stream: each `not ok` line, with the
 * `location` of its YAML block when it has one. A failed subtest also fails
 * the suites around it; those are listed too, indented by depth.
 */
class Failures {
  #found = []
  #last = null

  read(line) {
    const failed = /^(\s*)not ok \d+ - (.*)$/.exec(line)
    if (failed) {
      this.#last = { depth: failed[1].length / 4, name: failed[2], location: null }
      this.#found.push(this.#last)
      return
    }
    const location = /^\s*location: '(.*)'$/.exec(line)
    if (location && this.#last && this.#last.location === null) this.#last.location = location[1]
    else if (/^\s*(ok|not ok) \d+ /.test(line)) this.#last = null
  }

  summary() {
    if (this.#found.length === 0) return ''
    const lines = this.#found.map((f) => `${'  '.repeat(f.depth + 1)}not ok: ${f.name}${f.location ? ` (${path.relative(root, f.location)})` : ''}`)
    return `scripts/test.js: ${this.#found.length} failed (suites listed with their failing tests):\n${lines.join('\n')}\n`
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => { process.exitCode = code },
    (err) => { process.stderr.write(`${err.stack ?? err}\n`); process.exitCode = 2 },
  )
}

module.exports = { QUICK, listTests, Failures }
