'use strict'
// Argument checks shared by the public classes: each names the argument.
const { InvalidArgumentError, describe } = require('./errors')

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

// semver.org's reference pattern: what the Rust `semver` crate accepts.
const SEMVER = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$/

function semverString(name, value) {
  nonEmptyString(name, value)
  if (!SEMVER.test(value)) {
    throw new InvalidArgumentError(`${name} '${value}' is not a semver version (for example '1.2.0')`)
  }
  return value
}

/** Instance ids chosen by the caller may not look like generated sub-orchestration ids. */
function rootInstanceId(name, value) {
  nonEmptyString(name, value)
  if (value.startsWith('sub::') || value.includes('::sub::')) {
    throw new InvalidArgumentError(`${name} '${value}' uses the reserved 'sub::' marker of generated sub-orchestration ids`)
  }
  return value
}

module.exports = { nonEmptyString, optionalString, nonNegativeNumber, func, semverString, rootInstanceId }
