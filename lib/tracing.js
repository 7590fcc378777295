'use strict'
// initTracing: send runtime logs to a file instead of stderr, and/or hand
// them to the application's logger as structured records (`sink`).
const native = require('./native')
const { InvalidArgumentError, sync, describe } = require('./errors')

/**
 * Calls `sink` once per record. A sink that throws must not take the
 * runtime's logging (or the process) down: the first failure is reported
 * as a process warning, later ones are only counted.
 */
function deliverTo(sink, stats) {
  return (records) => {
    for (const record of records) {
      try {
        sink(record)
      } catch (err) {
        stats.sinkErrors += 1
        if (stats.sinkErrors === 1) {
          process.emitWarning(`duroxide-node: the initTracing sink threw (${err && err.message}); later errors are counted in sinkErrors`)
        }
      }
    }
  }
}

function initTracing(options) {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new InvalidArgumentError(`initTracing expects { logFile?, sink?, logLevel?, logFormat? }, got ${describe(options)}`)
  }
  const { logFile, sink } = options
  if (logFile !== undefined && (typeof logFile !== 'string' || logFile.length === 0)) {
    throw new InvalidArgumentError(`logFile must be a non-empty string, got ${describe(logFile)}`)
  }
  if (sink !== undefined && typeof sink !== 'function') {
    throw new InvalidArgumentError(`sink must be a function (record) => void, got ${describe(sink)}`)
  }
  if (logFile === undefined && sink === undefined) {
    throw new InvalidArgumentError('initTracing needs logFile or sink (or both)')
  }
  const stats = { sinkErrors: 0 }
  const handle = sync(() =>
    native.initTracing(
      { logFile, logLevel: options.logLevel, logFormat: options.logFormat },
      sink === undefined ? undefined : deliverTo(sink, stats),
    ),
  )
  if (!handle) return undefined
  return {
    /** Records dropped because the JS thread fell more than 10000 records behind. */
    get droppedRecords() {
      return handle.droppedRecords
    },
    /** Times the sink threw (those records are lost to it). */
    get sinkErrors() {
      return stats.sinkErrors
    },
  }
}

module.exports = { initTracing }
