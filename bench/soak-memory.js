'use strict'
// Long form of the memory and handle test (issue 3, item 10): 5,000
// orchestrations with activities through one runtime, heap and RSS sampled
// after each batch of 100, no growth trend across the second half, and the
// process exits on its own after shutdown. CI runs 1,500.
// Usage: node bench/soak-memory.js
const { runSoak } = require('./soak-common')

runSoak('memory.test.js')
