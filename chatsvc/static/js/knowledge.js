// Knowledge tab: stats bar, browse, hybrid/semantic/keyword search, entry detail (pin,
// re-index, delete); uploads and job progress are in kbjobs.js.

import * as api from './api.js';
import { $, badge, h, plural, say, timeEl } from './dom.js';
import * as kbjobs from './kbjobs.js';

const KNOWN_TYPES = ['document', 'code', 'post'];

export function init() {
  $('kb-search').addEventListener('submit', (event) => {
    event.preventDefault();
    run();
  });
  for (const radio of document.querySelectorAll('input[name="kb-mode"]')) {
    radio.addEventListener('change', () => $('kb-query').value.trim() && run());
  }
  $('kb-source-type').addEventListener('change', run);
  kbjobs.init(refresh);
}

export function show() {
  refresh().then(kbjobs.load); // after the browse: the job rows name its entries
}

// A job ended (an upload is listed now, or gone) or an entry changed.
function refresh() {
  return Promise.all([loadStats(), run()]);
}

async function loadStats() {
  try {
    const stats = await api.get('/api/knowledge/stats');
    const byType = stats.by_source_type || {};
    $('kb-stats').replaceChildren(h('strong', {}, plural(stats.total, 'entry', 'entries')),
      ...Object.entries(byType).map(([type, count]) => h('span', { class: 'chip' }, badge(type), ` ${count}`)));
    const select = $('kb-source-type');
    const chosen = select.value;
    const types = [...new Set([...KNOWN_TYPES, ...Object.keys(byType)])].sort();
    select.replaceChildren(h('option', { value: '' }, 'All'),
      ...types.map((type) => h('option', { value: type }, type)));
    select.value = chosen;
  } catch (error) {
    say($('kb-status'), api.describe(error), 'error');
  }
}

function run() {
  const query = $('kb-query').value.trim();
  return query ? search(query) : browse();
}

async function browse() {
  say($('kb-status'), 'Loading…');
  try {
    const { entries, total } = await api.get('/api/knowledge',
      { source_type: $('kb-source-type').value, limit: 50 });
    kbjobs.remember(entries);
    say($('kb-status'), entries.length ? `${plural(total, 'entry', 'entries')} (newest first)` : 'The knowledge base is empty.');
    $('kb-results').replaceChildren(...entries.map((entry) => resultCard(entry, entry.id,
      h('p', {}, entry.abstract || ''))));
  } catch (error) {
    say($('kb-status'), api.describe(error), 'error');
  }
}

async function search(query) {
  const mode = document.querySelector('input[name="kb-mode"]:checked').value;
  say($('kb-status'), 'Searching...');
  try {
    const result = await api.post('/api/knowledge/search',
      { query, mode, limit: 20, source_type: $('kb-source-type').value || null });
    const note = result.degraded_reason ? ` · ${result.mode} only: ${result.degraded_reason}` : '';
    say($('kb-status'), `${result.results.length ? plural(result.results.length, 'result') : 'No matching entries found'}${note}`,
      result.degraded_reason ? 'warn' : '');
    $('kb-results').replaceChildren(...result.results.map((hit) => resultCard(hit, hit.entry_id,
      h('p', { class: 'snippet' }, hit.snippet || hit.abstract || ''),
      h('small', { class: 'muted' }, `score ${Number(hit.score).toFixed(4)} · chunk ${hit.chunk_index}`))));
  } catch (error) {
    $('kb-results').replaceChildren();
    say($('kb-status'), `Search failed: ${api.describe(error)}`, 'error');
  }
}

function resultCard(item, entryId, ...body) {
  return h('li', { class: 'kb-item' },
    h('button', { type: 'button', class: 'link', onclick: () => openEntry(entryId) }, item.title),
    ' ', badge(item.source_type), ...(item.pinned ? [' ', badge('pinned')] : []), ...body);
}

// Own entries are pinned into the owner's new conversations; shared ones by admins (API).
function pinRow(entry) {
  const where = entry.project_id ? ` (project ${entry.project_id})` : '';
  const state = entry.pinned ? `Pinned${entry.shared ? ' for everyone' : where}` : 'Not pinned';
  const toggle = entry.shared ? [] : [' ', h('button', { type: 'button', onclick: () => setPin(entry) },
    entry.pinned ? 'Unpin' : 'Pin to new conversations')];
  return h('p', { class: 'kb-pin' }, state, ...toggle);
}

async function setPin(entry) {
  try {
    await api.patch(`/api/knowledge/${encodeURIComponent(entry.id)}`, { pinned: !entry.pinned });
    await Promise.all([openEntry(entry.id), refresh()]);
  } catch (error) {
    say($('kb-status'), api.describe(error), 'error');
  }
}

async function reindex(entry) {
  try {
    const job = await api.post(`/api/knowledge/${encodeURIComponent(entry.id)}/reindex`);
    kbjobs.track(job, $('kb-detail').querySelector('.kb-entry-job'));
  } catch (error) {
    say($('kb-status'), api.describe(error), 'error');
  }
}

async function remove(entry) {
  if (!window.confirm(`Delete "${entry.title}" from the knowledge base?`)) return;
  try {
    await api.del(`/api/knowledge/${encodeURIComponent(entry.id)}`);
    $('kb-detail').hidden = true;
    await refresh();
    say($('kb-status'), `Deleted "${entry.title}".`);
  } catch (error) {
    say($('kb-status'), api.describe(error), 'error');
  }
}

// Shared entries are changed by admins only: the API answers 403 otherwise.
function actions(entry) {
  return h('p', { class: 'row kb-actions' },
    h('span', { class: 'muted' }, plural(entry.chunks, 'chunk')),
    h('button', { type: 'button', class: 'secondary small', onclick: () => reindex(entry) },
      'Re-index'),
    h('button', { type: 'button', class: 'secondary small', onclick: () => remove(entry) },
      'Delete'));
}

async function openEntry(id) {
  const detail = $('kb-detail');
  try {
    const entry = await api.get(`/api/knowledge/${encodeURIComponent(id)}`);
    const section = (title, ...content) => h('section', {}, h('h4', {}, title), ...content);
    const metadata = entry.metadata && Object.keys(entry.metadata).length ? entry.metadata : null;
    detail.replaceChildren(
      h('h3', { tabindex: '-1' }, entry.title), h('p', {}, badge(entry.source_type),
        entry.source_id ? ` ${entry.source_id}` : '', ' · updated ', timeEl(entry.updated_at)),
      pinRow(entry), actions(entry), h('ul', { class: 'plain-list kb-entry-job' }),
      section('Abstract', h('p', {}, entry.abstract || '—')),
      section('Overview', h('p', { class: 'prewrap' }, entry.overview || '—')),
      section('Full content', h('pre', { class: 'content' }, entry.content || '')),
      ...(metadata ? [section('Metadata', h('pre', {}, JSON.stringify(metadata, null, 2)))] : []));
    detail.hidden = false;
    detail.querySelector('h3').focus();
  } catch (error) {
    say($('kb-status'), api.describe(error), 'error');
  }
}
