'use strict'
// The napi-generated loader (../native.js) is internal: only lib/ uses it.
module.exports = require('../native.js')
