'use strict'
// waitForOrchestration on an instance with no history. Regression: a start
// under a misspelt orchestration name made the wait reject ERR_NOT_FOUND
// "nothing with this id was started", which was false: it was started and no
// runtime could run it. The wait now names the orchestration waiting in the
// queue and says no runtime here registers it. A wait on an id that is
// neither stored nor queued rejects ERR_NOT_FOUND at once, naming close ids.
const { describe, test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { backends, FAST, uniqueName, settlesWithin } = require('./helpers')
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

    test('an id nothing was started under is not found at once, naming the closest ids', async () => {
      // Queued, never run: it exists for every client, not only the one that started it.
      const id = uniqueName('queued')
      await client.startOrchestration(id, 'Nobody')
      const fresh = new Client(store.provider)
      await assert.rejects(fresh.waitForOrchestration(id, 200), (err) => {
        assert.equal(err.code, 'ERR_TIMEOUT')
        assert.match(err.message, /orchestration 'Nobody' waits in the queue/)
        return true
      })
      // One character off: rejected long before the wait's own 10-minute timeout.
      const typo = id.slice(0, -1) + (id.endsWith('0') ? '1' : '0')
      for (const wait of [
        () => fresh.waitForOrchestration(typo, 600000),
        () => fresh.waitForOrchestration(typo, { timeoutMs: 600000, signal: new AbortController().signal }),
      ]) {
        await assert.rejects(settlesWithin(wait(), 20000, 'the wait on a misspelt id'), (err) => {
          assert.equal(err.code, 'ERR_NOT_FOUND', err.message)
          assert.match(err.message, /nothing with this id is stored or waiting to start/)
          assert.ok(err.message.includes(`did you mean '${id}'?`), err.message)
          return true
        })
      }
    })
  })
}
