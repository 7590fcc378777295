'use strict'
// `npm install` of this repository prints no EBADENGINE warning on the Node
// running the test (CI runs it on 20, 22 and 24): a dev dependency that wants
// a newer Node than the package supports is pinned down with package.json
// `overrides`. npm reads every package's engines from the lockfile, so a dry
// run, offline, sees what a real install would warn about.
const test = require('node:test')
const assert = require('node:assert/strict')
const { spawnSync } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')

const root = path.join(__dirname, '..')

test(`npm install warns about no engine on Node ${process.version}`, (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dxengines-'))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  for (const f of ['package.json', 'package-lock.json']) fs.copyFileSync(path.join(root, f), path.join(dir, f))
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k)))
  // npm runs on the Node under test, which it checks the engines against.
  env.PATH = [path.dirname(process.execPath), env.PATH].join(path.delimiter)
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'
  const r = spawnSync(npm, ['install', '--dry-run', '--offline', '--ignore-scripts', '--no-audit', '--no-fund'], {
    cwd: dir,
    env,
    encoding: 'utf8',
    timeout: 120000,
  })
  const out = `${r.stdout}${r.stderr}`
  assert.equal(r.status, 0, out)
  assert.doesNotMatch(out, /EBADENGINE/, out)
  // The dry run did resolve the tree (or it would warn about nothing).
  assert.match(out, /add|up to date/, out)
})
