'use strict'
// The Client methods that take typed definitions: `start` returns an
// OrchestrationHandle (and refuses an id in use), `raise` keeps an event until
// `ctx.waitFor` takes it, `enqueue` checks the payload's event (in the types),
// and `list` pages through instances. Unlike the string-named methods, these
// reject ERR_NOT_FOUND for an instance that does not exist. Installed on
// Client.prototype by lib/client.js.
const native = require('./native')
const { InvalidArgumentError, InvalidOptionError, call, describe } = require('./errors')
const { orchestrationFailed } = require('./failure')
const { OrchestrationDefinition, EventDefinition, KeyDefinition, definition } = require('./definitions')
const { decode, encode } = require('./json')
const { string, identifier } = require('./validate')
const { startOptionsArg } = require('./client-args')

/** Key of the Client's native handle, for the methods installed from here and the CLI. */
const nativeClient = Symbol('duroxide-node native client')

/**
 * Where an instance is: `'stored'`, `'queued'` (its start waits for a
 * runtime's first turn; duroxide stores an instance only after that turn),
 * or, without `what`, `'missing'`. With `what` (the call, for the message),
 * a missing instance rejects ERR_NOT_FOUND naming the closest ids
 * (src/client/existence.rs).
 */
async function stateOf(client, instanceId, what) {
  return (await call(() => client[nativeClient]().instanceState(instanceId, what))).state
}

const mustExist = stateOf

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
    if (state === 'queued') return { status: 'Pending', customStatusVersion: 0 }
    // It ran its first turn between the two reads.
    const again = await this.#client.getStatus(this.instanceId)
    if (again.status === 'NotFound') await mustExist(this.#client, this.instanceId, 'status()')
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

/** `start()`'s options: `ifExists` checked here, the trace context by startOptionsArg. */
function startOptions(options) {
  if (options === undefined || options === null) return { ifExists: 'reject', trace: undefined }
  if (typeof options !== 'object' || Array.isArray(options)) {
    throw new InvalidArgumentError(`start() options must be an object, got ${describe(options)}`)
  }
  for (const key of Object.keys(options)) {
    if (!['ifExists', 'traceparent', 'tracestate'].includes(key)) {
      throw new InvalidOptionError(`start() options.${key} is not a known field (expected ifExists, traceparent, tracestate)`)
    }
  }
  const { ifExists = 'reject', ...rest } = options
  const allowed = Object.values(native.IfExists)
  if (!allowed.includes(ifExists)) {
    throw new InvalidArgumentError(
      `start() options.ifExists must be one of ${allowed.map((v) => `'${v}'`).join(', ')}, got ${describe(ifExists)}`,
    )
  }
  return { ifExists, trace: startOptionsArg(rest) ?? null }
}

const typedClientMethods = {
  /**
   * Starts `def` (its pinned version, if any) as `instanceId`; resolves with
   * its handle. An id that exists (stored, or its start is queued) rejects
   * ERR_ALREADY_EXISTS, unless `options.ifExists` is `'useExisting'` and the
   * instance runs the same orchestration: then its handle, for an idempotent
   * start. `options`: `{ ifExists?, traceparent?, tracestate? }`.
   */
  async start(def, instanceId, input, options) {
    const d = definition(OrchestrationDefinition, 'defineOrchestration', 'start(): orchestration', def)
    identifier('instanceId', instanceId)
    const { ifExists, trace } = startOptions(options)
    const payload = encode(input, 'input')
    await call(() => this[nativeClient]().startNew(instanceId, d.name, payload, d.version ?? null, trace, ifExists))
    return new OrchestrationHandle(this, d, instanceId)
  },

  /** A handle on an instance of `def` started earlier (nothing is read until a method is called). */
  handle(def, instanceId) {
    const d = definition(OrchestrationDefinition, 'defineOrchestration', 'handle(): orchestration', def)
    return new OrchestrationHandle(this, d, identifier('instanceId', instanceId))
  },

  /**
   * Sends `event` with `payload` to the instance's `ctx.waitFor(event)`: kept
   * in the event's mailbox, in order, until a wait takes it, so an event
   * raised before the instance waits is not lost. A wait that histories
   * recorded before typed waits used the mailbox gets it directly
   * (src/bridge/waits.rs). Rejects ERR_NOT_FOUND for an instance that does
   * not exist.
   */
  async raise(instanceId, event, payload) {
    const e = definition(EventDefinition, 'defineEvent', 'raise(): event', event)
    identifier('instanceId', instanceId)
    const waiting = await call(() => this[nativeClient]().waitingFor(instanceId, `raise('${e.name}')`))
    if (waiting.events.includes(e.name)) return this.raiseEvent(instanceId, e.name, payload)
    return this.enqueueEvent(instanceId, e.name, payload)
  },

  /** Appends to `event`'s persistent mailbox (`ctx.dequeue(event)`); ERR_NOT_FOUND as `raise`. */
  async enqueue(instanceId, event, payload) {
    const e = definition(EventDefinition, 'defineEvent', 'enqueue(): event', event)
    identifier('instanceId', instanceId)
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

module.exports = { OrchestrationHandle, typedClientMethods, nativeClient, stateOf }
