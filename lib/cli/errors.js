'use strict'
// The CLI's own failure kinds. Store and library errors keep the package's
// DuroxideError codes; these two add what only a command line has: a command
// line that cannot be run (exit 2 with the usage text) and a confirmation
// answered no (exit 1).
const { DuroxideError } = require('../..')

/** A command line that cannot be run as typed. `usage` is the text to print after the message. */
class UsageError extends DuroxideError {
  constructor(message, usage) {
    super(message, 'ERR_INVALID_ARGUMENT')
    this.usage = usage
  }
}

/** The operator answered no to a confirmation prompt: nothing was changed. */
class AbortedError extends DuroxideError {
  constructor(message) {
    super(message, 'ERR_ABORTED')
  }
}

const EXIT = Object.freeze({ OK: 0, FAILED: 1, USAGE: 2 })

module.exports = { UsageError, AbortedError, EXIT }
