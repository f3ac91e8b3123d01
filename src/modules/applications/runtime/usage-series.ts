// Measured usage of a real driver's processes: samples (CPU in cores, memory in bytes, running
// instances) kept in memory per process for a day, read as the process metrics' series. The host
// takes them (local: /proc per process group; container: the engine's stats).
import type { MetricPoint } from '../../../shared/runtime/driver.js';

const KEEP_MS = 24 * 3600_000;

export interface Sample {
  t: number;
  cpu: number;
  memory: number;
  instances: number;
}

export class UsageSeries {
  private samples = new Map<string, Sample[]>();
  private last = 0;

  /** Keeps a process's sample. */
  protected record(processId: string, s: Sample): void {
    const list = this.samples.get(processId) ?? [];
    list.push(s);
    while (list.length && list[0]!.t < s.t - KEEP_MS) list.shift();
    this.samples.set(processId, list);
  }

  /** A round of samples was taken at `t`. */
  protected sampled(t: number): void {
    this.last = t;
  }

  /** Whether the newest sample is older than `ms`. */
  staleAfter(ms: number): boolean {
    return Date.now() - this.last > ms;
  }

  /** A process's samples as a series: each interval's average, 0 where it has none (not running). */
  series(processId: string, metric: 'cpu-usage' | 'memory-usage' | 'instance-count', from: Date, to: Date, intervalSeconds: number): MetricPoint[] {
    const list = this.samples.get(processId) ?? [];
    const pick = (s: Sample) => (metric === 'cpu-usage' ? s.cpu : metric === 'memory-usage' ? s.memory : s.instances);
    const out: MetricPoint[] = [];
    const step = Math.max(1, intervalSeconds) * 1000;
    const start = Math.floor(from.getTime() / step) * step;
    let i = 0;
    for (let t = start; t <= to.getTime() && out.length < 10_000; t += step) {
      while (i < list.length && list[i]!.t < t) i++;
      let sum = 0;
      let count = 0;
      for (; i < list.length && list[i]!.t < t + step; i++, count++) sum += pick(list[i]!);
      const v = count ? sum / count : 0;
      out.push({ time: new Date(t).toISOString(), value: metric === 'cpu-usage' ? Math.round(v * 10_000) / 10_000 : Math.round(v) });
    }
    return out;
  }
}
