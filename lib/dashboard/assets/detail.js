// Instance detail: status, input, output or error (with the structured
// failure fields), custom status, KV values, the execution picker of a
// continued-as-new instance, and three tabs: the timeline, the history
// (filtered by kind) and the sub-orchestration tree. Large values are cut
// with a button that loads them whole. Raise, cancel and delete are here
// unless the dashboard is read-only.
import { h, href, instanceLink, when, statusBadge, pretty, section, fields } from './dom.js'
import { get, post } from './http.js'
import { confirmDialog, labelled, toast } from './dialogs.js'
import { renderTimeline } from './timeline.js'
import { renderHistory } from './history.js'

const TABS = [['timeline', 'Timeline'], ['history', 'History'], ['tree', 'Tree']]

/** A stored value `{ text, size, cut }` as a block; a cut one gets a button that loads it whole via `loadFull()`. */
function valueBlock(value, loadFull, cls = 'payload') {
  if (!value) return undefined
  const pre = h('pre', { class: value.cut ? `${cls} cut` : cls, text: pretty(value.text) })
  if (!value.cut) return pre
  const more = h('button', { type: 'button', class: 'link expand', text: `Show all (${value.size.toLocaleString('en-US')} characters)` })
  more.addEventListener('click', async () => {
    more.disabled = true
    try {
      const full = await loadFull()
      pre.textContent = pretty(full.text)
      pre.classList.remove('cut')
      more.remove()
    } catch (err) {
      more.disabled = false
      toast(err.message, 'error')
    }
  })
  return h('div', null, pre, more)
}

function treeView(tree, current) {
  const children = new Map()
  for (const n of tree.nodes) {
    if (n.parentInstanceId === undefined) continue
    if (!children.has(n.parentInstanceId)) children.set(n.parentInstanceId, [])
    children.get(n.parentInstanceId).push(n)
  }
  const byId = new Map(tree.nodes.map((n) => [n.instanceId, n]))
  const node = (n, depth) => h('li', { class: n.instanceId === current ? 'current' : undefined },
    n.instanceId === current ? h('strong', { class: 'id', text: n.instanceId }) : instanceLink(n.instanceId),
    n.orchestrationName && h('span', { class: 'muted', text: ` ${n.orchestrationName} ` }),
    n.status && statusBadge(n.status),
    depth < 32 && children.has(n.instanceId) && h('ul', null, children.get(n.instanceId).map((c) => node(c, depth + 1))))
  const root = byId.get(tree.rootId) ?? { instanceId: tree.rootId }
  return h('div', { class: 'tree', id: 'tree' },
    h('p', { class: 'muted', text: `${tree.size} instance(s) in this tree${tree.truncated ? `, the first ${tree.nodes.length} shown` : ''}` }),
    tree.path.length > 1 && h('p', { class: 'path' }, 'Path: ', tree.path.map((id, i) => [i > 0 && ' › ', id === current ? h('span', { class: 'id', text: id }) : instanceLink(id)])),
    h('ul', null, node(root, 0)))
}

function failureFields(f, loadFull) {
  return fields([
    ['message', f.message],
    ['category', f.category],
    ['name', f.errorName],
    ['non-retryable', f.nonRetryable ? 'yes' : undefined],
    ['activity', f.activityName],
    ['orchestration', f.orchestrationName],
    ['details', valueBlock(f.details, async () => (await loadFull()).status.failure.details)],
    ['stack', valueBlock(f.errorStack, async () => (await loadFull()).status.failure.errorStack, 'payload stack')],
  ])
}

export function mount(main, params, config) {
  const id = params.get('id')
  const tab = TABS.some(([t]) => t === params.get('tab')) ? params.get('tab') : 'timeline'
  const kind = params.get('kind') || ''
  const requestedExec = params.get('exec') ? Number(params.get('exec')) : undefined
  const head = h('div', { class: 'detail-head' })
  const summary = h('div', { class: 'grid2' })
  const tabsBody = h('div', { class: 'tab-body' })
  const link = (changes) => href('instance', { id, exec: requestedExec, tab, kind, ...changes })
  const tabs = h('nav', { class: 'tabs' }, TABS.map(([t, title]) =>
    h('a', { href: link({ tab: t }), class: t === tab ? 'active' : undefined, dataset: { tab: t }, text: title })))
  main.replaceChildren(head, summary, h('section', { class: 'card' }, tabs, tabsBody))
  let history
  let detail
  let tree
  let lastShown
  const loadFull = () => get('instance', { id, full: 1 })

  function actions(d) {
    if (config.readOnly) return []
    const live = d.info.status === 'Running' || d.info.status === 'ContinuedAsNew'
    return [
      h('button', { type: 'button', id: 'raise', disabled: !live, text: 'Raise event…', onclick: raise }),
      h('button', { type: 'button', id: 'cancel', disabled: !live, text: 'Cancel…', onclick: cancel }),
      h('button', { type: 'button', id: 'delete', class: 'danger', disabled: d.info.parentInstanceId !== undefined, title: d.info.parentInstanceId ? 'delete its root instead' : undefined, text: 'Delete…', onclick: () => remove(live) }),
    ]
  }

  async function act(path, body, done) {
    try {
      const r = await post(path, body)
      toast(done(r))
      return r
    } catch (err) {
      toast(`${err.code ? `[${err.code}] ` : ''}${err.message}`, 'error')
      return undefined
    }
  }

  async function raise() {
    const name = h('input', { name: 'eventName', required: true, placeholder: 'approve' })
    const data = h('textarea', { name: 'data', rows: 4, placeholder: '{"approved": true}' })
    const ok = await confirmDialog({
      title: `Raise an event on ${id}`,
      body: [labelled('Event name', name), labelled('Data (JSON, empty for null)', data)],
      action: 'Raise',
      validate: () => {
        if (!name.value.trim()) return 'An event name is required.'
        try {
          if (data.value.trim()) JSON.parse(data.value)
        } catch (err) {
          return `The data is not JSON: ${err.message}`
        }
        return undefined
      },
    })
    if (!ok) return
    const payload = data.value.trim() ? JSON.parse(data.value) : null
    if (await act('raise', { instanceId: id, eventName: name.value.trim(), data: payload }, () => `Raised '${name.value.trim()}'`)) refresh()
  }

  async function cancel() {
    const reason = h('input', { name: 'reason', value: 'cancelled from the dashboard' })
    if (!(await confirmDialog({ title: `Cancel ${id}?`, body: [labelled('Reason', reason)], action: 'Cancel instance', danger: true }))) return
    if (await act('cancel', { instanceId: id, reason: reason.value }, () => 'Cancellation requested')) refresh()
  }

  async function remove(live) {
    const force = h('input', { type: 'checkbox', name: 'force' })
    const ok = await confirmDialog({
      title: `Delete ${id} and its sub-orchestrations?`,
      body: live ? [h('label', { class: 'check' }, force, ' it is running: delete it anyway')] : [h('p', { text: 'This cannot be undone.' })],
      action: 'Delete',
      danger: true,
      validate: () => (live && !force.checked ? 'A running instance is deleted only when you tick the box.' : undefined),
    })
    if (!ok) return
    if (await act('delete', { instanceId: id, force: force.checked }, (r) => `Deleted ${r.instancesDeleted} instance(s)`)) location.hash = href('instances')
  }

  function drawSummary(d, input) {
    const s = d.status
    const execs = d.executions
    const picker = execs.length > 1 && h('select', { id: 'execution', onchange: (ev) => { location.hash = link({ exec: ev.target.value, kind: '' }) } },
      execs.map((e) => h('option', { value: e.executionId, text: `#${e.executionId} ${e.status} (${e.eventCount} events)` })))
    if (picker) picker.value = String(history?.executionId ?? d.info.currentExecutionId)
    head.replaceChildren(
      h('h1', { class: 'title' }, h('span', { class: 'id', id: 'instance-id', text: d.info.instanceId }), ' ', statusBadge(d.info.status)),
      h('div', { class: 'actions' }, actions(d)))
    summary.replaceChildren(
      section('Instance', fields([
        ['orchestration', `${d.info.orchestrationName} @ ${d.info.orchestrationVersion}`],
        ['status', h('span', { id: 'status', text: d.info.status })],
        ['execution', `${d.info.currentExecutionId}${d.executionCount > 1 ? ` of ${d.executionCount}` : ''}`],
        ['created', when(d.info.createdAt)],
        ['updated', when(d.info.updatedAt)],
        ['parent', d.info.parentInstanceId && instanceLink(d.info.parentInstanceId)],
        ['custom status', s.customStatus && h('div', null, valueBlock(s.customStatus, async () => (await loadFull()).status.customStatus), h('span', { class: 'muted', text: `version ${s.customStatusVersion}` }))],
        ['history', d.stats ? `${d.stats.historyEventCount} events, ${d.stats.historySizeBytes.toLocaleString('en-US')} bytes` : undefined],
        ['executions', picker || undefined],
      ])),
      section(s.status === 'Failed' ? 'Error' : 'Input and output', fields([
        ['input', input && valueBlock(input, async () => {
          const e = await get('event', { id, execution: history.executionId, event: 1 })
          return { text: JSON.stringify(JSON.parse(e.data.text).input ?? null) }
        })],
        ['output', valueBlock(s.output, async () => (await loadFull()).status.output)],
        ['error', valueBlock(s.error, async () => (await loadFull()).status.error, 'payload error-text')],
      ]), s.failure && failureFields(s.failure, loadFull),
      d.kv.length > 0 && h('h3', { text: 'KV values' }),
      d.kv.length > 0 && h('table', { class: 'plain kv' }, h('tbody', null, d.kv.map((e, i) => h('tr', null, h('td', { class: 'id', text: e.key }),
        h('td', null, valueBlock(e.value, async () => (await loadFull()).kv[i].value))))))))
  }

  function drawTab() {
    if (tab === 'tree') tabsBody.replaceChildren(treeView(tree, id))
    else if (tab === 'history') renderHistory(tabsBody, history, { kind, onKind: (k) => { location.hash = link({ kind: k }) } })
    else {
      // A running execution's open bars run up to now.
      const exec = detail.executions.find((e) => e.executionId === history.executionId)
      renderTimeline(tabsBody, history.events, { until: exec && exec.status === 'Running' ? Date.now() : undefined })
    }
  }

  async function refresh() {
    const d = await get('instance', { id })
    const execId = requestedExec ?? d.info.currentExecutionId
    const exec = d.executions.find((e) => e.executionId === execId)
    const stale = !history || history.executionId !== execId || (exec && exec.eventCount !== history.events.length)
    if (stale) history = await get('history', { id, execution: execId })
    let treeChanged = false
    if (tab === 'tree') {
      const t = await get('tree', { id })
      treeChanged = JSON.stringify(t) !== JSON.stringify(tree)
      tree = t
    }
    detail = d
    // Redrawn only when something changed, so an expanded value or an open
    // picker stays as it is between refreshes.
    const shown = JSON.stringify([d, history.input, history.executionId])
    if (shown !== lastShown) drawSummary(d, history.input)
    lastShown = shown
    if (stale || (tab === 'tree' && treeChanged)) drawTab()
  }

  return { refresh }
}
