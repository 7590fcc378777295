// ESM entry: the same objects as the CommonJS entry. Node cannot detect
// index.js's exports statically, so they are listed here by name;
// __test__/esm.test.mjs fails if this list and index.js differ.
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const api = require('./index.js')

export const {
  SqliteProvider,
  PostgresProvider,
  Runtime,
  Client,
  OrchestrationContext,
  ActivityContext,
  initTracing,
  createDashboard,
  defineActivity,
  defineOrchestration,
  defineEvent,
  defineStatus,
  defineKey,
  OrchestrationHandle,
  MAX_WORKER_TAGS,
  MAX_TAG_NAME_BYTES,
  MAX_KV_KEYS,
  MAX_KV_VALUE_BYTES,
  MAX_CUSTOM_STATUS_BYTES,
  MAX_IDENTIFIER_BYTES,
  DEFAULT_MAX_PAYLOAD_BYTES,
  DuroxideError,
  InvalidOptionError,
  InvalidArgumentError,
  NotFoundError,
  AlreadyExistsError,
  TimeoutError,
  ProviderError,
  RuntimeStateError,
  OrchestrationFailedError,
  AbortError,
  ActivityFailedError,
  SubOrchestrationFailedError,
  NondeterministicError,
  NonRetryableError,
} = api
export default api
