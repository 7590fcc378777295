'use strict'
// The orchestrations and activities every fault-test worker registers. Side
// effects are appended synchronously to one file per execution, so a process
// killed right after an effect still leaves its trace (at-least-once evidence).
const fs = require('node:fs')
const path = require('node:path')

/** Blocks the Node main thread, like a CPU-bound handler would. */
function busyWait(ms) {
  const end = Date.now() + ms
  while (Date.now() < end) {
    // spin
  }
}

function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms)
    if (signal) {
      signal.addEventListener('abort', () => {
        clearTimeout(timer)
        reject(new Error('aborted'))
      }, { once: true })
    }
  })
}

function effectFile(dir, instanceId, executionId) {
  return path.join(dir, `${encodeURIComponent(instanceId)}.${executionId}.log`)
}

/** Parses the effect lines of one execution: [{ i, k, p, t }]. */
function readEffects(dir, instanceId, executionId = 1) {
  const file = effectFile(dir, instanceId, executionId)
  if (!fs.existsSync(file)) return []
  return fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l))
}

/**
 * Registers the catalog on `rt`.
 * `env`: { effectsDir?, send(msg), codeVersion? ('v1' | 'v2'), seen: Set }.
 */
function register(rt, env) {
  const send = env.send || (() => {})
  const seen = env.seen || new Set()

  rt.registerActivity('Effect', async (ctx, input) => {
    const { key, ms = 0, announce = false } = input || {}
    if (env.effectsDir) {
      const line = JSON.stringify({ i: ctx.instanceId, k: key, p: process.pid, t: Date.now() })
      fs.appendFileSync(effectFile(env.effectsDir, ctx.instanceId, ctx.executionId), `${line}\n`)
    }
    if (announce) send({ type: 'activity', instanceId: ctx.instanceId, key, pid: process.pid, t: Date.now() })
    if (ms > 0) await sleep(ms, ctx.signal)
    return `${key}:done`
  })

  // Never resolves on its own; reports when its signal aborts.
  rt.registerActivity('Hang', async (ctx) => {
    send({ type: 'hang-start', instanceId: ctx.instanceId, t: Date.now() })
    ctx.signal.addEventListener('abort', () => {
      send({ type: 'aborted', instanceId: ctx.instanceId, cancelled: ctx.isCancelled(), t: Date.now() })
    }, { once: true })
    return new Promise(() => {})
  })

  rt.registerActivity('Echo', async (ctx, input) => input)
  rt.registerActivity('Size', async (ctx, n) => 'y'.repeat(n))

  // Sequential activities. `busyAt` (a step or a list of steps) blocks the main
  // thread inside the turn that schedules that step, once per process (replays
  // in the same process skip it).
  rt.registerOrchestration('Chain', function* (ctx, input) {
    const { n = 3, ms = 0, announceAt = -1, slowAt = -1, slowMs = 0, busyAt = -1, busyMs = 0 } = input || {}
    const busySteps = [].concat(busyAt)
    const out = []
    for (let k = 0; k < n; k++) {
      const key = `s${k}`
      if (busySteps.includes(k) && !seen.has(`${ctx.instanceId}:${key}`)) {
        seen.add(`${ctx.instanceId}:${key}`)
        send({ type: 'turn', instanceId: ctx.instanceId, key, pid: process.pid, t: Date.now() })
        busyWait(busyMs)
      }
      const step = { key, ms: k === slowAt ? slowMs : ms, announce: k === announceAt }
      out.push(yield ctx.scheduleActivity('Effect', step))
    }
    return out
  })

  rt.registerOrchestration('FanOut', function* (ctx, input) {
    const { n = 5, ms = 0 } = input || {}
    const tasks = []
    for (let k = 0; k < n; k++) tasks.push(ctx.scheduleActivity('Effect', { key: `f${k}`, ms }))
    const results = yield ctx.all(tasks)
    return results.map((r) => ('ok' in r ? r.ok : `ERR ${r.err}`))
  })

  rt.registerOrchestration('Hello', function* (ctx, name) {
    return yield ctx.scheduleActivity('Effect', { key: `hello-${name}` })
  })

  // Waits for its event, then echoes it through an activity.
  // The mailbox keeps a message sent before the wait (a raised event that
  // arrives before its waitForEvent is dropped, duroxide's one-shot semantics).
  rt.registerOrchestration('AwaitGo', function* (ctx) {
    const data = yield ctx.dequeueEvent('go')
    return yield ctx.scheduleActivity('Echo', data)
  })

  rt.registerOrchestration('Timed', function* (ctx, input) {
    yield ctx.scheduleTimer(input.ms)
    return yield ctx.scheduleActivity('Effect', { key: 'after-timer' })
  })

  rt.registerOrchestration('Child', function* (ctx, input) {
    yield ctx.scheduleActivity('Effect', { key: `c${input.c}` })
    return `child-${input.c}`
  })

  rt.registerOrchestration('Parent', function* (ctx, input) {
    const tasks = []
    for (let c = 0; c < input.children; c++) tasks.push(ctx.scheduleSubOrchestration('Child', { c }))
    const results = yield ctx.all(tasks)
    return results.map((r) => ('ok' in r ? r.ok : `ERR ${r.err}`))
  })

  rt.registerOrchestration('RaceHang', function* (ctx, input) {
    const r = yield ctx.race(ctx.scheduleActivity('Hang', null), ctx.scheduleTimer(input.timerMs))
    return r.index
  })

  // Kills its own process in the middle of every turn: a message whose turn can
  // never finish, the crash-loop shape of a poison message.
  rt.registerOrchestration('CrashTurn', function* (ctx) {
    send({ type: 'crash-turn', instanceId: ctx.instanceId, pid: process.pid, t: Date.now() })
    process.kill(process.pid, 'SIGKILL')
    busyWait(10000)
    return yield ctx.scheduleActivity('Effect', { key: 'never' })
  })

  // v1 waits for an event after A; v2 ("the deploy") replaced the wait with a timer.
  rt.registerOrchestration('Evolving', function* (ctx) {
    const a = yield ctx.scheduleActivity('Echo', 'A')
    if (env.codeVersion === 'v2') yield ctx.scheduleTimer(10)
    else yield ctx.waitForEvent('go')
    const b = yield ctx.scheduleActivity('Echo', 'B')
    return `${a}${b}`
  })
}

module.exports = { register, busyWait, sleep, readEffects, effectFile }
