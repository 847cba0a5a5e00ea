// Knowledge tab, indexing: uploads (drop zone and file picker) and the progress of
// every indexing job, polled from GET /api/knowledge/jobs/{id} until it ends.

import * as api from './api.js';
import { $, badge, h, plural, say } from './dom.js';

const POLL_MS = 400;
const FINISHED = new Set(['done', 'error']);
const titles = new Map(); // entry id -> title, for the job rows
const polling = new Set(); // job ids with a poll loop running
const tracked = new Set(); // job ids this page started or re-indexed (`track`)
let onFinished = () => {};

/** `finished(job)` runs when a job this page watches ends (the tab refreshes its lists). */
export function init(finished) {
  onFinished = finished;
  $('kb-file').addEventListener('change', (event) => {
    uploadAll([...event.target.files]);
    event.target.value = ''; // choosing the same file again uploads it again
  });
  const zone = $('kb-drop');
  for (const name of ['dragenter', 'dragover']) {
    zone.addEventListener(name, (event) => {
      event.preventDefault();
      zone.dataset.over = '';
    });
  }
  zone.addEventListener('dragleave', () => delete zone.dataset.over);
  zone.addEventListener('drop', (event) => {
    event.preventDefault();
    delete zone.dataset.over;
    uploadAll([...(event.dataTransfer?.files || [])]);
  });
}

export function remember(entries) {
  for (const entry of entries) titles.set(entry.id, entry.title);
}

/** The recent jobs as the index status; unfinished ones are followed to their end. */
export async function load() {
  try {
    const { jobs } = await api.get('/api/knowledge/jobs', { limit: 10 });
    // An upload sent while this list was on its way is newer than the list: its row (or
    // its `uploading…` placeholder) stays, first.
    const listed = new Set(jobs.map((job) => job.id));
    const newer = [...$('kb-jobs').children].filter((row) => !row.dataset.job
      || (tracked.has(row.dataset.job) && !listed.has(row.dataset.job)));
    $('kb-jobs').replaceChildren(...newer, ...jobs.map(jobRow));
    for (const id of listed) tracked.delete(id); // the server lists it now: no longer newer
    jobs.filter((job) => !FINISHED.has(job.status)).forEach(follow);
    summarize();
  } catch (error) {
    say($('kb-index-status'), api.describe(error), 'error');
  }
}

/** Show `job` first in the job list (and in `extra`, e.g. the detail view) and follow it. */
export function track(job, extra = null) {
  tracked.add(job.id);
  $('kb-jobs').prepend(jobRow(job));
  extra?.replaceChildren(jobRow(job));
  summarize();
  follow(job);
}

async function uploadAll(files) {
  const pinned = $('kb-upload-pinned').checked;
  for (const file of files) {
    const placeholder = h('li', { class: 'job' }, h('strong', {}, file.name), ' uploading…');
    $('kb-jobs').prepend(placeholder);
    const form = new FormData();
    form.append('file', file, file.name);
    if (pinned) form.append('pinned', 'true');
    try {
      const { job_id: id, entry_id: entryId } = await api.request('/api/knowledge/upload',
        { method: 'POST', body: form });
      titles.set(entryId, file.name);
      placeholder.remove();
      track({ id, status: 'queued', done: 0, total: 0, entry_id: entryId, error: null });
    } catch (error) {
      placeholder.replaceChildren(h('strong', {}, file.name), ' ',
        h('span', { class: 'error' }, `upload refused: ${api.describe(error)}`));
    }
  }
}

async function follow(job) {
  if (polling.has(job.id)) return;
  polling.add(job.id);
  try {
    // Another tab shown, or signed out: stop; showing Knowledge again follows it anew (load).
    while (!FINISHED.has(job.status) && !$('app').hidden && !$('panel-knowledge').hidden) {
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      job = await api.get(`/api/knowledge/jobs/${encodeURIComponent(job.id)}`);
      for (const row of document.querySelectorAll(`[data-job="${CSS.escape(job.id)}"]`)) {
        row.replaceWith(jobRow(job));
      }
      summarize();
    }
    if (FINISHED.has(job.status)) onFinished(job);
  } catch (error) {
    say($('kb-index-status'), api.describe(error), 'error');
  } finally {
    polling.delete(job.id);
  }
}

function jobRow(job) {
  const name = job.entry_id ? titles.get(job.entry_id) || 'Knowledge entry' : 'Removed entry';
  const unit = job.total ? `${job.done} / ${job.total}` : 'waiting to start';
  return h('li', { class: 'job', 'data-job': job.id, 'data-status': job.status },
    h('div', { class: 'row spread' }, h('strong', {}, name), badge(job.status)),
    h('progress', { max: job.total || 1, value: job.status === 'done' ? job.total || 1 : job.done,
      'aria-label': `${name}: indexing progress` }),
    h('small', { class: 'muted job-count' }, unit),
    job.error ? h('p', { class: 'error job-error' }, job.error) : null);
}

function summarize() {
  const rows = [...document.querySelectorAll('#kb-jobs [data-status]')];
  const count = (status) => rows.filter((row) => row.dataset.status === status).length;
  const working = count('queued') + count('running');
  const failed = count('error');
  const parts = [working ? `${plural(working, 'job')} indexing` : 'Nothing waits for indexing',
    ...(failed ? [`${plural(failed, 'recent job')} failed: see why below`] : [])];
  say($('kb-index-status'), parts.join(' · '), failed ? 'warn' : '');
}
