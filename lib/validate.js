'use strict'
// Type checks shared by the public classes: each names the argument. They
// check only what napi could not convert (or would convert without naming the
// argument); the rules for the values themselves (ids, names, versions,
// durations, statuses) live in src/rules.rs and are judged there.
const native = require('./native')
const { InvalidArgumentError, describe, sync } = require('./errors')

function string(name, value) {
  if (typeof value !== 'string') throw new InvalidArgumentError(`${name} must be a string, got ${describe(value)}`)
  return value
}

/**
 * A finite number, or `fallback` when absent. Anything else would become an
 * unnamed conversion error (task descriptors cross as JSON, which has no NaN
 * or Infinity).
 */
function number(name, value, fallback) {
  if (value === undefined || value === null) {
    if (fallback !== undefined) return fallback
  } else if (typeof value === 'number' && Number.isFinite(value)) {
    return value
  }
  throw new InvalidArgumentError(`${name} must be a finite number, got ${describe(value)}`)
}

/**
 * A string that names something (an id, a name, a key, a tag): the type here,
 * the identifier rule in src/rules.rs. napi would replace an unpaired
 * surrogate with U+FFFD before Rust saw it, so that two ids would name one
 * instance; a string that is not well formed goes to Rust as UTF-16, whose
 * rule refuses it.
 */
function identifier(name, value) {
  string(name, value)
  if (!value.isWellFormed()) sync(() => native.checkIdentifier(name, value))
  return value
}

/**
 * A name given once and used for good (a typed definition's, a CLI
 * argument's): the whole identifier rule of src/rules.rs, run now.
 */
function checkedIdentifier(name, value) {
  string(name, value)
  sync(() => native.checkIdentifier(name, value))
  return value
}

/** Text stored as given (custom status, KV string values, reasons): well formed, as `identifier`; U+0000 is refused in Rust. */
function text(name, value) {
  string(name, value)
  if (!value.isWellFormed()) sync(() => native.checkText(name, value))
  return value
}

function nonEmptyString(name, value) {
  if (typeof value !== 'string' || value.length === 0) {
    throw new InvalidArgumentError(`${name} must be a non-empty string, got ${describe(value)}`)
  }
  return value
}

function optionalString(name, value) {
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'string') throw new InvalidArgumentError(`${name} must be a string, got ${describe(value)}`)
  return value
}

function nonNegativeNumber(name, value, fallback) {
  if (value === undefined || value === null) return fallback
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new InvalidArgumentError(`${name} must be a non-negative number, got ${describe(value)}`)
  }
  return value
}

function func(name, value) {
  if (typeof value !== 'function') throw new InvalidArgumentError(`${name} must be a function, got ${describe(value)}`)
  return value
}

module.exports = { string, number, identifier, checkedIdentifier, text, nonEmptyString, optionalString, nonNegativeNumber, func }
