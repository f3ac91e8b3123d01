// Domains of applications, against real applications: the system domain, custom domains and
// their DNS records, hostname rules (IDN, wildcards, invalid names), installation-wide
// uniqueness, verification progression (reads, fault rules), primary rules, renaming and
// toggling the system domain, limits, custom certificates, rate tiers, access and deletion.
import { describe, it, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { DB_KINDS, skipUnless, useServer } from '../helpers/server.js';
import { expectError, expectStatus, MISSING, waitFor } from '../helpers/util.js';
import {
  addDomain,
  addFault,
  certificate,
  createApp,
  DEFAULT_CLUSTER,
  DOMAIN_KEYS,
  domainPath,
  domainsPath,
  host,
  LIMITS,
  listDomains,
  setProgression,
  systemDomain,
  type Domain,
} from './support.js';

const MAX_PER_SERVICE = 4;

for (const kind of DB_KINDS) {
  describe(`domains of applications [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({
      db: kind,
      rateLimits: LIMITS,
      env: {
        SLIPWAY_SIM_PROGRESSION: 'domain_verification=immediate,app_delete=immediate,deployment=immediate',
        SLIPWAY_DOMAINS_MAX_PER_SERVICE: String(MAX_PER_SERVICE),
      },
    });
    // Tests that switch the verification progression get the suite's default back.
    afterEach(async () => setProgression(s, { mode: 'immediate' }));

    const refresh = (appId: string, id: string) => s.post(`${domainPath(appId, id)}/refresh-status`);
    const get = async (appId: string, id: string): Promise<Domain> => expectStatus(await s.get(domainPath(appId, id)), 200);

    it('a new application has one system domain: its generated domain, active, enabled and primary', async () => {
      const a = await createApp(s);
      const r = await s.get(domainsPath(a.id));
      const page = expectStatus(r, 200);
      assert.equal(r.headers.get('x-ratelimit-limit'), String(LIMITS.read));
      assert.equal(page.total, 1);
      assert.deepEqual([page.offset, page.limit], [0, 25]);
      const d = page.data[0] as Domain;
      assert.deepEqual(Object.keys(d).sort(), DOMAIN_KEYS);
      const row = await s.app.database.db.selectFrom('applications').select('temp_domain').where('id', '=', a.id).executeTakeFirstOrThrow();
      assert.equal(d.name, row.temp_domain, 'the system domain is the generated domain of the application');
      assert.match(d.name, new RegExp(`^${a.name}-[0-9a-f]{6}\\.${DEFAULT_CLUSTER.name}\\.slipway\\.app$`));
      assert.deepEqual(
        {
          type: d.type,
          status: d.status,
          is_enabled: d.is_enabled,
          is_primary: d.is_primary,
          is_wildcard: d.is_wildcard,
          dns_records: d.dns_records,
          errors: d.errors,
        },
        { type: 'SYSTEM', status: 'ACTIVE', is_enabled: true, is_primary: true, is_wildcard: false, dns_records: null, errors: null },
      );
      assert.deepEqual(await get(a.id, d.id), d);
    });

    it('adds a custom domain: normalized, unverified, with the TXT and CNAME records to create; counted in the service-creation tier', async () => {
      await setProgression(s, { mode: 'reads', reads: 1 });
      try {
        const a = await createApp(s);
        const name = host('shop');
        const r = await s.post(domainsPath(a.id), { domain_name: `  ${name.toUpperCase()}. ` });
        const d = expectStatus(r, 201) as Domain;
        assert.equal(r.headers.get('x-ratelimit-limit'), String(LIMITS.service_creation));
        assert.deepEqual(Object.keys(d).sort(), DOMAIN_KEYS);
        assert.equal(d.name, name);
        assert.deepEqual(
          { type: d.type, status: d.status, is_enabled: d.is_enabled, is_primary: d.is_primary, is_wildcard: d.is_wildcard, errors: d.errors },
          { type: 'CUSTOM', status: 'VERIFICATION', is_enabled: true, is_primary: false, is_wildcard: false, errors: null },
        );
        assert.equal(d.dns_records!.length, 2);
        const [txt, cname] = d.dns_records!;
        assert.equal(txt!.type, 'TXT');
        assert.equal(txt!.name, `_slipway-challenge.${name}`);
        assert.match(txt!.value, /^slipway-verification=[0-9a-f]{32}$/);
        assert.deepEqual(cname, { type: 'CNAME', name, value: 'cname.slipway.app' });
        assert.deepEqual(await get(a.id, d.id), d);
        const all = await listDomains(s, a.id);
        assert.deepEqual(
          all.map((x) => x.type),
          ['SYSTEM', 'CUSTOM'],
        );
        assert.equal(all.filter((x) => x.is_primary).length, 1);

        // An apex name is pointed with an A record; each domain has its own ownership token.
        const apex = await addDomain(s, a.id, { domain_name: `apex-${process.pid}-${Date.now()}.org` });
        assert.deepEqual(apex.dns_records![1], { type: 'A', name: apex.name, value: '192.0.2.10' });
        assert.notEqual(apex.dns_records![0]!.value, txt!.value);
      } finally {
        await setProgression(s, { mode: 'immediate' });
      }
    });

    it('accepts internationalized names as punycode and wildcards only with is_wildcard', async () => {
      const a = await createApp(s);
      // Each suite has its own database, so fixed names are free.
      const idn = await addDomain(s, a.id, { domain_name: 'Bücher.Example' });
      assert.equal(idn.name, 'xn--bcher-kva.example');
      assert.equal(idn.dns_records![0]!.name, '_slipway-challenge.xn--bcher-kva.example');
      const jp = await addDomain(s, a.id, { domain_name: '例え.テスト' });
      assert.equal(jp.name, 'xn--r8jz45g.xn--zckzah');
      expectError(await s.post(domainsPath(a.id), { domain_name: 'xn--bcher-kva.example' }), 400, /already in use/, { data: 'absent' });

      const w1 = host('wild');
      const wild = await addDomain(s, a.id, { domain_name: `*.${w1}`, is_wildcard: true });
      assert.equal(wild.name, `*.${w1}`);
      assert.equal(wild.is_wildcard, true);
      assert.equal(wild.dns_records![0]!.name, `_slipway-challenge.${w1}`, 'ownership is proven on the base name');
      assert.deepEqual(wild.dns_records![1], { type: 'CNAME', name: `*.${w1}`, value: 'cname.slipway.app' });
      const w2 = host('wild');
      const wild2 = await addDomain(s, a.id, { domain_name: w2, is_wildcard: true });
      assert.equal(wild2.name, `*.${w2}`);
      expectError(await s.post(domainsPath(a.id), { domain_name: `*.${host('w')}` }), 400, /is_wildcard/);
      expectError(await s.post(domainsPath(a.id), { domain_name: `*.${host('w')}`, is_wildcard: false }), 400, /is_wildcard/);
    });

    it('refuses invalid hostnames with 400 and adds nothing', async () => {
      const a = await createApp(s);
      const before = await listDomains(s, a.id);
      const cases: [string, RegExp, boolean?][] = [
        ['127.0.0.1', /IP addresses/],
        ['127.1', /IP addresses/],
        ['１２７.０.０.１', /IP addresses/],
        ['[::1]', /IP addresses/],
        ['2001:db8::1', /IP addresses/],
        ['https://shop.example.com', /bare hostname/],
        ['shop.example.com:8080', /bare hostname/],
        ['shop.example.com/path', /bare hostname/],
        ['user@shop.example.com', /bare hostname/],
        ['localhost', /two labels/],
        ['a..example.com', /empty label|not allowed/],
        ['-shop.example.com', /letters, digits and inner hyphens/],
        ['shop_1.example.com', /letters, digits and inner hyphens|not allowed/],
        ['sh op.example.com', /bare hostname/],
        ['a.*.example.com', /wildcard/, true],
        ['**.example.com', /wildcard|\*/, true],
        [`${'a'.repeat(64)}.example.com`, /63 characters/],
        [`${Array.from({ length: 4 }, () => 'b'.repeat(60)).join('.')}.abcdefghij`, /253 characters/],
        ['shop.example.123', /numeric/],
        ['mine.slipway.app', /reserved/],
        ['x.us-central1.slipway.app', /reserved/],
        ['site.slipway.page', /reserved/],
        ['.', /empty/],
      ];
      for (const [domain_name, message, is_wildcard] of cases) {
        const msg = expectError(await s.post(domainsPath(a.id), { domain_name, ...(is_wildcard ? { is_wildcard } : {}) }), 400, message);
        assert.ok(msg.includes('not a valid domain name'), `${domain_name}: ${msg}`);
      }
      // Longer than any column holds: refused by the schema.
      expectError(
        await s.post(domainsPath(a.id), { domain_name: `${Array.from({ length: 5 }, () => 'b'.repeat(60)).join('.')}.com` }),
        400,
        /does not match the schema/,
      );
      expectError(await s.post(domainsPath(a.id), { domain_name: '' }), 400);
      expectError(await s.post(domainsPath(a.id), { domain_name: host(), extra: 1 }), 400);
      expectError(await s.post(domainsPath(a.id), {}), 400);
      assert.deepEqual(await listDomains(s, a.id), before, 'nothing was added');
    });

    it('a hostname is held by one service in the installation; another company gets 400 without learning the owner', async () => {
      const a = await createApp(s);
      const b = await createApp(s);
      const name = host('taken');
      await addDomain(s, a.id, { domain_name: name });
      // The same company: told it is its own.
      expectError(await s.post(domainsPath(b.id), { domain_name: name }), 400, /already in use by a service of your company/);
      expectError(await s.post(domainsPath(a.id), { domain_name: name.toUpperCase() }), 400, /already in use/);
      // Another company: 400 that names neither the company nor the service.
      const other = await s.newCompany();
      const c = await createApp(s, other.token);
      for (const attempt of [name, `${name}.`, name.toUpperCase()]) {
        const msg = expectError(
          await s.post(domainsPath(c.id), { domain_name: attempt }, { token: other.token }),
          400,
          /is not available: it is already in use$/,
        );
        for (const secret of [a.id, a.name, s.companyId, 'your company']) assert.ok(!msg.includes(secret), `the message reveals ${secret}: ${msg}`);
      }
      // A system domain is held the same way.
      const sys = await systemDomain(s, a.id);
      expectError(await s.post(domainsPath(c.id), { domain_name: sys.name }, { token: other.token }), 400, /reserved/);
      assert.equal((await listDomains(s, c.id, '/applications', other.token)).length, 1);

      // Once released, the hostname can be claimed by the other company.
      const held = (await listDomains(s, a.id)).find((d) => d.name === name)!;
      expectStatus(await s.delete(domainPath(a.id, held.id)), 200);
      const mine = expectStatus(await s.post(domainsPath(c.id), { domain_name: name }, { token: other.token }), 201);
      assert.equal(mine.name, name);
    });

    it('refresh-status advances verification after N refreshes in reads progression; reads alone do not', async () => {
      await setProgression(s, { mode: 'reads', reads: 2 });
      try {
        const a = await createApp(s);
        const d = await addDomain(s, a.id, { domain_name: host() });
        for (let i = 0; i < 3; i++) assert.equal((await get(a.id, d.id)).status, 'VERIFICATION', 'a GET is not a refresh');
        const r1 = await refresh(a.id, d.id);
        assert.match(expectStatus(r1, 200).message, /TXT record/);
        assert.equal(r1.headers.get('x-ratelimit-limit'), String(LIMITS.service_creation));
        assert.equal((await get(a.id, d.id)).status, 'VERIFICATION');
        assert.match(expectStatus(await refresh(a.id, d.id), 200).message, /Ownership of .* is verified/);
        assert.equal((await get(a.id, d.id)).status, 'POINTING');
        expectStatus(await refresh(a.id, d.id), 200);
        assert.equal((await get(a.id, d.id)).status, 'POINTING');
        assert.match(expectStatus(await refresh(a.id, d.id), 200).message, /is active; its certificate is issued/);
        const active = await get(a.id, d.id);
        assert.equal(active.status, 'ACTIVE');
        assert.equal(active.errors, null);
        assert.equal(active.is_primary, false, 'verification does not change the primary domain');
        assert.match(expectStatus(await refresh(a.id, d.id), 200).message, /is active/);
        assert.equal((await get(a.id, d.id)).status, 'ACTIVE');
      } finally {
        await setProgression(s, { mode: 'immediate' });
      }
    });

    it('a fault rule times verification out with the reason in errors; a later refresh starts it again', async () => {
      await setProgression(s, { mode: 'reads', reads: 1 });
      try {
        const a = await createApp(s);
        const d = await addDomain(s, a.id, { domain_name: host() });
        await addFault(s, { operation: 'domain_verification', target_id: d.id, phase: 'pointing', remaining: 1, message: 'Simulated: CNAME points elsewhere' });
        expectStatus(await refresh(a.id, d.id), 200);
        assert.equal((await get(a.id, d.id)).status, 'POINTING');
        assert.match(expectStatus(await refresh(a.id, d.id), 200).message, /timed out: Simulated: CNAME points elsewhere; refresh/);
        const out = await get(a.id, d.id);
        assert.equal(out.status, 'TIMED_OUT');
        assert.deepEqual(out.errors, [{ type: 'pointing', message: 'Simulated: CNAME points elsewhere' }]);
        expectError(await s.post(`${domainPath(a.id, d.id)}/set-primary`), 400, /TIMED_OUT/);
        // The refresh after a time-out restarts the checks (and counts as their first refresh).
        expectStatus(await refresh(a.id, d.id), 200);
        const again = await get(a.id, d.id);
        assert.equal(again.status, 'POINTING');
        assert.equal(again.errors, null);
        expectStatus(await refresh(a.id, d.id), 200);
        assert.equal((await get(a.id, d.id)).status, 'ACTIVE', 'the rule was used up');
      } finally {
        await setProgression(s, { mode: 'immediate' });
      }
    });

    it('in immediate progression a read shows the domain verified; duration progression shows the clock', async () => {
      const a = await createApp(s);
      const d = await addDomain(s, a.id, { domain_name: host() });
      assert.equal(d.status, 'VERIFICATION', 'the add answers the starting state');
      assert.equal((await get(a.id, d.id)).status, 'ACTIVE');

      await setProgression(s, { mode: 'duration', ms: 400 });
      try {
        const e = await addDomain(s, a.id, { domain_name: host() });
        const seen = new Set<string>();
        await waitFor('the domain to become active', async () => {
          const st = (await listDomains(s, a.id)).find((x) => x.id === e.id)!.status;
          seen.add(st);
          return st === 'ACTIVE';
        });
        assert.ok(!seen.has('TIMED_OUT'));
      } finally {
        await setProgression(s, { mode: 'immediate' });
      }
    });

    it('primary rules: only an active custom domain or the enabled system domain; one primary; deleting it promotes another or the system domain', async () => {
      const a = await createApp(s);
      const sys = await systemDomain(s, a.id);
      // Reads progression: only refreshes verify, so the pending domain stays pending.
      await setProgression(s, { mode: 'reads', reads: 1 });
      const activate = async (d: Domain) => {
        for (let i = 0; i < 2; i++) expectStatus(await refresh(a.id, d.id), 200);
        assert.equal((await get(a.id, d.id)).status, 'ACTIVE');
      };
      const pending = await addDomain(s, a.id, { domain_name: host('pending') });
      expectError(await s.post(`${domainPath(a.id, pending.id)}/set-primary`), 400, /Only an active domain can be primary; .* is VERIFICATION/);
      const first = await addDomain(s, a.id, { domain_name: host('first') });
      const second = await addDomain(s, a.id, { domain_name: host('second') });
      await activate(first);
      await activate(second);
      const primaries = async () => (await listDomains(s, a.id)).filter((d) => d.is_primary).map((d) => d.id);

      const r = await s.post(`${domainPath(a.id, second.id)}/set-primary`);
      assert.match(expectStatus(r, 200).message, /is now the primary domain/);
      assert.equal(r.headers.get('x-ratelimit-limit'), String(LIMITS.service_mutation));
      assert.deepEqual(await primaries(), [second.id]);
      assert.match(expectStatus(await s.post(`${domainPath(a.id, second.id)}/set-primary`), 200).message, /already the primary/);
      expectStatus(await s.post(`${domainPath(a.id, first.id)}/set-primary`), 200);
      assert.deepEqual(await primaries(), [first.id]);
      expectStatus(await s.post(`${domainPath(a.id, second.id)}/set-primary`), 200);

      // Deleting the primary promotes the oldest other active custom domain (not the pending one).
      expectStatus(await s.delete(domainPath(a.id, second.id)), 200);
      assert.deepEqual(await primaries(), [first.id]);
      expectError(await s.get(domainPath(a.id, second.id)), 404);

      // The system domain can be switched off only while it is not primary; a disabled one cannot become primary.
      expectStatus(await s.post(`${domainPath(a.id, sys.id)}/toggle`), 200);
      assert.equal((await get(a.id, sys.id)).is_enabled, false);
      expectError(await s.post(`${domainPath(a.id, sys.id)}/set-primary`), 400, /disabled/);

      // Deleting the last active custom primary falls back to the system domain, switched back on.
      expectStatus(await s.delete(domainPath(a.id, pending.id)), 200);
      expectStatus(await s.delete(domainPath(a.id, first.id)), 200);
      const after = await listDomains(s, a.id);
      assert.deepEqual(
        after.map((d) => d.id),
        [sys.id],
      );
      assert.equal(after[0]!.is_primary, true);
      assert.equal(after[0]!.is_enabled, true);
      expectError(await s.post(`${domainPath(a.id, sys.id)}/toggle`), 400, /primary domain; make an active custom domain primary/);
    });

    it('the system domain cannot be deleted, only toggled; custom domains cannot be toggled', async () => {
      const a = await createApp(s);
      const sys = await systemDomain(s, a.id);
      const custom = await addDomain(s, a.id, { domain_name: host() });
      const r = await s.delete(domainPath(a.id, sys.id));
      expectError(r, 400, /system domain cannot be deleted; use the toggle/);
      assert.equal(r.headers.get('x-ratelimit-limit'), String(LIMITS.service_creation));
      assert.deepEqual(await get(a.id, sys.id), sys);
      expectError(await s.post(`${domainPath(a.id, custom.id)}/toggle`), 400, /Only the system domain can be toggled/);

      expectStatus(await s.post(`${domainPath(a.id, custom.id)}/set-primary`), 200);
      const off = await s.post(`${domainPath(a.id, sys.id)}/toggle`);
      assert.deepEqual(expectStatus(off, 200), { message: 'System domain disabled' });
      assert.equal(off.headers.get('x-ratelimit-limit'), String(LIMITS.service_mutation));
      assert.equal((await get(a.id, sys.id)).is_enabled, false);
      assert.deepEqual(expectStatus(await s.post(`${domainPath(a.id, sys.id)}/toggle`), 200), { message: 'System domain enabled' });
      assert.equal((await get(a.id, sys.id)).is_enabled, true);
      assert.match(expectStatus(await s.post(`${domainPath(a.id, sys.id)}/refresh-status`), 200).message, /needs no verification/);
    });

    it('PATCH renames the system domain within its zone; custom domains and taken or invalid names are refused', async () => {
      const a = await createApp(s);
      const b = await createApp(s);
      const sys = await systemDomain(s, a.id);
      const label = `renamed-${process.pid}-${Date.now()}`;
      const r = await s.patch(domainPath(a.id, sys.id), { name: label.toUpperCase() });
      const renamed = expectStatus(r, 200) as Domain;
      assert.equal(r.headers.get('x-ratelimit-limit'), String(LIMITS.service_creation));
      assert.equal(renamed.name, `${label}.${DEFAULT_CLUSTER.name}.slipway.app`);
      assert.equal(renamed.id, sys.id);
      assert.equal(renamed.type, 'SYSTEM');
      assert.equal(renamed.is_primary, true);
      assert.deepEqual(await get(a.id, sys.id), renamed);
      // The old name is free again; the new one is held.
      const bSys = await systemDomain(s, b.id);
      expectError(await s.patch(domainPath(b.id, bSys.id), { name: label }), 400, /already in use/);
      expectStatus(await s.patch(domainPath(b.id, bSys.id), { name: sys.name.split('.')[0] }), 200);

      const custom = await addDomain(s, a.id, { domain_name: host() });
      expectError(await s.patch(domainPath(a.id, custom.id), { name: 'other' }), 400, /Only the system domain can be renamed/);
      for (const name of ['bad_label', 'a.b', '-x', 'x'.repeat(64), ' ']) expectError(await s.patch(domainPath(a.id, sys.id), { name }), 400);
      expectError(await s.patch(domainPath(a.id, sys.id), {}), 400);
      assert.equal((await get(a.id, sys.id)).name, renamed.name);
    });

    it(`a service holds at most ${MAX_PER_SERVICE} custom domains (the system domain does not count)`, async () => {
      const a = await createApp(s);
      const added: Domain[] = [];
      for (let i = 0; i < MAX_PER_SERVICE; i++) added.push(await addDomain(s, a.id, { domain_name: host('many') }));
      expectError(await s.post(domainsPath(a.id), { domain_name: host('many') }), 400, new RegExp(`at most ${MAX_PER_SERVICE} custom domains`));
      assert.equal((await listDomains(s, a.id)).length, MAX_PER_SERVICE + 1);
      expectStatus(await s.delete(domainPath(a.id, added[0]!.id)), 200);
      await addDomain(s, a.id, { domain_name: host('many') });
    });

    it('pages through the domains in creation order', async () => {
      const a = await createApp(s);
      for (let i = 0; i < 3; i++) await addDomain(s, a.id, { domain_name: host('page') });
      const all = await listDomains(s, a.id);
      const p = expectStatus(await s.get(`${domainsPath(a.id)}?limit=2&offset=1`), 200);
      assert.equal(p.total, 4);
      assert.deepEqual(
        p.data.map((d: Domain) => d.id),
        all.slice(1, 3).map((d) => d.id),
      );
      expectError(await s.get(`${domainsPath(a.id)}?limit=0`), 400);
    });

    it('custom certificates: checked against the hostname and the key, the key stored encrypted', async () => {
      const a = await createApp(s);
      const name = host('secure');
      const good = certificate([name]);
      const d = await addDomain(s, a.id, { domain_name: name, custom_ssl_cert: good.cert, custom_ssl_key: good.key });
      assert.equal(d.name, name);
      const row = await s.app.database.db
        .selectFrom('domains')
        .select(['custom_key_enc', 'custom_cert', 'certificate'])
        .where('id', '=', d.id)
        .executeTakeFirstOrThrow();
      assert.ok(row.custom_key_enc && !row.custom_key_enc.includes('PRIVATE KEY'), 'the key is encrypted at rest');
      assert.equal(s.app.secrets.decrypt(row.custom_key_enc!), good.key);
      assert.equal(row.certificate, 'custom');
      assert.match(expectStatus(await s.post(`${domainPath(a.id, d.id)}/refresh-status`), 200).message, /uses your certificate/);

      const wildName = host('wildcert');
      const wildCert = certificate([`*.${wildName}`]);
      await addDomain(s, a.id, { domain_name: `*.${wildName}`, is_wildcard: true, custom_ssl_cert: wildCert.cert, custom_ssl_key: wildCert.key });

      const target = host('secure');
      const fit = certificate([target]);
      const other = certificate([host('other')]);
      const expired = certificate([target], { expired: true });
      const cases: [Record<string, string>, RegExp][] = [
        [{ custom_ssl_cert: fit.cert }, /must be given together/],
        [{ custom_ssl_key: fit.key }, /must be given together/],
        [{ custom_ssl_cert: 'not a certificate', custom_ssl_key: fit.key }, /not a PEM certificate/],
        [{ custom_ssl_cert: fit.cert, custom_ssl_key: 'not a key' }, /not a PEM private key/],
        [{ custom_ssl_cert: fit.cert, custom_ssl_key: other.key }, /does not belong/],
        [{ custom_ssl_cert: other.cert, custom_ssl_key: other.key }, /does not cover/],
        [{ custom_ssl_cert: expired.cert, custom_ssl_key: expired.key }, /expired/],
      ];
      for (const [extra, message] of cases) expectError(await s.post(domainsPath(a.id), { domain_name: target, ...extra }), 400, message);
      // The same name with a fitting pair is accepted: nothing above held it.
      await addDomain(s, a.id, { domain_name: target, custom_ssl_cert: fit.cert, custom_ssl_key: fit.key });
      assert.equal((await listDomains(s, a.id)).length, 4);
    });

    it('unknown, foreign and cross-service ids are 404; scoped keys see only their application; a viewer cannot change domains', async () => {
      const a = await createApp(s);
      const b = await createApp(s);
      const d = await addDomain(s, a.id, { domain_name: host() });
      expectError(await s.get(domainsPath(MISSING)), 404, 'Application not found');
      expectError(await s.post(domainsPath(MISSING), { domain_name: host() }), 404);
      expectError(await s.get(domainPath(a.id, MISSING)), 404, 'Domain not found');
      expectError(await s.get(domainPath(b.id, d.id)), 404, 'Domain not found');
      for (const op of ['refresh-status', 'set-primary', 'toggle']) expectError(await s.post(`${domainPath(b.id, d.id)}/${op}`), 404);
      expectError(await s.delete(domainPath(b.id, d.id)), 404);
      expectError(await s.patch(domainPath(b.id, d.id), { name: 'x' }), 404);

      const other = await s.newCompany();
      expectError(await s.get(domainsPath(a.id), { token: other.token }), 404);
      expectError(await s.get(domainPath(a.id, d.id), { token: other.token }), 404);
      expectError(await s.delete(domainPath(a.id, d.id), { token: other.token }), 404);
      expectError(await s.post(domainsPath(a.id), { domain_name: host() }, { token: other.token }), 404);

      const scoped = await s.newKey({
        capabilities: [
          { permission: 'APP:READ', id_resource: a.id },
          { permission: 'APP:UPDATE', id_resource: a.id },
        ],
      });
      assert.equal((await listDomains(s, a.id, '/applications', scoped.token)).length, 2);
      expectError(await s.get(domainsPath(b.id), { token: scoped.token }), 404);
      expectError(await s.post(domainsPath(b.id), { domain_name: host() }, { token: scoped.token }), 404);
      expectStatus(await s.post(domainsPath(a.id), { domain_name: host() }, { token: scoped.token }), 201);

      const viewer = await s.newKey({ role: 'Company Viewer' });
      assert.equal((await listDomains(s, a.id, '/applications', viewer.token)).length, 3);
      expectError(await s.post(domainsPath(a.id), { domain_name: host() }, { token: viewer.token }), 403, /APP:UPDATE/);
      expectError(await s.delete(domainPath(a.id, d.id), { token: viewer.token }), 403, /APP:UPDATE/);
      expectError(await s.post(`${domainPath(a.id, d.id)}/set-primary`, undefined, { token: viewer.token }), 403, /APP:UPDATE/);
      assert.equal((await listDomains(s, a.id)).length, 3);
    });

    it('a clone gets its own system domain and none of the custom ones; deleting an application frees its hostnames', async () => {
      const a = await createApp(s);
      const name = host('gone');
      await addDomain(s, a.id, { domain_name: name });
      const c = expectStatus(await s.post(`/applications/${a.id}/clone`, { display_name: `Clone ${process.pid} ${Date.now()}` }), 201);
      const cloned = await listDomains(s, c.id);
      assert.equal(cloned.length, 1);
      assert.equal(cloned[0]!.type, 'SYSTEM');
      assert.notEqual(cloned[0]!.name, (await systemDomain(s, a.id)).name);

      expectStatus(await s.delete(`/applications/${a.id}`), 200);
      await waitFor('the application to be removed', async () => (await s.get(`/applications/${a.id}`)).status === 404);
      const rows = await s.app.database.db.selectFrom('domains').select('id').where('service_id', '=', a.id).execute();
      assert.deepEqual(rows, []);
      const other = await s.newCompany();
      const o = await createApp(s, other.token);
      expectStatus(await s.post(domainsPath(o.id), { domain_name: name }, { token: other.token }), 201);
    });
  });
}
