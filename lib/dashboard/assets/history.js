// The history table: one execution's events, filtered by kind, drawn as
// they scroll into view. A row opens the event with all of its data.
import { h, when, pretty } from './dom.js'
import { get } from './http.js'
import { virtualRows } from './virtual.js'

const ROW = 24

export function renderHistory(container, history, { kind, onKind }) {
  const events = history.events
  const counts = new Map()
  for (const e of events) counts.set(e.kind, (counts.get(e.kind) || 0) + 1)
  const kinds = [...counts.keys()].sort()
  const shown = kind ? events.filter((e) => e.kind === kind) : events
  const t0 = events.length ? events[0].timestampMs : 0
  const picker = h('select', { name: 'kind', id: 'kind-filter', onchange: (ev) => onKind(ev.target.value) },
    h('option', { value: '', text: `all kinds (${events.length})` }),
    kinds.map((k) => h('option', { value: k, text: `${k} (${counts.get(k)})` })))
  picker.value = kind && counts.has(kind) ? kind : ''
  const panel = h('div', { class: 'event-panel' })
  const viewport = h('div', { class: 'h-viewport', style: { height: `${Math.min(shown.length * ROW + 2, 480)}px` } })
  container.replaceChildren(h('div', { class: 'history', id: 'history' },
    h('div', { class: 'toolbar' }, h('label', { class: 'field inline' }, h('span', { text: 'Kind' }), picker),
      h('span', { class: 'muted', text: `${shown.length} of ${events.length} events` })),
    h('div', { class: 'h-row h-head' }, ['#', 'time', 'after', 'kind', 'for', 'details'].map((t) => h('span', { text: t }))),
    viewport,
    panel))

  async function open(e) {
    panel.replaceChildren(h('p', { class: 'muted', text: `Loading event #${e.eventId}…` }))
    try {
      const full = await get('event', { id: history.instanceId, execution: history.executionId, event: e.eventId })
      panel.replaceChildren(h('h3', { text: `Event #${full.eventId}: ${full.kind}` }),
        h('pre', { class: 'payload', text: full.data ? pretty(full.data.text) : '(no data)' }))
    } catch (err) {
      panel.replaceChildren(h('p', { class: 'error', text: err.message }))
    }
  }

  virtualRows(viewport, shown.length, ROW, (i) => {
    const e = shown[i]
    return h('div', { class: `h-row vrow history-row${e.kind.endsWith('Failed') ? ' failed' : ''}`, tabindex: 0, onclick: () => open(e), onkeydown: (ev) => ev.key === 'Enter' && open(e) },
      h('span', { text: `#${e.eventId}` }),
      h('span', { class: 'time', text: when(e.timestampMs).slice(11) }),
      h('span', { text: `+${((e.timestampMs - t0) / 1000).toFixed(3)}s` }),
      h('span', { class: 'kind', text: e.kind }),
      h('span', { text: e.sourceEventId !== undefined ? `#${e.sourceEventId}` : '' }),
      h('span', { class: 'clip', title: e.summary, text: e.summary }))
  })
}
