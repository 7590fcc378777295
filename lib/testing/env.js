'use strict'
// TestEnv: a runtime and client on a private in-memory SQLite store whose
// provider stack carries a virtual clock (src/testing/). Timers wait for
// virtual time, which advance() and skipTime() move once nothing else can
// run; mockActivity() swaps activity functions. docs/testing.md says what
// virtual time covers and what it cannot fake.
const native = require('../native')
const { SqliteProvider } = require('../providers')
const { Runtime } = require('../runtime')
const { Client } = require('../client')
const { InvalidOptionError, InvalidArgumentError, RuntimeStateError, call, sync, describe } = require('../errors')
const { string, func } = require('../validate')
const { ActivityDefinition } = require('../definitions')

const DEFAULT_IDLE_TIMEOUT_MS = 30_000

/**
 * The runtime of a TestEnv: every activity is registered as a stand-in that
 * calls the mock of its name if there is one, else the registered function,
 * so a mock may come before or after the registration it replaces.
 */
class TestRuntime extends Runtime {
  #mocks
  #functions = new Map() // name -> registered function
  #standIns = new Set() // names registered natively

  constructor(provider, options, mocks) {
    super(provider, options)
    this.#mocks = mocks
  }

  registerActivity(name, fn) {
    string('name', name)
    func('activity', fn)
    // A second registration of a name is refused by the native runtime, as
    // on a plain Runtime; a mock alone is not a registration.
    if (!this.#standIns.has(name) || this.#functions.has(name)) this.#registerStandIn(name)
    this.#functions.set(name, fn)
    return this
  }

  /** Registers the stand-in of a mocked activity nothing registered. */
  _mocked(name) {
    if (!this.#standIns.has(name)) this.#registerStandIn(name)
  }

  #registerStandIn(name) {
    const mocks = this.#mocks
    const functions = this.#functions
    super.registerActivity(name, function standIn(ctx, input) {
      const fn = mocks.get(name) ?? functions.get(name)
      return fn(ctx, input)
    })
    this.#standIns.add(name)
  }
}
TestRuntime.prototype.registerActivityTyped = TestRuntime.prototype.registerActivity

function checkOptions(options) {
  if (options === undefined || options === null) return {}
  if (typeof options !== 'object' || Array.isArray(options)) {
    throw new InvalidOptionError(`TestEnv.create options must be an object, got ${describe(options)}`)
  }
  const known = ['runtimeOptions', 'idleTimeoutMs', 'logLevel']
  for (const key of Object.keys(options)) {
    if (!known.includes(key)) {
      throw new InvalidOptionError(`TestEnv.create: unknown option '${key}' (known: ${known.join(', ')})`)
    }
  }
  const { idleTimeoutMs } = options
  if (idleTimeoutMs !== undefined && (typeof idleTimeoutMs !== 'number' || !Number.isInteger(idleTimeoutMs) || idleTimeoutMs < 0)) {
    throw new InvalidOptionError(`idleTimeoutMs must be a non-negative integer number of milliseconds, got ${describe(idleTimeoutMs)}`)
  }
  if (options.logLevel !== undefined && options.runtimeOptions?.logLevel !== undefined) {
    throw new InvalidOptionError(
      `TestEnv.create: logLevel and runtimeOptions.logLevel both given ('${options.logLevel}', '${options.runtimeOptions.logLevel}'); give one`,
    )
  }
  return options
}

/**
 * A test's output is the test runner's: the runtime logs errors only unless
 * asked (`logLevel`, or `runtimeOptions.logLevel`).
 */
function runtimeOptionsOf({ runtimeOptions, logLevel }) {
  if (runtimeOptions?.logLevel !== undefined) return runtimeOptions
  return { ...runtimeOptions, logLevel: logLevel ?? 'error' }
}

class TestEnv {
  #store
  #mocks = new Map()
  #idleTimeoutMs
  #phase = 'created' // 'created' | 'started' | 'shutDown'

  /** @internal use TestEnv.create() */
  constructor(store, provider, runtime, client, mocks, idleTimeoutMs) {
    this.#store = store
    this.provider = provider
    this.runtime = runtime
    this.client = client
    this.#mocks = mocks
    this.#idleTimeoutMs = idleTimeoutMs
    Object.freeze(this)
  }

  /** A fresh environment; register on `env.runtime`, then `await env.start()`. */
  static async create(options) {
    const checked = checkOptions(options)
    const { idleTimeoutMs = DEFAULT_IDLE_TIMEOUT_MS } = checked
    const runtimeOptions = runtimeOptionsOf(checked)
    const store = await call(() => native.createTestStore())
    const provider = new SqliteProvider(sync(() => store.takeProvider()))
    const mocks = new Map()
    const runtime = new TestRuntime(provider, runtimeOptions, mocks)
    return new TestEnv(store, provider, runtime, new Client(provider), mocks, idleTimeoutMs)
  }

  /** Virtual now. */
  now() {
    return new Date(this.#store.nowMs())
  }

  /** Timers scheduled and not yet reached by virtual time. */
  pendingTimers() {
    return this.#store.pendingTimers()
  }

  /**
   * Runs `fn` instead of the activity named `activity` (a name or an
   * activity definition), registered or not (an unregistered one must be
   * mocked before start). Returns the environment.
   */
  mockActivity(activity, fn) {
    // A definition's name, so a typed mock is checked against what it replaces.
    const name = activity instanceof ActivityDefinition ? activity.name : activity
    string('name', name)
    func('mock', fn)
    this.#require(['created', 'started'], 'mockActivity')
    try {
      this.runtime._mocked(name)
    } catch (err) {
      if (err && err.code === 'ERR_RUNTIME_STATE') {
        throw new RuntimeStateError(
          `mockActivity('${name}'): '${name}' is not registered and the runtime has started; mock unregistered activities before env.start()`,
        )
      }
      throw err
    }
    this.#mocks.set(name, fn)
    return this
  }

  async start() {
    this.#require(['created'], 'start')
    await this.runtime.start()
    this.#phase = 'started'
  }

  /**
   * Moves virtual time forward by `duration` (ms, or text: '500ms', '30s',
   * '5m', '2h', '1d', '1h30m'), firing the timers it passes in due order, each
   * once nothing else can run. Resolves to the new virtual now.
   */
  async advance(duration) {
    this.#require(['started'], 'advance')
    if (typeof duration !== 'number' && typeof duration !== 'string') {
      throw new InvalidArgumentError(`duration must be a number of milliseconds or a string like '1d', got ${describe(duration)}`)
    }
    return new Date(await call(() => this.#store.advance(duration, this.#idleTimeoutMs)))
  }

  /**
   * Once nothing else can run, jumps virtual time to the earliest pending
   * timer and fires it (with any due at the same time), then waits until
   * nothing can run again. Resolves to the time jumped to, or null when no
   * timer was pending.
   */
  async skipTime() {
    this.#require(['started'], 'skipTime')
    const at = await call(() => this.#store.skipTime(this.#idleTimeoutMs))
    return at === null ? null : new Date(at)
  }

  /** Resolves once nothing can run: no queued message, nothing in flight. */
  async waitIdle() {
    this.#require(['started'], 'waitIdle')
    await call(() => this.#store.waitIdle(this.#idleTimeoutMs))
  }

  /** Shuts the runtime down and drops pending timers; safe to call twice. */
  async shutdown(timeoutMs) {
    if (this.#phase === 'shutDown') return
    const started = this.#phase === 'started'
    this.#phase = 'shutDown'
    if (started) await this.runtime.shutdown(timeoutMs)
    this.#store.close()
  }

  #require(phases, what) {
    if (phases.includes(this.#phase)) return
    const hint = {
      created: 'call env.start() first',
      started: 'it has already started',
      shutDown: 'the environment was shut down',
    }[this.#phase]
    throw new RuntimeStateError(`TestEnv.${what}: ${hint}`)
  }
}

module.exports = { TestEnv }
