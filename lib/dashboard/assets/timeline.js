// The timeline: one execution's history as a waterfall. Each activity,
// timer, sub-orchestration and wait is a bar from the event that started it
// to the one that ended it; failed attempts are red and the attempts of a
// retried activity are numbered; what has not ended runs to the end of the
// history, striped. Rows are drawn as they scroll into view.
import { h, instanceLink, duration } from './dom.js'
import { virtualRows } from './virtual.js'

const ROW = 24
const ENDS = {
  ActivityCompleted: 'ok',
  ActivityFailed: 'failed',
  TimerFired: 'ok',
  SubOrchestrationCompleted: 'ok',
  SubOrchestrationFailed: 'failed',
  ExternalEvent: 'ok',
  QueueEventDelivered: 'ok',
  ExternalSubscribedCancelled: 'cancelled',
  QueueSubscriptionCancelled: 'cancelled',
  ActivityCancelRequested: 'cancelled',
  SubOrchestrationCancelRequested: 'cancelled',
}

/**
 * The bars of a history: `{ t0, t1, spans: [{ kind, label, start, end,
 * outcome, attempt, instance, error }] }`. `until` (epoch ms) extends the
 * time axis past the last event, for an execution that still runs.
 */
export function buildSpans(events, until) {
  const spans = []
  const bySource = new Map()
  const waiting = new Map()
  const attempts = new Map()
  const t0 = events.length ? events[0].timestampMs : 0
  const t1 = Math.max(events.length ? events[events.length - 1].timestampMs : 0, until ?? 0)
  const open = (e, kind, label, extra = {}) => {
    const s = { kind, label, start: e.timestampMs, end: undefined, outcome: 'pending', eventId: e.eventId, ...extra }
    spans.push(s)
    bySource.set(e.eventId, s)
    return s
  }
  for (const e of events) {
    switch (e.kind) {
      case 'ActivityScheduled': {
        const last = attempts.get(e.name)
        // An attempt that follows a failed one of the same activity is a retry.
        const attempt = last && last.outcome === 'failed' ? last.attempt + 1 : 1
        attempts.set(e.name, open(e, 'activity', e.name ?? 'activity', { attempt }))
        break
      }
      case 'TimerCreated':
        open(e, 'timer', `timer ${duration((e.fireAtMs ?? e.timestampMs) - e.timestampMs)}`)
        break
      case 'SubOrchestrationScheduled':
        open(e, 'sub', e.name ?? 'sub-orchestration', { instance: e.instance })
        break
      case 'ExternalSubscribed':
      case 'QueueSubscribed': {
        const s = open(e, 'wait', `${e.kind === 'QueueSubscribed' ? 'queue' : 'event'} ${e.name ?? ''}`)
        const key = `${e.kind}:${e.name}`
        if (!waiting.has(key)) waiting.set(key, [])
        waiting.get(key).push(s)
        break
      }
      default: {
        const outcome = ENDS[e.kind]
        if (!outcome) break
        let s = e.sourceEventId !== undefined ? bySource.get(e.sourceEventId) : undefined
        if (!s && (e.kind === 'ExternalEvent' || e.kind === 'QueueEventDelivered')) {
          const key = `${e.kind === 'ExternalEvent' ? 'ExternalSubscribed' : 'QueueSubscribed'}:${e.name}`
          s = (waiting.get(key) || []).find((w) => w.end === undefined)
        }
        if (!s || s.end !== undefined) break
        s.end = e.timestampMs
        s.outcome = outcome
        if (e.error) s.error = e.error
      }
    }
  }
  return { t0, t1, spans }
}

function axis(t0, span) {
  return h('div', { class: 'tl-row tl-axis' }, h('div', { class: 'tl-label', text: 'started +' }),
    h('div', { class: 'tl-track' }, [0, 0.25, 0.5, 0.75, 1].map((f) =>
      h('span', { class: 'tl-tick', style: { left: `${f * 100}%` }, text: duration(f * span) }))))
}

/** Draws the timeline of `events` into `container`; `until` as in buildSpans. */
export function renderTimeline(container, events, { until } = {}) {
  const { t0, t1, spans } = buildSpans(events, until)
  const total = Math.max(1, t1 - t0)
  if (spans.length === 0) {
    container.replaceChildren(h('p', { class: 'muted', text: 'No activities, timers, sub-orchestrations or waits in this execution.' }))
    return
  }
  const viewport = h('div', { class: 'tl-viewport', style: { height: `${Math.min(spans.length * ROW + 2, 480)}px` } })
  container.replaceChildren(h('div', { class: 'timeline', id: 'timeline' },
    h('p', { class: 'muted', text: `${spans.length} bars over ${duration(t1 - t0)}` }),
    axis(t0, t1 - t0),
    viewport))
  virtualRows(viewport, spans.length, ROW, (i) => {
    const s = spans[i]
    const end = s.end ?? t1
    const left = ((s.start - t0) / total) * 100
    const width = Math.max(((end - s.start) / total) * 100, 0.3)
    const took = s.end === undefined ? 'not ended' : duration(s.end - s.start)
    const title = `${s.label}${s.attempt > 1 ? ` (attempt ${s.attempt})` : ''}: ${s.outcome}, ${took}${s.error ? ` — ${s.error}` : ''}`
    return h('div', { class: 'tl-row vrow' },
      h('div', { class: 'tl-label', title },
        h('span', { class: `tl-kind k-${s.kind}`, text: s.kind }),
        s.kind === 'sub' && s.instance ? instanceLink(s.instance, s.label) : h('span', { text: s.label }),
        s.attempt > 1 && h('span', { class: 'tl-attempt', text: ` attempt ${s.attempt}` })),
      h('div', { class: 'tl-track' },
        h('div', { class: `tl-bar k-${s.kind} o-${s.outcome}`, title, style: { left: `${Math.min(left, 99.7)}%`, width: `${width}%` } })))
  })
}
