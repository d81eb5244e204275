// Live line charts drawn as plain SVG: no charting library, no request anywhere (README.md
// says why). A chart is redrawn whole from its series on every sample; time runs along x over
// the chosen window, ending now; y starts at 0 and ends at a round number above the largest
// value in view.
//
// Each series is a <g class="series" data-series=NAME data-values="[...]"> holding its
// polylines (a null value breaks the line) and a dot on its latest point; data-values lists
// the values in view, oldest first, for people inspecting the page and for the browser test.

import { h, s, clear } from './dom.js';

const W = 480, H = 170, LEFT = 54, RIGHT = 10, TOP = 10, BOTTOM = 22;

// The smallest of 1, 2, 5 x 10^k that is >= x.
function niceStep(x) {
  if (!(x > 0)) return 1;
  const power = Math.pow(10, Math.floor(Math.log10(x)));
  for (const m of [1, 2, 5, 10]) {
    if (m * power >= x) return m * power;
  }
  return 10 * power;
}

function timeLabel(msAgo) {
  if (msAgo <= 0) return 'now';
  return msAgo % 60000 === 0 ? `-${msAgo / 60000}m` : `-${Math.round(msAgo / 1000)}s`;
}

export class LineChart {
  // `key` names the chart in the DOM (data-chart); `format` turns a value into text.
  constructor(key, title, format) {
    this.format = format;
    this.svg = s('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': title });
    this.legend = h('div', { class: 'legend' });
    this.element = h('div', { class: 'chart', 'data-chart': key },
      h('h3', {}, title), this.svg, this.legend);
  }

  // series: [{name, points: [[timeMs, value|null], ...]}] oldest first.
  render(series, now, windowMs) {
    clear(this.svg);
    clear(this.legend);
    const from = now - windowMs;
    const x = (t) => LEFT + ((t - from) / windowMs) * (W - LEFT - RIGHT);
    let max = 0;
    const visible = series.map((one) => {
      const points = one.points.filter(([t]) => t >= from && t <= now + 1000);
      for (const [, v] of points) if (v !== null && v > max) max = v;
      return { name: one.name, points };
    });
    const step = niceStep(max / 4);
    const top = Math.max(step, Math.ceil(max / step) * step);
    const y = (v) => H - BOTTOM - (v / top) * (H - TOP - BOTTOM);

    for (let v = 0; v <= top + step / 2; v += step) {
      this.svg.append(
        s('line', { class: 'axis', x1: LEFT, x2: W - RIGHT, y1: y(v), y2: y(v) }),
        s('text', { class: 'tick', x: LEFT - 6, y: y(v) + 3, 'text-anchor': 'end' }, this.format(v)));
    }
    const tickEvery = windowMs <= 60000 ? 15000 : windowMs <= 300000 ? 60000 : 180000;
    for (let ago = 0; ago <= windowMs; ago += tickEvery) {
      this.svg.append(s('text', {
        class: 'tick', x: x(now - ago), y: H - 6,
        'text-anchor': ago === 0 ? 'end' : ago === windowMs ? 'start' : 'middle',
      }, timeLabel(ago)));
    }

    let drawn = 0;
    visible.forEach((one, i) => {
      const color = 'c' + (i % 8);
      const values = one.points.map(([, v]) => v);
      const group = s('g', {
        class: 'series ' + color, 'data-series': one.name, 'data-values': JSON.stringify(values),
      });
      let run = [];
      const flush = () => {
        if (run.length > 1) group.append(s('polyline', { class: color, points: run.join(' ') }));
        run = [];
      };
      for (const [t, v] of one.points) {
        if (v === null) {
          flush();
          continue;
        }
        run.push(`${x(t).toFixed(1)},${y(v).toFixed(1)}`);
      }
      flush();
      const last = [...one.points].reverse().find(([, v]) => v !== null);
      if (last) {
        group.append(s('circle', { class: color, cx: x(last[0]), cy: y(last[1]), r: 2.5, stroke: 'none' }));
        drawn++;
      }
      this.svg.append(group);
      this.legend.append(h('span', { 'data-series': one.name },
        h('span', { class: 'swatch ' + color }), one.name + ': ',
        last ? this.format(last[1]) : '–'));
    });
    if (drawn === 0) {
      this.svg.append(s('text', { class: 'nodata', x: W / 2, y: H / 2, 'text-anchor': 'middle' },
        series.length === 0 ? 'nothing to plot' : 'waiting for samples…'));
    }
  }
}
