// Chat tab: streamed answers (POST /api/chat read as SSE), sources, conversations.
// Turns are resumable: a reload reopens the conversation and re-attaches to an answer
// still being generated (GET /api/conversations/{id}/stream); Stop ends it server-side.

import * as api from './api.js';
import { $, badge, h, say, timeEl } from './dom.js';
import * as recall from './recall.js';
import { readEvents } from './sse.js';

let conversationId = null;
let controller = null; // the in-flight turn's AbortController
let opening = 0; // counts openConversation calls: only the latest one shows
const OPEN_KEY = 'chatsvc.conversation'; // the open conversation, reopened after a reload

function setConversation(id) {
  conversationId = id;
  if (id) sessionStorage.setItem(OPEN_KEY, id);
  else sessionStorage.removeItem(OPEN_KEY);
}

export function init() {
  $('chat-form').addEventListener('submit', (event) => {
    event.preventDefault();
    send();
  });
  $('chat-input').addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      $('chat-form').requestSubmit();
    }
  });
  $('chat-stop').addEventListener('click', stop);
  $('chat-new').addEventListener('click', () => {
    setConversation(null);
    $('transcript').replaceChildren();
    markActive();
    $('chat-input').focus();
  });
  recall.init(openConversation);
}

/** Show conversation `id` scrolled to `messageId` (a fact's quote, from the Facts tab). */
export const openAt = (id, messageId) => openConversation(id, messageId);

export function show() {
  loadConversations();
  recall.show();
  const open = sessionStorage.getItem(OPEN_KEY);
  if (open && !conversationId && !controller) openConversation(open);
}

/** The answer outlives its request (resumable): ask the server to stop it, then stop
 * reading. Before its `meta` event the conversation is not known: only stop reading. */
async function stop() {
  if (conversationId) {
    try {
      await api.post(`/api/conversations/${encodeURIComponent(conversationId)}/stop`);
    } catch {
      // Stop reading anyway; the answer is stored whichever way it ends.
    }
  }
  controller?.abort();
}

function bubble(role, text = '') {
  const content = h('div', { class: 'content' }, text);
  const el = h('article', { class: `msg msg-${role}`, 'aria-label': role === 'user' ? 'You' : 'Assistant' },
    h('header', { class: 'msg-head' }, h('strong', {}, role === 'user' ? 'You' : 'Assistant')),
    content);
  $('transcript').append(el);
  return { el, head: el.firstChild, content };
}

function scrollDown() {
  const log = $('transcript');
  log.scrollTop = log.scrollHeight;
}

// Where the model saw a source: in the prefix every turn shares, or found for this message.
const LAYERS = { stable: 'stable prefix', message: 'found for this message' };

function sourceItem(source) {
  const measure = source.distance !== undefined && source.distance !== null
    ? `distance ${Number(source.distance).toFixed(3)}`
    : source.score !== undefined && source.score !== null ? `score ${Number(source.score).toFixed(3)}` : '';
  const notes = [LAYERS[source.layer], measure].filter(Boolean).join(' · ');
  return h('li', { 'data-type': source.type, 'data-id': source.id, 'data-layer': source.layer },
    badge(source.type), ' ', h('span', { class: 'source-name' }, source.title || source.id),
    notes && h('span', { class: 'muted' }, ` · ${notes}`));
}

function showMeta(answer, meta) {
  setConversation(meta.conversation_id);
  answer.el.dataset.messageId = meta.message_id;
  answer.el.dataset.mode = meta.mode;
  const mode = badge(meta.mode === 'fallback' ? 'fallback' : meta.mode, meta.mode);
  if (meta.degraded_reason) mode.title = meta.degraded_reason;
  answer.head.append(' ', mode);
  if (meta.mode === 'fallback') {
    answer.el.append(h('p', { class: 'notice' },
      'Answered from recent posts: retrieval is unavailable',
      meta.degraded_reason ? ` (${meta.degraded_reason})` : '', '.'));
  }
  const sources = meta.sources || [];
  const region = h('section', { class: 'sources', 'aria-label': 'Sources' },
    h('h4', {}, `Sources (${sources.length})`),
    sources.length ? h('ul', {}, sources.map(sourceItem)) : h('p', { class: 'muted' }, 'none'));
  answer.el.append(region);
  nameSources(region, sources);
}

// Fact and memory sources carry only ids: show their text, looked up in the lists.
const LOOKUPS = {
  fact: ['/api/facts', { limit: 200 }, (body) => body.facts.map((f) => [f.id, f.fact])],
  memory: ['/api/memory', {}, (body) => body.memories.map((m) => [m.id, m.content])],
};

async function nameSources(region, sources) {
  for (const [type, [path, query, pairs]] of Object.entries(LOOKUPS)) {
    if (!sources.some((s) => s.type === type && !s.title)) continue;
    try {
      const names = new Map(pairs(await api.get(path, query)));
      for (const item of region.querySelectorAll(`li[data-type="${type}"]`)) {
        const name = names.get(item.dataset.id);
        if (name) item.querySelector('.source-name').textContent = name;
      }
    } catch {
      // The ids stay on screen; the answer itself is unaffected.
    }
  }
}

function showDone(answer, done) {
  const usage = done.usage || {};
  const parts = [`finish: ${done.finish_reason ?? 'n/a'}`];
  if (usage.prompt_tokens !== null && usage.prompt_tokens !== undefined) {
    parts.push(`${usage.prompt_tokens} prompt / ${usage.completion_tokens} completion tokens`
      + (usage.estimated ? ' (estimated)' : ''));
  }
  if (usage.cached_tokens !== null && usage.cached_tokens !== undefined) {
    parts.push(`${usage.cached_tokens} cached`);
  }
  answer.el.append(h('footer', { class: 'msg-foot muted' }, parts.join(' · ')));
}

function showStopped(answer) {
  if (!answer.el.querySelector('.stopped')) answer.el.append(h('p', { class: 'muted stopped' }, 'Stopped.'));
}

function showProblem(answer, text) {
  answer.el.append(h('p', { class: 'error', role: 'alert' }, text));
}

async function send() {
  const input = $('chat-input');
  const message = input.value.trim();
  if (!message || controller) return;
  input.value = '';
  bubble('user', message);
  const body = { message, resumable: true, ...(conversationId ? { conversation_id: conversationId } : {}) };
  await follow(bubble('assistant'),
    (signal) => api.request('/api/chat', { method: 'POST', body, signal, raw: true }));
  input.focus();
}

/** Render an answer's events into `answer` as they arrive; `open(signal)` starts the
 * stream (a new turn, or a re-attach to a running one). */
async function follow(answer, open) {
  answer.el.setAttribute('aria-busy', 'true');
  scrollDown();
  controller = new AbortController();
  setBusy(true);
  say($('chat-status'), 'Waiting for the answer…');
  try {
    const response = await open(controller.signal);
    if (response.status === 204) return; // it ended meanwhile: the stored answer is shown
    for await (const { event, data } of readEvents(response)) {
      if (event === 'meta') showMeta(answer, data);
      else if (event === 'delta') answer.content.append(data.content);
      else if (event === 'done') showDone(answer, data);
      else if (event === 'error' && data.code === 'stopped') showStopped(answer);
      else if (event === 'error') showProblem(answer, `${data.message} (${data.code})`);
      say($('chat-status'), event === 'delta' ? 'Streaming…' : '');
      scrollDown();
    }
  } catch (error) {
    if (error.name === 'AbortError') showStopped(answer);
    else showProblem(answer, api.describe(error));
  } finally {
    answer.el.removeAttribute('aria-busy');
    controller = null;
    setBusy(false);
    say($('chat-status'), '');
    loadConversations();
    recall.show(); // the new messages wait for the background indexer
  }
}

function setBusy(busy) {
  $('chat-send').disabled = busy;
  $('chat-stop').hidden = !busy;
}

function markActive() {
  for (const item of $('conversation-list').querySelectorAll('[data-id]')) {
    const active = item.dataset.id === conversationId;
    item.querySelector('.open').setAttribute('aria-current', active ? 'true' : 'false');
  }
}

async function loadConversations() {
  try {
    const { conversations } = await api.get('/api/conversations');
    $('conversation-list').replaceChildren(...conversations.map(conversationItem));
    $('conversation-empty').hidden = conversations.length > 0;
    recall.setTitles(conversations);
    markActive();
  } catch (error) {
    say($('chat-status'), api.describe(error), 'error');
  }
}

function conversationItem(conversation) {
  const title = conversation.title || 'Untitled';
  return h('li', { 'data-id': conversation.id },
    h('button', { type: 'button', class: 'open', onclick: () => openConversation(conversation.id) },
      h('span', { class: 'title' }, title), h('small', { class: 'muted' }, timeEl(conversation.updated_at))),
    h('button', {
      type: 'button', class: 'icon', 'aria-label': `Delete conversation ${title}`,
      onclick: () => deleteConversation(conversation.id, title),
    }, '×'));
}

/** Show a stored conversation; with `messageId` (a search result), scroll to that
 * message, highlight it and move focus to it so screen readers read it. */
async function openConversation(id, messageId = null) {
  if (controller) {
    say($('chat-status'), 'Wait for the answer (or stop it) before opening another conversation.', 'warn');
    return;
  }
  const mine = ++opening; // a later open (a click while this one loads) wins
  try {
    const conversation = await api.get(`/api/conversations/${encodeURIComponent(id)}`);
    if (mine !== opening) return;
    setConversation(conversation.id);
    $('transcript').replaceChildren();
    let found = null;
    let pending = null;
    for (const message of conversation.messages) {
      const shown = bubble(message.role === 'user' ? 'user' : 'assistant', message.content);
      shown.el.dataset.messageId = message.id;
      if (message.status === 'pending') pending = shown;
      else if (message.status && message.status !== 'complete') shown.head.append(' ', badge(message.status));
      if (message.id === messageId) found = shown.el;
    }
    markActive();
    if (pending && pending.el === $('transcript').lastElementChild) {
      // Still being answered (by any worker or replica): replay it from its start and
      // follow it to its end.
      const path = `/api/conversations/${encodeURIComponent(conversation.id)}/stream`;
      follow(pending, (signal) => api.request(path, { signal, raw: true }));
    }
    if (found) {
      found.classList.add('msg-found');
      found.tabIndex = -1;
      found.setAttribute('aria-describedby', 'msg-found-note');
      found.append(h('p', { id: 'msg-found-note', class: 'visually-hidden' }, 'Search result'));
      found.scrollIntoView({ block: 'center' });
      found.focus();
    } else {
      scrollDown();
      if (messageId) say($('chat-status'), 'That message is no longer in the conversation.', 'warn');
    }
  } catch (error) {
    if (error.status === 404 && id === sessionStorage.getItem(OPEN_KEY)) setConversation(null);
    say($('chat-status'), api.describe(error), 'error');
  }
}

async function deleteConversation(id, title) {
  if (!window.confirm(`Delete the conversation "${title}"?`)) return;
  try {
    await api.del(`/api/conversations/${encodeURIComponent(id)}`);
    if (id === conversationId) $('chat-new').click();
    loadConversations();
  } catch (error) {
    say($('chat-status'), api.describe(error), 'error');
  }
}
