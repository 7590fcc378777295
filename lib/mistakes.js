'use strict'
// Mistakes in orchestration code, caught at the step that makes them:
// - a task created and never yielded (reported when its generator ends);
// - `Date.now()`, `new Date()` and `Math.random()` while a generator step
//   runs (`determinismGuard`: 'warn' | 'throw' | 'off').
// Each is reported once per orchestration name (and call kind) per runtime,
// through the runtime's log (src/bridge/mistakes.rs), never stdout.
//
// The guard patches the globals only while a step of this runtime runs and
// restores them when it returns, so code outside steps (activities, the
// application) runs on the untouched globals at no cost; with two runtimes,
// the one running the step decides.
const native = require('./native')
const { NondeterministicError } = require('./errors')
const { setCurrentStep, consume, isConsumed, taskLabel } = require('./tasks')

const RealDate = Date
const realNow = Date.now
const realRandom = Math.random

const REPLACEMENT = {
  'Date.now()': '`yield ctx.utcNow()`',
  'new Date()': '`new Date(yield ctx.utcNow())`',
  'Math.random()': '`yield ctx.newGuid()` (or a value passed in as input)',
}

class Mistakes {
  #mode
  #reported = new Set() // `${orchestration name}\0${kind}`
  #running = null // the StepScope whose step runs now
  #GuardedDate
  #guardedNow
  #guardedRandom

  constructor(mode) {
    this.#mode = mode
    const report = (kind) => this.#running?.nondeterministic(kind)
    this.#guardedNow = function now() {
      report('Date.now()')
      return realNow.call(RealDate)
    }
    this.#guardedRandom = function random() {
      report('Math.random()')
      return realRandom()
    }
    const guarded = new Proxy(RealDate, {
      construct(target, args, newTarget) {
        if (args.length === 0) report('new Date()')
        // `new Date()` reaches here with the proxy as newTarget; subclasses keep theirs.
        return Reflect.construct(target, args, newTarget === guarded ? target : newTarget)
      },
      apply(target, self, args) {
        report('new Date()') // `Date()` is the current time as a string
        return Reflect.apply(target, self, args)
      },
    })
    this.#GuardedDate = guarded
  }

  /** The scope of one generator (`s` is the start call: instanceId, orchestrationName). */
  step(s) {
    return new StepScope(this, s.instanceId, s.orchestrationName)
  }

  /** Once per (orchestration name, kind): true the first time. */
  first(name, kind) {
    const key = `${name}\0${kind}`
    if (this.#reported.has(key)) return false
    this.#reported.add(key)
    return true
  }

  /** Runs `fn` as a step of `scope`: tasks it creates are noted, the globals guarded. */
  run(scope, fn) {
    const previousStep = setCurrentStep(scope)
    const previousScope = this.#running
    this.#running = scope
    const guard = this.#mode !== 'off'
    const saved = guard ? [globalThis.Date, RealDate.now, Math.random] : null
    if (guard) {
      globalThis.Date = this.#GuardedDate
      RealDate.now = this.#guardedNow
      Math.random = this.#guardedRandom
    }
    try {
      return fn()
    } finally {
      if (guard) [globalThis.Date, RealDate.now, Math.random] = saved
      this.#running = previousScope
      setCurrentStep(previousStep)
    }
  }

  get mode() {
    return this.#mode
  }
}

class StepScope {
  #owner
  // Tasks created and not yet yielded nor handed to all/race: the latest in
  // `#last` (most tasks are yielded right after they are made), the others
  // in `#pending`, made when needed (a Set: a generator may create thousands
  // up front and yield them one by one). A Set per generator was a tenth of
  // what a hello orchestration allocated.
  #last = null
  #pending = null

  constructor(owner, instanceId, name) {
    this.#owner = owner
    this.instanceId = instanceId
    this.name = name
  }

  run(fn) {
    return this.#owner.run(this, fn)
  }

  /** Called by the Task constructor during a step. */
  created(task) {
    if (this.#last !== null) (this.#pending ??= new Set()).add(this.#last)
    this.#last = task
  }

  /** Called by `consume` during a step (all/race took the task). */
  forget(task) {
    if (task === this.#last) this.#last = null
    else if (this.#pending !== null) this.#pending.delete(task)
  }

  /** The step yielded `task`. */
  yielded(task) {
    consume(task)
    this.forget(task)
  }

  /** The generator ended (or continued as new): what it created and never yielded was dropped. */
  finished() {
    if (this.#last === null && (this.#pending === null || this.#pending.size === 0)) return
    const created = this.#pending === null ? [] : [...this.#pending]
    if (this.#last !== null) created.push(this.#last)
    const dropped = created.filter((t) => !isConsumed(t))
    this.#last = null
    this.#pending = null
    if (dropped.length === 0 || !this.#owner.first(this.name, 'dropped task')) return
    const shown = dropped.slice(0, 3).map((t) => taskLabel(t.descriptor)).join(', ')
    this.#warn(
      `orchestration '${this.name}' (instance '${this.instanceId}') created ${dropped.length} task(s) it never yielded ` +
        `(${shown}${dropped.length > 3 ? ', ...' : ''}); a task does nothing until it is yielded: ` +
        '`yield` it, or pass it to ctx.all()/ctx.race()',
    )
  }

  /** `Date.now()` and friends inside the step. */
  nondeterministic(kind) {
    const throws = this.#owner.mode === 'throw'
    // Checked first: a loop calling Date.now() pays for one message, not one per call.
    if (!throws && !this.#owner.first(this.name, kind)) return
    const message =
      `orchestration '${this.name}' (instance '${this.instanceId}') called ${kind} in orchestration code, ` +
      `which returns a different value when the orchestration replays; use ${REPLACEMENT[kind]} instead`
    if (throws) throw new NondeterministicError(message)
    this.#warn(message)
  }

  #warn(message) {
    native.warnMistake(this.instanceId, this.name, message)
  }
}

module.exports = { Mistakes }
