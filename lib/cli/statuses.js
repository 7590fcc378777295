'use strict'
// The execution statuses the store reports (api.md's ExecutionStatusName),
// and the `--status` option that picks one.
const native = require('../native')
const { UsageError } = require('./errors')

// The native string enum (src/rules.rs), so the CLI lists what the client accepts.
const INSTANCE_STATUSES = Object.freeze(Object.values(native.ExecutionStatusName))

/**
 * Whether the instance still runs: its current execution is Running, or has
 * just continued as new and the next one has not started yet.
 */
function isLive(status) {
  return status === 'Running' || status === 'ContinuedAsNew'
}

/** `--status` checked against the statuses; undefined when absent. */
function statusOption(command, raw) {
  if (raw !== undefined && !INSTANCE_STATUSES.includes(raw)) {
    throw new UsageError(`${command.name}: --status must be one of ${INSTANCE_STATUSES.join(', ')}, got '${raw}'`, command.usage)
  }
  return raw
}

module.exports = { INSTANCE_STATUSES, statusOption, isLive }
