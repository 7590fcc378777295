// Types of `duroxide-node/testing` (ESM).
export * from './testing.js'
