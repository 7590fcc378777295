'use strict'
// duroxide-node: durable orchestrations for Node.js.
// The public API; see index.d.ts for types and docs/api-reference.md.
const native = require('./lib/native')
const { SqliteProvider, PostgresProvider } = require('./lib/providers')
const { Runtime } = require('./lib/runtime')
const { Client } = require('./lib/client')
const { OrchestrationContext } = require('./lib/orchestration-context')
const { ActivityContext } = require('./lib/activity-context')
const { initTracing } = require('./lib/tracing')
const errors = require('./lib/errors')
const definitions = require('./lib/definitions')
const { OrchestrationHandle } = require('./lib/client-typed')

/**
 * The web dashboard's `(req, res[, next])` handler (docs/dashboard.md).
 * Loaded on first use: applications that never serve it do not load it.
 */
function createDashboard(provider, options) {
  return require('./lib/dashboard').createDashboard(provider, options)
}

module.exports = {
  SqliteProvider,
  PostgresProvider,
  Runtime,
  Client,
  OrchestrationContext,
  ActivityContext,
  initTracing,
  createDashboard,
  defineActivity: definitions.defineActivity,
  defineOrchestration: definitions.defineOrchestration,
  defineEvent: definitions.defineEvent,
  defineStatus: definitions.defineStatus,
  defineKey: definitions.defineKey,
  OrchestrationHandle,
  MAX_WORKER_TAGS: native.MAX_WORKER_TAGS,
  MAX_TAG_NAME_BYTES: native.MAX_TAG_NAME_BYTES,
  MAX_KV_KEYS: native.MAX_KV_KEYS,
  MAX_KV_VALUE_BYTES: native.MAX_KV_VALUE_BYTES,
  MAX_CUSTOM_STATUS_BYTES: native.MAX_CUSTOM_STATUS_BYTES,
  MAX_IDENTIFIER_BYTES: native.MAX_IDENTIFIER_BYTES,
  DEFAULT_MAX_PAYLOAD_BYTES: native.DEFAULT_MAX_PAYLOAD_BYTES,
  DuroxideError: errors.DuroxideError,
  InvalidOptionError: errors.InvalidOptionError,
  InvalidArgumentError: errors.InvalidArgumentError,
  NotFoundError: errors.NotFoundError,
  AlreadyExistsError: errors.AlreadyExistsError,
  TimeoutError: errors.TimeoutError,
  ProviderError: errors.ProviderError,
  RuntimeStateError: errors.RuntimeStateError,
  OrchestrationFailedError: errors.OrchestrationFailedError,
  AbortError: errors.AbortError,
  ActivityFailedError: errors.ActivityFailedError,
  SubOrchestrationFailedError: errors.SubOrchestrationFailedError,
  NondeterministicError: errors.NondeterministicError,
  NonRetryableError: errors.NonRetryableError,
}
