// This server's /metrics (Prometheus text format 0.0.4), read by the overview: every series
// summed by name over its labels (a broker's per-topic series add up to the broker's total).
// Behind a proxy, /metrics is the proxy's own (pulsar_proxy_*, magnetar_proxy_*).

import { get } from './api.js';

// name -> sum of the values of its samples. Comment lines, malformed lines and values that
// are not numbers are skipped.
export function sumByName(text) {
  const sums = new Map();
  for (const raw of String(text).split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const brace = line.indexOf('{');
    const space = line.indexOf(' ');
    let name;
    let rest;
    if (brace >= 0 && (space < 0 || brace < space)) {
      const close = line.lastIndexOf('}');
      if (close < brace) continue;
      name = line.slice(0, brace);
      rest = line.slice(close + 1);
    } else {
      if (space < 0) continue;
      name = line.slice(0, space);
      rest = line.slice(space);
    }
    const value = Number(rest.trim().split(/\s+/)[0]);
    if (!name || !Number.isFinite(value)) continue;
    sums.set(name, (sums.get(name) || 0) + value);
  }
  return sums;
}

export async function serverMetrics() {
  return sumByName(await get('/metrics'));
}
