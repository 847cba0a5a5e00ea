// Fact sheet tab: the latest sheet (the facts injected into every prompt).

import * as api from './api.js';
import { $, badge, fmtTime, h, say } from './dom.js';

export function init() {
  $('sheet-generate').addEventListener('click', generate);
}

export function show() {
  load();
}

async function load() {
  if (!$('sheet-facts').children.length) say($('sheet-status'), 'Loading…');
  try {
    render(await api.get('/api/fact-sheet'));
  } catch (error) {
    say($('sheet-status'), api.describe(error), 'error');
  }
}

async function generate() {
  const button = $('sheet-generate');
  button.disabled = true;
  say($('sheet-status'), 'Generating…');
  try {
    render(await api.post('/api/fact-sheet/generate', {}));
  } catch (error) {
    say($('sheet-status'), api.describe(error), 'error');
  } finally {
    button.disabled = false;
  }
}

function render(sheet) {
  const facts = sheet.facts || [];
  $('sheet-summary').textContent = sheet.created_at
    ? `${sheet.fact_count} facts · generated ${fmtTime(sheet.created_at)}`
    : '';
  say($('sheet-status'), sheet.created_at && facts.length ? ''
    : 'No fact sheet yet. It is built from your facts; generate one now or chat first.');
  $('sheet-facts').replaceChildren(...facts.map((fact) => h('li', { class: 'fact' },
    h('div', { class: 'row' },
      badge(fact.category),
      h('span', { class: 'badge badge-score', title: 'score' }, `score ${Number(fact.score).toFixed(3)}`)),
    h('span', { class: 'fact-text' }, fact.fact))));
}
