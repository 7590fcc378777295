'use strict'
// `duroxide-node/testing` (CommonJS). Types: testing.d.ts.
module.exports = require('./lib/testing')
