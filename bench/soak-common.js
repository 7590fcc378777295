'use strict'
// Runs a fault-suite test file in its long (soak) form: DUROXIDE_SOAK=1
// switches the counts (see __test__/faults/harness.js). The test's measured
// numbers are printed as TAP diagnostics; the exit code is the test's.
const path = require('node:path')
const { spawnSync } = require('node:child_process')

function runSoak(file) {
  const target = path.join(__dirname, '..', '__test__', 'faults', file)
  const r = spawnSync(process.execPath, ['--test', '--test-reporter=tap', target], {
    stdio: 'inherit',
    env: { ...process.env, DUROXIDE_SOAK: '1' },
  })
  process.exitCode = r.status ?? 1
}

module.exports = { runSoak }
