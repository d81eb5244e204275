// The console's entry point: settings, sign-in, the views by URL fragment, and the sampling
// timer that refreshes the view on screen.
//
//   #/                                   overview_view.js
//   #/namespace/<tenant>/<namespace>     namespace_view.js
//   #/topic/<domain>/<tenant>/<ns>/<t>   topic_view.js
//
// Only the view on screen is sampled; one refresh at a time (a slow broker is not piled on).

import { call, token, tokenSubject, topicName, parseTopic } from './api.js';
import { $, clear } from './dom.js';
import { showError, hideError } from './dialogs.js';
import { loadTree, markCurrent } from './tree.js';
import { showLogin, setUpLogin } from './login.js';
import { OverviewView } from './overview_view.js';
import { NamespaceView } from './namespace_view.js';
import { TopicView } from './topic_view.js';

const settings = {
  interval: 2000,
  window: 300000,
};

let view = null;
let timer = 0;
let busy = false;
let started = false;

function setting(id, key) {
  const select = $(id);
  const stored = localStorage.getItem('magnetar.console.' + key);
  if (stored && [...select.options].some((o) => o.value === stored)) select.value = stored;
  settings[key] = Number(select.value);
  select.addEventListener('change', () => {
    settings[key] = Number(select.value);
    localStorage.setItem('magnetar.console.' + key, select.value);
    schedule(0);
  });
}

function viewFor(hash) {
  const parts = hash.replace(/^#\/?/, '').split('/').map((p) => {
    try {
      return decodeURIComponent(p);
    } catch {
      return p;
    }
  });
  if (parts[0] === 'namespace' && parts.length === 3) return new NamespaceView(parts[1], parts[2]);
  if (parts[0] === 'topic' && parts.length === 5) {
    const t = parseTopic(topicName(parts[1], parts[2], parts[3], parts[4]));
    if (t) return new TopicView(t, () => settings.window);
  }
  return new OverviewView(() => settings.window);
}

function route() {
  if (view) view.stop();
  view = viewFor(location.hash);
  clear($('main')).append(view.element);
  markCurrent();
  schedule(0);
}

function schedule(delay) {
  clearTimeout(timer);
  timer = setTimeout(tick, delay);
}

async function tick() {
  if (busy || !view || $('app').hidden) return;
  busy = true;
  const current = view;
  try {
    await current.refresh();
  } catch (e) {
    if (e.status !== 401) showError(e);
  } finally {
    busy = false;
    // A view opened meanwhile was not refreshed yet (its tick found this one busy).
    schedule(current === view ? settings.interval : 0);
  }
}

async function enter() {
  $('login').hidden = true;
  $('app').hidden = false;
  const t = token();
  $('who').textContent = t ? `signed in as ${tokenSubject(t) || 'token holder'}` : 'authentication off';
  $('sign-out').hidden = !t;
  hideError();
  const clusters = await loadTree();
  $('cluster-name').textContent = clusters.length ? 'cluster ' + clusters.join(', ') : '';
  if (!started) {
    started = true;
    window.addEventListener('hashchange', route);
  }
  route();
}

async function start() {
  setting('interval', 'interval');
  setting('window', 'window');
  $('banner-close').addEventListener('click', hideError);
  setUpLogin(() => enter());
  window.addEventListener('console-unauthorized', () => {
    clearTimeout(timer);
    showLogin(token()
      ? 'The broker refused the token of this session (HTTP 401): sign in again.'
      : 'This broker needs a token.');
  });
  try {
    await call('GET', '/admin/v2/clusters');
  } catch (e) {
    if (e.status === 401) return;  // the event above showed the login
    showError(e);
  }
  await enter();
}

start();
