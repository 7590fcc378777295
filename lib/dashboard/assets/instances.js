// Instances: the list, filtered in the store (status, name, version,
// created / completed ranges, id prefix, text in custom status / output /
// error), in pages that follow each other by cursor, with bulk cancel and
// delete of the selection and a prune form.
import { h, href, instanceLink, when, statusBadge } from './dom.js'
import { get, post } from './http.js'
import { confirmDialog, labelled, toast } from './dialogs.js'

const STATUSES = ['Running', 'Completed', 'Failed', 'ContinuedAsNew']
const TEXT = ['status', 'name', 'version', 'prefix', 'text', 'order', 'limit']
const TIMES = ['createdFrom', 'createdTo', 'completedFrom', 'completedTo']

/** A datetime-local input's value (local time) of epoch ms, and back. */
function localInput(ms) {
  if (!ms) return ''
  const d = new Date(Number(ms))
  d.setMinutes(d.getMinutes() - d.getTimezoneOffset())
  return d.toISOString().slice(0, 16)
}
function fromLocalInput(v) {
  if (!v) return ''
  const ms = new Date(v).getTime()
  return Number.isNaN(ms) ? '' : String(ms)
}

function filterForm(params) {
  const input = (name, attrs = {}) => h('input', { name, value: params.get(name) ?? '', ...attrs })
  const select = (name, options) => {
    const s = h('select', { name }, options.map(([v, t]) => h('option', { value: v, text: t })))
    s.value = params.get(name) ?? options[0][0]
    return s
  }
  const time = (name) => h('input', { type: 'datetime-local', name, value: localInput(params.get(name)) })
  const form = h('form', { class: 'filters', id: 'filters' },
    labelled('Status', select('status', [['', 'any'], ...STATUSES.map((s) => [s, s])])),
    labelled('Orchestration', input('name', { placeholder: 'exact name' })),
    labelled('Version', input('version', { placeholder: '1.0.0', size: 8 })),
    labelled('Id prefix', input('prefix', { placeholder: 'order-' })),
    labelled('Text in status / output / error', input('text', { placeholder: 'text' })),
    labelled('Created from', time('createdFrom')),
    labelled('Created to', time('createdTo')),
    labelled('Completed from', time('completedFrom')),
    labelled('Completed to', time('completedTo')),
    labelled('Order', select('order', [['newest', 'newest first'], ['oldest', 'oldest first']])),
    labelled('Per page', select('limit', [['50', '50'], ['20', '20'], ['100', '100'], ['500', '500']])),
    h('div', { class: 'buttons' },
      h('button', { type: 'submit', class: 'primary', text: 'Apply' }),
      h('a', { href: href('instances'), class: 'button secondary', text: 'Clear' })))
  form.addEventListener('submit', (ev) => {
    ev.preventDefault()
    const data = new FormData(form)
    const q = {}
    for (const k of TEXT) q[k] = String(data.get(k) ?? '').trim()
    for (const k of TIMES) q[k] = fromLocalInput(String(data.get(k) ?? ''))
    if (q.order === 'newest') q.order = ''
    if (q.limit === '50') q.limit = ''
    const next = href('instances', q)
    if (location.hash === next) window.dispatchEvent(new HashChangeEvent('hashchange'))
    else location.hash = next
  })
  return form
}

export function mount(main, params, config) {
  const selected = new Set()
  /** The cursors that start the pages seen so far (undefined: the first page). */
  const starts = [undefined]
  let page = 0
  let rows = []
  let nextCursor
  const tbody = h('tbody')
  const pager = h('div', { class: 'pager' })
  const bulk = h('div', { class: 'bulk' })
  const query = {}
  for (const k of [...TEXT, ...TIMES]) if (params.get(k)) query[k] = params.get(k)

  const table = h('table', { class: 'list', id: 'instances' },
    h('thead', null, h('tr', null,
      !config.readOnly && h('th', null, h('input', { type: 'checkbox', 'aria-label': 'select all', onchange: (ev) => {
        for (const r of rows) ev.target.checked ? selected.add(r.instanceId) : selected.delete(r.instanceId)
        draw()
      } })),
      ['Instance', 'Orchestration', 'Version', 'Status', 'Exec', 'Created', 'Completed', 'Parent', 'Custom status'].map((t) => h('th', { text: t })))),
    tbody)

  main.replaceChildren(h('h1', { text: 'Instances' }), filterForm(params), bulk, h('div', { class: 'scroll-x' }, table), pager)

  function drawBulk() {
    if (config.readOnly) return bulk.replaceChildren()
    const n = selected.size
    bulk.replaceChildren(
      h('span', { class: 'muted', text: `${n} selected` }),
      h('button', { type: 'button', id: 'bulk-cancel', disabled: n === 0, text: 'Cancel selected', onclick: bulkCancel }),
      h('button', { type: 'button', id: 'bulk-delete', class: 'danger', disabled: n === 0, text: 'Delete selected', onclick: bulkDelete }),
      h('button', { type: 'button', id: 'prune', class: 'secondary', text: 'Prune…', onclick: prune }))
  }

  function draw() {
    tbody.replaceChildren(...(rows.length === 0
      ? [h('tr', null, h('td', { colspan: 10, class: 'muted', text: 'No instance matches.' }))]
      : rows.map((r) => h('tr', { dataset: { id: r.instanceId } },
        !config.readOnly && h('td', null, h('input', { type: 'checkbox', 'aria-label': `select ${r.instanceId}`, checked: selected.has(r.instanceId), onchange: (ev) => {
          ev.target.checked ? selected.add(r.instanceId) : selected.delete(r.instanceId)
          drawBulk()
        } })),
        h('td', null, instanceLink(r.instanceId)),
        h('td', { text: r.orchestrationName }),
        h('td', { text: r.orchestrationVersion }),
        h('td', null, statusBadge(r.status)),
        h('td', { class: 'num', text: r.currentExecutionId }),
        h('td', { class: 'time', text: when(r.createdAt) }),
        h('td', { class: 'time', text: when(r.completedAt) }),
        h('td', null, r.parentInstanceId && instanceLink(r.parentInstanceId)),
        h('td', { class: 'clip', title: r.customStatus ?? '', text: r.customStatus ?? '' })))))
    drawBulk()
    pager.replaceChildren(
      h('button', { type: 'button', class: 'secondary', disabled: page === 0, text: '← First', onclick: () => go(0) }),
      h('button', { type: 'button', class: 'secondary', disabled: page === 0, text: '← Previous', onclick: () => go(page - 1) }),
      h('span', { class: 'muted', text: `page ${page + 1}` }),
      h('button', { type: 'button', class: 'secondary', id: 'next-page', disabled: !nextCursor, text: 'Next →', onclick: () => {
        starts[page + 1] = nextCursor
        go(page + 1)
      } }))
  }

  async function load() {
    const result = await get('instances', { ...query, cursor: starts[page] })
    rows = result.instances
    nextCursor = result.nextCursor
    draw()
  }

  async function go(n) {
    page = n
    try {
      await load()
    } catch (err) {
      toast(err.message, 'error')
    }
  }

  async function bulkCancel() {
    const ids = [...selected]
    const reason = h('input', { name: 'reason', value: 'cancelled from the dashboard' })
    if (!(await confirmDialog({ title: `Cancel ${ids.length} instance(s)?`, body: [labelled('Reason', reason)], action: 'Cancel instances', danger: true }))) return
    await bulkPost({ action: 'cancel', instanceIds: ids, reason: reason.value })
  }

  async function bulkDelete() {
    const ids = [...selected]
    const force = h('input', { type: 'checkbox', name: 'force' })
    if (!(await confirmDialog({
      title: `Delete ${ids.length} instance(s) and their sub-orchestrations?`,
      body: [h('label', { class: 'check' }, force, ' also delete running instances')],
      action: 'Delete',
      danger: true,
    }))) return
    await bulkPost({ action: 'delete', instanceIds: ids, force: force.checked })
  }

  async function bulkPost(body) {
    let result
    try {
      result = await post('bulk', body)
    } catch (err) {
      return toast(err.message, 'error')
    }
    const failed = result.results.filter((r) => !r.ok)
    const done = result.results.length - failed.length
    toast(`${result.action}: ${done} done${failed.length ? `, ${failed.length} refused (${failed[0].instanceId}: ${failed[0].message})` : ''}`, failed.length ? 'error' : 'ok')
    for (const r of result.results) if (r.ok) selected.delete(r.instanceId)
    load().catch((err) => toast(err.message, 'error'))
  }

  async function prune() {
    const before = h('input', { name: 'completedBefore', value: '30d' })
    const keep = h('input', { name: 'keepLast', type: 'number', min: 1, placeholder: 'optional' })
    const mode = h('select', { name: 'mode' }, h('option', { value: 'executions', text: 'old executions (continue-as-new)' }), h('option', { value: 'instances', text: 'finished root instances' }))
    const ok = await confirmDialog({
      title: 'Prune',
      body: [labelled('Delete', mode), labelled('Completed before (ISO date or age: 30d, 12h)', before), labelled('Keep each instance\'s newest (executions only)', keep)],
      action: 'Prune',
      danger: true,
    })
    if (!ok) return
    try {
      const r = await post('prune', {
        completedBefore: before.value.trim(),
        instances: mode.value === 'instances',
        ...(keep.value && mode.value === 'executions' ? { keepLast: Number(keep.value) } : {}),
      })
      toast(r.mode === 'instances'
        ? `prune: ${r.instancesDeleted} instance(s) deleted`
        : `prune: ${r.executionsDeleted} execution(s) of ${r.instancesProcessed} instance(s) deleted`)
      await load()
    } catch (err) {
      toast(err.message, 'error')
    }
  }

  return {
    refresh: load,
  }
}
