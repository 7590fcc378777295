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

module.exports = { nonEmptyString, optionalString, nonNegativeNumber, func }
