// Key rotation with grace periods, through HTTP and the S3 data plane: every retired key pair keeps
// the deadline of the rotation that retired it. A later rotation retires only the pair in use: with
// 0 hours it revokes that pair at once but not the earlier pairs still inside their grace, and a
// longer grace does not extend theirs. The grace clock is moved, not waited for.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { DB_KINDS, GENEROUS, skipUnless, useServer } from '../helpers/server.js';
import { runtime } from '../../src/modules/object-storage/runtime.js';
import { client, createBucket, expectStatus, s3Error } from './support.js';

const HOUR = 3600_000;

for (const kind of DB_KINDS) {
  describe(`object storage key rotation grace [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, rateLimits: GENEROUS });

    it('each retired key pair is accepted until its own deadline, whatever later rotations say', async () => {
      const b = await createBucket(s);
      await client(b, b).send(new PutObjectCommand({ Bucket: b.bucket_name, Key: 'k', Body: 'v' }));
      /** Whether the data plane accepts a key pair (a signed read of the object). */
      const accepts = async (keys: { access_key: string; secret_key: string }) => {
        try {
          const o = await client(b, keys).send(new GetObjectCommand({ Bucket: b.bucket_name, Key: 'k' }));
          assert.equal(await o.Body!.transformToString(), 'v');
          return true;
        } catch (e) {
          assert.deepEqual(await s3Error(Promise.reject(e)), { name: 'InvalidAccessKeyId', status: 403 });
          return false;
        }
      };
      const rotate = (old_keys_ttl_hours: number) =>
        s.post(`/object-storage/${b.id}/rotate-credentials`, { old_keys_ttl_hours }).then((r) => expectStatus(r, 200));
      const rt = runtime(s.app);
      const t0 = rt.now();
      const at = (ms: number) => (rt.clockOffsetMs = t0 + ms - Date.now());
      try {
        // k0 retired with 1 hour of grace.
        const r1 = await rotate(1);
        const k0Deadline = Date.parse(r1.old_keys_expired_at);
        // Ten minutes later, k1 retired with 3 hours: k0's hour is not extended.
        at(10 * 60_000);
        const r2 = await rotate(3);
        const k1Deadline = Date.parse(r2.old_keys_expired_at);
        assert.ok(Math.abs(k1Deadline - k0Deadline - (2 * HOUR + 10 * 60_000)) < 60_000, 'k1 gets its own 3 hours');
        // Then k2 retired at once: k0 and k1 stay inside their grace.
        const r3 = await rotate(0);
        assert.equal(r3.old_access_key, r2.access_key);
        assert.ok(Math.abs(Date.parse(r3.old_keys_expired_at) - rt.now()) < 60_000, 'the pair in use expires now');
        const [k0, k1, k2, k3] = [b, r1, r2, r3];
        assert.deepEqual(await Promise.all([k0, k1, k2, k3].map(accepts)), [true, true, false, true]);

        // A minute before k0's deadline, and a second after it.
        at(k0Deadline - t0 - 60_000);
        assert.deepEqual(await Promise.all([k0, k1, k2, k3].map(accepts)), [true, true, false, true]);
        at(k0Deadline - t0 + 1000);
        assert.deepEqual(await Promise.all([k0, k1, k2, k3].map(accepts)), [false, true, false, true]);
        // k1 until its 3 hours are over.
        at(k1Deadline - t0 - 60_000);
        assert.equal(await accepts(k1), true);
        at(k1Deadline - t0 + 1000);
        assert.deepEqual(await Promise.all([k0, k1, k2, k3].map(accepts)), [false, false, false, true]);
      } finally {
        rt.clockOffsetMs = 0;
      }
    });
  });
}
