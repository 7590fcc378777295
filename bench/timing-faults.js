'use strict'
// Timings the fault tests print but do not assert (tests check order and
// outcome; durations depend on the machine): crash recovery against the lock
// timeouts (crash-fleet), shutdown against its timeout and against the work
// left (shutdown), and the time to poison a crash-looping message against
// maxAttempts x the lease (poison). Each line states its ratio to the
// baseline the same run configured.
//
//   node bench/timing-faults.js
const path = require('node:path')
const { spawnSync } = require('node:child_process')

const files = ['crash-fleet.test.js', 'shutdown.test.js', 'poison.test.js']
let failed = 0
for (const file of files) {
  const target = path.join(__dirname, '..', '__test__', 'faults', file)
  const r = spawnSync(process.execPath, ['--test', '--test-reporter=tap', target], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] })
  const lines = r.stdout.split('\n').filter((l) => /^# (crash recovery|shutdown\(|poison:)/.test(l.trim()))
  console.log(`== ${file}${r.status === 0 ? '' : ` (test failed: exit ${r.status})`}`)
  for (const l of lines) console.log(`  ${l.trim().replace(/^# /, '')}`)
  if (r.status !== 0) failed++
}
process.exitCode = failed ? 1 : 0
