'use strict'
// `npm run bench`: every benchmark, one after another, on the release build.
// Each prints its own comparison against a baseline measured in the same run
// (convoy: fetch cap on vs off; soaks: the long forms of the fault tests with
// their growth and failure counts).
const path = require('node:path')
const { spawnSync } = require('node:child_process')

const benches = ['convoy.js', 'soak-sqlite.js', 'soak-memory.js']
let failed = 0
for (const bench of benches) {
  process.stderr.write(`\n== bench/${bench}\n`)
  const r = spawnSync(process.execPath, [path.join(__dirname, bench)], { stdio: 'inherit' })
  if (r.status !== 0) {
    failed++
    process.stderr.write(`bench/${bench} exited with ${r.status ?? r.signal}\n`)
  }
}
process.exitCode = failed ? 1 : 0
