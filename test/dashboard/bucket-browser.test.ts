// The bucket page's object browser in headless Chromium against a real server with an edge
// (SLIPWAY_RUNTIME=local): a bucket created from the overview, a file uploaded into a nested folder
// through a URL the API presigned (with its progress shown), listed under its prefixes, downloaded
// with the same bytes and deleted; the CDN domain turned on and its cache purged from the page (the
// edge then answers the next read afresh). The page never signs anything itself: every object URL
// came from POST /object-storage/{id}/presign, and the bucket's secret appears in no request.
// axe-core finds no serious violation; a Company Viewer can download but sees no write control.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { request } from 'node:http';
import { GENEROUS, useServer } from '../helpers/server.js';
import { expectStatus, waitFor } from '../helpers/util.js';
import { LOCAL_ENV } from '../apps-real/support.js';
import { browserSkip, seriousA11yViolations, shots, signIn, useBrowser } from './browser.js';
import { expectReadOnly } from './viewer.js';

const skip = browserSkip();

describe('dashboard: the bucket page', { skip }, () => {
  const s = useServer({ env: LOCAL_ENV, rateLimits: GENEROUS });
  const b = useBrowser();
  const state = { id: '', secret: '', domain: '' };
  const a11y = async (what: string) => assert.deepEqual(await seriousA11yViolations(b.page), [], `accessibility of ${what}`);

  /** A read of the bucket's CDN hostname on the API server's port. */
  const cdnGet = (path: string) => {
    const base = new URL(s.baseUrl);
    return new Promise<{ status: number; body: string; cache: string | undefined }>((resolve, reject) => {
      const req = request({ host: base.hostname, port: base.port, path, headers: { host: `${state.domain}:${base.port}` }, agent: false }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode!, body: Buffer.concat(chunks).toString(), cache: res.headers['x-cache'] as string | undefined }));
      });
      req.on('error', reject);
      req.end();
    });
  };

  it('uploads into a nested folder with progress, lists it under its prefixes, downloads the same bytes and deletes it', async () => {
    const page = b.page;
    await signIn(page, s.baseUrl, s.token);
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    await page.getByRole('button', { name: 'New bucket' }).click();
    const form = page.getByRole('form', { name: 'New bucket' });
    await form.getByLabel('Name').fill('Assets');
    await form.getByRole('button', { name: 'Create bucket' }).click();
    await page.getByRole('heading', { name: 'Assets', level: 1 }).waitFor();
    state.id = page.url().split('/').pop()!;
    // The create answer's secret is shown on the page (this tab got it), hidden until revealed.
    const keys = page.locator('[data-section="keys"]');
    await keys.getByRole('button', { name: 'Reveal the secret key' }).click();
    state.secret = (await keys.locator('[data-secret="shown"]').textContent())!;
    assert.ok(state.secret.length >= 20, state.secret);

    const objects = page.locator('[data-section="objects"]');
    await objects.getByText('No objects yet.').waitFor();
    const bytes = Buffer.from(`notes ${randomBytes(200_000).toString('hex')}`);
    await objects.getByLabel('Files to upload').setInputFiles({ name: 'notes.txt', mimeType: 'text/plain', buffer: bytes });
    await objects.getByLabel('Into folder').fill('docs/2026');
    await objects.getByRole('button', { name: 'Upload', exact: true }).click();
    const upload = page.locator('[data-upload="docs/2026/notes.txt"]');
    await upload.locator('[data-upload-state="done"]').waitFor();
    assert.equal(await upload.getByRole('progressbar', { name: 'Upload of docs/2026/notes.txt' }).getAttribute('value'), String(bytes.length));
    // The top level lists the folder; each level opens the next.
    await objects.locator('[data-object="docs/"]').getByRole('button', { name: 'docs/' }).click();
    await objects.locator('[data-object="docs/2026/"]').getByRole('button', { name: '2026/' }).click();
    const row = objects.locator('[data-object="docs/2026/notes.txt"]');
    await row.getByText('text/plain').waitFor();
    await page.getByRole('navigation', { name: 'Folder' }).getByRole('button', { name: '2026' }).waitFor();
    const listed = expectStatus(await s.get(`/object-storage/${state.id}/objects?prefix=docs/2026/`), 200);
    assert.deepEqual(
      listed.data.map((o: { key: string; size: number; content_type: string }) => [o.key, o.size, o.content_type]),
      [['docs/2026/notes.txt', bytes.length, 'text/plain']],
    );

    const [download] = await Promise.all([page.waitForEvent('download'), row.getByRole('button', { name: 'Download docs/2026/notes.txt' }).click()]);
    assert.equal(download.suggestedFilename(), 'notes.txt');
    assert.ok((await readFile((await download.path())!)).equals(bytes), 'downloaded bytes equal the uploaded ones');
    const downloadUrl = download.url();
    await a11y('the bucket page');
    await shots(page, 'bucket-browser');

    await row.getByRole('button', { name: 'Delete' }).click();
    await objects.getByText('This folder is empty.').waitFor();
    assert.equal(expectStatus(await s.get(`/object-storage/${state.id}/objects`), 200).data.length, 0);

    // Every object URL the page used was presigned by the API; the secret was never sent anywhere.
    const presigns = b.seen.urls.filter((u) => u === `${s.baseUrl}/v3/object-storage/${state.id}/presign`);
    // (A download's own request is not among the page's requests: its URL is the download's.)
    const objectUrls = [...b.seen.urls.filter((u) => u.startsWith(`${s.baseUrl}/s3/`)), downloadUrl];
    assert.equal(presigns.length, 2, 'one presign for the upload, one for the download');
    assert.equal(objectUrls.length, 2, objectUrls.join('\n'));
    for (const u of objectUrls) {
      assert.ok(u.startsWith(`${s.baseUrl}/s3/`), u);
      assert.match(u, /X-Amz-Signature=[0-9a-f]{64}/);
    }
    assert.deepEqual(
      [...b.seen.urls, downloadUrl].filter((u) => u.includes(state.secret) || u.includes(encodeURIComponent(state.secret))),
      [],
    );
    assert.deepEqual(
      b.seen.urls.filter((u) => !u.startsWith(s.baseUrl) && !u.startsWith('data:')),
      [],
    );
  });

  it('turns the CDN domain on and purges its cache: the edge then reads the object afresh', async () => {
    const page = b.page;
    const cdn = page.locator('[data-section="cdn"]');
    await cdn.getByRole('button', { name: 'Turn the CDN domain on' }).click();
    await cdn.locator('[data-cdn="on"]').waitFor();
    state.domain = expectStatus(await s.get(`/object-storage/${state.id}`), 200).domain;
    assert.ok(state.domain);
    // An object the CDN may keep for 5 minutes (a presigned PUT may send unsigned headers such as Cache-Control).
    const put = async (body: string) => {
      const signed = expectStatus(await s.post(`/object-storage/${state.id}/presign`, { method: 'PUT', key: 'logo.txt' }), 200);
      assert.equal((await fetch(signed.url, { method: 'PUT', headers: { 'cache-control': 'max-age=300' }, body })).status, 200);
    };
    await put('v1');
    assert.equal((await cdnGet('/logo.txt')).cache, 'MISS');
    await waitFor('the CDN keeps logo.txt', async () => (await cdnGet('/logo.txt')).cache === 'HIT', 5_000);
    await put('v2');
    assert.equal((await cdnGet('/logo.txt')).body, 'v1', 'served from the cache until purged');

    const before = expectStatus(await s.get(`/object-storage/${state.id}`), 200).updated_at;
    await cdn.getByRole('button', { name: 'Purge CDN cache' }).click();
    await cdn.locator('[data-purged]').getByText('Cache purge started').waitFor();
    const fresh = await cdnGet('/logo.txt');
    assert.equal(fresh.cache, 'MISS');
    assert.equal(fresh.body, 'v2');
    assert.notEqual(expectStatus(await s.get(`/object-storage/${state.id}`), 200).updated_at, before);
    await a11y('the bucket page with its CDN on');
    await shots(page, 'bucket-cdn');
  });

  it('a Company Viewer downloads but sees no write control', async () => {
    const viewer = await s.newKey({ role: 'Company Viewer' });
    await expectReadOnly(b.browser, s.baseUrl, viewer.token, [[`/buckets/${state.id}`, '[data-object="logo.txt"]', 'bucket-browser-viewer']]);
    const { page, close } = await b.open();
    try {
      await signIn(page, s.baseUrl, viewer.token, `/buckets/${state.id}`);
      assert.equal(await page.locator('[data-section="cdn"]').getByRole('button', { name: 'Purge CDN cache' }).count(), 0);
      const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download logo.txt' }).click()]);
      assert.equal((await readFile((await download.path())!)).toString(), 'v2');
    } finally {
      await close();
    }
  });
});
