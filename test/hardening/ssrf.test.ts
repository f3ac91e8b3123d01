// Webhook destinations in production mode: IPv6 forms that embed an IPv4 address are judged by that
// address (at creation and update through the API, and by the check the delivery agent applies to
// every resolved address at connect time).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DB_KINDS, skipUnless, type Response, useServer } from '../helpers/server.js';
import { expectError } from '../helpers/util.js';
import { refusedAddress } from '../../src/modules/webhooks/delivery.js';

/** Loopback, private and metadata addresses in the IPv6 forms that carry an IPv4 address. */
const EMBEDDED_PRIVATE = [
  '::7f00:1', // IPv4-compatible ::127.0.0.1
  '::127.0.0.1',
  '::a00:1', // ::10.0.0.1
  '::ffff:127.0.0.1', // IPv4-mapped
  '::ffff:a9fe:a9fe', // ::ffff:169.254.169.254
  '::ffff:0:127.0.0.1', // SIIT
  '64:ff9b::7f00:1', // NAT64 well-known prefix
  '64:ff9b::c0a8:101', // NAT64 of 192.168.1.1
  '64:ff9b:1::a00:1', // NAT64 local-use prefix
  '2002:7f00:1::1', // 6to4 of 127.0.0.1
  '2002:a00:1::', // 6to4 of 10.0.0.1
  '2001:0:7f00:1::1', // Teredo, server 127.0.0.1
  '2001:0:5db8:d822::80ff:fffe', // Teredo, client ~0x80fffffe = 127.0.0.1
];
const PUBLIC = ['93.184.216.34', '2606:4700:4700::1111', '64:ff9b::5db8:d822', '2002:5db8:d822::1', '2001:0:5db8:d822::a247:27dd'];

describe('SSRF classification (the connect-time check)', () => {
  it('refuses embedded private IPv4 in production, allows embedded public IPv4', () => {
    for (const a of EMBEDDED_PRIVATE) assert.ok(refusedAddress(a, true), a);
    for (const a of PUBLIC) assert.equal(refusedAddress(a, true), null, a);
  });
  it('refuses embedded link-local / metadata addresses even outside production', () => {
    for (const a of ['::ffff:169.254.169.254', '::a9fe:a9fe', '64:ff9b::a9fe:a9fe', '2002:a9fe:a9fe::', 'fd00:ec2::254'])
      assert.ok(refusedAddress(a, false), a);
    for (const a of ['::7f00:1', '64:ff9b::7f00:1', '2002:7f00:1::1']) assert.equal(refusedAddress(a, false), null, a);
  });
});

for (const kind of DB_KINDS) {
  describe(`SSRF webhook endpoints in production mode [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, flags: { production: true, 'trust-proxy': true } });
    // Production mode refuses plain HTTP; a trusted proxy says https. (The harness' contract checker
    // fetches the document without that header, so these calls go through fetch directly.)
    const call = async (method: string, path: string, body?: unknown): Promise<Response> => {
      const headers: Record<string, string> = { authorization: `Bearer ${s.token}`, 'x-forwarded-proto': 'https' };
      if (body !== undefined) headers['content-type'] = 'application/json';
      const res = await fetch(`${s.baseUrl}/v3${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
      const text = await res.text();
      return { status: res.status, headers: res.headers, text, body: text ? JSON.parse(text) : undefined };
    };

    it('refuses endpoints whose IPv6 literal embeds a private IPv4 address (create and update)', async () => {
      const ok = await call('POST', '/webhooks', { allowed_events: ['APP_CREATE'], endpoint: 'https://[2606:4700:4700::1111]/hook' });
      assert.equal(ok.status, 201, ok.text);
      for (const a of EMBEDDED_PRIVATE) {
        const r = await call('POST', '/webhooks', { allowed_events: ['APP_CREATE'], endpoint: `https://[${a}]/hook` });
        expectError(r, 400);
        assert.match(r.body.message, /endpoint not allowed/, a);
        const u = await call('PATCH', `/webhooks/${ok.body.id}`, { endpoint: `https://[${a}]:8443/hook` });
        expectError(u, 400);
      }
      for (const a of PUBLIC.slice(1)) {
        const r = await call('POST', '/webhooks', { allowed_events: ['APP_CREATE'], endpoint: `https://[${a}]/hook` });
        assert.equal(r.status, 201, `${a}: ${r.text}`);
      }
      const list = await call('GET', '/webhooks?limit=100');
      assert.equal(list.body.total, PUBLIC.length, 'only the public endpoints were stored');
    });
  });
}
