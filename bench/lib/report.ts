// A scenario's figures as judged results, and the table printed after each storage's scenarios.

export interface Result {
  title: string;
  /** The figure measured, with its unit. */
  figure: string;
  /** The figure against its reference measured in the same run ("98% of bare"). */
  ratio: string;
  /** The target, or "" when the figure has none. */
  target: string;
  /** Whether the target is met (undefined: no target). */
  ok?: boolean;
}

export const pct = (x: number) => `${(x * 100).toFixed(x < 0.1 ? 1 : 0)}%`;
export const int = (x: number) => Math.round(x).toLocaleString('en-US');
export const ms = (x: number) => `${x < 10 ? x.toFixed(2) : x.toFixed(0)} ms`.padStart(8);

/** A measurement's line as it is taken. */
export const line = (title: string, figures: string) => console.log(`${title.padEnd(54)} ${figures}`);

/** A rate judged as a share of the bare route: at least `min`. */
export function shareOfBare(title: string, figure: string, share: number, min: number): Result {
  return { title, figure, ratio: `${pct(share)} of bare`, target: `>= ${pct(min)} of bare`, ok: share >= min };
}

/** The ceiling of a write's p99 (ms): how long a client waits at worst, which no machine's speed excuses. */
export const MAX_WRITE_P99_MS = 50;

/** A p99 judged against an absolute ceiling (ms). */
export function p99Under(title: string, p99: number, maxMs = MAX_WRITE_P99_MS): Result {
  return { title: `${title} p99`, figure: `${p99.toFixed(1)} ms`, ratio: '', target: `< ${maxMs} ms`, ok: p99 < maxMs };
}

export function printResults(heading: string, results: Result[]) {
  console.log(`\n${heading}`);
  for (const r of results) {
    const verdict = r.ok === undefined ? '' : r.ok ? 'pass' : 'FAIL';
    console.log(`  ${r.title.padEnd(48)} ${r.figure.padStart(16)}   ${r.ratio.padEnd(20)} ${r.target.padEnd(18)} ${verdict}`);
  }
  const failed = results.filter((r) => r.ok === false).length;
  const judged = results.filter((r) => r.ok !== undefined).length;
  console.log(`  ${judged - failed} of ${judged} targets met`);
}
