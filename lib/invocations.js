'use strict'
// Invocations: what the JS side keeps per native invocation number (a
// generator between turns, an activity's context while it runs), in a table
// that stops allocating once it has grown to the most entries held at once.
//
// Why not a Map: a Map that holds a few entries while entries come and go
// (each hello adds and removes one of each) rehashes on nearly every `set`
// (V8 counts the deleted slots against its capacity of 4) and again when a
// `delete` empties it, into a new backing table each time. Once the Map is
// in the old generation, each dead table, promoted before it was replaced,
// still points at the one that replaced it and at the entries it held, so
// every table and the generators in them survived the young collections
// until the next full one. In a run of 10,000 hellos that was most of what
// survived, and what made V8 double its young generation.
//
// Open addressing with linear probing; invocation numbers come from a
// counter, so consecutive ones land in consecutive slots. A removal shifts
// the run after it back (no tombstones), and the table never shrinks.

const EMPTY = -1
const INITIAL_CAPACITY = 16

class Invocations {
  #keys = new Float64Array(INITIAL_CAPACITY).fill(EMPTY)
  #values = new Array(INITIAL_CAPACITY).fill(undefined)
  #mask = INITIAL_CAPACITY - 1
  size = 0

  /** Slots in the table; it grows while more than half would be taken, and never shrinks. */
  get capacity() {
    return this.#keys.length
  }

  /** The slot holding `invocation`, or -1. */
  #find(invocation) {
    for (let i = invocation & this.#mask; ; i = (i + 1) & this.#mask) {
      const key = this.#keys[i]
      if (key === invocation) return i
      if (key === EMPTY) return -1
    }
  }

  get(invocation) {
    const i = this.#find(invocation)
    return i < 0 ? undefined : this.#values[i]
  }

  set(invocation, value) {
    let i = this.#find(invocation)
    if (i < 0) {
      // Kept at most half full, so a probe finds an empty slot within a few.
      if (2 * (this.size + 1) > this.#keys.length) this.#grow()
      i = invocation & this.#mask
      while (this.#keys[i] !== EMPTY) i = (i + 1) & this.#mask
      this.#keys[i] = invocation
      this.size++
    }
    this.#values[i] = value
    return this
  }

  delete(invocation) {
    let hole = this.#find(invocation)
    if (hole < 0) return false
    // Moves back each later entry of the run that may sit in the hole: one
    // whose home slot is not cyclically within (hole, j].
    for (let j = (hole + 1) & this.#mask; this.#keys[j] !== EMPTY; j = (j + 1) & this.#mask) {
      const home = this.#keys[j] & this.#mask
      const stays = hole < j ? home > hole && home <= j : home > hole || home <= j
      if (stays) continue
      this.#keys[hole] = this.#keys[j]
      this.#values[hole] = this.#values[j]
      hole = j
    }
    this.#keys[hole] = EMPTY
    this.#values[hole] = undefined
    this.size--
    return true
  }

  /** The values, in no particular order. */
  *values() {
    for (let i = 0; i < this.#keys.length; i++) if (this.#keys[i] !== EMPTY) yield this.#values[i]
  }

  clear() {
    this.#keys.fill(EMPTY)
    this.#values.fill(undefined)
    this.size = 0
  }

  #grow() {
    const keys = this.#keys
    const values = this.#values
    this.#keys = new Float64Array(2 * keys.length).fill(EMPTY)
    this.#values = new Array(2 * keys.length).fill(undefined)
    this.#mask = 2 * keys.length - 1
    this.size = 0
    for (let i = 0; i < keys.length; i++) if (keys[i] !== EMPTY) this.set(keys[i], values[i])
  }
}

module.exports = { Invocations }
