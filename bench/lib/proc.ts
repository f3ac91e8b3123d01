// What the scenarios read about processes from /proc (Linux), and free ports for child processes.
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** A port that was free a moment ago (for children that must be polled before they say where they listen). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer().once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** The CPU time (user + system, ms) in a /proc/<pid>/stat text. Clock ticks are 10 ms on Linux. */
function statCpuMs(stat: string): number {
  const fields = stat.split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** CPU time a process has used so far, in ms; NaN where /proc is missing. */
export function cpuMs(pid: number): number {
  try {
    return statCpuMs(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return Number.NaN;
  }
}

/**
 * CPU time (ms) of the local PostgreSQL server's work for `database`: its backends (and autovacuum
 * workers), and the server's shared writers, which write its WAL and pages. Other databases on the
 * server (tests running meanwhile) are left out.
 */
export function postgresCpuMs(database: string): number {
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (!stat.includes(' (postgres) ')) continue;
      const title = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (title.includes(` ${database} `) || /: (walwriter|checkpointer|background writer)/.test(title)) total += statCpuMs(stat);
    } catch {
      // gone meanwhile
    }
  }
  return total;
}

/** The pids whose parent is `pid` (an nginx master's workers). */
export function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) out.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

export function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : Number.NaN;
}
