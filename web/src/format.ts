// Numbers with their units and dates, formatted one way on every page. Pure functions (no DOM), so
// the chart axes, the facts lists and the tests share them.

/** What a number measures: how it is scaled and labelled. */
export type Unit = 'bytes' | 'cores' | 'percent' | 'ms' | 'count' | 'usd';

const BYTE_STEPS = ['B', 'KB', 'MB', 'GB', 'TB', 'PB'];

/** The power of 1024 that suits `n` bytes (0 for B, 2 for MB, ...). */
function byteStep(n: number): number {
  let i = 0;
  for (let a = Math.abs(n); a >= 1024 && i < BYTE_STEPS.length - 1; a /= 1024) i++;
  return i;
}

const trim = (n: number, decimals: number) => String(+n.toFixed(decimals));

/** `n` in `unit`, with up to `decimals` decimals (trailing zeros dropped): `81 MB`, `0.25 cores`, `1.2 s`. */
export function formatValue(n: number, unit: Unit = 'count', decimals = 2): string {
  return formatScaled(n, unit, decimals, unit === 'bytes' ? byteStep(n) : undefined);
}

function formatScaled(n: number, unit: Unit, decimals: number, step?: number): string {
  switch (unit) {
    case 'bytes': {
      const i = step ?? byteStep(n);
      return `${trim(n / 1024 ** i, decimals)} ${BYTE_STEPS[i]}`;
    }
    case 'cores':
      return `${trim(n, Math.max(decimals, 2))} ${Math.abs(n) === 1 ? 'core' : 'cores'}`;
    case 'percent':
      return `${trim(n, decimals)}%`;
    case 'ms':
      return formatDuration(n, decimals);
    case 'usd':
      return `$${n.toFixed(2)}`;
    default:
      return Math.abs(n) >= 10_000 ? Math.round(n).toLocaleString('en') : trim(n, decimals);
  }
}

export const formatBytes = (n: number) => formatValue(n, 'bytes', 1);

/** A duration in milliseconds: `850 ms`, `1.5 s`, `2 min 5 s`, `1 h 4 min`. */
export function formatDuration(ms: number, decimals = 1): string {
  const a = Math.abs(ms);
  if (a < 1000) return `${trim(ms, a < 10 ? decimals : 0)} ms`;
  if (a < 60_000) return `${trim(ms / 1000, decimals)} s`;
  const s = Math.round(a / 1000);
  if (s < 3600) return `${Math.floor(s / 60)} min${s % 60 ? ` ${s % 60} s` : ''}`;
  const m = Math.round(s / 60);
  return `${Math.floor(m / 60)} h${m % 60 ? ` ${m % 60} min` : ''}`;
}

/**
 * Labels for chart ticks: one scale for all of them (no `1000 KB` beside `1 MB`) and as many
 * decimals as it takes for neighbouring ticks to read differently (no `0.01, 0.01, 0.01`).
 */
export function formatTicks(values: number[], unit: Unit = 'count'): string[] {
  const step = unit === 'bytes' ? byteStep(Math.max(0, ...values.map(Math.abs))) : undefined;
  let labels: string[] = [];
  for (let decimals = 0; decimals <= 6; decimals++) {
    labels = values.map((v) => formatScaled(v, unit, decimals, step));
    if (new Set(labels).size === new Set(values).size) return labels;
  }
  return labels;
}

const UNITS: [Intl.RelativeTimeFormatUnit, number][] = [
  ['year', 365 * 86_400_000],
  ['month', 30 * 86_400_000],
  ['day', 86_400_000],
  ['hour', 3_600_000],
  ['minute', 60_000],
  ['second', 1000],
];
const rtf = new Intl.RelativeTimeFormat('en', { numeric: 'auto' });

/** `3 minutes ago`, `in 2 hours`, `now` (relative to `now`). */
export function relativeTime(iso: string, now = Date.now()): string {
  const diff = Date.parse(iso) - now;
  if (Math.abs(diff) < 10_000) return 'now';
  for (const [unit, size] of UNITS) if (Math.abs(diff) >= size) return rtf.format(Math.round(diff / size), unit);
  return 'now';
}

/** The exact time, for a tooltip: `2026-11-28 17:12:49 UTC+1`, in the reader's zone. */
export function exactTime(iso: string): string {
  return new Date(iso).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'long' });
}
