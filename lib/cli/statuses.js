'use strict'
// The execution statuses the store reports (api.md's ExecutionStatusName).
const INSTANCE_STATUSES = Object.freeze(['Running', 'Completed', 'Failed', 'ContinuedAsNew'])

module.exports = { INSTANCE_STATUSES }
