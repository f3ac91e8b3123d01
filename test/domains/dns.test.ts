// Real DNS checks (SLIPWAY_DOMAINS_DNS=real): refresh-status looks the records up through the
// configured resolver (a local test DNS server here): ownership TXT first, then the CNAME (or the
// A record of an apex name); missing records are reported in `errors`; a phase that does not pass
// within the configured time times out. Reads never look anything up.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DB_KINDS, skipUnless, useServer } from '../helpers/server.js';
import { expectStatus } from '../helpers/util.js';
import { DnsServer } from './dns-server.js';
import { addDomain, createApp, domainPath, LIMITS, type Domain } from './support.js';

for (const kind of DB_KINDS) {
  describe(`domains: real DNS checks [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const dns = new DnsServer();
    before(() => dns.start());
    const s = useServer(() => ({
      db: kind,
      rateLimits: LIMITS,
      env: {
        SLIPWAY_DOMAINS_DNS: 'real',
        SLIPWAY_DOMAINS_DNS_SERVERS: `127.0.0.1:${dns.port}`,
        SLIPWAY_DOMAINS_CNAME_TARGET: 'edge.slipway.test',
        SLIPWAY_DOMAINS_EDGE_IPV4: '198.51.100.7',
        SLIPWAY_DOMAINS_TIMEOUT_HOURS: '1',
        // Would verify at once if the simulation decided: it must not.
        SLIPWAY_SIM_PROGRESSION: 'domain_verification=immediate',
      },
    }));
    after(() => dns.stop());

    const refresh = async (appId: string, id: string) => expectStatus(await s.post(`${domainPath(appId, id)}/refresh-status`), 200).message as string;
    const get = async (appId: string, id: string): Promise<Domain> => expectStatus(await s.get(domainPath(appId, id)), 200);

    it('a subdomain passes once its TXT and then its CNAME exist; what is missing shows in errors', async () => {
      const a = await createApp(s);
      const d = await addDomain(s, a.id, { domain_name: 'www.shop.example' });
      const [txt, cname] = d.dns_records!;
      assert.deepEqual(cname, { type: 'CNAME', name: 'www.shop.example', value: 'edge.slipway.test' });
      assert.equal((await get(a.id, d.id)).status, 'VERIFICATION', 'a read looks nothing up');

      assert.match(await refresh(a.id, d.id), /waiting for the ownership TXT record/);
      let now = await get(a.id, d.id);
      assert.equal(now.status, 'VERIFICATION');
      assert.deepEqual(now.errors, [{ type: 'verification', message: `TXT record ${txt!.name} with value ${txt!.value} not found` }]);

      dns.set('TXT', txt!.name, 'some-other=record');
      await refresh(a.id, d.id);
      assert.equal((await get(a.id, d.id)).status, 'VERIFICATION', 'a TXT record with another value does not count');

      dns.set('TXT', txt!.name, 'some-other=record', txt!.value);
      assert.match(await refresh(a.id, d.id), /Ownership of www.shop.example is verified; waiting for its CNAME record/);
      now = await get(a.id, d.id);
      assert.equal(now.status, 'POINTING');
      assert.deepEqual(now.errors, [{ type: 'pointing', message: 'CNAME record www.shop.example pointing to edge.slipway.test not found' }]);

      dns.set('CNAME', 'www.shop.example', 'somewhere.else.example');
      await refresh(a.id, d.id);
      assert.equal((await get(a.id, d.id)).status, 'POINTING');
      dns.set('CNAME', 'www.shop.example', 'EDGE.slipway.test.');
      assert.match(await refresh(a.id, d.id), /is active/);
      now = await get(a.id, d.id);
      assert.equal(now.status, 'ACTIVE');
      assert.equal(now.errors, null);
    });

    it('an apex name passes with an A record to the edge address, in one refresh when everything is there', async () => {
      const a = await createApp(s);
      const d = await addDomain(s, a.id, { domain_name: 'apex-shop.example' });
      assert.deepEqual(d.dns_records![1], { type: 'A', name: 'apex-shop.example', value: '198.51.100.7' });
      dns.set('TXT', d.dns_records![0]!.name, d.dns_records![0]!.value);
      dns.set('A', 'apex-shop.example', '203.0.113.1', '198.51.100.7');
      assert.match(await refresh(a.id, d.id), /is active/);
      assert.equal((await get(a.id, d.id)).status, 'ACTIVE');
    });

    it('a wildcard is checked through a name it covers', async () => {
      const a = await createApp(s);
      const d = await addDomain(s, a.id, { domain_name: '*.wild.example', is_wildcard: true });
      dns.set('TXT', '_slipway-challenge.wild.example', d.dns_records![0]!.value);
      dns.set('CNAME', 'slipway-probe.wild.example', 'edge.slipway.test');
      assert.match(await refresh(a.id, d.id), /is active/);
    });

    it('a phase that does not pass within the configured time times out; a refresh starts again', async () => {
      const a = await createApp(s);
      const d = await addDomain(s, a.id, { domain_name: 'late.shop.example' });
      const longAgo = new Date(Date.now() - 2 * 3600_000).toISOString();
      await s.app.database.db.updateTable('domains').set({ phase_started_at: longAgo }).where('id', '=', d.id).execute();
      assert.match(await refresh(a.id, d.id), /timed out: TXT record .* not found within 1 hours; refresh/);
      const out = await get(a.id, d.id);
      assert.equal(out.status, 'TIMED_OUT');
      assert.equal(out.errors![0]!.type, 'verification');

      dns.set('TXT', d.dns_records![0]!.name, d.dns_records![0]!.value);
      await refresh(a.id, d.id);
      assert.equal((await get(a.id, d.id)).status, 'POINTING', 'the refresh restarted the checks with a fresh clock');
    });
  });
}
