'use strict'
// The runtime's per-invocation table (lib/invocations.js): it answers like a
// Map, stops allocating once grown, and so a runtime's young collections no
// longer keep a chain of dead Map tables and the generators in them.
const test = require('node:test')
const assert = require('node:assert/strict')
const os = require('node:os')
const path = require('node:path')
const fs = require('node:fs')
const { execFileSync } = require('node:child_process')
const { Invocations } = require('../lib/invocations')

/** A small deterministic PRNG, so a failure replays. */
function prng(seed) {
  let s = seed >>> 0
  return () => {
    s = (s + 0x6d2b79f5) >>> 0
    let t = s
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

function assertSame(table, model, what) {
  assert.equal(table.size, model.size, `${what}: size`)
  for (const [k, v] of model) assert.equal(table.get(k), v, `${what}: get(${k})`)
  assert.deepEqual([...table.values()].sort(), [...model.values()].sort(), `${what}: values()`)
}

test('invocations answer like a Map under random sets and deletes, colliding and u32-sized numbers included', () => {
  for (const seed of [1, 2, 3, 4, 5]) {
    const random = prng(seed)
    const table = new Invocations()
    const model = new Map()
    // Numbers 64 apart share their home slot until the table has 128 slots;
    // the top of the u32 range is where `&` and a double key could disagree.
    const pool = []
    for (let i = 0; i < 40; i++) pool.push(i * 64, 1000 + i, 4294967295 - i, 2147483648 + i * 16)
    for (let op = 0; op < 20000; op++) {
      const key = pool[Math.floor(random() * pool.length)]
      const r = random()
      if (r < 0.5) {
        const value = `v${op}`
        assert.equal(table.set(key, value), table)
        model.set(key, value)
      } else if (r < 0.95) {
        assert.equal(table.delete(key), model.delete(key), `seed ${seed} op ${op}: delete(${key})`)
      } else {
        assert.equal(table.get(key), model.get(key), `seed ${seed} op ${op}: get(${key})`)
      }
      if (op % 997 === 0) assertSame(table, model, `seed ${seed} op ${op}`)
    }
    assertSame(table, model, `seed ${seed} end`)
    table.clear()
    assert.equal(table.size, 0)
    assert.deepEqual([...table.values()], [])
    assert.equal(table.get(pool[0]), undefined)
  }
})

test('invocations keep their slots once grown: entries that come and go allocate no new table', () => {
  const table = new Invocations()
  // Up to 40 at once, as 4 orchestration slots with a cache of waiting generators would hold.
  for (let id = 0; id < 40; id++) table.set(id, { id })
  const grown = table.capacity
  let next = 40
  for (let round = 0; round < 20000; round++) {
    assert.ok(table.delete(next - 40))
    table.set(next, { id: next })
    next++
  }
  assert.equal(table.size, 40)
  assert.equal(table.capacity, grown)
  for (let id = next - 40; id < next; id++) assert.deepEqual(table.get(id), { id })
})

test('regression: a runtime no longer keeps young objects alive through dead Map tables (about 300 bytes per hello orchestration kept, now under 150)', { timeout: 240000 }, (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dx-survivors-'))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  const count = 1500
  const out = execFileSync(process.execPath, [path.join(__dirname, 'fixtures', 'young-survivors.js'), path.join(dir, 'store.db'), String(count)], {
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  })
  let kept = 0
  let scavenges = 0
  for (const line of out.split('\n')) {
    if (!/ gc=s /.test(line)) continue
    scavenges++
    const promoted = /\bpromoted=(\d+)/.exec(line)
    const survived = /\bnew_space_survived=(\d+)/.exec(line)
    assert.ok(promoted && survived, `a young collection's line without promoted= and new_space_survived=: ${line.slice(0, 200)}`)
    kept += Number(promoted[1]) + Number(survived[1])
  }
  assert.ok(scavenges >= 3, `only ${scavenges} young collections in ${count} orchestrations: nothing measured`)
  const perOrchestration = kept / count
  t.diagnostic(`${scavenges} young collections kept ${kept} bytes, ${perOrchestration.toFixed(0)} per orchestration`)
  assert.ok(perOrchestration < 150, `young collections kept ${perOrchestration.toFixed(0)} bytes per orchestration`)
})
