// The side bar: the instance's clusters, its tenants and their namespaces (links to the
// namespace views). A list the signed-in role may not read is shown with the broker's reason.

import { get } from './api.js';
import { h, clear, $ } from './dom.js';

const enc = encodeURIComponent;

export function namespaceHash(tenant, namespace) {
  return `#/namespace/${enc(tenant)}/${enc(namespace)}`;
}

function refusal(e) {
  return h('div', { class: 'muted', title: e.message }, e.status ? `(HTTP ${e.status})` : '(no answer)');
}

// Loads and draws the tree; resolves to the cluster names (empty when they cannot be read).
export async function loadTree() {
  const nav = $('tree');
  let clusters = [];
  let tenants = [];
  const clusterList = h('ul', { id: 'cluster-list' });
  try {
    clusters = (await get('/admin/v2/clusters')) || [];
    for (const c of clusters) clusterList.append(h('li', {}, h('a', { href: '#/' }, c)));
  } catch (e) {
    clusterList.append(h('li', {}, refusal(e)));
  }
  const tenantList = h('ul', { id: 'tenant-list' });
  try {
    tenants = (await get('/admin/v2/tenants')) || [];
  } catch (e) {
    tenantList.append(h('li', {}, refusal(e)));
  }
  const namespaces = await Promise.all(tenants.map((t) =>
    get('/admin/v2/namespaces/' + enc(t)).then((list) => list || [], (e) => e)));
  tenants.forEach((tenant, i) => {
    const list = namespaces[i];
    const items = Array.isArray(list)
      ? list.map((full) => {
        const ns = full.includes('/') ? full.slice(full.indexOf('/') + 1) : full;
        return h('li', {}, h('a', { href: namespaceHash(tenant, ns), 'data-namespace': `${tenant}/${ns}` }, ns));
      })
      : [h('li', {}, refusal(list))];
    tenantList.append(h('li', { class: 'tenant', 'data-tenant': tenant }, tenant, h('ul', {}, items)));
  });
  clear(nav).append(
    h('h3', {}, 'Clusters'), clusterList,
    h('h3', {}, 'Tenants and namespaces'), tenantList,
    h('div', { class: 'row' }, h('button', { type: 'button', id: 'tree-reload', onclick: () => loadTree() }, 'Reload')));
  markCurrent();
  return clusters;
}

// Bolds the link of the namespace being shown.
export function markCurrent() {
  const hash = location.hash;
  for (const a of document.querySelectorAll('#tree a[data-namespace]')) {
    a.classList.toggle('current', hash.startsWith(a.getAttribute('href')));
  }
}
