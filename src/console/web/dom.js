// Building DOM nodes. Text always goes in as text nodes (never as HTML), so names and REST
// answers cannot inject markup; no inline styles or handlers (the page's CSP forbids them).

const SVG_NS = 'http://www.w3.org/2000/svg';

function fill(node, attrs, children) {
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'onclick' || key === 'onchange' || key === 'oninput') {
      node.addEventListener(key.slice(2), value);
    } else if (key === 'class') {
      node.setAttribute('class', value);
    } else if (value === true) {
      node.setAttribute(key, '');
    } else {
      node.setAttribute(key, String(value));
    }
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

// An HTML element: h('td', {class: 'num'}, '42').
export function h(tag, attrs, ...children) {
  return fill(document.createElement(tag), attrs, children);
}

// An SVG element.
export function s(tag, attrs, ...children) {
  return fill(document.createElementNS(SVG_NS, tag), attrs, children);
}

export function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
}

export function $(id) {
  return document.getElementById(id);
}

// Keeps the rows of `tbody` in step with `items` without rebuilding rows that stay (a button
// being clicked is not replaced under the pointer): `key(item)` names a row (data-key),
// `create(item)` makes its <tr>, `update(tr, item)` refreshes its cells.
export function syncRows(tbody, items, key, create, update) {
  const existing = new Map();
  for (const tr of tbody.querySelectorAll(':scope > tr[data-key]')) {
    existing.set(tr.getAttribute('data-key'), tr);
  }
  const wanted = [];
  for (const item of items) {
    const k = key(item);
    let tr = existing.get(k);
    if (tr) {
      existing.delete(k);
    } else {
      tr = create(item);
      tr.setAttribute('data-key', k);
    }
    update(tr, item);
    wanted.push(tr);
  }
  for (const tr of existing.values()) tr.remove();
  for (const other of tbody.querySelectorAll(':scope > tr:not([data-key])')) other.remove();
  wanted.forEach((tr, i) => {
    if (tbody.children[i] !== tr) tbody.insertBefore(tr, tbody.children[i] || null);
  });
}

// Sets a cell's text only when it changed.
export function setText(node, text) {
  const value = String(text);
  if (node.textContent !== value) node.textContent = value;
}
