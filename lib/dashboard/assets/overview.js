// Overview: instances by status, queue depths, creations / completions /
// failures over the last 15 minutes (uPlot), the store's fast paths when the
// provider reports them, and the attached runtime's health and counters.
import { h, href, section, fields } from './dom.js'
import { get } from './http.js'

const STATUSES = [['running', 'Running'], ['completed', 'Completed'], ['failed', 'Failed'], ['continuedAsNew', 'ContinuedAsNew']]
const GUARD = ['invalidLockTokenAcks', 'workLockLostAcks', 'poisonDispositions', 'deadlockRetries', 'orphanedLocksReleased', 'livelocksDetected']

function number(n) {
  return typeof n === 'number' ? n.toLocaleString('en-US') : '–'
}

function statusCards(o) {
  return STATUSES.map(([key, status]) => h('a', { class: `count s-${status.toLowerCase()}`, href: href('instances', { status }), dataset: { status } },
    h('span', { class: 'n', text: number(o.byStatus[key]) }), h('span', { class: 'what', text: status })))
}

function fastPathsSection(fp) {
  const unavailable = Object.entries(fp.unavailable || {})
  return h('div', { class: 'fast-paths' }, section('Fast store paths',
    h('p', null, 'Fast paths are ', h('strong', { class: 'fp-enabled', text: fp.enabled ? 'enabled' : 'disabled' }), '.'),
    h('div', { class: 'chips' }, (fp.active || []).length === 0
      ? h('span', { class: 'muted', text: 'none active' })
      : fp.active.map((p) => h('span', { class: 'chip ok', text: p }))),
    unavailable.length > 0 && h('table', { class: 'plain' },
      h('thead', null, h('tr', null, h('th', { text: 'Unavailable path' }), h('th', { text: 'Why' }))),
      h('tbody', null, unavailable.map(([p, why]) => h('tr', null, h('td', { text: p }), h('td', { text: why })))))))
}

function runtimeSection(rt) {
  const m = rt.metrics || {}
  const health = rt.health || {}
  const metricRows = Object.entries(m).filter(([k, v]) => typeof v === 'number' && !GUARD.includes(k))
  return section('Runtime',
    h('p', null, 'Health: ', h('span', { class: `badge h-${health.status}`, text: health.status || 'unknown' })),
    (health.reasons || []).length > 0 && h('ul', { class: 'reasons' }, health.reasons.map((r) => h('li', { text: r }))),
    h('div', { class: 'grid2' },
      h('div', null, h('h3', { text: 'Metrics' }),
        rt.metrics
          ? h('table', { class: 'plain metrics' }, h('tbody', null, metricRows.map(([k, v]) => h('tr', null, h('td', { text: k }), h('td', { class: 'num', text: number(v) })))))
          : h('p', { class: 'muted', text: 'not started' })),
      h('div', null, h('h3', { text: 'Guard counters' }),
        h('table', { class: 'plain guard' }, h('tbody', null, GUARD.map((k) => h('tr', null, h('td', { text: k }), h('td', { class: 'num', text: number(m[k]) }))))))))
}

function chartData(o) {
  return [
    o.buckets.map((b) => b.startMs / 1000),
    o.buckets.map((b) => b.started),
    o.buckets.map((b) => b.completed),
    o.buckets.map((b) => b.failed),
  ]
}

export function mount(main) {
  const counts = h('div', { class: 'counts' })
  const totals = h('div')
  const queues = h('div')
  const chartBox = h('div', { class: 'chart' })
  const extra = h('div', { class: 'extra' })
  main.replaceChildren(
    h('h1', { text: 'Overview' }),
    counts,
    h('div', { class: 'grid2' },
      section('Activity, last 15 minutes (per 30 s)', chartBox),
      h('div', null, section('Queues', queues), section('Store', totals))),
    extra)
  let plot
  return {
    async refresh() {
      const o = await get('overview')
      counts.replaceChildren(...statusCards(o))
      queues.replaceChildren(fields([
        ['orchestrator', number(o.queues.orchestratorQueue)],
        ['worker', number(o.queues.workerQueue)],
        ['timer', number(o.queues.timerQueue)],
        ['set aside', number(o.queues.setAside)],
      ]))
      totals.replaceChildren(fields([
        ['instances', number(o.totals.instances)],
        ['executions', number(o.totals.executions)],
        ['events', number(o.totals.events)],
      ]))
      const fp = o.fastPaths ?? o.runtime?.health?.fastPaths
      extra.replaceChildren(...[fp && fastPathsSection(fp), o.runtime && runtimeSection(o.runtime)].filter(Boolean))
      const data = chartData(o)
      if (plot) plot.setData(data)
      else if (window.uPlot) {
        plot = new window.uPlot({
          width: Math.max(320, chartBox.clientWidth || 600),
          height: 220,
          series: [
            {},
            { label: 'started', stroke: '#2563eb', width: 2 },
            { label: 'completed', stroke: '#16a34a', width: 2 },
            { label: 'failed', stroke: '#dc2626', width: 2 },
          ],
          axes: [{}, { size: 40 }],
          scales: { y: { range: (u, min, max) => [0, Math.max(4, max)] } },
        }, data, chartBox)
      }
    },
    leave() {
      plot?.destroy()
    },
  }
}
