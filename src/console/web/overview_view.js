// The start page: the clusters (with their service URLs when the role may read them), the
// tenants with their namespaces, and this server's own numbers from its /metrics, plotted live
// (a broker's topics, clients, message rates and backlog; a proxy's connections and bytes).

import { get } from './api.js';
import { h, setText } from './dom.js';
import { namespaceHash } from './tree.js';
import { LineChart } from './chart.js';
import { serverMetrics } from './metrics.js';
import * as fmt from './format.js';

const KEEP_MS = 16 * 60 * 1000;

// What the overview shows of a broker's /metrics and of a proxy's: cards [id, label, series,
// format], a chart of two counters' growth per second, a chart of one gauge.
const BROKER = {
  cards: [['topics', 'Topics', 'pulsar_topics_count', fmt.count],
    ['producers', 'Producers', 'pulsar_producers_count', fmt.count],
    ['consumers', 'Consumers', 'pulsar_consumers_count', fmt.count],
    ['connections', 'Connections', 'pulsar_active_connections', fmt.count],
    ['backlog', 'Backlog', 'pulsar_msg_backlog', fmt.count],
    ['storage', 'Storage size', 'pulsar_storage_size', fmt.bytes]],
  rate: { title: 'Messages per second on this broker', in: 'pulsar_in_messages_total',
    out: 'pulsar_out_messages_total', format: fmt.compact },
  gauge: { title: 'Backlog on this broker (messages)', name: 'pulsar_msg_backlog', label: 'backlog',
    format: fmt.compact },
};
const PROXY = {
  cards: [['connections', 'Connections', 'pulsar_proxy_active_connections', fmt.count],
    ['opened', 'Connections opened', 'pulsar_proxy_new_connections', fmt.count],
    ['rejected', 'Connections rejected', 'pulsar_proxy_rejected_connections', fmt.count],
    ['lookups', 'Lookups', 'pulsar_proxy_lookup_requests', fmt.count]],
  rate: { title: 'Bytes per second through this proxy', in: 'magnetar_proxy_bytes_in_total',
    out: 'magnetar_proxy_bytes_out_total', format: fmt.bytes },
  gauge: { title: 'Client connections to this proxy', name: 'pulsar_proxy_active_connections',
    label: 'connections', format: fmt.compact },
};

const enc = encodeURIComponent;

export class OverviewView {
  // `windowMs()`: the plotted window, read at every draw.
  constructor(windowMs) {
    this.windowMs = windowMs;
    this.clusters = h('tbody');
    this.tenants = h('tbody');
    this.serverCards = h('div', { class: 'cards' });
    this.serverNote = h('p', { class: 'muted', id: 'server-note' });
    this.charts = h('div', { class: 'charts' });
    this.series = new Map();  // 'in' | 'out' | 'gauge' -> [[timeMs, value|null], ...]
    this.previous = null;     // {t, sums} of the last sample
    this.element = h('div', { id: 'overview' },
      h('h1', {}, 'Overview'),
      h('h2', {}, 'This server'),
      this.serverCards, this.charts, this.serverNote,
      h('h2', {}, 'Clusters'),
      h('table', {}, h('thead', {}, h('tr', {}, h('th', {}, 'Cluster'), h('th', {}, 'Web service URL'),
        h('th', {}, 'Broker service URL'))), this.clusters),
      h('h2', {}, 'Tenants'),
      h('table', {}, h('thead', {}, h('tr', {}, h('th', {}, 'Tenant'), h('th', {}, 'Namespaces'))),
        this.tenants),
      h('p', { class: 'muted' }, 'Pick a namespace to see its topics; a topic to plot its rates, ' +
        'storage, backlogs and replication.'));
    this.loaded = false;
  }

  async refresh() {
    await this.sampleMetrics();
    if (this.loaded) return;
    // Cluster and tenant lists change rarely: loaded once per visit of the page.
    this.loaded = true;
    const clusters = (await get('/admin/v2/clusters')) || [];
    const details = await Promise.all(clusters.map((c) =>
      get('/admin/v2/clusters/' + enc(c)).catch((e) => ({ error: e }))));
    this.clusters.replaceChildren(...clusters.map((c, i) => {
      const d = details[i] || {};
      const note = d.error ? `details need super-user access (HTTP ${d.error.status})` : '';
      return h('tr', { 'data-cluster': c }, h('td', {}, c),
        h('td', {}, d.serviceUrl || d.serviceUrlTls || note),
        h('td', {}, d.brokerServiceUrl || d.brokerServiceUrlTls || ''));
    }));
    const tenants = (await get('/admin/v2/tenants')) || [];
    const namespaces = await Promise.all(tenants.map((t) =>
      get('/admin/v2/namespaces/' + enc(t)).catch((e) => e)));
    this.tenants.replaceChildren(...tenants.map((t, i) => {
      const list = namespaces[i];
      const cell = Array.isArray(list)
        ? list.flatMap((full, j) => {
          const ns = full.slice(full.indexOf('/') + 1);
          return [j ? ', ' : '', h('a', { href: namespaceHash(t, ns) }, full)];
        })
        : [h('span', { class: 'muted' }, list.message)];
      return h('tr', { 'data-tenant': t }, h('td', {}, t), h('td', {}, cell));
    }));
  }

  // One sample of /metrics: cards, and a point of each plotted series. A server whose
  // /metrics cannot be read says why below the cards (not in the banner, at every sample).
  async sampleMetrics() {
    let sums;
    try {
      sums = await serverMetrics();
    } catch (e) {
      if (e.status === 401) throw e;
      setText(this.serverNote, `Cannot read /metrics: ${e.message}`);
      return;
    }
    const t = Date.now();
    const spec = sums.has('pulsar_proxy_active_connections') ? PROXY : BROKER;
    if (this.spec !== spec) {
      this.spec = spec;
      this.rateChart = new LineChart('server-rate', spec.rate.title, spec.rate.format);
      this.gaugeChart = new LineChart('server-gauge', spec.gauge.title, spec.gauge.format);
      this.charts.replaceChildren(this.rateChart.element, this.gaugeChart.element);
      this.series.clear();
      this.previous = null;
    }
    const prev = this.previous;
    const perSecond = (name) => {
      if (!prev || !sums.has(name) || !prev.sums.has(name) || t <= prev.t) return null;
      const delta = sums.get(name) - prev.sums.get(name);
      return delta >= 0 ? delta / ((t - prev.t) / 1000) : null;
    };
    const push = (key, value) => {
      if (!this.series.has(key)) this.series.set(key, []);
      const points = this.series.get(key);
      points.push([t, value]);
      while (points.length && points[0][0] < t - KEEP_MS) points.shift();
    };
    push('in', perSecond(spec.rate.in));
    push('out', perSecond(spec.rate.out));
    push('gauge', sums.has(spec.gauge.name) ? sums.get(spec.gauge.name) : null);
    this.previous = { t, sums };
    this.serverCards.replaceChildren(...spec.cards.map(([id, label, name, format]) =>
      h('div', { class: 'card', 'data-card': 'server-' + id },
        h('div', { class: 'label' }, label),
        h('div', { class: 'value' }, sums.has(name) ? format(sums.get(name)) : '–'))));
    const windowMs = this.windowMs();
    this.rateChart.render([{ name: 'in', points: this.series.get('in') },
      { name: 'out', points: this.series.get('out') }], t, windowMs);
    this.gaugeChart.render([{ name: spec.gauge.label, points: this.series.get('gauge') }], t, windowMs);
    setText(this.serverNote, 'From this server\'s /metrics' +
      (spec === PROXY ? ' (the proxy\'s own: its brokers\' are on each broker).' : '.'));
  }

  stop() {}
}
