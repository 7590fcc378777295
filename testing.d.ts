// Types of `duroxide-node/testing` (CommonJS).
export type { TestDuration, TestEnvOptions } from './types/testing-env'
export { TestEnv } from './types/testing-env'
