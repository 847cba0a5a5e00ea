// Chat tab: search over past conversations (GET /api/conversations/search), the query's
// words marked in each snippet with text nodes, and the background index's progress.

import * as api from './api.js';
import { $, debounce, h, plural, say, timeEl } from './dom.js';

const LIMIT = 20;
const SNIPPET = 180; // characters of a message shown around its first match

let open = () => {}; // chat.js: open(conversationId, messageId)
const titles = new Map(); // conversation id -> title
let controller = null;
let statusTimer = null;

export function init(openConversation) {
  open = openConversation;
  const input = $('recall-input');
  const later = debounce(search, 300);
  input.addEventListener('input', () => {
    $('recall-clear').hidden = !input.value;
    later();
  });
  input.addEventListener('keydown', (event) => {
    if (event.key === 'Escape' && input.value) {
      event.preventDefault();
      later.cancel();
      clear();
    } else if (event.key === 'ArrowDown' && hits().length) {
      event.preventDefault();
      hits()[0].focus();
    }
  });
  // Up and Down move between results; Up from the first goes back to the box.
  $('recall-results').addEventListener('keydown', (event) => {
    const index = hits().indexOf(document.activeElement);
    const next = { ArrowDown: index + 1, ArrowUp: index - 1 }[event.key];
    if (index === -1 || next === undefined) return;
    event.preventDefault();
    (next < 0 ? input : hits()[Math.min(next, hits().length - 1)]).focus();
  });
  $('recall-form').addEventListener('submit', (event) => {
    event.preventDefault();
    later.cancel();
    search();
  });
  $('recall-clear').addEventListener('click', () => {
    later.cancel();
    clear();
  });
}

export function show() {
  indexStatus();
}

/** Titles of the conversations chat.js listed, to name each result's conversation. */
export function setTitles(conversations) {
  for (const conversation of conversations) titles.set(conversation.id, conversation.title || 'Untitled');
}

const hits = () => [...$('recall-results').querySelectorAll('.recall-hit')];

function clear() {
  controller?.abort();
  $('recall-input').value = '';
  $('recall-clear').hidden = true;
  showResults(false);
  say($('recall-status'), '');
  $('recall-input').focus();
}

function showResults(shown) {
  $('recall-results').hidden = !shown;
  if (!shown) $('recall-results').replaceChildren();
  // While results are shown they take the conversation list's place.
  $('recall-form').closest('.conversations').toggleAttribute('data-searching', shown);
}

async function search() {
  const query = $('recall-input').value.trim();
  if (!query) {
    clear();
    return;
  }
  controller?.abort();
  controller = new AbortController();
  const { signal } = controller;
  say($('recall-status'), 'Searching…');
  try {
    const body = await api.get('/api/conversations/search',
      { q: query, limit: LIMIT, mode: 'hybrid' }, signal);
    await nameConversations(body.results, signal);
    render(query, body);
  } catch (error) {
    if (error.name !== 'AbortError') say($('recall-status'), api.describe(error), 'error');
  }
  indexStatus();
}

function render(query, { results, mode, degraded_reason: reason }) {
  const words = termsOf(query);
  $('recall-results').replaceChildren(...results.map((hit) => resultItem(hit, words)));
  showResults(true);
  const found = results.length === LIMIT
    ? `The top ${LIMIT} matching messages (there may be more: refine the search).`
    : results.length ? `${plural(results.length, 'message')} found.`
      : `No messages match “${query}”.`;
  if (reason) say($('recall-status'), `${found} Only ${mode} search ran: ${reason}.`, 'warn');
  else say($('recall-status'), found);
}

function resultItem(hit, words) {
  const speaker = hit.name || (hit.role === 'user' ? 'You' : 'Assistant');
  return h('li', {},
    h('button', {
      type: 'button', class: 'recall-hit',
      'data-message-id': hit.message_id, 'data-conversation-id': hit.conversation_id,
      onclick: (event) => {
        for (const other of hits()) other.setAttribute('aria-current', String(other === event.currentTarget));
        open(hit.conversation_id, hit.message_id);
      },
    },
    h('span', { class: 'recall-meta' }, h('strong', {}, speaker), ' · ', timeEl(hit.created_at)),
    h('span', { class: 'recall-snippet' }, marked(snippet(hit.content, words), words)),
    h('span', { class: 'recall-conversation muted' }, `in ${titles.get(hit.conversation_id) || 'a conversation'}`)));
}

// Conversations the list did not show (it holds the 100 latest): fetch their titles.
async function nameConversations(results, signal) {
  const missing = [...new Set(results.map((r) => r.conversation_id))].filter((id) => !titles.has(id));
  await Promise.all(missing.map(async (id) => {
    try {
      const conversation = await api.get(`/api/conversations/${encodeURIComponent(id)}`, {}, signal);
      titles.set(id, conversation.title || 'Untitled');
    } catch (error) {
      if (error.name === 'AbortError') throw error;
    }
  }));
}

/** The query's words (letters and digits), longest first, for marking. */
export function termsOf(query) {
  const words = (query.match(/[\p{L}\p{N}]+/gu) || []).filter((w) => w.length > 1);
  return [...new Set(words.map((w) => w.toLowerCase()))].sort((a, b) => b.length - a.length);
}

function pattern(words) {
  const escaped = words.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  return new RegExp(`(${escaped.join('|')})`, 'giu');
}

/** About SNIPPET characters of `text` around its first matching word. */
export function snippet(text, words) {
  const flat = text.replace(/\s+/g, ' ').trim();
  if (flat.length <= SNIPPET) return flat;
  const first = words.length ? flat.search(pattern(words)) : -1;
  const start = Math.max(0, Math.min(first - 60, flat.length - SNIPPET));
  const end = start + SNIPPET;
  return `${start > 0 ? '…' : ''}${flat.slice(start, end).trim()}${end < flat.length ? '…' : ''}`;
}

/** `text` as text nodes, each matching word in a <mark>: nothing is parsed as HTML. */
export function marked(text, words) {
  if (!words.length) return [text];
  return text.split(pattern(words)).filter(Boolean).map(
    (part) => (words.includes(part.toLowerCase()) ? h('mark', {}, part) : part));
}

async function indexStatus() {
  clearTimeout(statusTimer);
  try {
    const { messages, indexed } = await api.get('/api/conversations/index-status');
    $('recall-index').textContent = indexed < messages
      ? `${indexed} of ${plural(messages, 'message')} indexed` : '';
    // Keep counting while the background indexer catches up and the tab is shown.
    if (indexed < messages && !$('panel-chat').hidden) statusTimer = setTimeout(indexStatus, 3000);
  } catch {
    $('recall-index').textContent = '';
  }
}
