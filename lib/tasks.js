'use strict'
// Tasks: what an orchestration generator yields. A Task holds the descriptor
// that crosses to Rust (src/bridge/tasks.rs) and decodes the outcome that
// comes back.
const { InvalidArgumentError, describe } = require('./errors')
const { decode } = require('./json')

class Task {
  /** @internal */
  constructor(descriptor) {
    this.descriptor = descriptor
  }

  /**
   * Routes an activity to workers whose tag filter accepts `tag`.
   * One tag per activity.
   */
  withTag(tag) {
    if (this.descriptor.kind !== 'activity') {
      throw new InvalidArgumentError(`withTag() applies to activity tasks only, not to a ${this.descriptor.kind} task`)
    }
    if (typeof tag !== 'string' || tag.length === 0) {
      throw new InvalidArgumentError(`tag must be a non-empty string, got ${describe(tag)}`)
    }
    if (this.descriptor.retry) {
      throw new InvalidArgumentError('withTag() cannot be combined with a retry policy (duroxide retries are untagged)')
    }
    if (this.descriptor.tag !== undefined) {
      throw new InvalidArgumentError(`activity '${this.descriptor.name}' already has tag '${this.descriptor.tag}'; one tag per activity`)
    }
    return new Task({ ...this.descriptor, tag })
  }
}

/**
 * Decodes an outcome from Rust into the value a `yield` evaluates to; throws
 * an Error carrying the failure message.
 */
function decodeOutcome(outcome) {
  if ('ok' in outcome) return decode(outcome.ok)
  if ('err' in outcome) throw new Error(outcome.err)
  if ('all' in outcome) {
    return outcome.all.map((o) => {
      try {
        return { ok: decodeOutcome(o) }
      } catch (err) {
        return { err: err.message }
      }
    })
  }
  if ('race' in outcome) {
    return { index: outcome.race.index, value: decodeOutcome(outcome.race.outcome) }
  }
  throw new Error(`unknown task outcome ${JSON.stringify(outcome)}`)
}

function descriptorsOf(what, tasks) {
  if (!Array.isArray(tasks)) throw new InvalidArgumentError(`${what} expects tasks, got ${describe(tasks)}`)
  return tasks.map((t, i) => {
    if (!(t instanceof Task)) {
      throw new InvalidArgumentError(`${what}: element ${i} is ${describe(t)}, not a task`)
    }
    return t.descriptor
  })
}

module.exports = { Task, decodeOutcome, descriptorsOf }
