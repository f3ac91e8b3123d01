// Tables of the object-storage area: buckets, their access keys, CORS rules and CDN domain, and
// the metadata of the objects the data plane stores (the bytes live in a BlobStore, see blobs.ts).
import { sql, type Kysely, type Migration } from 'kysely';
import type { CallContext } from '../../shared/context.js';
import type { Tx } from '../../shared/db/index.js';
import { notFound } from '../../shared/errors.js';
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

/** The bucket of the company, or 404. */
export async function findBucket({ tx, companyId }: CallContext, id: string): Promise<ObjectStoragesTable> {
  const b = await tx.selectFrom('object_storages').selectAll().where('id', '=', id).where('company_id', '=', companyId).executeTakeFirst();
  if (!b) throw notFound('Object storage');
  return b;
}

/** Every blob a bucket's metadata refers to (objects and parts of open uploads). */
export async function liveBlobs(tx: Tx, bucketId: string): Promise<Set<string>> {
  const objects = await tx.selectFrom('object_storage_objects').select('blob').where('bucket_id', '=', bucketId).execute();
  const parts = await tx
    .selectFrom('object_storage_parts')
    .innerJoin('object_storage_uploads', 'object_storage_uploads.id', 'object_storage_parts.upload_id')
    .select('object_storage_parts.blob')
    .where('object_storage_uploads.bucket_id', '=', bucketId)
    .execute();
  return new Set([...objects.map((o) => o.blob), ...parts.map((p) => p.blob)]);
}
