// Request bodies of the S3 data plane: the aws-chunked decoder (signed chunks with chained
// signatures, unsigned chunks, trailing checksum headers) and the digests every upload is checked
// against (Content-MD5, x-amz-content-sha256, x-amz-checksum-*), computed while streaming.
import { createHash, type Hash } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';
import { crc32 } from 'node:zlib';
import { badDigest, S3Error } from './s3-errors.js';

const incomplete = (why: string) => new S3Error(400, 'IncompleteBody', `The aws-chunked request body is malformed: ${why}.`);
const CRLF = Buffer.from('\r\n');

export interface ChunkVerifier {
  /** The expected signature of a chunk with SHA-256 `sha`, chained from `previous`. */
  chunk(previous: string, sha: string): Promise<string>;
  /** The expected signature of the trailing headers (as signed: `name:value\n` each). */
  trailer(previous: string, text: string): Promise<string>;
  seed: string;
}

/**
 * Decodes an `aws-chunked` body: `<hex size>[;chunk-signature=<sig>]\r\n<data>\r\n` ... a last
 * chunk of size 0, then optional trailing headers and an empty line. With a verifier, each chunk's
 * signature must chain from the request's seed signature.
 */
export class AwsChunkedDecoder extends Transform {
  readonly trailers = new Map<string, string>();
  private pending = Buffer.alloc(0);
  private state: 'size' | 'data' | 'crlf' | 'trailer' | 'done' = 'size';
  private remaining = 0;
  private hash: Hash | null = null;
  private signature: string | null = null;
  private previous: string;
  private trailerText = '';

  constructor(private verifier: ChunkVerifier | null) {
    super();
    this.previous = verifier?.seed ?? '';
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.consume(chunk).then(
      () => cb(),
      (e: Error) => cb(e),
    );
  }

  override _flush(cb: TransformCallback): void {
    cb(this.state === 'done' ? null : incomplete('the body ended before its last chunk'));
  }

  /** The line up to CRLF from pending + data, or null (more bytes needed). */
  private line(data: Buffer): { text: string; rest: Buffer } | null {
    const all = this.pending.length ? Buffer.concat([this.pending, data]) : data;
    const i = all.indexOf(CRLF);
    if (i < 0) {
      if (all.length > 8192) throw incomplete('a chunk header is too long');
      this.pending = Buffer.from(all);
      return null;
    }
    this.pending = Buffer.alloc(0);
    return { text: all.subarray(0, i).toString('latin1'), rest: all.subarray(i + 2) };
  }

  private async endChunk(): Promise<void> {
    if (!this.verifier) return;
    const sha = this.hash!.digest('hex');
    const expected = await this.verifier.chunk(this.previous, sha);
    if (this.signature !== expected) throw new S3Error(403, 'SignatureDoesNotMatch', 'A chunk signature of the streaming upload does not match.');
    this.previous = expected;
  }

  private async consume(data: Buffer): Promise<void> {
    while (data.length || this.state === 'data') {
      if (this.state === 'size') {
        const l = this.line(data);
        if (!l) return;
        data = l.rest;
        const [hex, ...ext] = l.text.split(';');
        if (!/^[0-9a-fA-F]{1,16}$/.test(hex ?? '')) throw incomplete('a chunk size is not hexadecimal');
        this.remaining = parseInt(hex!, 16);
        this.signature = ext.map((e) => /^chunk-signature=([0-9a-f]{64})$/.exec(e.trim())?.[1]).find(Boolean) ?? null;
        if (this.verifier && !this.signature) throw new S3Error(403, 'SignatureDoesNotMatch', 'A chunk of the streaming upload carries no chunk-signature.');
        this.hash = this.verifier ? createHash('sha256') : null;
        if (this.remaining === 0) {
          await this.endChunk();
          this.state = 'trailer';
        } else this.state = 'data';
      } else if (this.state === 'data') {
        if (!data.length) return;
        const n = Math.min(this.remaining, data.length);
        const part = data.subarray(0, n);
        this.hash?.update(part);
        this.push(part);
        this.remaining -= n;
        data = data.subarray(n);
        if (this.remaining === 0) {
          await this.endChunk();
          this.state = 'crlf';
        }
      } else if (this.state === 'crlf') {
        const all = this.pending.length ? Buffer.concat([this.pending, data]) : data;
        if (all.length < 2) {
          this.pending = Buffer.from(all);
          return;
        }
        if (all[0] !== 13 || all[1] !== 10) throw incomplete('a chunk is longer than its declared size');
        this.pending = Buffer.alloc(0);
        data = all.subarray(2);
        this.state = 'size';
      } else if (this.state === 'trailer') {
        const l = this.line(data);
        if (!l) return;
        data = l.rest;
        if (l.text === '') {
          await this.endTrailers();
          this.state = 'done';
          continue;
        }
        const i = l.text.indexOf(':');
        if (i < 1) throw incomplete('a trailing header is malformed');
        const name = l.text.slice(0, i).trim().toLowerCase();
        const value = l.text.slice(i + 1).trim();
        if (name !== 'x-amz-trailer-signature') this.trailerText += `${name}:${value}\n`;
        this.trailers.set(name, value);
      } else {
        if (data.toString('latin1').trim() !== '') throw incomplete('bytes follow the last chunk');
        return;
      }
    }
  }

  private async endTrailers(): Promise<void> {
    const sig = this.trailers.get('x-amz-trailer-signature');
    if (!this.verifier || !sig) return;
    if (sig !== (await this.verifier.trailer(this.previous, this.trailerText)))
      throw new S3Error(403, 'SignatureDoesNotMatch', 'The trailer signature of the streaming upload does not match.');
  }
}

export type ChecksumAlgorithm = 'crc32' | 'sha1' | 'sha256';
const CHECKSUMS: ChecksumAlgorithm[] = ['crc32', 'sha1', 'sha256'];

/** Counts and digests the bytes flowing through (MD5 always; SHA-256 and checksums on demand). */
export class Digester extends Transform {
  bytes = 0;
  private md5 = createHash('md5');
  private sha256: Hash | null;
  private crc: number | null;
  private checksum: Hash | null = null;
  constructor(opts: { sha256: boolean; checksum: ChecksumAlgorithm | null }) {
    super();
    this.sha256 = opts.sha256 ? createHash('sha256') : null;
    this.crc = opts.checksum === 'crc32' ? 0 : null;
    if (opts.checksum === 'sha1' || opts.checksum === 'sha256') this.checksum = createHash(opts.checksum);
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.bytes += chunk.length;
    this.md5.update(chunk);
    this.sha256?.update(chunk);
    this.checksum?.update(chunk);
    if (this.crc !== null) this.crc = crc32(chunk, this.crc);
    cb(null, chunk);
  }
  private done: { md5: Buffer; sha256: string | null; checksum: string | null } | null = null;
  /** The digests, once the stream has ended. */
  result() {
    if (!this.done) {
      let checksum: string | null = null;
      if (this.crc !== null) {
        const b = Buffer.alloc(4);
        b.writeUInt32BE(this.crc >>> 0);
        checksum = b.toString('base64');
      } else if (this.checksum) checksum = this.checksum.digest('base64');
      this.done = { md5: this.md5.digest(), sha256: this.sha256?.digest('hex') ?? null, checksum };
    }
    return this.done;
  }
}

/** The checksum algorithm a request announces (header or trailer), if one this server verifies. */
export function announcedChecksum(headers: Record<string, string | string[] | undefined>): ChecksumAlgorithm | null {
  const trailer = String(headers['x-amz-trailer'] ?? '').toLowerCase();
  for (const a of CHECKSUMS) if (headers[`x-amz-checksum-${a}`] !== undefined || trailer === `x-amz-checksum-${a}`) return a;
  return null;
}

/** Checks the digests of a finished body against what the request declared; throws S3 errors. */
export function checkDigests(
  d: Digester,
  expect: {
    length: number | null;
    contentMd5: string | undefined;
    sha256: string | null;
    checksum: { algorithm: ChecksumAlgorithm; value: string | undefined } | null;
  },
): void {
  const r = d.result();
  if (expect.length !== null && d.bytes !== expect.length)
    throw new S3Error(400, 'IncompleteBody', 'You did not provide the number of bytes specified by the Content-Length HTTP header.');
  if (expect.contentMd5 !== undefined && expect.contentMd5 !== r.md5.toString('base64')) throw badDigest();
  if (expect.sha256 && r.sha256 !== expect.sha256)
    throw new S3Error(400, 'XAmzContentSHA256Mismatch', 'The provided x-amz-content-sha256 header does not match what was computed.');
  if (expect.checksum?.value !== undefined && expect.checksum && r.checksum !== expect.checksum.value)
    throw badDigest(`The ${expect.checksum.algorithm.toUpperCase()} you specified did not match the calculated checksum.`);
}
