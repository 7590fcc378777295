// Types of `duroxide-node/testing` (CommonJS).
export {}
