// ESM entry: the same objects as the CommonJS entry.
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
  MAX_WORKER_TAGS,
  MAX_TAG_NAME_BYTES,
  MAX_KV_KEYS,
  MAX_KV_VALUE_BYTES,
  MAX_CUSTOM_STATUS_BYTES,
  DuroxideError,
  InvalidOptionError,
  InvalidArgumentError,
  NotFoundError,
  TimeoutError,
  ProviderError,
  RuntimeStateError,
  OrchestrationFailedError,
} = api
export default api
