'use strict'
// Runs store reads a few at a time: one per item would be slow on a large
// store, all at once would queue on the CLI's two connections anyway.

/** Maps `items` through async `fn`, at most `width` at a time, keeping order. */
async function mapLimited(items, width, fn) {
  const out = new Array(items.length)
  let next = 0
  const worker = async () => {
    while (next < items.length) {
      const i = next++
      out[i] = await fn(items[i], i)
    }
  }
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, worker))
  return out
}

module.exports = { mapLimited }
