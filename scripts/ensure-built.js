#!/usr/bin/env node
'use strict'
// Brings a fresh clone to a runnable state: installs the npm dev dependencies
// if they are missing, then builds the native module (cargo is incremental,
// so this is quick when nothing changed). `--release` builds optimized.
const { execFileSync } = require('node:child_process')
const fs = require('node:fs')
const path = require('node:path')

const root = path.join(__dirname, '..')
const release = process.argv.includes('--release')
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'

function run(cmd, args) {
  // Build chatter goes to stderr so a script's stdout stays its own.
  execFileSync(cmd, args, { cwd: root, stdio: ['ignore', process.stderr, process.stderr] })
}

if (!fs.existsSync(path.join(root, 'node_modules', '@napi-rs', 'cli'))) {
  process.stderr.write('duroxide-node: installing dev dependencies (npm install)...\n')
  run(npm, ['install', '--no-audit', '--no-fund'])
}

process.stderr.write(`duroxide-node: building the native module (${release ? 'release' : 'debug'})...\n`)
const cli = path.join(root, 'node_modules', '@napi-rs', 'cli', 'dist', 'cli.js')
const args = [cli, 'build', '--platform', '--js', 'native.js', '--dts', 'native.d.ts']
if (release) args.push('--release')
run(process.execPath, args)
