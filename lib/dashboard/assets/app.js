// The dashboard page: a hash router over three views (overview, instance
// list, instance detail) and the live loop that refreshes the one shown
// every two seconds unless paused.
import { get } from './http.js'
import { h } from './dom.js'
import * as overview from './overview.js'
import * as instances from './instances.js'
import * as detail from './detail.js'

const PAGES = { '': overview, instances, instance: detail }
const REFRESH_MS = 2000

const main = document.getElementById('main')
const liveButton = document.getElementById('live')
const state = { config: undefined, live: true, view: undefined, busy: false, shown: 0 }

function route() {
  const [path, query] = location.hash.replace(/^#\/?/, '').split('?')
  return { page: Object.hasOwn(PAGES, path) ? path : '', params: new URLSearchParams(query || '') }
}

function showError(err) {
  main.replaceChildren(h('section', { class: 'card error-card' }, h('h2', { text: 'Could not load this page' }),
    h('p', { class: 'error', text: `${err.code ? `[${err.code}] ` : ''}${err.message}` })))
}

async function refresh(view) {
  state.busy = true
  try {
    await view.refresh()
  } finally {
    state.busy = false
  }
}

async function show() {
  const { page, params } = route()
  for (const a of document.querySelectorAll('[data-nav]')) {
    a.classList.toggle('active', a.dataset.nav === (page === '' ? 'overview' : page === 'instance' ? 'instances' : page))
  }
  state.view?.leave?.()
  const shown = ++state.shown
  const view = PAGES[page].mount(main, params, state.config)
  state.view = view
  try {
    await refresh(view)
  } catch (err) {
    if (shown === state.shown) showError(err)
  }
}

async function tick() {
  if (!state.live || state.busy || document.hidden || !state.view) return
  const view = state.view
  try {
    await refresh(view)
  } catch (err) {
    // A failed refresh keeps what is shown; the next one may succeed.
    view.failed?.(err)
  }
}

function setLive(live) {
  state.live = live
  liveButton.setAttribute('aria-pressed', String(live))
  liveButton.textContent = live ? 'Live' : 'Paused'
  liveButton.classList.toggle('paused', !live)
}

async function start() {
  liveButton.addEventListener('click', () => setLive(!state.live))
  try {
    state.config = await get('config')
  } catch (err) {
    showError(err)
    return
  }
  document.getElementById('store').textContent = state.config.label ?? state.config.backend
  if (state.config.readOnly) document.getElementById('mode').textContent = 'read-only'
  window.addEventListener('hashchange', show)
  setInterval(tick, REFRESH_MS)
  await show()
}

start()
