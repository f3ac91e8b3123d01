// Tables of the object-storage area: buckets, their access keys, CORS rules and CDN domain, and
// the metadata of the objects the data plane stores (the bytes live in a BlobStore, see blobs.ts);
// their migrations, and the queries on buckets, keys and CORS rules (object metadata and multipart
// uploads: objects-storage.ts).
import { sql, type Kysely, type Migration } from 'kysely';
import type { Scope } from '../../shared/context.js';
import type { Tx } from '../../shared/db/index.js';
import { lockFor } from '../../shared/db/locks.js';
import { insertNamed } from '../../shared/naming.js';
import { paginate, type Page } from '../../shared/pagination.js';
import type { CORS_METHODS, JURISDICTIONS, LOCATIONS } from './schemas.js';
import { isPostgres } from '../../shared/db/dialect.js';

export type Location = (typeof LOCATIONS)[number];
export type Jurisdiction = (typeof JURISDICTIONS)[number];
export type CorsMethod = (typeof CORS_METHODS)[number];

export interface ObjectStoragesTable {
  id: string;
  company_id: string;
  project_id: string | null;
  name: string;
  display_name: string;
  location: Location;
  jurisdiction: Jurisdiction;
  /** The S3 bucket name, unique in the installation (path-style and virtual-hosted addressing). */
  bucket_name: string;
  created_at: string;
  updated_at: string;
}

export interface ObjectStorageKeysTable {
  /** The access key id (not a secret: it names the key in every signed request). */
  access_key: string;
  bucket_id: string;
  /** The secret key, sealed with the server's secret box. */
  secret_enc: string;
  /** Null while the key is current; set when a rotation keeps it valid for a grace period. */
  expires_at: string | null;
  created_at: string;
}

export interface ObjectStorageCorsTable {
  id: string;
  bucket_id: string;
  position: number;
  /** JSON arrays. */
  methods: string;
  origins: string;
  headers: string | null;
  created_at: string;
}

export interface ObjectStorageObjectsTable {
  bucket_id: string;
  /** Compared byte-wise (S3 lists keys in UTF-8 binary order). */
  key: string;
  /** The blob holding the bytes (an id in the bucket's BlobStore space). */
  blob: string;
  size: number;
  /** Hex MD5 of the content, or `<md5 of part md5s>-<parts>` for multipart objects (unquoted). */
  etag: string;
  content_type: string | null;
  /** JSON object of user metadata (`x-amz-meta-*` without the prefix) and stored headers. */
  metadata: string;
  updated_at: string;
}

export interface ObjectStorageUploadsTable {
  id: string;
  bucket_id: string;
  key: string;
  content_type: string | null;
  metadata: string;
  created_at: string;
}

export interface ObjectStoragePartsTable {
  upload_id: string;
  part_number: number;
  blob: string;
  size: number;
  etag: string;
  created_at: string;
}

declare module '../../shared/db/schema.js' {
  interface DB {
    object_storages: ObjectStoragesTable;
    object_storage_keys: ObjectStorageKeysTable;
    object_storage_cors: ObjectStorageCorsTable;
    object_storage_objects: ObjectStorageObjectsTable;
    object_storage_uploads: ObjectStorageUploadsTable;
    object_storage_parts: ObjectStoragePartsTable;
  }
}

/** Object keys sort byte-wise on both databases (PostgreSQL's default collation is linguistic). */
const keyType = (db: Kysely<any>) => (isPostgres(db) ? sql`text collate "C"` : sql`text`);

export const migrations: Record<string, Migration> = {
  '120_object_storage': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('object_storages')
        .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
        .addColumn('company_id', 'varchar(36)', (c) => c.notNull().references('companies.id').onDelete('cascade'))
        .addColumn('project_id', 'varchar(36)')
        .addColumn('name', 'varchar(64)', (c) => c.notNull())
        .addColumn('display_name', 'text', (c) => c.notNull())
        .addColumn('location', 'varchar(8)', (c) => c.notNull())
        .addColumn('jurisdiction', 'varchar(16)', (c) => c.notNull())
        .addColumn('bucket_name', 'varchar(63)', (c) => c.notNull().unique())
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('updated_at', 'varchar(32)', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('object_storages_name').on('object_storages').columns(['company_id', 'name']).unique().execute();
      await db.schema
        .createTable('object_storage_keys')
        .addColumn('access_key', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('bucket_id', 'varchar(36)', (c) => c.notNull().references('object_storages.id').onDelete('cascade'))
        .addColumn('secret_enc', 'text', (c) => c.notNull())
        .addColumn('expires_at', 'varchar(32)')
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('object_storage_keys_bucket').on('object_storage_keys').columns(['bucket_id']).execute();
      await db.schema
        .createTable('object_storage_cors')
        .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
        .addColumn('bucket_id', 'varchar(36)', (c) => c.notNull().references('object_storages.id').onDelete('cascade'))
        .addColumn('position', 'integer', (c) => c.notNull())
        .addColumn('methods', 'text', (c) => c.notNull())
        .addColumn('origins', 'text', (c) => c.notNull())
        .addColumn('headers', 'text')
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('object_storage_cors_bucket').on('object_storage_cors').columns(['bucket_id', 'position']).execute();
      await db.schema
        .createTable('object_storage_objects')
        .addColumn('bucket_id', 'varchar(36)', (c) => c.notNull().references('object_storages.id').onDelete('cascade'))
        .addColumn('key', keyType(db), (c) => c.notNull())
        .addColumn('blob', 'varchar(64)', (c) => c.notNull())
        .addColumn('size', 'bigint', (c) => c.notNull())
        .addColumn('etag', 'varchar(64)', (c) => c.notNull())
        .addColumn('content_type', 'text')
        .addColumn('metadata', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'varchar(32)', (c) => c.notNull())
        .addPrimaryKeyConstraint('object_storage_objects_pk', ['bucket_id', 'key'])
        .execute();
      await db.schema
        .createTable('object_storage_uploads')
        .addColumn('id', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('bucket_id', 'varchar(36)', (c) => c.notNull().references('object_storages.id').onDelete('cascade'))
        .addColumn('key', keyType(db), (c) => c.notNull())
        .addColumn('content_type', 'text')
        .addColumn('metadata', 'text', (c) => c.notNull())
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('object_storage_uploads_bucket').on('object_storage_uploads').columns(['bucket_id', 'key']).execute();
      await db.schema
        .createTable('object_storage_parts')
        .addColumn('upload_id', 'varchar(64)', (c) => c.notNull().references('object_storage_uploads.id').onDelete('cascade'))
        .addColumn('part_number', 'integer', (c) => c.notNull())
        .addColumn('blob', 'varchar(64)', (c) => c.notNull())
        .addColumn('size', 'bigint', (c) => c.notNull())
        .addColumn('etag', 'varchar(64)', (c) => c.notNull())
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .addPrimaryKeyConstraint('object_storage_parts_pk', ['upload_id', 'part_number'])
        .execute();
    },
  },
};

/** Tables of this area, children first (for reset). */
export const tables = [
  'object_storage_parts',
  'object_storage_uploads',
  'object_storage_objects',
  'object_storage_cors',
  'object_storage_keys',
  'object_storages',
] as const;

// --- Buckets ----------------------------------------------------------------------------------

/** The company's bucket. */
export async function findCompanyBucket(tx: Tx, companyId: string, id: string): Promise<ObjectStoragesTable | undefined> {
  return tx.selectFrom('object_storages').selectAll().where('id', '=', id).where('company_id', '=', companyId).executeTakeFirst();
}

/** A bucket by id, whatever its company (the data plane's caller is a key of that bucket). */
export async function findBucketRow(tx: Tx, id: string): Promise<ObjectStoragesTable | undefined> {
  return tx.selectFrom('object_storages').selectAll().where('id', '=', id).executeTakeFirst();
}

/** Whether the bucket still exists. */
export async function bucketExists(tx: Tx, id: string): Promise<boolean> {
  return !!(await tx.selectFrom('object_storages').select('id').where('id', '=', id).executeTakeFirst());
}

/** A bucket's id and company (what the edge needs to route to it). */
export async function findBucketOwner(tx: Tx, id: string): Promise<{ id: string; company_id: string } | undefined> {
  return tx.selectFrom('object_storages').select(['id', 'company_id']).where('id', '=', id).executeTakeFirst();
}

/** Every bucket's id and company (the edge's CDN hostnames are matched against them). */
export async function listBucketOwners(tx: Tx): Promise<{ id: string; company_id: string }[]> {
  return tx.selectFrom('object_storages').select(['id', 'company_id']).execute();
}

/** The bucket of an S3 bucket name. */
export async function findBucketByName(tx: Tx, bucketName: string): Promise<{ id: string } | undefined> {
  return tx.selectFrom('object_storages').select('id').where('bucket_name', '=', bucketName).executeTakeFirst();
}

/** A page of the company's buckets by name, limited to `scope` when given. */
export async function listBucketsPage(tx: Tx, companyId: string, scope: Scope, page: Page) {
  let q = tx.selectFrom('object_storages').selectAll().where('company_id', '=', companyId);
  if (scope) q = q.where('id', 'in', scope.size ? [...scope] : ['']);
  return paginate(q, page, { column: 'name', id: 'id' });
}

/** Inserts the row `build` makes for a name derived from the display name, unique in the company (the unique index decides). */
export async function insertNamedBucket(
  tx: Tx,
  companyId: string,
  displayName: string,
  build: (name: string) => ObjectStoragesTable,
): Promise<ObjectStoragesTable> {
  return insertNamed(tx, 'object_storages', companyId, displayName, build);
}

export async function updateBucketColumns(tx: Tx, id: string, set: Partial<ObjectStoragesTable>): Promise<void> {
  await tx.updateTable('object_storages').set(set).where('id', '=', id).execute();
}

export async function touchBucket(tx: Tx, id: string, at: string): Promise<void> {
  await tx.updateTable('object_storages').set({ updated_at: at }).where('id', '=', id).execute();
}

/** Deletes the bucket; its keys, rules and metadata go with it (foreign keys cascade). */
export async function deleteBucketRow(tx: Tx, id: string): Promise<void> {
  await tx.deleteFrom('object_storages').where('id', '=', id).execute();
}

/** The service registry's columns of the company's buckets among `ids`. */
export async function listBucketSummaries(tx: Tx, companyId: string, ids: readonly string[]) {
  return tx.selectFrom('object_storages').select(['id', 'name', 'display_name']).where('id', 'in', ids).where('company_id', '=', companyId).execute();
}

// --- Keys -------------------------------------------------------------------------------------

/** One rotation of a bucket's keys at a time. */
export const lockBucketKeys = (tx: Tx, bucketId: string) => lockFor(tx, `object-storage-keys:${bucketId}`);

export async function insertKey(tx: Tx, row: ObjectStorageKeysTable): Promise<void> {
  await tx.insertInto('object_storage_keys').values(row).execute();
}

/** The access key id of the bucket's newest current key (no deadline). */
export async function findCurrentKey(tx: Tx, bucketId: string): Promise<string | null> {
  return (
    (
      await tx
        .selectFrom('object_storage_keys')
        .select('access_key')
        .where('bucket_id', '=', bucketId)
        .where('expires_at', 'is', null)
        .orderBy('created_at', 'desc')
        .executeTakeFirst()
    )?.access_key ?? null
  );
}

/** The bucket's newest current key with its sealed secret (what the presign operation signs with). */
export async function findCurrentKeyPair(tx: Tx, bucketId: string): Promise<{ access_key: string; secret_enc: string } | undefined> {
  return tx
    .selectFrom('object_storage_keys')
    .select(['access_key', 'secret_enc'])
    .where('bucket_id', '=', bucketId)
    .where('expires_at', 'is', null)
    .orderBy('created_at', 'desc')
    .executeTakeFirst();
}

/** A key by its access key id (the data plane's signature check). */
export async function findKey(tx: Tx, accessKey: string) {
  return tx.selectFrom('object_storage_keys').select(['bucket_id', 'secret_enc', 'expires_at']).where('access_key', '=', accessKey).executeTakeFirst();
}

/** Deletes the bucket's retired keys whose deadline is `at` or earlier. */
export async function deleteExpiredKeys(tx: Tx, bucketId: string, at: string): Promise<void> {
  await tx.deleteFrom('object_storage_keys').where('bucket_id', '=', bucketId).where('expires_at', '<=', at).execute();
}

/** Deletes the bucket's current keys (no deadline). */
export async function deleteCurrentKeys(tx: Tx, bucketId: string): Promise<void> {
  await tx.deleteFrom('object_storage_keys').where('bucket_id', '=', bucketId).where('expires_at', 'is', null).execute();
}

/** Gives the bucket's current keys (no deadline) the deadline `expiresAt`. */
export async function expireCurrentKeys(tx: Tx, bucketId: string, expiresAt: string): Promise<void> {
  await tx.updateTable('object_storage_keys').set({ expires_at: expiresAt }).where('bucket_id', '=', bucketId).where('expires_at', 'is', null).execute();
}

// --- CORS rules -------------------------------------------------------------------------------

/** The bucket's CORS rows in order. */
export async function listCorsRows(tx: Tx, bucketId: string): Promise<ObjectStorageCorsTable[]> {
  return tx.selectFrom('object_storage_cors').selectAll().where('bucket_id', '=', bucketId).orderBy('position').execute();
}

/** The position of the bucket's last CORS rule, if it has one. */
export async function findLastCorsPosition(tx: Tx, bucketId: string): Promise<number | undefined> {
  const last = await tx.selectFrom('object_storage_cors').select(['position']).where('bucket_id', '=', bucketId).orderBy('position', 'desc').executeTakeFirst();
  return last?.position;
}

export async function countCorsRules(tx: Tx, bucketId: string): Promise<number> {
  const count = await tx
    .selectFrom('object_storage_cors')
    .select((eb) => eb.fn.countAll().as('n'))
    .where('bucket_id', '=', bucketId)
    .executeTakeFirst();
  return Number(count?.n ?? 0);
}

export async function insertCorsRule(tx: Tx, row: ObjectStorageCorsTable): Promise<void> {
  await tx.insertInto('object_storage_cors').values(row).execute();
}

type CorsColumns = Pick<ObjectStorageCorsTable, 'methods' | 'origins' | 'headers'>;

/** Updates one of the bucket's rules; whether it exists. */
export async function updateCorsRule(tx: Tx, bucketId: string, ruleId: string, columns: CorsColumns): Promise<boolean> {
  const r = await tx.updateTable('object_storage_cors').set(columns).where('id', '=', ruleId).where('bucket_id', '=', bucketId).executeTakeFirst();
  return !!Number(r.numUpdatedRows);
}

/** Deletes one of the bucket's rules; whether it existed. */
export async function deleteCorsRule(tx: Tx, bucketId: string, ruleId: string): Promise<boolean> {
  const r = await tx.deleteFrom('object_storage_cors').where('id', '=', ruleId).where('bucket_id', '=', bucketId).executeTakeFirst();
  return !!Number(r.numDeletedRows);
}
