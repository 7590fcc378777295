'use strict'
// Tasks: what an orchestration generator yields. A Task holds the descriptor
// that crosses to Rust (src/bridge/tasks.rs) and decodes the outcome that
// comes back. Rust judges the descriptor when the task is made (the same check
// it runs at `yield`), so a bad argument throws at the call that made it.
const native = require('./native')
const { InvalidArgumentError, describe, sync } = require('./errors')
const { identifier } = require('./validate')
// Outcomes decode in lib/failure.js (failed tasks throw structured errors).
const { decodeOutcome } = require('./failure')

// The generator step running now (lib/mistakes.js), which notes the tasks
// it creates so one never yielded can be reported; null outside steps.
let currentStep = null
function setCurrentStep(step) {
  const previous = currentStep
  currentStep = step
  return previous
}
const CONSUMED = Symbol('consumed')
/** The task was yielded, or handed to all/race. */
function consume(task) {
  task[CONSUMED] = true
  if (currentStep) currentStep.forget(task)
}
function isConsumed(task) {
  return task[CONSUMED] === true
}

/** What a task is, for messages: `activity 'Charge'`, `timer`, ... */
function taskLabel(descriptor) {
  return descriptor.name !== undefined ? `${descriptor.kind} '${descriptor.name}'` : descriptor.kind
}

class Task {
  /**
   * @internal `maxPayloadBytes`: the runtime's limit on the inputs this task
   * carries (`OrchestrationContext` passes it); without it the inputs were
   * judged when their tasks were made (the tasks of a join).
   */
  constructor(descriptor, maxPayloadBytes) {
    sync(() => native.validateTask(descriptor, maxPayloadBytes))
    this.descriptor = descriptor
    if (currentStep) currentStep.created(this)
  }

  /** A task is not its result: `${ctx.newGuid()}` would read '[object Object]'. */
  toString() {
    throw new InvalidArgumentError(
      `a ${taskLabel(this.descriptor)} task is not its result; yield it first (\`const value = yield task\`) and use the value`,
    )
  }

  [Symbol.toPrimitive]() {
    return this.toString()
  }

  /** The worker tag of an activity task (`undefined` when untagged or not an activity). */
  get tag() {
    return this.descriptor.tag
  }

  /**
   * Routes an activity to workers whose tag filter accepts `tag`. One tag per
   * activity. Sets the tag on this task and returns it, so it chains.
   */
  withTag(tag) {
    if (this.descriptor.kind !== 'activity') {
      throw new InvalidArgumentError(`withTag() applies to activity tasks only, not to a ${this.descriptor.kind} task`)
    }
    identifier('tag', tag)
    if (this.descriptor.tag !== undefined) {
      throw new InvalidArgumentError(`activity '${this.descriptor.name}' already has tag '${this.descriptor.tag}'; one tag per activity`)
    }
    sync(() => native.validateTask({ ...this.descriptor, tag }))
    this.descriptor.tag = tag
    return this
  }

  /**
   * The value this task's outcome evaluates to in the generator (the driver
   * calls it with the outcome from Rust); throws for a failure.
   */
  settle(outcome) {
    return decodeOutcome(outcome, this.descriptor)
  }

  /**
   * `yield* task` yields this one task and evaluates to its result, so
   * TypeScript infers the result from the task's type (a plain `yield` is
   * `any`). The driver sees the same single task either way.
   */
  *[Symbol.iterator]() {
    return yield this
  }
}

/**
 * `ctx.join()`: an `all` whose result is the tasks' values in order; the
 * first failure in task order is thrown as that task alone would throw it,
 * once every task has finished.
 */
class JoinTask extends Task {
  settle(outcome) {
    if (!outcome || !Array.isArray(outcome.all)) return decodeOutcome(outcome, this.descriptor)
    return outcome.all.map((o, i) => decodeOutcome(o, this.descriptor.tasks?.[i], i))
  }
}

function descriptorsOf(what, tasks) {
  if (!Array.isArray(tasks)) throw new InvalidArgumentError(`${what} expects tasks, got ${describe(tasks)}`)
  return tasks.map((t, i) => {
    if (!(t instanceof Task)) {
      throw new InvalidArgumentError(`${what}: element ${i} is ${describe(t)}, not a task`)
    }
    consume(t)
    return t.descriptor
  })
}

module.exports = { Task, JoinTask, decodeOutcome, descriptorsOf, setCurrentStep, consume, isConsumed, taskLabel }
