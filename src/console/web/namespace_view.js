// A namespace: its topics (persistent, partitioned, non-persistent) with their producers,
// subscriptions, rates, backlog and storage, refreshed at every sample; and "Create topic".

import { call, namespaceTopics, topicPath, topicStats, topicName } from './api.js';
import { h, syncRows, setText } from './dom.js';
import { confirmAction } from './dialogs.js';
import * as fmt from './format.js';

const MAX_STATS = 100;  // topics whose stats are read at each refresh
const PARALLEL = 6;     // stats requests in flight at once

const enc = encodeURIComponent;

export function topicHash(t) {
  return `#/topic/${t.domain}/${enc(t.tenant)}/${enc(t.namespace)}/${enc(t.local)}`;
}

async function mapLimited(items, limit, fn) {
  const out = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

function backlogOf(stats) {
  let total = 0;
  for (const sub of Object.values(stats.subscriptions || {})) total += sub.msgBacklog || 0;
  return total;
}

export class NamespaceView {
  constructor(tenant, namespace) {
    this.tenant = tenant;
    this.namespace = namespace;
    this.rows = h('tbody');
    this.note = h('p', { class: 'muted' });
    this.element = h('div', { id: 'namespace-view', 'data-namespace': `${tenant}/${namespace}` },
      h('div', { class: 'crumbs' }, h('a', { href: '#/' }, 'Overview'), ' / ', tenant),
      h('h1', {}, `${tenant}/${namespace}`),
      h('div', { class: 'row' },
        h('button', { type: 'button', id: 'create-topic', class: 'primary', onclick: () => this.create() },
          'Create topic…')),
      h('h2', {}, 'Topics'),
      h('table', { id: 'topics' },
        h('thead', {}, h('tr', {},
          h('th', {}, 'Topic'), h('th', {}, 'Kind'), h('th', { class: 'num' }, 'Producers'),
          h('th', { class: 'num' }, 'Subscriptions'), h('th', { class: 'num' }, 'Rate in'),
          h('th', { class: 'num' }, 'Rate out'), h('th', { class: 'num' }, 'Backlog'),
          h('th', { class: 'num' }, 'Storage'))),
        this.rows),
      this.note);
  }

  async refresh() {
    const errors = [];
    const topics = await namespaceTopics(this.tenant, this.namespace, errors);
    if (errors.length && !topics.length) throw errors[0];
    const stats = await mapLimited(topics.slice(0, MAX_STATS), PARALLEL,
      (t) => topicStats(t).catch((e) => ({ error: e })));
    syncRows(this.rows, topics.map((t, i) => ({ t, stats: stats[i] })), ({ t }) => t.name,
      ({ t }) => {
        const kind = t.partitions >= 0
          ? `${t.domain}, partitioned` : t.domain;
        return h('tr', { 'data-topic': t.name },
          h('td', {}, h('a', { href: topicHash(t) }, t.local)), h('td', {}, kind),
          ...['producers', 'subscriptions', 'in', 'out', 'backlog', 'storage'].map((c) =>
            h('td', { class: 'num', 'data-column': c })));
      },
      (tr, { stats: st }) => {
        const cell = (c) => tr.querySelector(`[data-column="${c}"]`);
        if (!st) {
          for (const c of ['producers', 'subscriptions', 'in', 'out', 'backlog', 'storage']) setText(cell(c), '');
          return;
        }
        if (st.error) {
          setText(cell('producers'), `HTTP ${st.error.status || '?'}`);
          cell('producers').title = st.error.message;
          return;
        }
        setText(cell('producers'), fmt.count((st.publishers || []).length));
        setText(cell('subscriptions'), fmt.count(Object.keys(st.subscriptions || {}).length));
        setText(cell('in'), fmt.rate(st.msgRateIn));
        setText(cell('out'), fmt.rate(st.msgRateOut));
        setText(cell('backlog'), fmt.count(backlogOf(st)));
        setText(cell('storage'), fmt.bytes(st.storageSize));
      });
    const notes = [];
    if (!topics.length) notes.push('No topics in this namespace yet.');
    if (topics.length > MAX_STATS) notes.push(`Stats of the first ${MAX_STATS} topics only.`);
    for (const e of errors) notes.push(e.message);
    setText(this.note, notes.join(' '));
  }

  create() {
    return confirmAction({
      title: 'Create a topic',
      text: `In namespace ${this.tenant}/${this.namespace}.`,
      confirmLabel: 'Create',
      fields: [
        { id: 'domain', label: 'Kind', type: 'select', value: 'persistent',
          options: [['persistent', 'persistent'], ['non-persistent', 'non-persistent']] },
        { id: 'name', label: 'Name', value: '' },
        { id: 'partitions', label: 'Partitions', type: 'number', value: '0', min: 0,
          hint: '0: a non-partitioned topic.' },
      ],
      run: async ({ domain, name, partitions }) => {
        if (!name || name.includes('/')) throw new Error('A topic name is needed, without "/".');
        const n = Number(partitions || '0');
        if (!Number.isInteger(n) || n < 0) throw new Error('Partitions: a whole number, 0 or more.');
        const t = { domain, tenant: this.tenant, namespace: this.namespace, local: name };
        if (n > 0) {
          await call('PUT', topicPath(t) + '/partitions', { body: n });
        } else {
          await call('PUT', topicPath(t));
        }
        this.refresh().catch(() => {});
        return `Created ${topicName(domain, this.tenant, this.namespace, name)}` +
          (n > 0 ? ` with ${n} partitions` : '');
      },
    });
  }

  stop() {}
}
