// A scrolling list that keeps only the rows in view (and a margin) in the
// DOM, so a history of 10,000 events scrolls without building 10,000 rows.
import { h } from './dom.js'

/**
 * Fills `viewport` (a fixed-height element that scrolls) with `count` rows
 * of `rowHeight` px drawn by `drawRow(index)`. Returns `{ redraw(count) }`.
 */
export function virtualRows(viewport, count, rowHeight, drawRow) {
  const top = h('div', { class: 'vspacer' })
  const body = h('div', { class: 'vbody' })
  const bottom = h('div', { class: 'vspacer' })
  viewport.replaceChildren(top, body, bottom)
  let first = -1
  let last = -1
  let total = count
  let pending = false
  const draw = () => {
    pending = false
    const height = viewport.clientHeight || 600
    const start = Math.max(0, Math.floor(viewport.scrollTop / rowHeight) - 20)
    const end = Math.min(total, Math.ceil((viewport.scrollTop + height) / rowHeight) + 20)
    if (start === first && end === last) return
    first = start
    last = end
    top.style.height = `${start * rowHeight}px`
    bottom.style.height = `${(total - end) * rowHeight}px`
    const rows = []
    for (let i = start; i < end; i++) rows.push(drawRow(i))
    body.replaceChildren(...rows)
  }
  viewport.addEventListener('scroll', () => {
    if (!pending) {
      pending = true
      requestAnimationFrame(draw)
    }
  })
  draw()
  return {
    redraw(n = total) {
      total = n
      first = -1
      draw()
    },
  }
}
