// TestEnv through `require('duroxide-node/testing')`.
import testing = require('duroxide-node/testing')

export async function cjsTestEnv(): Promise<Date> {
  const env: testing.TestEnv = await testing.TestEnv.create()
  // @ts-expect-error TestEnv is made by TestEnv.create()
  new testing.TestEnv()
  return env.advance('2h')
}
