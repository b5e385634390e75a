// Hand-written SVG: a few helpers instead of a chart library. Charts use a viewBox and scale
// with their container; colours come from CSS classes (light and dark themes).

const SVG_NS = 'http://www.w3.org/2000/svg';

/** Creates an SVG element with attributes and children. */
export function s(tag, attrs = {}, children = []) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v !== undefined && v !== null && v !== false) node.setAttribute(k, String(v));
  }
  for (const c of [].concat(children)) {
    if (c === null || c === undefined || c === false) continue;
    node.append(typeof c === 'string' ? document.createTextNode(c) : c);
  }
  return node;
}

/** Creates an HTML element: h('div', { class: 'x' }, ['text', child]). */
export function h(tag, attrs = {}, children = []) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'text') node.textContent = v;
    else if (k.startsWith('on') && typeof v === 'function') node.addEventListener(k.slice(2), v);
    // Through the CSSOM: a style attribute would need 'unsafe-inline' in the page's CSP.
    else if (k === 'style') node.style.cssText = String(v);
    else node.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of [].concat(children)) {
    if (c === null || c === undefined || c === false) continue;
    node.append(typeof c === 'string' || typeof c === 'number' ? String(c) : c);
  }
  return node;
}

/** Linear scale [d0, d1] -> [r0, r1]. */
export function linear(d0, d1, r0, r1) {
  const k = d1 === d0 ? 0 : (r1 - r0) / (d1 - d0);
  return (v) => r0 + (v - d0) * k;
}

/** "Nice" tick values covering [lo, hi] with about n ticks. */
export function niceTicks(lo, hi, n = 5) {
  const span = hi - lo || 1;
  const raw = span / n;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((st) => st >= raw) || raw;
  const ticks = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) {
    ticks.push(Number(v.toFixed(10)));
  }
  return ticks;
}

/**
 * Axes frame for an x/y chart. Returns { root, x, y, plot } where x/y map data to pixels and
 * plot is the group to draw into. The svg's children are replaced.
 */
export function frame(svg, o) {
  // The viewBox follows the drawn width (within limits) so that text keeps a readable size
  // on a phone instead of shrinking with the whole drawing.
  const shown = svg.getBoundingClientRect().width || svg.parentElement?.getBoundingClientRect().width || 0;
  const W = o.width ?? Math.round(Math.min(o.maxWidth ?? 560, Math.max(o.minWidth ?? 330, shown || 480)));
  const H = o.height ?? 280;
  const m = { top: 16, right: 16, bottom: 44, left: 52, ...(o.margin || {}) };
  svg.setAttribute('viewBox', `0 0 ${W} ${H}`);
  svg.setAttribute('preserveAspectRatio', 'xMidYMid meet');
  svg.replaceChildren();
  const x = linear(o.xDomain[0], o.xDomain[1], m.left, W - m.right);
  const y = linear(o.yDomain[0], o.yDomain[1], H - m.bottom, m.top);
  const axes = s('g', { class: 'axes' });
  for (const t of o.yTicks ?? niceTicks(o.yDomain[0], o.yDomain[1], 5)) {
    axes.append(
      s('line', { class: 'grid', x1: m.left, x2: W - m.right, y1: y(t), y2: y(t) }),
      s(
        'text',
        {
          class: 'tick',
          x: m.left - 6,
          y: y(t),
          'text-anchor': 'end',
          'dominant-baseline': 'middle',
        },
        [o.yFormat ? o.yFormat(t) : String(t)],
      ),
    );
  }
  for (const t of o.xTicks ?? niceTicks(o.xDomain[0], o.xDomain[1], 8)) {
    axes.append(
      s('line', { class: 'xtick', x1: x(t), x2: x(t), y1: H - m.bottom, y2: H - m.bottom + 4 }),
      s('text', { class: 'tick', x: x(t), y: H - m.bottom + 16, 'text-anchor': 'middle' }, [
        o.xFormat ? o.xFormat(t) : String(t),
      ]),
    );
  }
  axes.append(
    s('line', { class: 'axis', x1: m.left, x2: W - m.right, y1: H - m.bottom, y2: H - m.bottom }),
    s('line', { class: 'axis', x1: m.left, x2: m.left, y1: m.top, y2: H - m.bottom }),
  );
  if (o.xLabel) {
    axes.append(
      s('text', { class: 'label', x: (m.left + W - m.right) / 2, y: H - 6, 'text-anchor': 'middle' }, [o.xLabel]),
    );
  }
  if (o.yLabel) {
    axes.append(
      s(
        'text',
        {
          class: 'label',
          x: 12,
          y: (m.top + H - m.bottom) / 2,
          'text-anchor': 'middle',
          transform: `rotate(-90 12 ${(m.top + H - m.bottom) / 2})`,
        },
        [o.yLabel],
      ),
    );
  }
  const plot = s('g', { class: 'plot' });
  svg.append(axes, plot);
  return { svg, x, y, plot, W, H, m };
}

/**
 * The frame of a bar chart: n bars side by side (x from 0 to n, no x ticks), y from 0 to yMax
 * with two-decimal ticks; o: frame's other options.
 */
export function barsFrame(svg, n, yMax, o) {
  return frame(svg, { xDomain: [0, n], yDomain: [0, yMax], xTicks: [], yFormat: (t) => t.toFixed(2), ...o });
}

/** A polyline path through points [[x, y], ...] in data units. */
export function pathOf(points, x, y) {
  return points.map(([a, b], i) => `${i ? 'L' : 'M'}${x(a).toFixed(2)},${y(b).toFixed(2)}`).join('');
}

/** Calls fn when the window's width changes (debounced), for charts that size to their box. */
export function onWidthChange(fn) {
  let last = window.innerWidth;
  let timer = 0;
  window.addEventListener('resize', () => {
    if (window.innerWidth === last) return;
    last = window.innerWidth;
    clearTimeout(timer);
    timer = setTimeout(fn, 120);
  });
}

/**
 * Makes a box that scrolls sideways say so. Sets data-scroll on it: 'none' when everything fits,
 * else where more lies beyond its edges: 'right', 'left' or 'both' (style.css fades those edges
 * and shows the hint that follows the box, .scroll-hint). Follows the box's size, its content
 * and its scrolling; works on a box not yet in the document (checked once it is laid out).
 * @param {HTMLElement} box an element with overflow-x: auto (class scroll-x)
 */
export function watchScroll(box) {
  const update = () => {
    const more = box.scrollWidth - box.clientWidth;
    const left = box.scrollLeft > 1;
    const right = box.scrollLeft < more - 1;
    const state = more <= 1 ? 'none' : left && right ? 'both' : left ? 'left' : 'right';
    if (box.dataset.scroll !== state) box.dataset.scroll = state;
  };
  box.addEventListener('scroll', update, { passive: true });
  if ('ResizeObserver' in window) {
    const sizes = new ResizeObserver(update);
    sizes.observe(box);
    for (const child of box.children) sizes.observe(child);
    new MutationObserver(() => {
      for (const child of box.children) sizes.observe(child);
      update();
    }).observe(box, { childList: true, subtree: true });
  }
  update();
  return update;
}

/** A hint placed right after a watchScroll box: shown only while the box has more to scroll to. */
export function scrollHint(text = 'Scroll sideways for the rest ⇆') {
  return h('p', { class: 'scroll-hint', 'aria-hidden': 'true' }, [text]);
}
