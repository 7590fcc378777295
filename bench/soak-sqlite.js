'use strict'
// Long form of the SQLite contention test (issue 3, item 8): 2,000
// orchestrations mixing hello, fan-out of 20 and timers on one SQLite file,
// 8 orchestration and 16 worker slots, client starts 20 at a time; no busy
// error may reach the runtime and zero may fail. CI runs 200.
// Usage: node bench/soak-sqlite.js
const { runSoak } = require('./soak-common')

runSoak('sqlite-contention.test.js')
