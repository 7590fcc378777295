'use strict'
// The payload convention: user values cross the boundary as JSON strings.
// `undefined` is sent as null; a string that is not JSON comes back as itself.
const { InvalidArgumentError, describe } = require('./errors')

/** JSON-encodes a user value; `what` names the argument in the error. */
function encode(value, what) {
  let text
  try {
    text = JSON.stringify(value === undefined ? null : value)
  } catch (err) {
    throw new InvalidArgumentError(`${what} cannot be encoded as JSON: ${err.message}`, { cause: err })
  }
  if (text === undefined) {
    throw new InvalidArgumentError(`${what} cannot be encoded as JSON (got ${describe(value)})`)
  }
  return text
}

/** Parses a payload; a string that is not JSON is returned as is. */
function decode(text) {
  if (text === undefined || text === null) return text
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

module.exports = { encode, decode }
