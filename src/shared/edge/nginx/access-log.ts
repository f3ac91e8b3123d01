// nginx's access log, tailed: nginx writes one JSON line per answered request to a file in its
// directory (`access_log <file> slipway buffer=64k flush=1s;` in config.ts: its workers write in
// blocks, at most a second late, nothing per request), and the AccessLogTailer reads the new bytes
// every `pollMs` from where it left off, parses the complete lines and hands them on in batches.
//
// Where it left off (the file's inode and the offset read up to) is kept in a small state file after
// every batch, so a restarted Slipway reads what nginx wrote while it was down — up to `maxBacklog`
// bytes: a longer backlog is skipped (and a warning says how much). Lines are handed on at least
// once: a crash between a batch and the state file's write hands that batch on again.
//
// Rotation: when the file holds `rotateBytes`, it is renamed (`<file>.rotated`) and nginx told to
// reopen its logs (`reopen`: SIGUSR1 to the master; its workers flush their buffers into the
// renamed file, then open a new one); the renamed file is read to its end once the new one exists
// and it has stopped growing, then deleted, and the new file is read from its start.
import { closeSync, existsSync, fstatSync, openSync, readSync, renameSync, statSync, unlinkSync, writeFileSync, readFileSync } from 'node:fs';
import type { Served } from '../index.js';
import { countryCode } from '../geo.js';

export interface AccessLogOptions {
  /** The file nginx writes (config.ts's `accessLog`). */
  path: string;
  /** Where the offset is kept (default `<path>.state`). */
  statePath?: string;
  /** Tells nginx to reopen its log files (SIGUSR1 to the master); false when it is not running. */
  reopen?: () => boolean;
  /** How often the file is looked at (default 250 ms). */
  pollMs?: number;
  /** A batch holds at most this many lines (default 500). */
  maxBatch?: number;
  /** Bytes read at a time (default 1 MiB). */
  readBytes?: number;
  /** A backlog beyond this at start is skipped (default 64 MiB). */
  maxBacklog?: number;
  /** The file is rotated when it holds this much (default 64 MiB). */
  rotateBytes?: number;
  /** The renamed file is read to its end when it has not grown for this long after the new file appeared (default 1500 ms: nginx's flush=1s). */
  settleMs?: number;
  /** …or this long after the rename when no new file appears (nginx is not running; default 10 s). */
  rotateTimeoutMs?: number;
  log?: { info?(obj: object, msg: string): void; warn(obj: object, msg: string): void };
}

/** One line of config.ts's log format (a JSON object; a syslog header before it is allowed) as a `Served`, or null when it is not one. */
export function parseAccessLine(line: string): Served | null {
  const start = line.indexOf('{');
  if (start < 0 || (start > 0 && !line.startsWith('<'))) return null;
  let j: Record<string, unknown>;
  try {
    j = JSON.parse(line.slice(start).trimEnd());
  } catch {
    return null;
  }
  const str = (k: string) => (typeof j[k] === 'string' ? (j[k] as string) : '');
  const num = (k: string) => (typeof j[k] === 'number' && Number.isFinite(j[k]) ? (j[k] as number) : 0);
  if (!str('kind') || !str('id') || !num('status')) return null;
  return {
    owner: { kind: str('kind'), id: str('id'), companyId: str('company') },
    method: str('method') || 'GET',
    path: str('path') || '/',
    status: num('status'),
    bytes: num('bytes'),
    durationMs: num('time') * 1000,
    clientIp: str('client'),
    host: str('host'),
    userAgent: str('ua'),
    referer: str('referer'),
    cached: str('cache') === 'HIT',
    country: countryCode(str('country')),
    at: num('at') ? new Date(num('at') * 1000) : new Date(),
  };
}

interface State {
  /** The inode of the file being read (the current one, or the renamed one while it is finished). */
  inode: number;
  offset: number;
}

const MiB = 1024 * 1024;

export class AccessLogTailer {
  readonly path: string;
  readonly rotatedPath: string;
  readonly statePath: string;
  /** The file being read: its descriptor, inode and the offset read up to (complete lines only). */
  private fd: number | null = null;
  private inode = 0;
  private offset = 0;
  /** While a renamed file is finished: when it was renamed, and when it last grew. */
  private rotating: { since: number; grew: number; size: number; ours: boolean } | null = null;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private savedState = '';
  /** Lines read, lines that were not access log lines, bytes skipped (a backlog over maxBacklog), rotations. */
  readonly counts = { received: 0, unreadable: 0, skipped: 0, rotations: 0 };

  constructor(
    private onBatch: (batch: Served[]) => void | Promise<void>,
    private o: AccessLogOptions,
  ) {
    this.path = o.path;
    this.rotatedPath = `${o.path}.rotated`;
    this.statePath = o.statePath ?? `${o.path}.state`;
  }

  /** Picks up where the last tailer of this file left off; returns the file's path (for config.ts's `accessLog`). */
  async start(): Promise<string> {
    const kept = this.readState();
    // A renamed file a previous tailer had not finished: it is read first (from where that one was, if it was on it).
    const rotated = inodeOf(this.rotatedPath);
    if (rotated) {
      this.open(this.rotatedPath, kept && kept.inode === rotated ? kept.offset : 0);
      this.rotating = { since: 0, grew: 0, size: -1, ours: true };
    } else {
      const current = inodeOf(this.path);
      if (current) this.open(this.path, kept && kept.inode === current ? kept.offset : 0);
    }
    if (this.fd !== null) {
      const size = fstatSync(this.fd).size;
      if (this.offset > size) this.offset = 0; // truncated meanwhile
      const backlog = size - this.offset;
      const max = this.o.maxBacklog ?? 64 * MiB;
      if (backlog > max) {
        this.counts.skipped += backlog;
        this.o.log?.warn({ path: this.path, backlog, max }, 'edge: the access log backlog is too long; skipped to its end (those requests are not counted)');
        this.offset = size;
        this.saveState();
      } else if (backlog > 0) this.o.log?.info?.({ path: this.path, backlog }, 'edge: reading the access log written while Slipway was not');
    }
    this.timer = setInterval(() => void this.tick(), this.o.pollMs ?? 250);
    this.timer.unref();
    return this.path;
  }

  /** Reads and hands on everything written so far (waits for a read under way). */
  async flush(): Promise<void> {
    while (this.running) await this.running;
    await this.tick();
  }

  /** Stops tailing after handing on everything written so far; the state file says where to resume. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.flush();
    this.saveState();
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
  }

  private tick(): Promise<void> {
    if (this.running) return this.running;
    const run = this.read()
      .catch((e: Error) => this.o.log?.warn({ err: e.message, path: this.path }, 'edge: the access log could not be read'))
      .finally(() => {
        this.running = null;
      });
    this.running = run;
    return run;
  }

  private async read(): Promise<void> {
    if (this.fd === null) {
      // No file yet (nginx has not written one): from its start once it exists.
      if (!inodeOf(this.path)) return;
      this.open(this.path, 0);
    }
    // Truncated in place (by an operator's logrotate, copytruncate): from its start again.
    if (fstatSync(this.fd!).size < this.offset) this.offset = 0;
    await this.drain();
    const now = Date.now();
    const current = inodeOf(this.path);
    // Replaced by somebody else (an operator's logrotate): the old file is finished as after a rotation of ours, and kept.
    if (!this.rotating && current && current !== this.inode) this.rotating = { since: now, grew: now, size: fstatSync(this.fd!).size, ours: false };
    if (this.rotating) {
      const r = this.rotating;
      const size = fstatSync(this.fd!).size;
      if (size !== r.size) Object.assign(r, { size, grew: now });
      const replaced = current !== 0;
      const settled = replaced && now - r.grew >= (this.o.settleMs ?? 1500);
      if (settled || now - r.since >= (this.o.rotateTimeoutMs ?? 10_000)) {
        await this.drain();
        closeSync(this.fd!);
        this.fd = null;
        if (r.ours)
          try {
            unlinkSync(this.rotatedPath);
          } catch {
            // gone already
          }
        this.rotating = null;
        this.inode = 0;
        this.offset = 0;
        if (inodeOf(this.path)) {
          this.open(this.path, 0);
          await this.drain();
        }
        this.saveState();
      }
    } else if (this.offset >= (this.o.rotateBytes ?? 64 * MiB) && !existsSync(this.rotatedPath)) {
      renameSync(this.path, this.rotatedPath);
      this.counts.rotations++;
      const reopened = this.o.reopen?.() ?? false;
      this.rotating = { since: now, grew: now, size: fstatSync(this.fd!).size, ours: true };
      this.o.log?.info?.({ path: this.path, bytes: this.offset, reopened }, 'edge: access log rotated');
    }
  }

  /** Reads the open file to its end, handing on complete lines batch by batch; the offset follows. */
  private async drain(): Promise<void> {
    const fd = this.fd!;
    const buf = Buffer.allocUnsafe(this.o.readBytes ?? MiB);
    const maxBatch = this.o.maxBatch ?? 500;
    for (;;) {
      const n = readSync(fd, buf, 0, buf.length, this.offset);
      if (n <= 0) return;
      const end = buf.lastIndexOf(10, n - 1);
      if (end < 0) {
        // A line longer than the buffer (not config.ts's) or one nginx has not finished: a full buffer is skipped.
        if (n === buf.length) {
          this.offset += n;
          this.counts.unreadable++;
          continue;
        }
        return;
      }
      let batch: Served[] = [];
      let start = 0;
      while (start <= end) {
        const nl = buf.indexOf(10, start);
        if (nl > start) {
          this.counts.received++;
          const served = parseAccessLine(buf.toString('utf8', start, nl));
          if (served) batch.push(served);
          else this.counts.unreadable++;
        }
        start = nl + 1;
        if (batch.length >= maxBatch) {
          await this.hand(batch);
          batch = [];
        }
      }
      if (batch.length) await this.hand(batch);
      this.offset += end + 1;
      this.saveState();
      if (n < buf.length) return;
    }
  }

  private async hand(batch: Served[]): Promise<void> {
    try {
      await this.onBatch(batch);
    } catch (e) {
      this.o.log?.warn({ err: (e as Error).message, lines: batch.length }, 'edge: access log batch failed');
    }
  }

  private open(path: string, offset: number) {
    this.fd = openSync(path, 'r');
    this.inode = fstatSync(this.fd).ino;
    this.offset = offset;
  }

  private readState(): State | null {
    try {
      const s = JSON.parse(readFileSync(this.statePath, 'utf8')) as State;
      return Number.isSafeInteger(s.inode) && Number.isSafeInteger(s.offset) && s.offset >= 0 ? s : null;
    } catch {
      return null;
    }
  }

  private saveState() {
    const text = JSON.stringify({ inode: this.inode, offset: this.offset } satisfies State);
    if (text === this.savedState) return;
    writeFileSync(`${this.statePath}.tmp`, text);
    renameSync(`${this.statePath}.tmp`, this.statePath);
    this.savedState = text;
  }
}

/** The inode of the file at `path`, or 0 when there is none. */
function inodeOf(path: string): number {
  try {
    return statSync(path).ino;
  } catch {
    return 0;
  }
}
