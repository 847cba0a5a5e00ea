// Console entry point: sign-in (token in sessionStorage, checked with /api/me) and tabs.

import * as api from './api.js';
import * as chat from './chat.js';
import { $, say, setTimeZone } from './dom.js';
import * as facts from './facts.js';
import * as factsheet from './factsheet.js';
import * as knowledge from './knowledge.js';
import * as memory from './memory.js';
import * as usage from './usage.js';

const TABS = { chat, facts, factsheet, memory, knowledge, usage };
const tabButtons = () => [...document.querySelectorAll('[role="tab"]')];

function selectTab(name, { focus = false } = {}) {
  if (!(name in TABS)) name = 'chat';
  for (const button of tabButtons()) {
    const selected = button.id === `tab-${name}`;
    button.setAttribute('aria-selected', String(selected));
    button.tabIndex = selected ? 0 : -1;
    $(button.getAttribute('aria-controls')).hidden = !selected;
    if (selected && focus) button.focus();
  }
  if (window.location.hash !== `#${name}`) history.replaceState(null, '', `#${name}`);
  TABS[name].show();
}

function initTabs() {
  const list = document.querySelector('[role="tablist"]');
  list.addEventListener('click', (event) => {
    const tab = event.target.closest('[role="tab"]');
    if (tab) selectTab(tab.id.slice(4));
  });
  // Arrow keys move between tabs (WAI-ARIA tabs pattern, automatic activation).
  list.addEventListener('keydown', (event) => {
    const tabs = tabButtons();
    const index = tabs.indexOf(document.activeElement);
    const next = { ArrowRight: index + 1, ArrowLeft: index - 1, Home: 0, End: tabs.length - 1 }[event.key];
    if (index === -1 || next === undefined) return;
    event.preventDefault();
    selectTab(tabs[(next + tabs.length) % tabs.length].id.slice(4), { focus: true });
  });
}

async function signIn(token) {
  api.token.set(token);
  const me = await api.get('/api/me');
  setTimeZone(me.timezone);
  usage.setAdmin(me.is_admin);
  $('whoami-name').textContent = `${me.name}${me.is_admin ? ' (admin)' : ''}`;
  $('signin').hidden = true;
  $('whoami').hidden = false;
  $('app').hidden = false;
  selectTab(window.location.hash.slice(1));
}

function signOut(message = '') {
  api.token.clear();
  $('app').hidden = true;
  $('whoami').hidden = true;
  $('signin').hidden = false;
  say($('signin-error'), message, message ? 'error' : '');
  $('signin-token').focus();
}

function initSignIn() {
  $('signin-form').addEventListener('submit', async (event) => {
    event.preventDefault();
    const field = $('signin-token');
    say($('signin-error'), '');
    try {
      await signIn(field.value.trim());
      field.value = '';
    } catch (error) {
      signOut(error.status === 401 ? 'That token is not valid.' : api.describe(error));
    }
  });
  $('sign-out').addEventListener('click', () => signOut());
  window.addEventListener('chatsvc:unauthorized', () => {
    if (!$('app').hidden) signOut('Your token is no longer valid: sign in again.');
  });
}

function start() {
  initSignIn();
  initTabs();
  for (const tab of Object.values(TABS)) tab.init();
  // A fact's quote (Facts tab) opens the conversation at the message it came from.
  document.addEventListener('open-conversation', ({ detail }) => {
    selectTab('chat');
    chat.openAt(detail.conversationId, detail.messageId);
  });
  const saved = api.token.get();
  if (saved) signIn(saved).catch((error) => signOut(api.describe(error)));
  else $('signin-token').focus();
}

start();
