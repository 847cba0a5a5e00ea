// Facts tab: the caller's facts by category, and semantic search with a
// strictness slider (its value is sent as max_distance).

import * as api from './api.js';
import { $, badge, debounce, h, plural, say, timeEl } from './dom.js';

const CATEGORIES = ['core', 'technical', 'project', 'transient'];
const LIST_LIMIT = 200;
const SEARCH_LIMIT = 20;
const FORGOTTEN_LIMIT = 20;

let inflight = null; // AbortController of the running search or list request

export function init() {
  const input = $('fact-search-input');
  const slider = $('fact-strictness');
  const searchSoon = debounce(refresh, 300);
  input.addEventListener('input', () => {
    $('fact-search-clear').hidden = !input.value;
    searchSoon();
  });
  input.addEventListener('keydown', (event) => {
    if (event.key === 'Escape' && input.value) clearSearch();
  });
  $('fact-search-clear').addEventListener('click', () => {
    searchSoon.cancel();
    clearSearch();
  });
  slider.addEventListener('input', () => {
    $('fact-strictness-value').value = maxDistance();
    if (input.value.trim()) searchSoon();
  });
  $('fact-category').addEventListener('change', refresh);
  $('fact-extract').addEventListener('click', extract);
}

/** Run extraction over the caller's new messages now, then show the updated list. */
async function extract() {
  const button = $('fact-extract');
  button.disabled = true;
  say($('fact-status'), 'Extracting facts from your new messages…');
  try {
    const result = await api.post('/api/facts/extract', {});
    await refresh();
    const failed = result.failed_batches ? ` · ${result.failed_batches} batches failed: ${result.errors.join('; ')}` : '';
    const refused = Object.values(result.rejected).reduce((sum, n) => sum + n, 0);
    const reasons = Object.entries(result.rejected).filter(([, n]) => n)
      .map(([reason, n]) => `${n} ${reason.replaceAll('_', ' ')}`).join(', ');
    const rejected = refused ? ` · ${refused} not stored (${reasons})` : '';
    const forgotten = result.forgotten ? ` · ${result.forgotten} forgotten` : '';
    say($('fact-status'), `Extraction: ${result.new_facts} new, ${result.referenced} referenced, `
      + `${result.superseded} superseded${forgotten}${rejected}${failed}`, failed ? 'warn' : '');
  } catch (error) {
    say($('fact-status'), `Extraction failed: ${api.describe(error)}`, 'error');
  } finally {
    button.disabled = false;
  }
}

/** The slider's value is the search's max_distance ("1.0", not the range's "1"). */
const maxDistance = () => Number($('fact-strictness').value).toFixed(1);

export function show() {
  refresh();
}

function clearSearch() {
  $('fact-search-input').value = '';
  $('fact-search-clear').hidden = true;
  $('fact-search-input').focus();
  refresh();
}

function refresh() {
  inflight?.abort();
  inflight = new AbortController();
  const query = $('fact-search-input').value.trim();
  $('fact-list-controls').hidden = Boolean(query);
  return query ? search(query, inflight.signal) : list(inflight.signal);
}

async function search(query, signal) {
  say($('fact-status'), 'Searching...');
  $('fact-results').setAttribute('aria-busy', 'true');
  try {
    const { results } = await api.get('/api/facts/search', {
      q: query, limit: SEARCH_LIMIT, max_distance: maxDistance(),
    }, signal);
    say($('fact-status'), results.length ? plural(results.length, 'matching fact')
      : 'No matching facts found');
    $('fact-results').replaceChildren(
      h('ul', { class: 'plain-list cards', 'aria-label': 'Search results' }, results.map(resultItem)));
  } catch (error) {
    if (error.name === 'AbortError') return;
    $('fact-results').replaceChildren();
    say($('fact-status'), `Search failed: ${api.describe(error)}`, 'error');
  } finally {
    if (!signal.aborted) $('fact-results').removeAttribute('aria-busy');
  }
}

function resultItem(result) {
  return h('li', { class: 'fact' },
    h('div', { class: 'row' }, badge(result.category), h('span', { class: 'fact-text' }, result.fact)),
    h('div', { class: 'muted meta' },
      h('span', { class: 'fact-distance' }, `distance ${Number(result.distance).toFixed(3)}`),
      ' · last extracted ', h('span', { class: 'fact-time' }, timeEl(result.last_extracted_at))));
}

async function list(signal) {
  say($('fact-status'), 'Loading…');
  try {
    const category = $('fact-category').value;
    const [{ facts, total }, { forgotten }] = await Promise.all([
      api.get('/api/facts', { category, limit: LIST_LIMIT }, signal),
      api.get('/api/facts/forgotten', { limit: FORGOTTEN_LIMIT }, signal)]);
    $('fact-total').textContent = facts.length < total
      ? `showing ${facts.length} of ${total}` : plural(total, 'fact');
    say($('fact-status'), facts.length ? '' : 'No facts yet: they are extracted from your chats.');
    const groups = CATEGORIES.map((name) => [name, facts.filter((f) => f.category === name)])
      .filter(([, items]) => items.length);
    $('fact-results').replaceChildren(...groups.map(([name, items]) => h('section', { class: 'fact-group' },
      h('h3', {}, badge(name), ` ${items.length}`),
      h('ul', { class: 'plain-list cards' }, items.map(factItem)))),
    ...(forgotten.length ? [forgottenSection(forgotten)] : []));
  } catch (error) {
    if (error.name === 'AbortError') return;
    say($('fact-status'), api.describe(error), 'error');
  }
}

function factItem(fact) {
  return h('li', { class: 'fact' },
    h('span', { class: 'fact-text' }, fact.fact),
    fact.evidence.length ? h('ul', { class: 'plain-list fact-evidence', 'aria-label': 'What you said' },
      fact.evidence.map(quoteItem)) : h('div', { class: 'muted meta' }, 'saved by hand'),
    h('div', { class: 'muted meta' },
      `mentioned ${fact.mention_count}× · last extracted `,
      h('span', { class: 'fact-time' }, timeEl(fact.last_extracted_at))));
}

/** One quote the fact rests on: the user's words, when, and a link to the message. */
function quoteItem(evidence) {
  return h('li', { class: 'fact-quote' },
    h('q', {}, evidence.quote), ' ', h('span', { class: 'muted' }, timeEl(evidence.said_at)), ' ',
    openButton(evidence.conversation_id, evidence.message_id, 'open conversation'));
}

/** Facts deleted because the user asked: how many, when, and the message that asked
 * (what they were is not kept; the asking message holds the user's own words). */
function forgottenSection(forgotten) {
  return h('section', { class: 'fact-group fact-forgotten' },
    h('h3', {}, 'Forgotten at your request'),
    h('ul', { class: 'plain-list cards' }, forgotten.map((forget) => h('li', { class: 'fact' },
      `${plural(forget.facts, 'fact')} forgotten `, timeEl(forget.forgotten_at), ' ',
      forget.message_id ? openButton(forget.conversation_id, forget.message_id, 'open what you asked')
        : h('span', { class: 'muted' }, '(that conversation is deleted)')))));
}

function openButton(conversationId, messageId, label) {
  const open = () => document.dispatchEvent(new CustomEvent('open-conversation', {
    detail: { conversationId, messageId },
  }));
  return h('button', { type: 'button', class: 'link', onclick: open }, label);
}
