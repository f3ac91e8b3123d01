// CPU and memory of the local runtime's processes, read from /proc. Every instance and run is a
// process group (its shell and whatever it started), so usage is summed over the group's members:
// memory is their resident set (VmRSS), CPU their user+system time per second of wall time since
// the previous sample (a member seen for the first time: over its whole life). Samples are kept in
// memory per process (a day's worth); the process metrics operations read them.
import { readdirSync, readFileSync } from 'node:fs';
import { UsageSeries } from '../usage-series.js';

/** Clock ticks per second of /proc's CPU times (USER_HZ, 100 on Linux). */
const TICKS = 100;

interface Member {
  pgid: number;
  ticks: number;
  /** Start time in seconds since boot. */
  start: number;
}

/**
 * The fields of /proc/<pid>/stat after "pid (comm) " (index 0 is the state, 2 the process group,
 * 11 and 12 user and system ticks, 19 the start time), or null when the process is gone.
 */
export function statFields(pid: number | string): string[] | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return null;
  }
}

/** Every process of the machine: its process group, CPU ticks used and start time. */
function scan(): Map<number, Member> {
  const out = new Map<number, Member>();
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return out;
  }
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    const f = statFields(name);
    if (f) out.set(Number(name), { pgid: Number(f[2]), ticks: Number(f[11]) + Number(f[12]), start: Number(f[19]) / TICKS });
  }
  return out;
}

function rssBytes(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

function uptime(): number {
  try {
    return Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]);
  } catch {
    return 0;
  }
}

export class UsageSampler extends UsageSeries {
  private previous = new Map<number, { ticks: number; at: number }>();

  /** Takes one sample of each process (process id -> the process group ids of its instances or runs). */
  sample(groups: Map<string, number[]>): void {
    const now = Date.now();
    const up = uptime();
    const all = scan();
    const byGroup = new Map<number, number[]>();
    for (const [pid, m] of all) {
      const list = byGroup.get(m.pgid);
      if (list) list.push(pid);
      else byGroup.set(m.pgid, [pid]);
    }
    const seen = new Map<number, { ticks: number; at: number }>();
    for (const [processId, pgids] of groups) {
      let cpu = 0;
      let memory = 0;
      for (const pgid of pgids) {
        for (const pid of byGroup.get(pgid) ?? []) {
          const m = all.get(pid)!;
          const prev = this.previous.get(pid);
          const seconds = prev ? (now - prev.at) / 1000 : up - m.start;
          if (seconds > 0) cpu += (m.ticks - (prev?.ticks ?? 0)) / TICKS / seconds;
          memory += rssBytes(pid);
          seen.set(pid, { ticks: m.ticks, at: now });
        }
      }
      this.record(processId, { t: now, cpu: Math.max(0, cpu), memory, instances: pgids.length });
    }
    this.previous = seen;
    this.sampled(now);
  }
}
