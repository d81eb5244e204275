// What the console plots, sampled in the browser: each sample of a topic's stats (admin REST)
// becomes one point of each series. Rates come from the counters' growth between two samples
// (msgInCounter, bytesInCounter, msgOutCounter, bytesOutCounter), so they follow the
// console's own sampling interval rather than the broker's statsUpdateFrequencyInSecs; the
// broker's own rate fields stand in for the first sample and after a counter went back (an
// unload, a subscription deleted). Nothing is stored anywhere but in this page's memory.

const KEEP_MS = 16 * 60 * 1000;  // a little more than the longest plotted window
const MAX_TOPICS = 20;           // histories kept; the oldest is forgotten first

export class TopicHistory {
  constructor() {
    this.series = new Map();  // key -> [[timeMs, value|null], ...] oldest first
    this.previous = null;     // {t, stats} of the last sample
  }

  push(key, t, value) {
    if (!this.series.has(key)) this.series.set(key, []);
    this.series.get(key).push([t, value]);
  }

  // Adds one sample of `stats` (a topic's stats JSON) taken at `t`.
  add(t, stats) {
    const prev = this.previous;
    const perSecond = (counter, fallback) => {
      const now = stats[counter];
      const dt = prev ? (t - prev.t) / 1000 : 0;
      if (prev && typeof now === 'number' && typeof prev.stats[counter] === 'number' && dt > 0 &&
          now >= prev.stats[counter]) {
        return (now - prev.stats[counter]) / dt;
      }
      return typeof stats[fallback] === 'number' ? stats[fallback] : 0;
    };
    const seen = new Set();
    const put = (key, value) => {
      seen.add(key);
      this.push(key, t, typeof value === 'number' && Number.isFinite(value) ? value : null);
    };
    put('rate:in', perSecond('msgInCounter', 'msgRateIn'));
    put('rate:out', perSecond('msgOutCounter', 'msgRateOut'));
    put('throughput:in', perSecond('bytesInCounter', 'msgThroughputIn'));
    put('throughput:out', perSecond('bytesOutCounter', 'msgThroughputOut'));
    put('storage', stats.storageSize);
    for (const [name, sub] of Object.entries(stats.subscriptions || {})) {
      put('backlog:' + name, sub.msgBacklog);
    }
    for (const [cluster, repl] of Object.entries(stats.replication || {})) {
      put('replication-backlog:' + cluster, repl.replicationBacklog);
      put('replication-lag:' + cluster, repl.replicationDelayInSeconds);
    }
    // A series missing from this sample (a subscription deleted) breaks its line here.
    for (const key of this.series.keys()) {
      if (!seen.has(key)) this.push(key, t, null);
    }
    for (const [key, points] of this.series) {
      while (points.length && points[0][0] < t - KEEP_MS) points.shift();
      if (points.every(([, v]) => v === null)) this.series.delete(key);
    }
    this.previous = { t, stats };
  }

  // [{name, points}] of the series whose key starts with `prefix` (name: the rest of the key).
  group(prefix) {
    const out = [];
    for (const [key, points] of this.series) {
      if (key.startsWith(prefix)) out.push({ name: key.slice(prefix.length), points });
    }
    return out.sort((a, b) => a.name.localeCompare(b.name));
  }

  one(key, name) {
    return { name, points: this.series.get(key) || [] };
  }
}

const histories = new Map();

// The history of a topic, kept while the page is open (switching topics keeps it).
export function historyOf(topic) {
  let history = histories.get(topic);
  if (!history) {
    history = new TopicHistory();
    histories.set(topic, history);
    if (histories.size > MAX_TOPICS) histories.delete(histories.keys().next().value);
  }
  return history;
}
