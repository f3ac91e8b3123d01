// Operation declarations of the object-storage area (contract, permission, rate tier, thin
// handler), its start-up wiring, and the S3 data plane's routes outside /v3.
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../shared/context.js';
import { ref } from '../../shared/http/references.js';
import { defineOperation } from '../../shared/http/operation.js';
import { pageOf } from '../../shared/pagination.js';
import { bucketExists } from './storage.js';
import { SWEEP_JOB, sweepJob } from './objects.js';
import { liveBlobs } from './objects-storage.js';
import { createRuntime, runtime } from './runtime.js';
import { registerS3, rewriteUrl as rewriteS3Url } from './s3.js';
import { registerEdge } from './edge.js';
import { presignObject } from './presign.js';
import * as c from './schemas.js';
import * as svc from './service.js';

export { migrations, tables } from './storage.js';

export const operations = [
  defineOperation({
    contract: c.listObjectStoragesContract,
    permission: 'OBJECT_STORAGE:READ',
    tier: 'read',
    handler: async (r) => svc.listBuckets(r, pageOf(r.query)),
  }),
  defineOperation({
    contract: c.createObjectStorageContract,
    permission: 'OBJECT_STORAGE:CREATE',
    tier: 'service_creation',
    references: [ref.project],
    handler: async (r) => svc.createBucket(r, r.body),
  }),
  defineOperation({
    contract: c.getObjectStorageContract,
    permission: 'OBJECT_STORAGE:READ',
    tier: 'read',
    handler: async (r) => svc.getBucket(r, r.params.id),
  }),
  defineOperation({
    contract: c.updateObjectStorageContract,
    permission: 'OBJECT_STORAGE:UPDATE',
    tier: 'service_mutation',
    references: [ref.project],
    handler: async (r) => svc.updateBucket(r, r.params.id, r.body),
  }),
  defineOperation({
    contract: c.deleteObjectStorageContract,
    permission: 'OBJECT_STORAGE:DELETE',
    tier: 'service_mutation',
    handler: async (r) => svc.deleteBucket(r, r.params.id),
  }),
  defineOperation({
    contract: c.rotateObjectStorageCredentialsContract,
    permission: 'OBJECT_STORAGE:UPDATE',
    tier: 'service_mutation',
    handler: async (r) => svc.rotateCredentials(r, r.params.id, r.body),
  }),
  defineOperation({
    contract: c.createObjectStorageDomainContract,
    permission: 'OBJECT_STORAGE:UPDATE',
    tier: 'service_mutation',
    handler: async (r) => svc.enableDomain(r, r.params.id),
  }),
  defineOperation({
    contract: c.deleteObjectStorageDomainContract,
    permission: 'OBJECT_STORAGE:UPDATE',
    tier: 'service_mutation',
    handler: async (r) => svc.disableDomain(r, r.params.id),
  }),
  defineOperation({
    contract: c.listObjectStorageCorsPoliciesContract,
    permission: 'OBJECT_STORAGE:READ',
    tier: 'read',
    handler: async (r) => svc.listCors(r, r.params.id),
  }),
  defineOperation({
    contract: c.createObjectStorageCorsPolicyContract,
    permission: 'OBJECT_STORAGE:UPDATE',
    tier: 'service_mutation',
    handler: async (r) => svc.createCors(r, r.params.id, r.body),
  }),
  defineOperation({
    contract: c.updateObjectStorageCorsPolicyContract,
    permission: 'OBJECT_STORAGE:UPDATE',
    tier: 'service_mutation',
    handler: async (r) => svc.updateCors(r, r.params.id, r.params.cors_policy_id, r.body),
  }),
  defineOperation({
    contract: c.deleteObjectStorageCorsPolicyContract,
    permission: 'OBJECT_STORAGE:UPDATE',
    tier: 'service_mutation',
    handler: async (r) => svc.deleteCors(r, r.params.id, r.params.cors_policy_id),
  }),
  defineOperation({
    contract: c.listObjectStorageObjectsContract,
    permission: 'OBJECT_STORAGE:READ',
    tier: 'read',
    handler: async (r) => svc.listObjects(r, r.params.id, r.query),
  }),
  defineOperation({
    contract: c.deleteObjectStorageObjectsContract,
    permission: 'OBJECT_STORAGE:UPDATE',
    tier: 'service_mutation',
    handler: async (r) => svc.deleteObjects(r, r.params.id, r.body.keys),
  }),
  defineOperation({
    contract: c.presignObjectStorageContract,
    // GET and HEAD URLs need this; PUT and DELETE URLs also OBJECT_STORAGE:UPDATE (checked by presignObject).
    permission: 'OBJECT_STORAGE:READ',
    tier: 'service_mutation',
    handler: async (r) => presignObject(r, r.params.id, r.body, typeof r.headers.host === 'string' ? r.headers.host : undefined),
  }),
  defineOperation({
    contract: c.purgeObjectStorageCacheContract,
    permission: 'OBJECT_STORAGE:UPDATE',
    tier: 'service_mutation',
    handler: async (r) => svc.purgeCache(r, r.params.id),
  }),
];

export function setup(app: AppContext): void {
  createRuntime(app);
  app.jobs.register(SWEEP_JOB, sweepJob(app));
  const { cdnDomain, baseDomain } = runtime(app).settings;
  app.services.register({ type: 'object-storage', summaries: svc.bucketSummaries, systemSuffixes: [cdnDomain, ...(baseDomain ? [baseDomain] : [])] });
  registerEdge(app);
}

/** Routes `<bucket>.<base domain>` and CDN hostnames to the data plane (see s3.ts). */
export const rewriteUrl = rewriteS3Url;

export function http(fastify: FastifyInstance, app: AppContext): void {
  registerS3(fastify, app);
  // Start-up recovery of the blob store before the server answers: unfinished writes and blobs
  // no metadata refers to are removed. On PostgreSQL other processes may be writing, so only
  // files older than an hour are touched there.
  fastify.addHook('onReady', async () => {
    const db = app.database.db;
    const graceMs = app.database.kind === 'sqlite' ? 0 : 3600_000;
    await runtime(app).store.recover(async (bucketId) => {
      return (await bucketExists(db, bucketId)) ? liveBlobs(db, bucketId) : null;
    }, graceMs);
  });
}
