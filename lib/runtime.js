'use strict'
// Runtime: registrations, the JS side of the bridge, and the lifecycle.
//
// The four bridge callbacks (see src/bridge/mod.rs for the table):
//   orchestrationStep(call)      -> Step, called synchronously from Rust
//   orchestrationDispose(id)     -> drops a generator (turn over, or evicted from the Rust generator cache)
//   activityStart(call)          -> void; later call.context.complete({ok} | {err})
//   activityCancel(id)           -> aborts that activity's AbortSignal
//   events(event)                -> guard events to runtime.on() listeners (lib/runtime-events.js)
// None of them throws: user errors travel inside the returned values (an
// activity's in the outcome it completes with).
const native = require('./native')
const { InvalidArgumentError, InvalidOptionError, sync, call, describe, messageOf } = require('./errors')
const { encode, decode } = require('./json')
const { Task, consume } = require('./tasks')
const { encodeFailure, decodeOutcome } = require('./failure')
const { Mistakes } = require('./mistakes')
const { OrchestrationContext } = require('./orchestration-context')
const { ActivityContext, abort } = require('./activity-context')
const { nativeProviderOf } = require('./providers')
const { string, identifier, number, func } = require('./validate')
const { RuntimeEvents } = require('./runtime-events')
const { Invocations } = require('./invocations')
const { ActivityDefinition, OrchestrationDefinition, generatorFunction } = require('./definitions')

/** Copies an options object for Rust, dropping `undefined` and refusing what JSON cannot carry. */
function optionValue(path, value) {
  if (value === undefined) return undefined
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new InvalidOptionError(`${path} must be a finite number, got ${value}`)
    return value
  }
  if (Array.isArray(value)) return value.map((v, i) => optionValue(`${path}[${i}]`, v))
  if (typeof value === 'object') {
    const out = {}
    for (const [k, v] of Object.entries(value)) {
      const c = optionValue(path ? `${path}.${k}` : k, v)
      if (c !== undefined) out[k] = c
    }
    return out
  }
  throw new InvalidOptionError(`${path} has an unsupported value: ${describe(value)}`)
}

/**
 * Key of the hook `duroxide-node/testing` replays through (lib/testing/replay.js):
 * the native runtime and orchestration callbacks over a generator table of the
 * caller's, so a replay neither needs the runtime started nor touches its own.
 */
const replayBridge = Symbol('duroxide-node replay bridge')

/**
 * Forgets a generator and clears what its entry points at. A cached entry
 * often outlives two young collections and is promoted; dead in the old
 * generation, it still kept the young objects it pointed at (the last
 * turn's task) through every young collection until the next full one
 * (a hello run: 1.1 KB survived or promoted per orchestration, 0.8 KB with
 * the entry cleared).
 */
function drop(generators, invocation) {
  const entry = generators.get(invocation)
  if (entry === undefined) return
  generators.delete(invocation)
  entry.iterator = null
  entry.task = null
}

/** The outcome of an activity whose bridge code itself failed. */
function bridgeFailure(c, err) {
  return { err: `internal bridge error in activity '${c.activityName}': ${messageOf(err)}` }
}

function isIterator(value) {
  return value != null && typeof value.next === 'function' && typeof value.throw === 'function'
}

class Runtime {
  #native
  #provider
  #orchestrations = new Map() // name -> Map(version -> generator function)
  #activities = new Map() // name -> async function
  #generators = new Invocations() // invocation -> { iterator }
  #activityContexts = new Invocations() // invocation -> ActivityContext, while it runs
  #events = new RuntimeEvents()
  #starting = null // the native start promise, awaited by a shutdown that follows it
  #mistakes // what orchestration code gets wrong, reported once per name (lib/mistakes.js)

  constructor(provider, options) {
    const handle = nativeProviderOf(provider, 'new Runtime()')
    if (options !== undefined && options !== null && (typeof options !== 'object' || Array.isArray(options))) {
      throw new InvalidOptionError(`options must be an object, got ${describe(options)}`)
    }
    const clean = options == null ? undefined : optionValue('', options)
    this.#native = sync(() => new native.NativeRuntime(handle, clean))
    this.#provider = provider
    this.#mistakes = new Mistakes(this.#native.effectiveOptions().determinismGuard)
  }

  // The lifecycle (created, running, stopped) is the native runtime's: it
  // refuses a registration or start in the wrong phase (src/runtime.rs).

  registerActivity(name, fn) {
    identifier('name', name)
    func('activity', fn)
    sync(() => this.#native.registerActivity(name))
    this.#activities.set(name, fn)
    return this
  }

  registerOrchestration(name, fn) {
    return this.#registerOrchestration(name, undefined, fn)
  }

  registerOrchestrationVersioned(name, version, fn) {
    return this.#registerOrchestration(name, string('version', version), fn)
  }

  #registerOrchestration(name, version, fn) {
    identifier('name', name)
    generatorFunction(name, fn)
    // Rust fills in the default version and answers with the registered one,
    // which is the version instances report when they start.
    const registered = sync(() => this.#native.registerOrchestration(name, version))
    if (!this.#orchestrations.has(name)) this.#orchestrations.set(name, new Map())
    this.#orchestrations.get(name).set(registered, fn)
    return this
  }

  /**
   * Registers typed definitions (`defineActivity`, `defineOrchestration`)
   * through the string-named calls above. Returns the runtime.
   */
  register(...defs) {
    defs.forEach((def, i) => {
      if (def instanceof ActivityDefinition) this.registerActivity(def.name, def.fn)
      else if (def instanceof OrchestrationDefinition) {
        if (def.version === undefined) this.registerOrchestration(def.name, def.fn)
        else this.registerOrchestrationVersioned(def.name, def.version, def.fn)
      } else {
        throw new InvalidArgumentError(
          `register(): argument ${i} is ${describe(def)}, not an activity or orchestration definition (events, status and keys need no registration)`,
        )
      }
    })
    return this
  }

  /** Resolves once dispatching has begun. */
  async start() {
    this.#starting = call(() =>
      this.#native.start(
        (c) => this.#orchestrationStep(c),
        (id) => drop(this.#generators, id),
        (c) => this.#activityStart(c).then(
          (outcome) => c.context.complete(outcome),
          (err) => c.context.complete(bridgeFailure(c, err)),
        ),
        (id) => this.#activityCancel(id),
        (e) => this.#events.dispatch(e),
      ),
    )
    await this.#starting
  }

  /** Subscribes to guard events: 'poison' | 'lockLost' | 'livelock' | 'unregistered'. Returns the runtime. */
  on(event, listener) {
    this.#events.on(event, listener)
    return this
  }

  /** Removes a listener added with `on()`. Returns the runtime. */
  off(event, listener) {
    this.#events.off(event, listener)
    return this
  }

  /**
   * `{ status: 'ok' | 'degraded', reasons: string[] }` from the guard's recent counters,
   * with `fastPaths` (the provider's report) as a non-enumerable property: applications
   * compare `health()` to `{ status, reasons }` whole, and keep doing so.
   */
  health() {
    const { fastPaths, ...health } = this.#native.health()
    return Object.defineProperty(health, 'fastPaths', { value: fastPaths, enumerable: false })
  }

  /** Stops fetching, lets in-flight work finish for at most `timeoutMs`, returns once drained. */
  async shutdown(timeoutMs) {
    if (timeoutMs !== undefined) number('timeoutMs', timeoutMs)
    // A shutdown issued right after start() stops what that start starts.
    if (this.#starting) await this.#starting.catch(() => {})
    await call(() => this.#native.shutdown(timeoutMs))
    for (const ctx of [...this.#activityContexts.values()]) ctx[abort](new Error('runtime shut down'))
    this.#activityContexts.clear()
    this.#generators.clear()
  }

  /** Counters of the runtime, or null before start. */
  metricsSnapshot() {
    return this.#native.metricsSnapshot() ?? null
  }

  /**
   * Prometheus text exposition: duroxide's metrics (process-wide) and this
   * runtime's guard counters and fetch latencies (`duroxide_node_*`).
   */
  metricsText() {
    return this.#native.metricsText()
  }

  /** Every option as handed to duroxide, defaults filled in. */
  effectiveOptions() {
    return this.#native.effectiveOptions()
  }

  /** @internal See `replayBridge`. */
  [replayBridge]() {
    const generators = new Invocations()
    return {
      native: this.#native,
      orchestrationStep: (c) => this.#orchestrationStep(c, generators),
      orchestrationDispose: (id) => drop(generators, id),
    }
  }

  // ---- orchestration bridge --------------------------------------------------
  #orchestrationStep(c, generators = this.#generators) {
    try {
      if (c.start) return this.#startGenerator(c.invocation, c.start, generators)
      const entry = generators.get(c.invocation)
      if (!entry) return { throw: `internal: no generator for invocation ${c.invocation}` }
      let value
      try {
        // The task yielded last decides what its outcome evaluates to.
        value = entry.task ? entry.task.settle(c.outcome) : decodeOutcome(c.outcome)
      } catch (err) {
        return this.#advance(c.invocation, entry, () => entry.iterator.throw(err), generators)
      }
      return this.#advance(c.invocation, entry, () => entry.iterator.next(value), generators)
    } catch (err) {
      return { throw: `internal bridge error: ${messageOf(err)}` }
    }
  }

  #startGenerator(invocation, s, generators) {
    const versions = this.#orchestrations.get(s.orchestrationName)
    const fn = versions && versions.get(s.orchestrationVersion)
    if (!fn) {
      return { throw: `orchestration '${s.orchestrationName}' version ${s.orchestrationVersion} has no function on this runtime` }
    }
    const ctx = new OrchestrationContext(s.context, s)
    const who = `orchestration '${s.orchestrationName}'`
    let iterator
    const entry = { iterator: null, who, task: null, step: this.#mistakes.step(s) }
    try {
      iterator = entry.step.run(() => fn(ctx, decode(s.input)))
    } catch (err) {
      return { throw: encodeFailure(who, err) }
    }
    if (!isIterator(iterator)) {
      if (iterator && typeof iterator.then === 'function') {
        iterator.then(undefined, () => {}) // an async function's rejection must not go unhandled
        return { throw: `orchestration '${s.orchestrationName}' must be a generator function (function*), not an async function` }
      }
      return { throw: `orchestration '${s.orchestrationName}' must be a generator function (function*); it returned ${describe(iterator)}` }
    }
    entry.iterator = iterator
    generators.set(invocation, entry)
    return this.#advance(invocation, entry, () => iterator.next(), generators)
  }

  #advance(invocation, entry, step, generators) {
    let r
    try {
      r = entry.step.run(step)
    } catch (err) {
      drop(generators, invocation)
      entry.step.finished()
      return { throw: encodeFailure(entry.who, err) }
    }
    if (r.done) {
      drop(generators, invocation)
      const returnedTask = r.value instanceof Task
      if (returnedTask) consume(r.value) // reported below, not also as a dropped task
      entry.step.finished()
      if (returnedTask) {
        return {
          throw: `${entry.who} returned a task (${r.value.descriptor.kind}) instead of its result; did you mean \`return yield ...\`?`,
        }
      }
      try {
        return { return: encode(r.value, 'orchestration result') }
      } catch (err) {
        return { throw: err.message }
      }
    }
    if (!(r.value instanceof Task)) {
      drop(generators, invocation)
      return {
        throw: `orchestration yielded ${describe(r.value)}, which is not a task; yield a task from ctx (scheduleActivity, scheduleTimer, waitForEvent, all, race, ...)`,
      }
    }
    entry.task = r.value
    entry.step.yielded(r.value)
    // The execution ends at continue-as-new without the generator returning:
    // an eternal orchestration's dropped tasks are reported here or never.
    if (r.value.descriptor.kind === 'continueAsNew') entry.step.finished()
    return { yield: r.value.descriptor }
  }

  // ---- activity bridge ---------------------------------------------------------
  async #activityStart(c) {
    const fn = this.#activities.get(c.activityName)
    if (!fn) return { err: `activity '${c.activityName}' has no function on this runtime` }
    try {
      const ctx = new ActivityContext(c.context, c, this.#makeClient)
      this.#activityContexts.set(c.invocation, ctx)
      let result
      try {
        result = await fn(ctx, decode(c.input))
      } catch (err) {
        return { err: encodeFailure(`activity '${c.activityName}'`, err) }
      }
      try {
        return { ok: encode(result, `result of activity '${c.activityName}'`) }
      } catch (err) {
        return { err: err.message }
      }
    } catch (err) {
      return bridgeFailure(c, err)
    } finally {
      this.#activityContexts.delete(c.invocation)
    }
  }

  /** An activity's `ctx.getClient()`: a Client on this runtime's provider, with its payload limit. */
  #makeClient = () => {
    const { Client } = require('./client')
    return new Client(this.#provider, { maxPayloadBytes: this.#native.effectiveOptions().maxPayloadBytes })
  }

  #activityCancel(invocation) {
    const ctx = this.#activityContexts.get(invocation)
    if (ctx) ctx[abort]()
  }
}

// Typed aliases: identical behaviour (payloads are JSON either way).
Runtime.prototype.registerActivityTyped = Runtime.prototype.registerActivity
Runtime.prototype.registerOrchestrationTyped = Runtime.prototype.registerOrchestration
Runtime.prototype.registerOrchestrationVersionedTyped = Runtime.prototype.registerOrchestrationVersioned

module.exports = { Runtime, replayBridge }
