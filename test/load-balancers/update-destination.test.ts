// PATCH /load-balancers/{id}/destinations/{destination_id} (x-decided): weight and location change
// in place (same id, enabled state kept), with the create body's bounds; the target cannot change;
// another load balancer's, another company's or an unknown destination is 404; a key without
// LOAD_BALANCER:UPDATE is 403; a GEO load balancer keeps a location on every destination. On the
// nginx edge the new weight reaches nginx's configuration: the traffic follows it.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DB_KINDS, GENEROUS, skipUnless, useServer } from '../helpers/server.js';
import { expectError, expectStatus, MISSING, waitFor } from '../helpers/util.js';
import { edgeGet, LOCAL_ENV } from '../apps-real/support.js';
import { nginxSkip } from '../edge-nginx/support.js';
import type { NginxEdge } from '../../src/shared/edge/nginx/driver.js';
import {
  addDestination,
  createApp,
  createLb,
  destinationPath,
  destinations,
  DESTINATION_KEYS,
  ENV,
  external,
  lbPath,
  LIMITS,
  type Destination,
} from './support.js';

for (const kind of DB_KINDS) {
  describe(`updating a load balancer destination [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, rateLimits: LIMITS, env: ENV });

    it('changes the weight in place: 200 with the destination, same id, enabled state kept, listed so; service-mutation tier', async () => {
      const lb = await createLb(s);
      const app = await createApp(s);
      const d = await addDestination(s, lb.id, { service_type: 'APP', service_id: app.id, weight: 5 });
      const other = await external(s, lb.id);
      expectStatus(await s.post(`${destinationPath(lb.id, d.id)}/toggle`), 200);
      await new Promise((r) => setTimeout(r, 5));

      const r = await s.patch(destinationPath(lb.id, d.id), { weight: 250 });
      assert.equal(r.headers.get('x-ratelimit-limit'), String(LIMITS.service_mutation));
      const u = expectStatus(r, 200) as Destination;
      assert.deepEqual(Object.keys(u).sort(), DESTINATION_KEYS);
      assert.deepEqual({ ...u, updated_at: '' }, { ...d, is_enabled: false, weight: 250, updated_at: '' });
      assert.ok(u.updated_at > d.updated_at, `${u.updated_at} after ${d.updated_at}`);
      assert.deepEqual(await destinations(s, lb.id), [u, other]);

      // The bounds of creation: 0 and 10000 are weights.
      for (const weight of [0, 10000]) assert.equal((expectStatus(await s.patch(destinationPath(lb.id, d.id), { weight }), 200) as Destination).weight, weight);
    });

    it('an empty body changes nothing and answers the destination as it is', async () => {
      const lb = await createLb(s);
      const d = await external(s, lb.id, { weight: 7 });
      assert.deepEqual(expectStatus(await s.patch(destinationPath(lb.id, d.id), {}), 200), d);
      assert.deepEqual(await destinations(s, lb.id), [d]);
    });

    it('400 for a weight out of bounds, a field that is not a number, the target or an unknown field; nothing changes', async () => {
      const lb = await createLb(s);
      const d = await external(s, lb.id, { weight: 30 });
      for (const body of [
        { weight: -1 },
        { weight: 10001 },
        { weight: 1.5 },
        { weight: '40' },
        { weight: null },
        { url: 'https://elsewhere.example.com/' },
        { service_type: 'APP' },
        { service_id: MISSING },
        { is_enabled: false },
        { latitude: 91, longitude: 0 },
        { latitude: 0, longitude: -180.5 },
      ])
        expectError(await s.patch(destinationPath(lb.id, d.id), body), 400);
      expectError(await s.patch(destinationPath(lb.id, d.id), undefined), 400);
      assert.deepEqual(await destinations(s, lb.id), [d]);
    });

    it('location: set, moved and removed together on a DEFAULT load balancer; one without the other is 400', async () => {
      const lb = await createLb(s);
      const d = await external(s, lb.id);
      expectError(await s.patch(destinationPath(lb.id, d.id), { latitude: 48.85 }), 400, /latitude and longitude must be given together/);
      expectError(await s.patch(destinationPath(lb.id, d.id), { latitude: 48.85, longitude: null }), 400, /together/);
      const set = expectStatus(await s.patch(destinationPath(lb.id, d.id), { latitude: 48.85, longitude: 2.35 }), 200) as Destination;
      assert.deepEqual([set.latitude, set.longitude, set.weight], [48.85, 2.35, 100]);
      const moved = expectStatus(await s.patch(destinationPath(lb.id, d.id), { latitude: -33.86, longitude: 151.21, weight: 3 }), 200) as Destination;
      assert.deepEqual([moved.latitude, moved.longitude, moved.weight], [-33.86, 151.21, 3]);
      const cleared = expectStatus(await s.patch(destinationPath(lb.id, d.id), { latitude: null, longitude: null }), 200) as Destination;
      assert.deepEqual([cleared.latitude, cleared.longitude, cleared.weight], [null, null, 3]);
      assert.deepEqual(await destinations(s, lb.id), [cleared]);
    });

    it('GEO: a destination keeps a location (removing it is 400); locating the last unlocated one lets a DEFAULT load balancer become GEO', async () => {
      const geo = await createLb(s, { type: 'GEO' });
      const g = await external(s, geo.id, { latitude: 1, longitude: 2 });
      expectError(await s.patch(destinationPath(geo.id, g.id), { latitude: null, longitude: null }), 400, /GEO load balancer needs latitude and longitude/);
      const movedGeo = expectStatus(await s.patch(destinationPath(geo.id, g.id), { latitude: 52.52, longitude: 13.4 }), 200) as Destination;
      assert.deepEqual([movedGeo.latitude, movedGeo.longitude], [52.52, 13.4]);

      const lb = await createLb(s);
      const a = await external(s, lb.id, { latitude: 10, longitude: 20 });
      const b = await external(s, lb.id);
      expectError(await s.patch(lbPath(lb.id), { type: 'GEO' }), 400, /1 destination\(s\) of this load balancer have no latitude and longitude/);
      expectStatus(await s.patch(destinationPath(lb.id, b.id), { latitude: 40.71, longitude: -74.0 }), 200);
      assert.equal(expectStatus(await s.patch(lbPath(lb.id), { type: 'GEO' }), 200).type, 'GEO');
      assert.deepEqual(
        (await destinations(s, lb.id)).map((x) => [x.id, x.latitude, x.longitude]),
        [
          [a.id, 10, 20],
          [b.id, 40.71, -74],
        ],
      );
    });

    it("404 for an unknown destination, another load balancer's, another company's; 403 without LOAD_BALANCER:UPDATE", async () => {
      const lb = await createLb(s);
      const second = await createLb(s);
      const d = await external(s, lb.id, { weight: 9 });
      expectError(await s.patch(destinationPath(lb.id, MISSING), { weight: 1 }), 404, 'Destination not found');
      expectError(await s.patch(destinationPath(second.id, d.id), { weight: 1 }), 404, 'Destination not found');
      expectError(await s.patch(destinationPath(MISSING, d.id), { weight: 1 }), 404, 'Load balancer not found');

      const other = await s.newCompany();
      const theirLb = await createLb(s, {}, other.token);
      const theirDest = await addDestination(s, theirLb.id, { service_type: 'EXTERNAL', url: 'https://theirs.example.com/' }, other.token);
      expectError(await s.patch(destinationPath(theirLb.id, theirDest.id), { weight: 1 }), 404, 'Load balancer not found');
      expectError(await s.patch(destinationPath(lb.id, theirDest.id), { weight: 1 }), 404, 'Destination not found');

      const reader = await s.newKey({ capabilities: [{ permission: 'LOAD_BALANCER:READ' }] });
      expectError(await s.patch(destinationPath(lb.id, d.id), { weight: 1 }, { token: reader.token }), 403);
      const scoped = await s.newKey({ capabilities: [{ permission: 'LOAD_BALANCER:UPDATE', id_resource: second.id }] });
      expectError(await s.patch(destinationPath(lb.id, d.id), { weight: 1 }, { token: scoped.token }), 404);
      assert.deepEqual(await destinations(s, lb.id), [d]);
    });

    it('the operation is in the served document, marked x-decided, with the create bounds', async () => {
      const doc = expectStatus(await s.get('/openapi.json'), 200);
      const resolve = (x: any): any => (x.$ref ? resolve(doc.components.schemas[x.$ref.split('/').pop()]) : x);
      const op = doc.paths['/load-balancers/{id}/destinations/{destination_id}']?.patch;
      assert.ok(
        op,
        Object.keys(doc.paths)
          .filter((p: string) => p.includes('load-balancers'))
          .join(', '),
      );
      assert.equal(op['x-decided'], true);
      assert.equal(op.operationId, 'updateLoadBalancerDestinationV3');
      const body = resolve(op.requestBody.content['application/json'].schema);
      assert.deepEqual([body.properties.weight.minimum, body.properties.weight.maximum], [0, 10000]);
      assert.equal(body.additionalProperties, false);
    });
  });
}

/** A server answering its name to every request. */
async function named(name: string): Promise<{ server: Server; port: number }> {
  const server = createServer((_req, res) => res.end(`${name} `));
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  return { server, port: (server.address() as AddressInfo).port };
}

describe('a destination weight changed on the nginx edge (sqlite)', { skip: nginxSkip() }, () => {
  const s = useServer({ db: 'sqlite', env: { ...LOCAL_ENV, SLIPWAY_EDGE: 'nginx' }, rateLimits: GENEROUS });
  const backends: Server[] = [];
  let a: { port: number };
  let b: { port: number };
  before(async () => {
    for (const name of ['A', 'B']) {
      const x = await named(name);
      backends.push(x.server);
      if (name === 'A') a = x;
      else b = x;
    }
  });
  after(() => Promise.all(backends.map((x) => new Promise((ok) => x.close(ok)))));

  it("the edge's table and nginx's traffic follow the new weights", async () => {
    const edge = s.app.runtimes.edge as NginxEdge;
    assert.equal(edge.driver, 'nginx');
    const lb = await createLb(s);
    const host = `${lb.name}.localhost`;
    const da = await addDestination(s, lb.id, { service_type: 'EXTERNAL', url: `http://127.0.0.1:${a.port}/`, weight: 1 });
    const db = await addDestination(s, lb.id, { service_type: 'EXTERNAL', url: `http://127.0.0.1:${b.port}/`, weight: 0 });
    const weights = async () => {
      const entry = (await edge.table()).hosts.find((h) => h.hostname === host);
      return entry?.target.type === 'balance' ? entry.target.destinations.map((x) => x.weight) : null;
    };
    const answers = async (n: number) => {
      const out: string[] = [];
      for (let i = 0; i < n; i++) {
        const r = await edgeGet(edge.port, host);
        out.push(r.status === 200 ? r.body.trim() : String(r.status));
      }
      return out.join('');
    };
    assert.deepEqual(await weights(), [1, 0]);
    await waitFor('nginx sends everything to A', async () => (await answers(6)) === 'AAAAAA', 10_000, 100);

    expectStatus(await s.patch(destinationPath(lb.id, da.id), { weight: 0 }), 200);
    expectStatus(await s.patch(destinationPath(lb.id, db.id), { weight: 5 }), 200);
    assert.deepEqual(await weights(), [0, 5]);
    await waitFor('nginx sends everything to B', async () => (await answers(6)) === 'BBBBBB', 10_000, 100);
    // Stays so (not a moment of an apply in progress).
    assert.equal(await answers(20), 'B'.repeat(20));
  });
});
