// The control plane of object storage: buckets (create, read, update, delete), their keys
// (rotation with a grace period), CORS rules, the public CDN domain, and the object list and
// delete operations over what S3 clients stored.
import { randomBytes } from 'node:crypto';
import type { AppContext, CallContext } from '../../shared/context.js';
import { servingChanged } from '../../shared/edge/index.js';
import { ApiError, badRequest, notFound } from '../../shared/errors.js';
import { idDigits, newId } from '../../shared/ids.js';
import { refuseIfTaken } from '../../shared/naming.js';
import type { Page } from '../../shared/pagination.js';
import type { ServiceSummary } from '../../shared/services.js';
import { forgetService, placeService } from '../projects/index.js';
import { claimHostname, hostnameOf, hostnamesOf, releaseHostname } from './domains.js';
import { decodeBound, encodeBound, listEntries, sweepLater } from './objects.js';
import { deleteObjectRows } from './objects-storage.js';
import { runtime } from './runtime.js';
import { PATH_PREFIX } from './settings.js';
import {
  countCorsRules,
  deleteBucketRow,
  deleteCorsRule,
  deleteCurrentKeys,
  deleteExpiredKeys,
  expireCurrentKeys,
  findCompanyBucket,
  findCurrentKey,
  findLastCorsPosition,
  insertCorsRule,
  insertKey,
  insertNamedBucket,
  listBucketSummaries,
  listBucketsPage,
  listCorsRows,
  lockBucketKeys,
  touchBucket,
  updateBucketColumns,
  updateCorsRule,
  type CorsMethod,
  type Jurisdiction,
  type Location,
  type ObjectStoragesTable,
} from './storage.js';
import type { OBJECT_TYPES } from './schemas.js';

const KEY_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
const MAX_CORS_RULES = 100;

// --- Representations ------------------------------------------------------------------------

const view = (b: ObjectStoragesTable, domain: string | null) => ({
  id: b.id,
  company_id: b.company_id,
  project_id: b.project_id,
  name: b.name,
  display_name: b.display_name,
  location: b.location,
  jurisdiction: b.jurisdiction,
  domain,
  created_at: b.created_at,
  updated_at: b.updated_at,
});

/** The S3 endpoint clients use with path-style addressing (`forcePathStyle`). */
const endpointOf = (app: AppContext) => `${app.baseUrl}${PATH_PREFIX}`;

function detail(app: AppContext, b: ObjectStoragesTable, domain: string | null, keys: { access: string | null; secret: string | null }) {
  const { created_at, updated_at, ...rest } = view(b, domain);
  return { ...rest, bucket_name: b.bucket_name, endpoint: endpointOf(app), access_key: keys.access, secret_key: keys.secret, created_at, updated_at };
}

/** The CDN hostname a bucket gets when its public domain is enabled. */
const cdnHostname = (app: AppContext, b: ObjectStoragesTable) => `${b.bucket_name}.${runtime(app).settings.cdnDomain}`;

// --- Keys -------------------------------------------------------------------------------------

function newKeyPair(app: AppContext): { access: string; secret: string } {
  const prefix = app.config.brandPrefix
    .toUpperCase()
    .replace(/[^A-Z0-9]/g, '')
    .slice(0, 4);
  const bytes = randomBytes(20 - prefix.length);
  const access = prefix + [...bytes].map((x) => KEY_ALPHABET[x % 32]).join('');
  return { access, secret: randomBytes(30).toString('base64url') };
}

async function issueKey({ tx, app }: CallContext, bucketId: string) {
  const pair = newKeyPair(app);
  await insertKey(tx, {
    access_key: pair.access,
    bucket_id: bucketId,
    secret_enc: app.secrets.encrypt(pair.secret),
    expires_at: null,
    created_at: new Date().toISOString(),
  });
  return pair;
}

// --- Buckets ----------------------------------------------------------------------------------

/** The bucket of the company, or 404. */
async function findBucket({ tx, companyId }: CallContext, id: string): Promise<ObjectStoragesTable> {
  const b = await findCompanyBucket(tx, companyId, id);
  if (!b) throw notFound('Object storage');
  return b;
}

export async function listBuckets(ctx: CallContext, page: Page) {
  const { tx, companyId, scope } = ctx;
  const res = await listBucketsPage(tx, companyId, scope, page);
  const hostnames = await hostnamesOf(
    tx,
    res.data.map((b) => b.id),
  );
  const data = res.data.map((b) => {
    const { company_id, project_id, ...item } = view(b, hostnames.get(b.id) ?? null);
    return item;
  });
  return { ...res, data };
}

export async function createBucket(
  ctx: CallContext,
  input: { display_name: string; location?: Location; jurisdiction?: Jurisdiction; public_access?: boolean; project_id?: string | null },
) {
  const { tx, app, companyId } = ctx;
  const id = newId();
  const now = new Date().toISOString();
  // The name is unique in the company even under concurrent creates: the unique index decides.
  const row = await insertNamedBucket(tx, companyId, input.display_name, (name): ObjectStoragesTable => ({
    id,
    company_id: companyId,
    project_id: input.project_id ?? null,
    name,
    display_name: input.display_name,
    location: input.location ?? 'enam',
    jurisdiction: input.jurisdiction ?? 'default',
    // Unique in the installation and a valid DNS label (virtual-hosted and CDN hostnames).
    bucket_name: `${name}-${idDigits(id, 8)}`,
    created_at: now,
    updated_at: now,
  }));
  const keys = await issueKey(ctx, id);
  let domain: string | null = null;
  if (input.public_access) {
    await claimHostname(ctx, id, (domain = cdnHostname(app, row)));
    servingChanged(app, tx);
  }
  if (row.project_id) await placeService(ctx, id, 'object-storage', row.project_id);
  return detail(app, row, domain, keys);
}

/** GET: the current access key id is shown; secrets are only ever returned when issued. */
export async function getBucket(ctx: CallContext, id: string) {
  const b = await findBucket(ctx, id);
  return detail(ctx.app, b, await hostnameOf(ctx.tx, id), { access: await findCurrentKey(ctx.tx, id), secret: null });
}

export async function updateBucket(ctx: CallContext, id: string, input: { display_name?: string; project_id?: string | null }) {
  const { tx } = ctx;
  const b = await findBucket(ctx, id);
  const patch: Partial<ObjectStoragesTable> = { updated_at: new Date().toISOString() };
  if (input.display_name !== undefined) patch.display_name = input.display_name;
  if (input.project_id !== undefined && input.project_id !== b.project_id) {
    patch.project_id = input.project_id;
    await placeService(ctx, id, 'object-storage', input.project_id);
  }
  await updateBucketColumns(tx, id, patch);
  return view({ ...b, ...patch }, await hostnameOf(tx, id));
}

/** Deletes the bucket with its keys, rules, domain and objects (their bytes go in a job after the commit). */
export async function deleteBucket(ctx: CallContext, id: string) {
  const { tx } = ctx;
  await findBucket(ctx, id);
  await ctx.app.events.signal(tx, 'object-storage.removed', { bucketId: id });
  await deleteBucketRow(tx, id);
  await forgetService(tx, id);
  await sweepLater(tx, id, null);
}

export async function rotateCredentials(ctx: CallContext, id: string, input: { old_keys_ttl_hours?: number } | undefined) {
  const { tx, app } = ctx;
  // One rotation of a bucket at a time, so each retires the pair the one before it issued.
  await lockBucketKeys(tx, id);
  const b = await findBucket(ctx, id);
  const hours = input?.old_keys_ttl_hours ?? 0;
  const now = runtime(app).now();
  const old = await findCurrentKey(tx, id);
  // Only the pair in use (no deadline yet) is retired: now (0 hours) or after the grace period.
  // Pairs retired by earlier rotations keep their own deadlines, neither cut short nor extended;
  // those past it are dropped.
  await deleteExpiredKeys(tx, id, new Date(now).toISOString());
  let expiresAt: string | null = null;
  if (hours === 0) await deleteCurrentKeys(tx, id);
  else {
    expiresAt = new Date(now + hours * 3600_000).toISOString();
    await expireCurrentKeys(tx, id, expiresAt);
  }
  const keys = await issueKey(ctx, id);
  await touchBucket(tx, id, new Date().toISOString());
  return {
    id,
    display_name: b.display_name,
    access_key: keys.access,
    secret_key: keys.secret,
    old_access_key: old,
    // The old secret is not shown again: whoever holds it already has it.
    old_secret_key: null,
    old_keys_expired_at: old ? (expiresAt ?? new Date(now).toISOString()) : null,
  };
}

// --- CDN domain -------------------------------------------------------------------------------

export async function enableDomain(ctx: CallContext, id: string) {
  const { tx, app } = ctx;
  const b = await findBucket(ctx, id);
  // One CDN domain per bucket: of concurrent enables one wins, the others find its domain.
  await refuseIfTaken(
    tx,
    `object-storage-domain:${id}`,
    async () => !!(await hostnameOf(tx, id)),
    () => badRequest('The bucket already has a CDN domain; disable it first'),
  );
  const domain = cdnHostname(app, b);
  await claimHostname(ctx, id, domain);
  await touchBucket(tx, id, new Date().toISOString());
  // A proxy in front serves the CDN hostname (edge.ts) from the next apply.
  servingChanged(app, tx);
  return { id, domain };
}

export async function disableDomain(ctx: CallContext, id: string) {
  const { tx } = ctx;
  await findBucket(ctx, id);
  if (!(await releaseHostname(ctx, id))) throw notFound('CDN domain');
  await touchBucket(tx, id, new Date().toISOString());
  servingChanged(ctx.app, tx);
}

/**
 * Empties the bucket's CDN cache (x-decided). The cache keys a bucket's entries by its
 * `updated_at`, so the new one this writes makes every process miss what it stored before; this
 * process also drops them at once.
 */
export async function purgeCache(ctx: CallContext, id: string) {
  const { tx, app } = ctx;
  await findBucket(ctx, id);
  await touchBucket(tx, id, new Date().toISOString());
  app.runtimes.edge?.cache.purge(id);
  // A proxy in front keys its cache by `updated_at` too (edge.ts): it applies the new one.
  servingChanged(app, tx);
  return { message: 'Cache purge started' };
}

// --- CORS rules -------------------------------------------------------------------------------

export interface CorsRule {
  id: string;
  methods: CorsMethod[];
  origins: string[];
  headers: string[] | null;
}

/** The bucket's CORS rules in order (also read by the data plane for every CORS request). */
export async function corsRules(tx: CallContext['tx'], bucketId: string): Promise<CorsRule[]> {
  const rows = await listCorsRows(tx, bucketId);
  return rows.map((r) => ({
    id: r.id,
    methods: JSON.parse(r.methods),
    origins: JSON.parse(r.origins),
    headers: r.headers === null ? null : JSON.parse(r.headers),
  }));
}

export async function listCors(ctx: CallContext, id: string) {
  await findBucket(ctx, id);
  return { data: await corsRules(ctx.tx, id) };
}

interface CorsInput {
  methods: CorsMethod[];
  origins: string[];
  headers?: string[];
}

function corsColumns(input: CorsInput) {
  for (const o of input.origins)
    if (o !== '*' && (o.split('*').length > 2 || /\s/.test(o)))
      throw badRequest(`Invalid origin "${o}": use "*", an origin such as https://example.com, or one "*" wildcard`);
  for (const h of input.headers ?? []) if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(h)) throw badRequest(`Invalid header name "${h}"`);
  return {
    methods: JSON.stringify([...new Set(input.methods)]),
    origins: JSON.stringify(input.origins),
    headers: input.headers === undefined ? null : JSON.stringify(input.headers),
  };
}

export async function createCors(ctx: CallContext, id: string, input: CorsInput) {
  const { tx } = ctx;
  await findBucket(ctx, id);
  const columns = corsColumns(input);
  const last = await findLastCorsPosition(tx, id);
  const count = await countCorsRules(tx, id);
  if (count >= MAX_CORS_RULES) throw badRequest(`The bucket already has ${MAX_CORS_RULES} CORS rules (the maximum)`);
  await insertCorsRule(tx, { id: newId(), bucket_id: id, position: (last ?? 0) + 1, ...columns, created_at: new Date().toISOString() });
  return { message: 'CORS policy created' };
}

export async function updateCors(ctx: CallContext, id: string, ruleId: string, input: CorsInput) {
  const { tx } = ctx;
  await findBucket(ctx, id);
  if (!(await updateCorsRule(tx, id, ruleId, corsColumns(input)))) throw notFound('CORS policy');
  return { message: 'CORS policy updated' };
}

export async function deleteCors(ctx: CallContext, id: string, ruleId: string) {
  const { tx } = ctx;
  await findBucket(ctx, id);
  if (!(await deleteCorsRule(tx, id, ruleId))) throw notFound('CORS policy');
}

// --- Objects ----------------------------------------------------------------------------------

type ObjectType = (typeof OBJECT_TYPES)[number];
const EXTENSIONS: Record<Exclude<ObjectType, 'folder' | 'file'>, string[]> = {
  image: ['jpg', 'jpeg', 'png', 'gif', 'webp', 'svg', 'bmp', 'ico', 'avif', 'tif', 'tiff', 'heic'],
  video: ['mp4', 'mov', 'avi', 'mkv', 'webm', 'm4v', 'wmv', 'flv', 'mpeg', 'mpg'],
  audio: ['mp3', 'wav', 'ogg', 'flac', 'aac', 'm4a', 'opus', 'wma'],
  document: ['pdf', 'doc', 'docx', 'xls', 'xlsx', 'ppt', 'pptx', 'odt', 'ods', 'odp', 'txt', 'rtf', 'csv', 'md'],
};
const TYPE_BY_EXTENSION = new Map(Object.entries(EXTENSIONS).flatMap(([t, exts]) => exts.map((e) => [e, t as ObjectType])));

function typeOf(key: string): ObjectType {
  const name = key.slice(key.lastIndexOf('/') + 1);
  const dot = name.lastIndexOf('.');
  return (dot > 0 && TYPE_BY_EXTENSION.get(name.slice(dot + 1).toLowerCase())) || 'file';
}

export async function listObjects(ctx: CallContext, id: string, q: { prefix?: string; delimiter?: string; cursor?: string; limit?: number }) {
  await findBucket(ctx, id);
  const after = q.cursor ? decodeBound(q.cursor) : null;
  if (q.cursor && !after) {
    const message = 'cursor is not a cursor this bucket listing returned';
    throw new ApiError(400, message, { issues: [{ path: 'query.cursor', message }] });
  }
  const { entries, next } = await listEntries(ctx.tx, id, { prefix: q.prefix ?? '', delimiter: q.delimiter ?? '', after, max: q.limit ?? 25 });
  return {
    data: entries.map((e) =>
      'prefix' in e
        ? { key: e.prefix, type: 'folder' as const, content_type: null, size: null, updated_at: null, e_tag: null }
        : {
            key: e.object.key,
            type: typeOf(e.object.key),
            content_type: e.object.content_type,
            size: Number(e.object.size),
            updated_at: e.object.updated_at,
            e_tag: e.object.etag,
          },
    ),
    cursor: next ? encodeBound(next) : null,
  };
}

/** Deletes the objects (keys that do not exist are skipped); their bytes go in a job after the commit. */
export async function deleteObjects(ctx: CallContext, id: string, keys: string[]) {
  await findBucket(ctx, id);
  const { blobs } = await deleteObjectRows(ctx.tx, id, keys);
  await sweepLater(ctx.tx, id, blobs);
}

/** The service registry's view of a bucket (projects and database backup targets find buckets through it). */
export function bucketSummaries({ tx, companyId }: CallContext, ids: readonly string[]): Promise<ServiceSummary[]> {
  return listBucketSummaries(tx, companyId, ids);
}
