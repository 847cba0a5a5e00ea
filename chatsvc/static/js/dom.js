// Small DOM helpers. Text always goes in through textContent: nothing the API
// returns is ever parsed as HTML.

export const $ = (id) => document.getElementById(id);

/** h('li', {class: 'x', onclick: fn}, 'text', child) -> element */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith('on')) el.addEventListener(key.slice(2), value);
    else if (key === 'class') el.className = value;
    else el.setAttribute(key, value === true ? '' : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

/** plural(1, 'fact') -> '1 fact', plural(2, 'memory', 'memories') -> '2 memories' */
export const plural = (n, one, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

export function badge(text, kind = text) {
  return h('span', { class: `badge badge-${String(kind).replace(/[^a-z0-9-]/gi, '')}` }, text);
}

let timeZone;
/** Show times in the signed-in user's timezone (falls back to the browser's). */
export function setTimeZone(zone) {
  try {
    new Intl.DateTimeFormat(undefined, { timeZone: zone });
    timeZone = zone;
  } catch {
    timeZone = undefined;
  }
}

export function fmtTime(iso) {
  if (!iso) return 'never';
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return date.toLocaleString(undefined, { timeZone, dateStyle: 'medium', timeStyle: 'short' });
}

export function timeEl(iso) {
  return h('time', { datetime: iso || null }, fmtTime(iso));
}

export function debounce(fn, ms) {
  let timer;
  const wrapped = (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
  wrapped.cancel = () => clearTimeout(timer);
  return wrapped;
}

/** Set a status line; kind 'error' styles it as an error. */
export function say(el, text, kind = '') {
  el.textContent = text || '';
  el.dataset.kind = kind;
}
