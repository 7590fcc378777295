// DOM building. Everything the store holds is put on the page as text
// (textContent, text nodes, attribute values): never as markup.

/** `h('a', { href, class, text, onclick }, ...children)`. */
export function h(tag, props, ...children) {
  const el = document.createElement(tag)
  for (const [k, v] of Object.entries(props || {})) {
    if (v === undefined || v === null || v === false) continue
    if (k === 'class') el.className = v
    else if (k === 'text') el.textContent = String(v)
    else if (k === 'style') Object.assign(el.style, v)
    else if (k === 'dataset') Object.assign(el.dataset, v)
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v)
    else el.setAttribute(k, v === true ? '' : String(v))
  }
  append(el, children)
  return el
}

export function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue
    el.append(c instanceof Node ? c : document.createTextNode(String(c)))
  }
  return el
}

/** The hash link of a page: `link('instance', { id })`. */
export function href(page, params = {}) {
  const q = new URLSearchParams()
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v))
  const s = q.toString()
  return `#/${page}${s ? `?${s}` : ''}`
}

export function instanceLink(id, text) {
  return h('a', { href: href('instance', { id }), class: 'id', title: id, text: text ?? id })
}

export function when(ms) {
  if (typeof ms !== 'number' || ms <= 0) return '–'
  const d = new Date(ms)
  const pad = (n, w = 2) => String(n).padStart(w, '0')
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`
}

export function duration(ms) {
  if (ms === undefined || ms === null) return ''
  if (ms < 1000) return `${Math.round(ms)} ms`
  if (ms < 60000) return `${(ms / 1000).toFixed(ms < 10000 ? 2 : 1)} s`
  if (ms < 3600000) return `${Math.floor(ms / 60000)} m ${Math.round((ms % 60000) / 1000)} s`
  return `${Math.floor(ms / 3600000)} h ${Math.round((ms % 3600000) / 60000)} m`
}

export function statusBadge(status) {
  return h('span', { class: `badge s-${String(status || 'unknown').toLowerCase()}`, text: status || 'unknown' })
}

/** Stored JSON text shown indented when it parses, as it is otherwise. */
export function pretty(text) {
  try {
    return JSON.stringify(JSON.parse(text), null, 2)
  } catch {
    return text
  }
}

export function section(title, ...children) {
  return h('section', { class: 'card' }, h('h2', { text: title }), ...children)
}

/** A `<dl>` of [label, value] pairs; undefined values are left out. */
export function fields(pairs) {
  return h('dl', { class: 'fields' }, pairs.filter(([, v]) => v !== undefined && v !== null && v !== '').map(([k, v]) => [
    h('dt', { text: k }), h('dd', null, v),
  ]))
}
