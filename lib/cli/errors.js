'use strict'
// The CLI's own failure kinds. Store and library errors keep the package's
// DuroxideError codes; these two add what only a command line has: a command
// line that cannot be run (exit 2 with the usage text) and a command this
// build does not have (exit 2, no usage text: the command line was right),
// and a confirmation answered no (exit 1).
const { DuroxideError } = require('../..')

/** A command line that cannot be run as typed. `usage` is the text to print after the message. */
class UsageError extends DuroxideError {
  constructor(message, usage) {
    super(message, 'ERR_INVALID_ARGUMENT')
    this.usage = usage
  }
}

/** A command this build does not provide (e.g. `replay` without `duroxide-node/testing`). */
class NotAvailableError extends DuroxideError {
  constructor(message) {
    super(message, 'ERR_NOT_AVAILABLE')
  }
}

/** The operator answered no to a confirmation prompt: nothing was changed. */
class AbortedError extends DuroxideError {
  constructor(message) {
    super(message, 'ERR_ABORTED')
  }
}

const EXIT = Object.freeze({ OK: 0, FAILED: 1, USAGE: 2 })

module.exports = { UsageError, NotAvailableError, AbortedError, EXIT }
