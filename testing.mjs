// `duroxide-node/testing` (ESM): the same objects as testing.js, listed by
// name because Node cannot detect CommonJS exports statically.
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const api = require('./testing.js')

export const { replayHistory, replayInstances, importHistory } = api

export default api
export const { TestEnv } = api
