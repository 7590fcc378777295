// Types of `duroxide-node/testing` (ESM).
export * from './testing.js'
import api from './testing.js'
export default api
