'use strict'
// Typed definitions: a name bound to its function (activities,
// orchestrations) or to a payload type (events, custom status, KV keys). At
// run time they are small frozen objects; their value is in the types
// (types/definitions.d.ts), which tie every call site to what was defined.
// `runtime.register(...defs)` registers them through the string-named API.
const { InvalidArgumentError, describe } = require('./errors')
const { string, checkedIdentifier, func } = require('./validate')

const GeneratorFunction = Object.getPrototypeOf(function* () {}).constructor

/**
 * Orchestrations are generator functions; anything else (an async function,
 * a plain function) would fail every instance at its first turn, so it is
 * refused where it is registered or defined. Bound generator functions keep
 * their prototype.
 */
function generatorFunction(name, fn) {
  func('orchestration', fn)
  if (fn instanceof GeneratorFunction) return fn
  const kind = Object.getPrototypeOf(fn).constructor?.name === 'AsyncFunction' ? 'an async function' : describe(fn)
  throw new InvalidArgumentError(
    `orchestration '${name}' must be a generator function (function*), got ${kind}; orchestrations yield ctx tasks, they do not await`,
  )
}

class ActivityDefinition {
  constructor(name, fn) {
    this.name = name
    this.fn = fn
    Object.freeze(this)
  }
}

class OrchestrationDefinition {
  constructor(name, version, status, fn) {
    this.name = name
    /** The pinned version, or `undefined` for the default one. */
    this.version = version
    /** The StatusDefinition its custom status follows, or `undefined`. */
    this.status = status
    this.fn = fn
    Object.freeze(this)
  }
}

class EventDefinition {
  constructor(name) {
    this.name = name
    Object.freeze(this)
  }
}

/** Custom status as JSON of one shape. */
class StatusDefinition {
  /** Parses a custom status as read from a client (`null` stays `null`). */
  parse(raw) {
    if (raw === undefined || raw === null) return null
    return parseJson('custom status', raw)
  }
}

/** A KV key whose value is stored as JSON of one shape. */
class KeyDefinition {
  constructor(key) {
    this.key = key
    Object.freeze(this)
  }

  /** Parses a stored value as read from a client (`null` stays `null`). */
  parse(raw) {
    if (raw === undefined || raw === null) return null
    return parseJson(`KV value '${this.key}'`, raw)
  }
}

function parseJson(what, raw) {
  try {
    return JSON.parse(raw)
  } catch (err) {
    throw new InvalidArgumentError(`${what} is not JSON (was it set through the string API?): ${describe(raw)}`, { cause: err })
  }
}

function defineActivity(name, fn) {
  checkedIdentifier('name', name)
  func(`activity '${name}'`, fn)
  return new ActivityDefinition(name, fn)
}

/** `defineOrchestration(name, fn)` or `defineOrchestration(name, { version, status }, fn)`. */
function defineOrchestration(name, options, fn) {
  checkedIdentifier('name', name)
  if (fn === undefined && typeof options === 'function') {
    fn = options
    options = undefined
  }
  let version
  let status
  if (options !== undefined && options !== null) {
    if (typeof options !== 'object' || Array.isArray(options)) {
      throw new InvalidArgumentError(`defineOrchestration('${name}') options must be an object, got ${describe(options)}`)
    }
    for (const key of Object.keys(options)) {
      if (key !== 'version' && key !== 'status') {
        throw new InvalidArgumentError(`defineOrchestration('${name}') options.${key} is not an option (expected version, status)`)
      }
    }
    if (options.version !== undefined) version = string('options.version', options.version)
    if (options.status !== undefined) {
      if (!(options.status instanceof StatusDefinition)) {
        throw new InvalidArgumentError(`defineOrchestration('${name}') options.status must come from defineStatus(), got ${describe(options.status)}`)
      }
      status = options.status
    }
  }
  generatorFunction(name, fn)
  return new OrchestrationDefinition(name, version, status, fn)
}

function defineEvent(name) {
  return new EventDefinition(checkedIdentifier('name', name))
}

function defineStatus() {
  return Object.freeze(new StatusDefinition())
}

function defineKey(key) {
  if (typeof key !== 'string' || key.length === 0) {
    throw new InvalidArgumentError(`key must be a non-empty string, got ${describe(key)}`)
  }
  return new KeyDefinition(checkedIdentifier('key', key))
}

/** The definition argument of a typed call, or a clear error naming `what` was expected. */
function definition(Cls, what, arg, value) {
  if (value instanceof Cls) return value
  const hint = typeof value === 'string' ? ` (the string-named API takes names; this one takes what ${what}() returned)` : ''
  throw new InvalidArgumentError(`${arg} must be a definition from ${what}(), got ${describe(value)}${hint}`)
}

module.exports = {
  ActivityDefinition,
  OrchestrationDefinition,
  EventDefinition,
  StatusDefinition,
  KeyDefinition,
  defineActivity,
  defineOrchestration,
  defineEvent,
  defineStatus,
  defineKey,
  definition,
  generatorFunction,
}
