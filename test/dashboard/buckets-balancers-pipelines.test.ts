// Buckets, load balancers and pipelines in headless Chromium against a real server: an object
// uploaded through a presigned URL, listed in its folder, downloaded with the same bytes and
// deleted; a load balancer created from the overview with two destinations and a weight changed;
// a pipeline created, applications placed in its stages and one promoted with the release it will
// deploy shown first; a Company Viewer sees these pages without a write control; axe-core finds
// no serious violation; screenshots at laptop and phone widths go to test-artifacts/dashboard/.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { Browser, Page } from 'playwright-core';
import { GENEROUS, useServer } from '../helpers/server.js';
import { expectStatus } from '../helpers/util.js';
import { createApp, deploy } from '../applications/support.js';
import { browserSkip, launch, seriousA11yViolations, shots, signIn, watch } from './browser.js';
import { expectReadOnly } from './viewer.js';

const skip = browserSkip();
const TIMEOUT = 30_000;

describe('dashboard: buckets, load balancers and pipelines', { skip }, () => {
  const s = useServer({ env: { SLIPWAY_SIM_PROGRESSION: '*=immediate', SLIPWAY_JOB_POLL_MS: '20' }, rateLimits: GENEROUS });
  let browser: Browser;
  let page: Page;
  let seen: ReturnType<typeof watch>;
  const ids = { bucket: '', lb: '', pipeline: '' };
  before(async () => {
    browser = await launch();
    page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    page.setDefaultTimeout(TIMEOUT);
    page.on('dialog', (d) => void d.accept());
    seen = watch(page);
  });
  after(async () => {
    await browser?.close();
  });

  const a11y = async (what: string) => assert.deepEqual(await seriousA11yViolations(page), [], `accessibility of ${what}`);

  /** Creates a `kind` from the overview's create menu, which opens its page. */
  async function createFromOverview(kind: string, name: string, fill?: (form: ReturnType<Page['getByRole']>) => Promise<unknown>) {
    await page.getByRole('link', { name: 'Overview' }).click();
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    await page.getByRole('button', { name: `New ${kind}` }).click();
    const form = page.getByRole('form', { name: `New ${kind}` });
    await form.getByLabel('Name').fill(name);
    await fill?.(form);
    await form.getByRole('button', { name: `Create ${kind}` }).click();
    await page.getByRole('heading', { name, level: 1 }).waitFor();
    return page.url().split('/').pop()!;
  }

  it('uploads an object into a folder, lists it, downloads the same bytes and deletes it', async () => {
    await signIn(page, s.baseUrl, s.token);
    ids.bucket = await createFromOverview('bucket', 'Media');
    const objects = page.locator('[data-section="objects"]');
    await objects.getByText('No objects yet.').waitFor();
    const bytes = randomBytes(300_000);
    await objects.getByLabel('Files to upload').setInputFiles({ name: 'photo.bin', mimeType: 'application/octet-stream', buffer: bytes });
    await objects.getByLabel('Into folder').fill('photos');
    await objects.getByRole('button', { name: 'Upload', exact: true }).click();
    await page.locator('[data-upload="photos/photo.bin"] [data-upload-state="done"]').waitFor();
    // The top level lists the folder; opening it lists the object with its size.
    await objects.locator('[data-object="photos/"]').getByRole('button', { name: 'photos/' }).click();
    const row = objects.locator('[data-object="photos/photo.bin"]');
    await row.getByText('293 KB').waitFor();
    const listed = expectStatus(await s.get(`/object-storage/${ids.bucket}/objects?prefix=photos/`), 200);
    assert.deepEqual(
      listed.data.map((o: { key: string; size: number }) => [o.key, o.size]),
      [['photos/photo.bin', bytes.length]],
    );
    const [download] = await Promise.all([page.waitForEvent('download'), row.getByRole('button', { name: 'Download photos/photo.bin' }).click()]);
    assert.equal(download.suggestedFilename(), 'photo.bin');
    assert.ok((await readFile((await download.path())!)).equals(bytes), 'downloaded bytes equal the uploaded ones');
    await a11y('the bucket page');
    await shots(page, 'bucket');
    await row.getByRole('button', { name: 'Delete' }).click();
    await objects.getByText('This folder is empty.').waitFor();
    assert.equal(expectStatus(await s.get(`/object-storage/${ids.bucket}/objects`), 200).data.length, 0);
    // The object's bytes went to /s3 on this origin; nothing left the server.
    assert.ok(seen.urls.some((u) => u.startsWith(`${s.baseUrl}/s3/`)));
    assert.deepEqual(
      seen.urls.filter((u) => !u.startsWith(s.baseUrl) && !u.startsWith('data:')),
      [],
    );
  });

  it('rotates the keys with a grace period and adds a CORS rule', async () => {
    const before = expectStatus(await s.get(`/object-storage/${ids.bucket}`), 200);
    const keys = page.locator('[data-section="keys"]');
    await keys.getByLabel(/Old keys keep working/).fill('24');
    await keys.getByRole('button', { name: 'Rotate keys' }).click();
    await keys.locator('[data-rotated]').getByText(before.access_key).waitFor();
    const after = expectStatus(await s.get(`/object-storage/${ids.bucket}`), 200);
    assert.notEqual(after.access_key, before.access_key);
    await keys.getByText(after.access_key).first().waitFor();
    // A tab that did not create or rotate the bucket knows no secret until it is entered.
    await keys.getByRole('button', { name: 'Reveal the secret key' }).click();
    const secret = (await keys.locator('[data-secret="shown"]').textContent())!;
    const other = await (await browser.newContext()).newPage();
    try {
      await signIn(other, s.baseUrl, s.token, `/buckets/${ids.bucket}`);
      const upload = other.getByRole('button', { name: 'Upload', exact: true });
      await other.getByText(/does not know the bucket's secret key/).waitFor();
      assert.equal(await upload.isDisabled(), true);
      await other.getByLabel('Secret key', { exact: true }).fill(secret);
      await other.getByRole('button', { name: 'Use in this tab' }).click();
      await other.locator('[data-section="keys"] [data-secret="hidden"]').waitFor();
      assert.equal(await upload.isDisabled(), false);
    } finally {
      await other.context().close();
    }
    const cors = page.locator('[data-section="cors"]');
    await cors.getByLabel('PUT').check();
    await cors.getByLabel(/Origins/).fill('https://shop.example');
    await cors.getByRole('button', { name: 'Add rule' }).click();
    await cors.locator('[data-cors]').getByText('from https://shop.example').waitFor();
    const rules = expectStatus(await s.get(`/object-storage/${ids.bucket}/cors-policies`), 200);
    assert.deepEqual(rules.data[0].methods, ['GET', 'PUT']);
    assert.deepEqual(rules.data[0].origins, ['https://shop.example']);
  });

  it('creates a load balancer with two destinations and changes a weight', async () => {
    const app = await createApp(s, { kind: 'image', display_name: 'web eu' });
    ids.lb = await createFromOverview('load balancer', 'Front door');
    const dest = page.locator('[data-section="destinations"]');
    await dest.getByText(/No destinations/).waitFor();
    const add = page.getByRole('form', { name: 'Add destination' });
    await add.getByLabel('Service').selectOption({ label: 'web eu' });
    await add.getByRole('button', { name: 'Add destination' }).click();
    await dest.locator('[data-destination="web eu"]').waitFor();
    await add.getByLabel('Kind').selectOption('EXTERNAL');
    await add.getByRole('textbox', { name: 'URL' }).fill('https://origin.example.com');
    await add.getByLabel('Weight').fill('300');
    await add.getByRole('button', { name: 'Add destination' }).click();
    const external = dest.locator('[data-destination="https://origin.example.com"]');
    await external.locator('[data-share]').getByText('weight 300 · 75% of requests').waitFor();
    // A new weight for the application: 100 → 900, so it takes 75%.
    await dest.getByRole('form', { name: 'Change web eu' }).getByLabel('Weight').fill('900');
    await dest.getByRole('form', { name: 'Change web eu' }).getByRole('button', { name: 'Save' }).click();
    await dest.locator('[data-destination="web eu"] [data-share]').getByText('weight 900 · 75% of requests').waitFor();
    await external.getByRole('button', { name: 'Disable' }).click();
    await external.locator('[data-status="disabled"]').waitFor();
    const list = expectStatus(await s.get(`/load-balancers/${ids.lb}/destinations`), 200);
    const byTarget = Object.fromEntries(
      list.data.map((d: { service_id: string | null; url: string | null; weight: number; is_enabled: boolean }) => [
        d.service_id ?? d.url,
        [d.weight, d.is_enabled],
      ]),
    );
    assert.deepEqual(byTarget, { [app.id]: [900, true], 'https://origin.example.com': [300, false] });
    await a11y('the load balancer page');
    await shots(page, 'load-balancer');
  });

  it('creates a pipeline, places applications in its stages and promotes with a preview of the release', async () => {
    const dev = await createApp(s, { kind: 'image', display_name: 'shop dev' });
    const prod = await createApp(s, { kind: 'image', display_name: 'shop prod' });
    const release = await deploy(s, dev.id, { docker_image: 'nginx:1.27' });
    await page.getByRole('link', { name: 'Settings' }).click();
    await page.getByLabel('Project name').fill('Shop');
    await page.getByRole('button', { name: 'Create project' }).click();
    await page.locator('[data-project="Shop"]').waitFor();
    ids.pipeline = await createFromOverview('pipeline', 'Shop flow', (form) => form.getByLabel('Project').selectOption({ label: 'Shop' }));
    for (const [stage, app] of [
      ['Dev', 'shop dev'],
      ['Production', 'shop prod'],
    ]) {
      const form = page.getByRole('form', { name: `Add application to ${stage}` });
      await form.getByLabel('Application').selectOption({ label: app! });
      await form.getByRole('button', { name: `Add to ${stage}` }).click();
      await page.locator(`[data-stage="${stage}"] [data-stage-app="${app}"]`).waitFor();
    }
    const promote = page.getByRole('form', { name: 'Promote' });
    await promote.getByLabel('From').selectOption({ label: 'shop dev (Dev)' });
    await promote.getByLabel('shop prod (Production)').check();
    const preview = promote.locator('[data-promote-preview]');
    await preview.getByText(/Will deploy the release of shop dev/).waitFor();
    if (release.commit_sha) assert.equal(await preview.locator('[data-promote-commit]').textContent(), release.commit_sha.slice(0, 7));
    else await preview.getByText(release.docker_image_url).waitFor();
    await promote.getByRole('button', { name: 'Promote' }).click();
    await page.locator('[data-promoted="shop prod"] [data-status="success"]').waitFor();
    const deps = expectStatus(await s.get(`/applications/${prod.id}/deployments`), 200);
    assert.equal(deps.data[0].trigger, 'promotion');
    assert.equal(deps.data[0].docker_image_url, release.docker_image_url);
    // The stages and the project are the API's.
    const project = expectStatus(await s.get(`/projects`), 200).data.find((p: { display_name: string }) => p.display_name === 'Shop');
    const services = expectStatus(await s.get(`/projects/${project.id}`), 200).services.map((x: { id: string }) => x.id);
    assert.ok(services.includes(prod.id) && services.includes(dev.id), 'applications placed in a stage join the pipeline project');
    await a11y('the pipeline page');
    await shots(page, 'pipeline');
  });

  it('shows a Company Viewer these pages without a write control', async () => {
    const { token } = await s.newKey({ role: 'Company Viewer' });
    await expectReadOnly(browser, s.baseUrl, token, [
      [`/buckets/${ids.bucket}`, '[data-section="cors"] [data-cors]', 'bucket-viewer'],
      [`/load-balancers/${ids.lb}`, '[data-destination="web eu"]', 'load-balancer-viewer'],
      [`/pipelines/${ids.pipeline}`, '[data-stage="Production"]', 'pipeline-viewer'],
    ]);
  });
});
