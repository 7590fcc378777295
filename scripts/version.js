#!/usr/bin/env node
'use strict'
// The `version` script: `npm version <v>` runs it after bumping package.json.
// Gives every npm/ platform package the new version (`napi version`) and pins
// the root's optionalDependencies to it, so the tree is consistent in the
// version commit and not only after `napi prepublish` rewrites them. Inside
// git, stages the files so `npm version` commits them.
const { execFileSync } = require('node:child_process')
const fs = require('node:fs')
const path = require('node:path')

const root = path.join(__dirname, '..')
const pkgPath = path.join(root, 'package.json')
const cli = path.join(root, 'node_modules', '@napi-rs', 'cli', 'dist', 'cli.js')

execFileSync(process.execPath, [cli, 'version'], { cwd: root, stdio: ['ignore', process.stderr, process.stderr] })

const pkg = JSON.parse(fs.readFileSync(pkgPath, 'utf8'))
for (const name of Object.keys(pkg.optionalDependencies ?? {})) pkg.optionalDependencies[name] = pkg.version
fs.writeFileSync(pkgPath, `${JSON.stringify(pkg, null, 2)}\n`)
process.stderr.write(`version: npm/* and optionalDependencies set to ${pkg.version}\n`)

let inGit = true
try {
  execFileSync('git', ['rev-parse', '--is-inside-work-tree'], { cwd: root, stdio: 'ignore' })
} catch {
  inGit = false
}
if (inGit) execFileSync('git', ['add', 'package.json', 'npm'], { cwd: root, stdio: 'inherit' })
