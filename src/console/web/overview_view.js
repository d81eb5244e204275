// The start page: the clusters (with their service URLs when the role may read them) and the
// tenants with their namespaces.

import { get } from './api.js';
import { h } from './dom.js';
import { namespaceHash } from './tree.js';

const enc = encodeURIComponent;

export class OverviewView {
  constructor() {
    this.clusters = h('tbody');
    this.tenants = h('tbody');
    this.element = h('div', { id: 'overview' },
      h('h1', {}, 'Overview'),
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

  // Cluster and tenant lists change rarely: loaded once per visit of the page.
  async refresh() {
    if (this.loaded) return;
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

  stop() {}
}
