// The admin REST API (/admin/v2/...) as the console calls it: same origin, JSON, and the
// signed-in token in an "Authorization: Bearer" header. The token lives in sessionStorage
// (this tab only, gone when it closes); it is never put in a URL and never logged.

const TOKEN_KEY = 'magnetar.console.token';

export class ApiError extends Error {
  constructor(status, reason, method, path) {
    super(status ? `${method} ${path}: HTTP ${status}: ${reason}` : `${method} ${path}: ${reason}`);
    this.status = status;
    this.reason = reason;
  }
}

export function token() {
  return sessionStorage.getItem(TOKEN_KEY) || '';
}

export function setToken(value) {
  sessionStorage.setItem(TOKEN_KEY, value);
}

export function clearToken() {
  sessionStorage.removeItem(TOKEN_KEY);
}

// The role a token names (its "sub" claim), read without checking the signature: only to say
// who is signed in. The broker checks the token on every call.
export function tokenSubject(value) {
  try {
    const part = value.split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
    const claims = JSON.parse(atob(part + '='.repeat((4 - part.length % 4) % 4)));
    return typeof claims.sub === 'string' ? claims.sub : '';
  } catch {
    return '';
  }
}

// What an error answer says: Pulsar's {"reason": "..."}, else its text, bounded.
function reasonOf(text, statusText) {
  try {
    const body = JSON.parse(text);
    if (body && typeof body.reason === 'string') return body.reason;
    if (body && typeof body.message === 'string') return body.message;
  } catch {
    // not JSON
  }
  const plain = (text || '').trim();
  return plain ? plain.slice(0, 300) : (statusText || 'no reason given');
}

// Calls the API; resolves to the parsed JSON (or text, or null for an empty answer), rejects
// with an ApiError. A 401 also tells the page (event 'console-unauthorized') so it can ask
// for a token again. `options.token` overrides the stored token (signing in).
export async function call(method, path, options = {}) {
  const headers = { Accept: 'application/json' };
  const bearer = options.token !== undefined ? options.token : token();
  if (bearer) headers.Authorization = 'Bearer ' + bearer;
  let body;
  if (options.body !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(options.body);
  }
  let res;
  try {
    res = await fetch(path, {
      method, headers, body, cache: 'no-store', credentials: 'same-origin', redirect: 'manual',
    });
  } catch (e) {
    throw new ApiError(0, 'the broker did not answer (' + e.message + ')', method, path);
  }
  // A broker answers a call about a topic it does not own with a 307 to the owner: another
  // origin, which the page may not call (and would not send the token to). Said in words
  // instead of a failed cross-origin fetch.
  if (res.type === 'opaqueredirect') {
    throw new ApiError(307, 'another broker owns this; the console reaches only the server that ' +
      'served it: open it through magnetar proxy (which follows redirects) or on the owner',
    method, path);
  }
  const text = await res.text();
  if (!res.ok) {
    const error = new ApiError(res.status, reasonOf(text, res.statusText), method, path);
    if (res.status === 401 && options.token === undefined) {
      window.dispatchEvent(new CustomEvent('console-unauthorized', { detail: error }));
    }
    throw error;
  }
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export const get = (path) => call('GET', path);

const enc = encodeURIComponent;

// "persistent://tenant/ns/topic" -> its parts; null when it is not such a name.
export function parseTopic(name) {
  const m = /^(persistent|non-persistent):\/\/([^/]+)\/([^/]+)\/(.+)$/.exec(name);
  if (!m) return null;
  return { domain: m[1], tenant: m[2], namespace: m[3], local: m[4], name };
}

export function topicName(domain, tenant, namespace, local) {
  return `${domain}://${tenant}/${namespace}/${local}`;
}

// The REST path of a topic: /admin/v2/<domain>/<tenant>/<ns>/<topic>.
export function topicPath(t) {
  return `/admin/v2/${t.domain}/${enc(t.tenant)}/${enc(t.namespace)}/${enc(t.local)}`;
}

export function subscriptionPath(t, subscription) {
  return `${topicPath(t)}/subscription/${enc(subscription)}`;
}

export function namespacePath(tenant, namespace) {
  return `/admin/v2/namespaces/${enc(tenant)}/${enc(namespace)}`;
}

// The topics of a namespace, persistent and non-persistent, partitions folded into their
// partitioned topic: [{name, domain, local, partitions}] sorted by local name, then domain.
// A list the caller may not read is left out; `errors` collects why.
export async function namespaceTopics(tenant, namespace, errors = []) {
  const base = `/${enc(tenant)}/${enc(namespace)}`;
  const settle = (p) => p.catch((e) => { errors.push(e); return []; });
  const [persistent, partitioned, nonPersistent] = await Promise.all([
    settle(get('/admin/v2/persistent' + base)),
    settle(get('/admin/v2/persistent' + base + '/partitioned')),
    settle(get('/admin/v2/non-persistent' + base)),
  ]);
  const topics = new Map();
  for (const name of partitioned || []) topics.set(name, { name, partitions: 0 });
  for (const name of [...(persistent || []), ...(nonPersistent || [])]) {
    const m = /^(.*)-partition-(\d+)$/.exec(name);
    if (m && topics.has(m[1])) {
      topics.get(m[1]).partitions++;
      continue;
    }
    if (!topics.has(name)) topics.set(name, { name, partitions: -1 });
  }
  const out = [];
  for (const t of topics.values()) {
    const parsed = parseTopic(t.name);
    if (!parsed) continue;
    out.push({ ...parsed, partitions: t.partitions });
  }
  return out.sort((a, b) => a.local.localeCompare(b.local) || a.domain.localeCompare(b.domain));
}

// A topic's stats: partitioned-stats for a partitioned topic (partitions >= 0), else stats.
export function topicStats(t) {
  return get(topicPath(t) + (t.partitions >= 0 ? '/partitioned-stats' : '/stats'));
}

// Whether a topic is partitioned: its partition count (0: not partitioned).
export async function partitionCount(t) {
  const meta = await get(topicPath(t) + '/partitions');
  return meta && typeof meta.partitions === 'number' ? meta.partitions : 0;
}
