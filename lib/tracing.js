'use strict'
// initTracing: send runtime logs to a file instead of stderr.
const native = require('./native')
const { InvalidArgumentError, sync, describe } = require('./errors')

function initTracing(options) {
  if (options === null || typeof options !== 'object') {
    throw new InvalidArgumentError(`initTracing expects { logFile, logLevel?, logFormat? }, got ${describe(options)}`)
  }
  if (typeof options.logFile !== 'string' || options.logFile.length === 0) {
    throw new InvalidArgumentError(`logFile must be a non-empty string, got ${describe(options.logFile)}`)
  }
  sync(() => native.initTracing({ logFile: options.logFile, logLevel: options.logLevel, logFormat: options.logFormat }))
}

module.exports = { initTracing }
