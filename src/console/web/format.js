// Numbers as people read them: rates, sizes, counts, times.

export function count(n) {
  if (n === undefined || n === null || Number.isNaN(n)) return '–';
  return Math.round(n).toLocaleString('en-US');
}

// Three significant digits with an SI suffix: 1234 -> "1.23k".
export function compact(n) {
  if (n === undefined || n === null || Number.isNaN(n)) return '–';
  const abs = Math.abs(n);
  const units = [[1e9, 'G'], [1e6, 'M'], [1e3, 'k']];
  for (const [size, suffix] of units) {
    if (abs >= size) return trim(n / size) + suffix;
  }
  return trim(n);
}

function trim(n) {
  if (Number.isInteger(n)) return String(n);
  const abs = Math.abs(n);
  return n.toFixed(abs >= 100 ? 0 : abs >= 10 ? 1 : 2).replace(/\.?0+$/, '');
}

export function bytes(n) {
  if (n === undefined || n === null || Number.isNaN(n)) return '–';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (Math.abs(n) >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return trim(n) + ' ' + units[i];
}

export function rate(n) {
  return compact(n) + ' msg/s';
}

export function throughput(n) {
  return bytes(n) + '/s';
}

export function seconds(n) {
  if (n === undefined || n === null || Number.isNaN(n)) return '–';
  if (n < 120) return trim(n) + ' s';
  if (n < 7200) return trim(n / 60) + ' min';
  return trim(n / 3600) + ' h';
}

// A wall-clock time (milliseconds since the epoch, or an ISO string) as local date and time.
export function when(value) {
  if (value === undefined || value === null || value === '') return '–';
  const date = typeof value === 'number' || /^\d+$/.test(String(value))
    ? new Date(Number(value)) : new Date(value);
  if (Number.isNaN(date.getTime())) return String(value);
  return date.toLocaleString();
}
