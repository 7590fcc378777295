#!/usr/bin/env node
'use strict'
// The `duroxide-node` command (package.json "bin"); see docs/cli.md.
const { main } = require('../lib/cli/main')

main(process.argv.slice(2)).then((code) => {
  process.exitCode = code
})
