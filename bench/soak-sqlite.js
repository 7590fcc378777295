'use strict'
// Long form of the SQLite contention test (issue 3, item 8): 2,000
// orchestrations mixing hello, fan-out of 20 and timers on one SQLite file,
// 4 orchestration and 8 worker slots; zero may fail. CI runs 600.
// Usage: node bench/soak-sqlite.js
const { runSoak } = require('./soak-common')

runSoak('sqlite-contention.test.js')
