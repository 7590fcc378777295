'use strict'
// waitForOrchestration on an instance with no history. Regression: a start
// under a misspelt orchestration name made the wait reject ERR_NOT_FOUND
// "nothing with this id was started", which was false: it was started and no
// runtime could run it. The wait now names the orchestration waiting in the
// queue and says no runtime here registers it.
const { describe, test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { backends, FAST, uniqueName } = require('./helpers')
const { startSuiteRuntime, stopSuiteRuntime } = require('./fixtures/store')
const { Client } = require('..')

function register(rt) {
  rt.registerOrchestration('Fulfil', function* () {
    return 'fulfilled'
  })
}

for (const [kind, open] of backends) {
  describe(`waitForOrchestration on an unstarted instance (${kind})`, () => {
    let store, rt, client
    before(async () => ({ store, rt, client } = await startSuiteRuntime(open, register, FAST)))
    after(() => stopSuiteRuntime({ store, rt }))

    test('a start under a name no runtime here registers is named in the timeout', async () => {
      const id = uniqueName('misspelt')
      await client.startOrchestration(id, 'Fullfil', { order: 1 })
      await assert.rejects(client.waitForOrchestration(id, 300), (err) => {
        assert.equal(err.code, 'ERR_TIMEOUT')
        assert.match(err.message, /did not start within 300 ms/)
        assert.match(err.message, /orchestration 'Fullfil' waits in the queue/)
        assert.match(err.message, /no runtime in this process registers 'Fullfil' \(they register: Fulfil\)/)
        return true
      })
      // The correctly spelt start on the same runtime completes.
      const ok = uniqueName('spelt')
      await client.startOrchestration(ok, 'Fulfil')
      assert.equal((await client.waitForOrchestration(ok, 20000)).output, 'fulfilled')
    })

    test('a start with no running runtime on the provider says so', async () => {
      const id = uniqueName('nobody')
      const other = new Client(store.provider)
      await rt.shutdown(1000)
      await other.startOrchestration(id, 'Fulfil')
      await assert.rejects(other.waitForOrchestration(id, 200), (err) => {
        assert.equal(err.code, 'ERR_TIMEOUT')
        assert.match(err.message, /orchestration 'Fulfil' waits in the queue, and no runtime in this process is running on this provider/)
        return true
      })
    })

    test('an id nothing was started under is not found', async () => {
      await assert.rejects(client.waitForOrchestration(uniqueName('never'), 200), (err) => {
        assert.equal(err.code, 'ERR_NOT_FOUND')
        assert.match(err.message, /nothing with this id was started within 200 ms/)
        return true
      })
    })
  })
}
