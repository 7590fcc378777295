#!/usr/bin/env node
'use strict'
// The `duroxide-node` command (package.json "bin"); see docs/cli.md.
const { main } = require('../lib/cli/main')

// `duroxide-node list | head` closes the pipe early: that is not an error.
process.stdout.on('error', (err) => {
  if (err.code !== 'EPIPE') throw err
  process.exit(process.exitCode ?? 0)
})

main(process.argv.slice(2)).then((code) => {
  process.exitCode = code
})
