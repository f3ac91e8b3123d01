// A snapshot document read as a stream: its members before `blobs` (the header and `tables`) are
// each read whole and parsed, and `blobs` is handed on one entry at a time, its base64 decoded as
// it arrives, so the bytes of stored objects are never held together in memory. The document is
// plain JSON: any writer's whitespace is accepted; what the stream needs is `blobs` as the last
// member (Slipway's exports of every version write it last), with plain base64 strings.
import { badRequest } from '../errors.js';

/** The document without its `blobs`, at most this long: V8's longest string is about 512 MiB. */
export const HEAD_MAX_BYTES = 512 * 1024 * 1024;

export type Chunks = AsyncIterable<Buffer | string>;

/** One entry of `blobs`: its id and its decoded bytes, which must be read to the end before the next entry. */
export interface BlobEntry {
  id: string;
  body: AsyncIterable<Buffer>;
}

export interface StreamedSnapshot {
  /** Every member but `blobs`, parsed. */
  head: Record<string, unknown>;
  /** `blobs`'s entries, in the document's order (null: the document has no `blobs`). */
  blobs: AsyncIterable<BlobEntry> | null;
  /** Reads what follows `blobs` (the document's end) and refuses anything else. */
  end(): Promise<void>;
}

const notJson = (why: string) => badRequest(`The snapshot is not valid JSON: ${why}`);
const isSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** Reads JSON tokens from chunks of bytes, keeping only the current chunk. */
class Scanner {
  private buf: Buffer = Buffer.alloc(0);
  private pos = 0;
  private ended = false;
  private readonly it: AsyncIterator<Buffer | string>;

  constructor(source: Chunks) {
    this.it = source[Symbol.asyncIterator]();
  }

  /** Whether a byte is there to read (reading the next chunk when this one is used up). */
  private async more(): Promise<boolean> {
    while (this.pos >= this.buf.length) {
      if (this.ended) return false;
      const n = await this.it.next();
      if (n.done) {
        this.ended = true;
        return false;
      }
      this.buf = typeof n.value === 'string' ? Buffer.from(n.value) : n.value;
      this.pos = 0;
    }
    return true;
  }

  /** The next byte that is not white space, not consumed; -1 at the end. */
  async peek(): Promise<number> {
    for (;;) {
      if (!(await this.more())) return -1;
      const c = this.buf[this.pos]!;
      if (!isSpace(c)) return c;
      this.pos++;
    }
  }

  async expect(ch: string, what: string): Promise<void> {
    const c = await this.peek();
    if (c !== ch.charCodeAt(0)) throw notJson(c === -1 ? `it ends where ${what} was expected` : `${what} expected, found "${String.fromCharCode(c)}"`);
    this.pos++;
  }

  /** One of `chars`, consumed and returned. */
  async oneOf(chars: string, what: string): Promise<string> {
    const c = await this.peek();
    if (c === -1 || !chars.includes(String.fromCharCode(c))) throw notJson(c === -1 ? `it ends where ${what} was expected` : `${what} expected`);
    this.pos++;
    return String.fromCharCode(c);
  }

  /** A short string (a member name), escapes and all. */
  async string(what: string): Promise<string> {
    await this.expect('"', what);
    const parts: Buffer[] = [];
    let escaped = false;
    let size = 0;
    for (;;) {
      if (!(await this.more())) throw notJson('it ends inside a string');
      const b = this.buf;
      let i = this.pos;
      for (; i < b.length; i++) {
        const c = b[i]!;
        if (escaped) escaped = false;
        else if (c === BACKSLASH) escaped = true;
        else if (c === QUOTE) break;
      }
      parts.push(b.subarray(this.pos, i));
      size += i - this.pos;
      if (size > 64 * 1024) throw notJson(`${what} is longer than 64 KiB`);
      if (i < b.length) {
        this.pos = i + 1;
        return JSON.parse(`"${Buffer.concat(parts).toString('utf8')}"`) as string;
      }
      this.pos = i;
    }
  }

  /** The raw bytes of a string without escapes (base64), slice by slice, the opening quote already read. */
  async *plain(what: string): AsyncGenerator<Buffer> {
    for (;;) {
      if (!(await this.more())) throw notJson('it ends inside a string');
      const b = this.buf;
      const start = this.pos;
      const q = b.indexOf(QUOTE, start);
      const end = q === -1 ? b.length : q;
      const esc = b.indexOf(BACKSLASH, start);
      if (esc !== -1 && esc < end) throw badRequest(`${what} must be a base64 string (without escapes)`);
      this.pos = q === -1 ? end : end + 1;
      if (end > start) yield b.subarray(start, end);
      if (q !== -1) return;
    }
  }

  /** The text of one JSON value, at most `limit` bytes. */
  async value(what: string, limit: number): Promise<string> {
    if ((await this.peek()) === -1) throw notJson(`it ends where ${what} was expected`);
    const parts: Buffer[] = [];
    let size = 0;
    let depth = 0;
    let inString = false;
    let escaped = false;
    for (;;) {
      if (!(await this.more())) {
        if (depth === 0 && !inString && size > 0) break;
        throw notJson(`it ends inside ${what}`);
      }
      const b = this.buf;
      let i = this.pos;
      let done = false;
      for (; i < b.length; i++) {
        const c = b[i]!;
        if (inString) {
          if (escaped) escaped = false;
          else if (c === BACKSLASH) escaped = true;
          else if (c === QUOTE) {
            inString = false;
            if (depth === 0) {
              i++;
              done = true;
              break;
            }
          }
        } else if (c === QUOTE) inString = true;
        else if (c === 0x7b || c === 0x5b) depth++;
        else if (c === 0x7d || c === 0x5d) {
          if (depth === 0) {
            done = true;
            break;
          }
          if (--depth === 0) {
            i++;
            done = true;
            break;
          }
        } else if (depth === 0 && (c === 0x2c || isSpace(c))) {
          done = true;
          break;
        }
      }
      parts.push(b.subarray(this.pos, i));
      size += i - this.pos;
      this.pos = i;
      if (size > limit) throw badRequest(`The snapshot's ${what} is larger than ${limit} bytes, more than a snapshot's rows may take`);
      if (done) break;
    }
    return Buffer.concat(parts).toString('utf8');
  }
}

/** Decodes base64 arriving in slices of any length. */
async function* decoded(slices: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  let carry = '';
  for await (const s of slices) {
    const text = carry + s.toString('latin1');
    const whole = text.length - (text.length % 4);
    carry = text.slice(whole);
    if (whole) yield Buffer.from(text.slice(0, whole), 'base64');
  }
  if (carry) yield Buffer.from(carry, 'base64');
}

/**
 * Reads a snapshot document from `source` up to its `blobs` (or its end). The caller reads the
 * entries of `blobs`, each body to its end, then calls `end`.
 */
export async function readSnapshotStream(source: Chunks, headLimit = HEAD_MAX_BYTES): Promise<StreamedSnapshot> {
  const s = new Scanner(source);
  const head: Record<string, unknown> = {};
  let used = 0;
  const finish = async () => {
    if ((await s.peek()) !== -1) throw notJson('there is more after the document');
  };
  await s.expect('{', 'a JSON object');
  if ((await s.peek()) === 0x7d) {
    await s.oneOf('}', '"}"');
    await finish();
    return { head, blobs: null, end: async () => {} };
  }
  for (;;) {
    const name = await s.string('a member name');
    await s.expect(':', '":"');
    if (name === 'blobs') {
      if (!('tables' in head)) throw badRequest('The snapshot is not readable as a stream: "blobs" must come after "tables", as its last member');
      return { head, ...blobsOf(s), end: async () => {} };
    }
    const text = await s.value(name === 'tables' ? 'tables' : `member ${name}`, headLimit - used);
    used += text.length;
    try {
      head[name] = JSON.parse(text);
    } catch (e) {
      throw notJson(`${name}: ${(e as Error).message}`);
    }
    if ((await s.oneOf(',}', '"," or "}"')) === '}') {
      await finish();
      return { head, blobs: null, end: async () => {} };
    }
  }

  function blobsOf(sc: Scanner): { blobs: AsyncIterable<BlobEntry>; end(): Promise<void> } {
    let done = false;
    async function* entries(): AsyncGenerator<BlobEntry> {
      if ((await sc.peek()) !== 0x7b) throw badRequest('blobs must be an object of base64 strings');
      await sc.expect('{', '"{"');
      if ((await sc.peek()) === 0x7d) await sc.oneOf('}', '"}"');
      else
        for (;;) {
          const id = await sc.string('a blob id');
          await sc.expect(':', '":"');
          if ((await sc.peek()) !== QUOTE) throw badRequest(`blobs.${id} must be a base64 string`);
          await sc.expect('"', '"');
          let read = false;
          const raw = sc.plain(`blobs.${id}`);
          const body = (async function* () {
            read = true;
            yield* decoded(raw);
          })();
          yield { id, body };
          // The reader left this entry's bytes unread: skip them.
          if (!read) for await (const _ of raw);
          else for await (const _ of body);
          if ((await sc.oneOf(',}', '"," or "}"')) === '}') break;
        }
      if ((await sc.oneOf(',}', '"}"')) === ',') throw badRequest('The snapshot is not readable as a stream: "blobs" must be its last member');
      await finish();
      done = true;
    }
    return {
      blobs: entries(),
      end: async () => {
        if (!done) throw badRequest('The snapshot ends before its blobs do');
      },
    };
  }
}
