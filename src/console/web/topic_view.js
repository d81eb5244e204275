// A topic: summary cards, live plots (rates, throughput, storage, backlog per subscription,
// replication backlog and lag per remote cluster), its producers, subscriptions (with the
// cursor actions) and replicators, and "Unload". Every refresh is one stats call; the plots
// are drawn from the history sampled in this page (sampler.js).

import { call, topicPath, subscriptionPath, topicStats, partitionCount } from './api.js';
import { h, syncRows, setText } from './dom.js';
import { confirmAction } from './dialogs.js';
import { LineChart } from './chart.js';
import { historyOf } from './sampler.js';
import { namespaceHash } from './tree.js';
import * as fmt from './format.js';

function table(id, headings, tbody) {
  return h('table', { id },
    h('thead', {}, h('tr', {}, headings.map(([label, num]) => h('th', { class: num ? 'num' : '' }, label)))),
    tbody);
}

function cells(tr) {
  return (c) => tr.querySelector(`[data-column="${c}"]`);
}

export class TopicView {
  // `topic`: parseTopic()'s parts; `windowMs()` the plotted window, read at every draw.
  constructor(topic, windowMs) {
    this.topic = topic;
    this.windowMs = windowMs;
    this.partitions = -1;  // unknown until the first refresh
    this.history = historyOf(topic.name);
    this.cards = h('div', { class: 'cards' });
    this.charts = {
      rate: new LineChart('rate', 'Messages per second', fmt.compact),
      throughput: new LineChart('throughput', 'Throughput (bytes per second)', fmt.bytes),
      storage: new LineChart('storage', 'Storage size', fmt.bytes),
      backlog: new LineChart('backlog', 'Backlog per subscription (messages)', fmt.compact),
      replicationBacklog: new LineChart('replication-backlog', 'Replication backlog per remote cluster (messages)', fmt.compact),
      replicationLag: new LineChart('replication-lag', 'Replication lag per remote cluster (seconds)', fmt.seconds),
    };
    this.producers = h('tbody');
    this.subscriptions = h('tbody');
    this.replication = h('tbody');
    this.kind = h('span', { class: 'tag' }, topic.domain);
    const t = topic;
    this.element = h('div', { id: 'topic-view', 'data-topic': t.name },
      h('div', { class: 'crumbs' }, h('a', { href: '#/' }, 'Overview'), ' / ', t.tenant, ' / ',
        h('a', { href: namespaceHash(t.tenant, t.namespace) }, t.namespace)),
      h('h1', {}, t.local, this.kind),
      h('div', { class: 'muted' }, t.name),
      h('div', { class: 'row' },
        h('button', { type: 'button', id: 'unload-topic', onclick: () => this.unload() }, 'Unload…')),
      this.cards,
      h('div', { class: 'charts' }, Object.values(this.charts).map((c) => c.element)),
      h('h2', {}, 'Subscriptions'),
      table('subscriptions', [['Subscription'], ['Type'], ['Backlog', 1], ['Unacked', 1],
        ['Consumers', 1], ['Rate out', 1], ['Actions']], this.subscriptions),
      h('h2', {}, 'Producers'),
      table('producers', [['Producer'], ['Access mode'], ['Address'], ['Rate in', 1],
        ['Messages in', 1], ['Connected since']], this.producers),
      h('h2', {}, 'Replication'),
      table('replication', [['Remote cluster'], ['Connected'], ['Backlog', 1], ['Lag', 1],
        ['Rate out', 1], ['Last error']], this.replication));
  }

  async refresh() {
    const t = this.topic;
    if (this.partitions < 0) {
      this.partitions = await partitionCount(t).catch(() => 0);
      if (this.partitions > 0) setText(this.kind, `${t.domain}, ${this.partitions} partitions`);
    }
    const stats = await topicStats({ ...t, partitions: this.partitions > 0 ? this.partitions : -1 });
    const now = Date.now();
    this.history.add(now, stats || {});
    this.draw(now, stats || {});
  }

  draw(now, st) {
    const hist = this.history;
    const windowMs = this.windowMs();
    const last = (key) => {
      const points = hist.series.get(key) || [];
      return points.length ? points[points.length - 1][1] : null;
    };
    const subs = st.subscriptions || {};
    let backlog = 0;
    for (const sub of Object.values(subs)) backlog += sub.msgBacklog || 0;
    const card = (id, label, value) => h('div', { class: 'card', 'data-card': id },
      h('div', { class: 'label' }, label), h('div', { class: 'value' }, value));
    this.cards.replaceChildren(
      card('rate-in', 'Rate in', fmt.rate(last('rate:in'))),
      card('rate-out', 'Rate out', fmt.rate(last('rate:out'))),
      card('throughput-in', 'Throughput in', fmt.throughput(last('throughput:in'))),
      card('throughput-out', 'Throughput out', fmt.throughput(last('throughput:out'))),
      card('storage', 'Storage size', fmt.bytes(st.storageSize)),
      card('backlog', 'Backlog', fmt.count(backlog)),
      card('producers', 'Producers', fmt.count((st.publishers || []).length)),
      card('subscriptions', 'Subscriptions', fmt.count(Object.keys(subs).length)));

    this.charts.rate.render([hist.one('rate:in', 'in'), hist.one('rate:out', 'out')], now, windowMs);
    this.charts.throughput.render(
      [hist.one('throughput:in', 'in'), hist.one('throughput:out', 'out')], now, windowMs);
    this.charts.storage.render([hist.one('storage', 'storage')], now, windowMs);
    this.charts.backlog.render(hist.group('backlog:'), now, windowMs);
    this.charts.replicationBacklog.render(hist.group('replication-backlog:'), now, windowMs);
    this.charts.replicationLag.render(hist.group('replication-lag:'), now, windowMs);

    const persistent = this.topic.domain === 'persistent';
    syncRows(this.subscriptions, Object.entries(subs).sort(([a], [b]) => a.localeCompare(b)),
      ([name]) => name,
      ([name]) => h('tr', { 'data-subscription': name },
        h('td', {}, name), h('td', { 'data-column': 'type' }),
        ...['backlog', 'unacked', 'consumers', 'out'].map((c) => h('td', { class: 'num', 'data-column': c })),
        h('td', { class: 'actions' }, persistent ? [
          h('button', { type: 'button', 'data-action': 'clear-backlog', class: 'danger', onclick: () => this.clearBacklog(name) }, 'Clear backlog'),
          h('button', { type: 'button', 'data-action': 'skip', onclick: () => this.skip(name) }, 'Skip…'),
          h('button', { type: 'button', 'data-action': 'reset-cursor', onclick: () => this.resetCursor(name) }, 'Reset cursor…'),
        ] : h('span', { class: 'muted' }, 'no backlog (non-persistent)'))),
      (tr, [, sub]) => {
        const c = cells(tr);
        setText(c('type'), sub.type || '');
        setText(c('backlog'), fmt.count(sub.msgBacklog));
        setText(c('unacked'), fmt.count(sub.unackedMessages));
        setText(c('consumers'), fmt.count((sub.consumers || []).length));
        setText(c('out'), fmt.rate(sub.msgRateOut));
      });
    if (!Object.keys(subs).length) {
      this.subscriptions.replaceChildren(h('tr', {}, h('td', { colspan: 7, class: 'empty' }, 'No subscriptions.')));
    }

    const producers = st.publishers || [];
    syncRows(this.producers, producers, (p) => `${p.producerName}#${p.producerId ?? ''}`,
      (p) => h('tr', { 'data-producer': p.producerName || '' },
        h('td', {}, p.producerName || ''), h('td', {}, p.accessMode || ''), h('td', {}, p.address || ''),
        h('td', { class: 'num', 'data-column': 'in' }), h('td', { class: 'num', 'data-column': 'count' }),
        h('td', {}, fmt.when(p.connectedSince))),
      (tr, p) => {
        const c = cells(tr);
        setText(c('in'), fmt.rate(p.msgRateIn));
        setText(c('count'), fmt.count(p.msgInCounter));
      });
    if (!producers.length) {
      this.producers.replaceChildren(h('tr', {}, h('td', { colspan: 6, class: 'empty' }, 'No producers connected.')));
    }

    const remotes = Object.entries(st.replication || {}).sort(([a], [b]) => a.localeCompare(b));
    syncRows(this.replication, remotes, ([cluster]) => cluster,
      ([cluster]) => h('tr', { 'data-cluster': cluster }, h('td', {}, cluster),
        ...['connected', 'backlog', 'lag', 'out', 'error'].map((c) =>
          h('td', { class: ['backlog', 'lag', 'out'].includes(c) ? 'num' : '', 'data-column': c }))),
      (tr, [, r]) => {
        const c = cells(tr);
        setText(c('connected'), r.connected ? 'yes' : 'no');
        setText(c('backlog'), fmt.count(r.replicationBacklog));
        setText(c('lag'), fmt.seconds(r.replicationDelayInSeconds));
        setText(c('out'), fmt.rate(r.msgRateOut));
        setText(c('error'), r.lastError || '');
      });
    if (!remotes.length) {
      this.replication.replaceChildren(h('tr', {}, h('td', { colspan: 6, class: 'empty' },
        'Not replicated: the namespace names no other cluster.')));
    }
  }

  after(message) {
    this.refresh().catch(() => {});
    return message;
  }

  clearBacklog(sub) {
    return confirmAction({
      title: 'Clear the backlog',
      text: `Every message of ${this.topic.name} not yet acknowledged by subscription "${sub}" ` +
        'is skipped: its consumers will not receive them.',
      confirmLabel: 'Clear backlog',
      danger: true,
      run: async () => {
        await call('POST', subscriptionPath(this.topic, sub) + '/skip_all');
        return this.after(`Backlog of "${sub}" cleared`);
      },
    });
  }

  skip(sub) {
    return confirmAction({
      title: 'Skip messages',
      text: `The next messages of subscription "${sub}" are skipped (acknowledged without delivery).`,
      confirmLabel: 'Skip',
      danger: true,
      fields: [{ id: 'count', label: 'Messages to skip', type: 'number', value: '1', min: 1 }],
      run: async ({ count }) => {
        const n = Number(count);
        if (!Number.isInteger(n) || n < 1) throw new Error('A whole number of messages, 1 or more.');
        await call('POST', subscriptionPath(this.topic, sub) + '/skip/' + n);
        return this.after(`Skipped ${n} messages of "${sub}"`);
      },
    });
  }

  resetCursor(sub) {
    return confirmAction({
      title: 'Reset the cursor',
      text: `Subscription "${sub}" goes back (or forward) to the first message published at or ` +
        'after the time below; messages after it are delivered again.',
      confirmLabel: 'Reset cursor',
      danger: true,
      fields: [{ id: 'minutes', label: 'Minutes ago', type: 'number', value: '10', min: 0,
        hint: '0: now, which skips the whole backlog.' }],
      run: async ({ minutes }) => {
        const m = Number(minutes);
        if (!Number.isFinite(m) || m < 0) throw new Error('Minutes: a number, 0 or more.');
        const at = Date.now() - Math.round(m * 60000);
        await call('POST', subscriptionPath(this.topic, sub) + '/resetcursor/' + at);
        return this.after(`Cursor of "${sub}" reset to ${new Date(at).toLocaleString()}`);
      },
    });
  }

  unload() {
    return confirmAction({
      title: 'Unload the topic',
      text: `${this.topic.name} is closed on its broker (clients reconnect) and loaded again on ` +
        'the next use, possibly by another broker.',
      confirmLabel: 'Unload',
      run: async () => {
        await call('PUT', topicPath(this.topic) + '/unload');
        return this.after(`Unloaded ${this.topic.name}`);
      },
    });
  }

  stop() {}
}
