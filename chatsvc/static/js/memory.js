// Memory tab: list, add, soft delete, and what a chat turn would inject.

import * as api from './api.js';
import { $, badge, h, plural, say, timeEl } from './dom.js';

export function init() {
  $('memory-filter').addEventListener('submit', (event) => {
    event.preventDefault();
    load();
  });
  $('memory-scope').addEventListener('change', () => {
    $('memory-project').disabled = $('memory-scope').value !== 'project';
  });
  $('memory-form').addEventListener('submit', (event) => {
    event.preventDefault();
    add();
  });
  $('preview-form').addEventListener('submit', (event) => {
    event.preventDefault();
    preview();
  });
}

export function show() {
  load();
}

function memoryCard(memory, extra) {
  return h('li', { class: 'memory', 'data-id': memory.id },
    h('div', { class: 'row' }, badge(memory.type),
      badge(memory.project_id ? `project: ${memory.project_id}` : memory.scope, memory.scope),
      extra),
    h('p', { class: 'memory-content' }, memory.content),
    h('small', { class: 'muted' }, 'added ', timeEl(memory.created_at)));
}

async function load() {
  say($('memory-status'), 'Loading…');
  try {
    const { memories } = await api.get('/api/memory', { project_id: $('memory-project-filter').value.trim() });
    say($('memory-status'), memories.length ? plural(memories.length, 'memory', 'memories') : 'No memories yet.');
    $('memory-list').replaceChildren(...memories.map((memory) => memoryCard(memory,
      h('button', {
        type: 'button', class: 'secondary small push-right',
        'aria-label': `Delete memory: ${memory.content.slice(0, 60)}`,
        onclick: () => remove(memory.id),
      }, 'Delete'))));
  } catch (error) {
    say($('memory-status'), api.describe(error), 'error');
  }
}

async function add() {
  const scope = $('memory-scope').value;
  const body = { content: $('memory-content').value, type: $('memory-type').value, scope };
  if (scope === 'project') body.project_id = $('memory-project').value.trim();
  say($('memory-form-error'), '');
  const button = $('memory-form').querySelector('button[type="submit"]');
  button.disabled = true;
  try {
    await api.post('/api/memory', body);
    // Keep whatever was typed meanwhile; clear only the text that was saved.
    if ($('memory-content').value === body.content) $('memory-content').value = '';
    await load();
  } catch (error) {
    say($('memory-form-error'), api.describe(error), 'error');
  } finally {
    button.disabled = false;
  }
}

async function remove(id) {
  try {
    await api.del(`/api/memory/${encodeURIComponent(id)}`);
    load();
  } catch (error) {
    say($('memory-status'), api.describe(error), 'error');
  }
}

async function preview() {
  say($('preview-status'), 'Loading…');
  try {
    const result = await api.post('/api/memory/injection-preview', {
      project_id: $('preview-project').value.trim() || null,
      query_text: $('preview-query').value.trim() || null,
    });
    say($('preview-status'), '');
    $('preview-meta').replaceChildren(badge(result.mode),
      result.degraded_reason ? ` degraded: ${result.degraded_reason} · ` : ' ',
      'stable prefix hash ', h('code', {}, result.stable_prefix_hash.slice(0, 16)));
    const none = (text) => h('li', { class: 'muted' }, text);
    $('preview-stable').replaceChildren(...(result.memory.length
      ? result.memory.map((m) => memoryCard(m)) : [none('nothing')]));
    $('preview-semantic').replaceChildren(...(result.semantic_memory.length
      ? result.semantic_memory.map((m) => memoryCard(m,
        h('span', { class: 'muted push-right' }, `distance ${Number(m.distance).toFixed(3)}`)))
      : [none(result.mode === 'semantic' ? 'no close memories' : 'none (no message text or no vectors)')]));
    $('preview-result').hidden = false;
  } catch (error) {
    say($('preview-status'), api.describe(error), 'error');
  }
}
