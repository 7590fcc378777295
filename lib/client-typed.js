'use strict'
// The Client methods that take typed definitions: `start` returns an
// OrchestrationHandle, `raise`/`enqueue` check the payload's event (in the
// types), and `list` pages through instances. Unlike the string-named
// methods, these reject ERR_NOT_FOUND for an instance that does not exist.
// Installed on Client.prototype by lib/client.js.
const { InvalidArgumentError, InvalidOptionError, NotFoundError, describe } = require('./errors')
const { orchestrationFailed } = require('./failure')
const { OrchestrationDefinition, EventDefinition, KeyDefinition, definition } = require('./definitions')
const { decode } = require('./json')
const { string } = require('./validate')

/**
 * Whether an instance exists: it has a status, or a start is waiting for a
 * runtime's first turn (duroxide shows an instance only after that turn). The
 * native wait with no time left tells the second case from a missing id
 * (src/client/pending.rs looks into the queue).
 */
async function exists(client, instanceId) {
  if ((await client.getStatus(instanceId)).status !== 'NotFound') return 'found'
  try {
    await client.waitForOrchestration(instanceId, 0)
    return 'found'
  } catch (err) {
    if (err.code === 'ERR_TIMEOUT') return 'pending'
    if (err.code !== 'ERR_NOT_FOUND') throw err
  }
  // The first turn's commit removes the queued start and creates the
  // instance at once; when it lands between the two looks above, neither
  // saw it, and a third look does.
  return (await client.getStatus(instanceId)).status !== 'NotFound' ? 'found' : 'missing'
}

async function mustExist(client, instanceId, what) {
  const state = await exists(client, instanceId)
  if (state === 'missing') throw new NotFoundError(`${what}: instance '${instanceId}' does not exist`)
  return state
}

/** The typed status: `output` and (with the definition's status) `customStatus` parsed. */
function typedStatus(def, s) {
  const out = { ...s }
  if (out.status === 'Completed' && typeof out.output === 'string') out.output = decode(out.output)
  if (def.status && out.customStatus !== undefined) out.customStatus = def.status.parse(out.customStatus)
  return out
}

// The failure's fields (`errorName`, `details`, ...) come with it (lib/failure.js).
const failed = orchestrationFailed

/** One instance of one orchestration definition. */
class OrchestrationHandle {
  #client
  #def

  /** @internal */
  constructor(client, def, instanceId) {
    this.#client = client
    this.#def = def
    this.instanceId = instanceId
    Object.freeze(this)
  }

  /** The definition this handle was made from. */
  get definition() {
    return this.#def
  }

  /**
   * The status with parsed `output`; `'Pending'` while its start waits for a
   * runtime's first turn. Rejects ERR_NOT_FOUND for an instance that does not exist.
   */
  async status() {
    const s = await this.#client.getStatus(this.instanceId)
    if (s.status !== 'NotFound') return typedStatus(this.#def, s)
    const state = await mustExist(this.#client, this.instanceId, 'status()')
    if (state === 'pending') return { status: 'Pending', customStatusVersion: 0 }
    // It ran its first turn between the two reads.
    const again = await this.#client.getStatus(this.instanceId)
    if (again.status === 'NotFound') throw new NotFoundError(`status(): instance '${this.instanceId}' does not exist`)
    return typedStatus(this.#def, again)
  }

  /** The terminal status (`Completed` or `Failed`), `output` parsed. Options: `{ timeoutMs?, signal? }`. */
  async wait(options = {}) {
    return typedStatus(this.#def, await this.#client.waitForOrchestration(this.instanceId, options))
  }

  /**
   * The output once completed; rejects OrchestrationFailedError if it failed,
   * TimeoutError / NotFoundError at `timeoutMs`, AbortError when `signal` aborts.
   */
  async result(options = {}) {
    const s = await this.wait(options)
    if (s.status === 'Failed') throw failed(this.instanceId, s)
    return s.output
  }

  /** The status once `customStatusVersion > lastSeenVersion` (or terminal). */
  async waitForStatusChange(lastSeenVersion, options = {}) {
    await mustExist(this.#client, this.instanceId, 'waitForStatusChange()')
    return typedStatus(this.#def, await this.#client.waitForStatusChange(this.instanceId, lastSeenVersion, options))
  }

  raise(event, payload) {
    return this.#client.raise(this.instanceId, event, payload)
  }

  enqueue(event, payload) {
    return this.#client.enqueue(this.instanceId, event, payload)
  }

  async cancel(reason) {
    await mustExist(this.#client, this.instanceId, 'cancel()')
    return this.#client.cancelInstance(this.instanceId, reason)
  }

  /** A typed KV value of this instance, or `null`. */
  async value(key) {
    definition(KeyDefinition, 'defineKey', 'value(): key', key)
    await mustExist(this.#client, this.instanceId, 'value()')
    return this.#client.getValue(this.instanceId, key)
  }
}

const typedClientMethods = {
  /**
   * Starts `def` (its pinned version, if any) as `instanceId`; resolves with
   * its handle. `options` as in startOrchestration (`{ traceparent, tracestate }`).
   */
  async start(def, instanceId, input, options) {
    const d = definition(OrchestrationDefinition, 'defineOrchestration', 'start(): orchestration', def)
    string('instanceId', instanceId)
    if (d.version === undefined) await this.startOrchestration(instanceId, d.name, input, options)
    else await this.startOrchestrationVersioned(instanceId, d.name, input, d.version, options)
    return new OrchestrationHandle(this, d, instanceId)
  },

  /** A handle on an instance of `def` started earlier (nothing is read until a method is called). */
  handle(def, instanceId) {
    const d = definition(OrchestrationDefinition, 'defineOrchestration', 'handle(): orchestration', def)
    return new OrchestrationHandle(this, d, string('instanceId', instanceId))
  },

  /** Raises `event` with `payload`; rejects ERR_NOT_FOUND for an instance that does not exist. */
  async raise(instanceId, event, payload) {
    const e = definition(EventDefinition, 'defineEvent', 'raise(): event', event)
    string('instanceId', instanceId)
    await mustExist(this, instanceId, `raise('${e.name}')`)
    return this.raiseEvent(instanceId, e.name, payload)
  },

  /** Appends to `event`'s persistent mailbox (`ctx.dequeue(event)`); ERR_NOT_FOUND as `raise`. */
  async enqueue(instanceId, event, payload) {
    const e = definition(EventDefinition, 'defineEvent', 'enqueue(): event', event)
    string('instanceId', instanceId)
    await mustExist(this, instanceId, `enqueue('${e.name}')`)
    return this.enqueueEvent(instanceId, e.name, payload)
  },

  /**
   * Instances as `InstanceInfo`, paged: the ids are listed once, their info
   * is read `pageSize` (default 100) at a time as the loop asks for more.
   * `filter`: `{ status?, name?, pageSize? }`.
   */
  list(filter = {}) {
    if (typeof filter !== 'object' || filter === null || Array.isArray(filter)) {
      throw new InvalidArgumentError(`list() filter must be an object, got ${describe(filter)}`)
    }
    for (const key of Object.keys(filter)) {
      if (!['status', 'name', 'pageSize'].includes(key)) {
        throw new InvalidOptionError(`list() filter.${key} is not a known field (expected status, name, pageSize)`)
      }
    }
    const { status, name, pageSize = 100 } = filter
    if (name !== undefined) string('filter.name', name)
    if (!Number.isSafeInteger(pageSize) || pageSize < 1) {
      throw new InvalidOptionError(`list() filter.pageSize must be a positive integer, got ${describe(pageSize)}`)
    }
    const client = this
    return (async function* () {
      const ids = status === undefined ? await client.listAllInstances() : await client.listInstancesByStatus(status)
      for (let i = 0; i < ids.length; i += pageSize) {
        const page = await Promise.all(
          ids.slice(i, i + pageSize).map((id) =>
            // Deleted between the listing and this page: skipped.
            client.getInstanceInfo(id).catch((err) => {
              if (err.code === 'ERR_NOT_FOUND') return null
              throw err
            }),
          ),
        )
        for (const info of page) {
          if (info && (name === undefined || info.orchestrationName === name)) yield info
        }
      }
    })()
  },
}

module.exports = { OrchestrationHandle, typedClientMethods }
