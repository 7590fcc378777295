// The confirmation and form dialogs of the write actions (one <dialog>).
import { h } from './dom.js'

const dialog = () => document.getElementById('dialog')

/**
 * Shows a dialog with `title`, `body` (nodes, e.g. form fields) and an OK
 * button named `action`; resolves true when confirmed, false otherwise.
 * `validate()` may return an error text that keeps the dialog open.
 */
export function confirmDialog({ title, body = [], action = 'OK', danger = false, validate }) {
  const d = dialog()
  const error = h('p', { class: 'error', role: 'alert' })
  return new Promise((resolve) => {
    const form = h('form', { method: 'dialog', class: 'dialog-form' },
      h('h2', { text: title }),
      body,
      error,
      h('div', { class: 'buttons' },
        h('button', { type: 'button', class: 'secondary', 'data-role': 'cancel', text: 'Cancel', onclick: () => d.close('cancel') }),
        h('button', { type: 'submit', value: 'ok', class: danger ? 'danger' : 'primary', 'data-role': 'confirm', text: action })))
    form.addEventListener('submit', (ev) => {
      const problem = validate ? validate() : undefined
      if (problem) {
        ev.preventDefault()
        error.textContent = problem
      }
    })
    d.replaceChildren(form)
    d.addEventListener('close', () => resolve(d.returnValue === 'ok'), { once: true })
    d.returnValue = ''
    d.showModal()
    form.querySelector('input, textarea, select, button[type=submit]')?.focus()
  })
}

export function labelled(text, input) {
  return h('label', { class: 'field' }, h('span', { text }), input)
}

let toastTimer
/** A short message at the bottom of the page (`kind`: 'ok' | 'error'). */
export function toast(message, kind = 'ok') {
  const t = document.getElementById('toast')
  t.textContent = message
  t.className = `toast ${kind}`
  t.hidden = false
  clearTimeout(toastTimer)
  toastTimer = setTimeout(() => { t.hidden = true }, kind === 'error' ? 8000 : 4000)
}
