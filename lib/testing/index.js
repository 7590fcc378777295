'use strict'
// `duroxide-node/testing`: tools for tests and deploy gates, kept out of the
// main entry so production code does not load them.
//   replay.js  replayHistory / replayInstances / importHistory (the replay check)
//   env.js     TestEnv (in-memory store, mocked activities, virtual time)
const { TestEnv } = require('./env')

module.exports = {
  ...require('./replay'),
  TestEnv,
}
