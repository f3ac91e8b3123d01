// Buckets, load balancers and pipelines in headless Chromium against a real server: an object
// uploaded through a presigned URL, listed in its folder, downloaded with the same bytes and
// deleted; a load balancer created from the overview with two destinations and a weight changed in
// place; a geographic load balancer whose destinations have locations, one moved; a pipeline
// created, applications placed in its stages (listed from the API in another browser too) and one
// promoted with the release it will deploy shown first; preview apps turned on, set and one
// created from the pipeline page; a Company Viewer sees these pages without a write control;
// axe-core finds no serious violation; screenshots at laptop and phone widths go to
// test-artifacts/dashboard/.
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { Page } from 'playwright-core';
import { GENEROUS, useServer } from '../helpers/server.js';
import { expectStatus } from '../helpers/util.js';
import { setProgression } from '../helpers/simulation.js';
import { createApp, deploy } from '../applications/support.js';
import { browserSkip, seriousA11yViolations, shots, signIn, useBrowser } from './browser.js';
import { expectReadOnly } from './viewer.js';

const skip = browserSkip();
const TIMEOUT = 30_000;

describe('dashboard: buckets, load balancers and pipelines', { skip }, () => {
  const s = useServer({ env: { SLIPWAY_SIM_PROGRESSION: '*=immediate', SLIPWAY_JOB_POLL_MS: '20' }, rateLimits: GENEROUS });
  const b = useBrowser(TIMEOUT);
  let page: Page;
  const ids = { bucket: '', lb: '', geo: '', pipeline: '' };
  before(() => {
    page = b.page;
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
    assert.ok(b.seen.urls.some((u) => u.startsWith(`${s.baseUrl}/s3/`)));
    assert.deepEqual(
      b.seen.urls.filter((u) => !u.startsWith(s.baseUrl) && !u.startsWith('data:')),
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
    // The rotating tab shows the new secret; another tab never sees it and uploads all the same (the API presigns).
    await keys.locator('[data-secret="hidden"]').waitFor();
    const { page: other, close } = await b.open();
    try {
      await signIn(other, s.baseUrl, s.token, `/buckets/${ids.bucket}`);
      await other
        .locator('[data-section="keys"]')
        .getByText(/shown only when the bucket is created/)
        .waitFor();
      assert.equal(await other.getByRole('button', { name: 'Upload', exact: true }).isDisabled(), false);
    } finally {
      await close();
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
    const before = expectStatus(await s.get(`/load-balancers/${ids.lb}/destinations`), 200).data as { id: string; service_id: string | null }[];
    // A disabled destination's new weight keeps it disabled (changed in place, not re-created).
    await external.getByRole('button', { name: 'Disable' }).click();
    await external.locator('[data-status="disabled"]').waitFor();
    // A new weight for the application: 100 → 900; with the external URL disabled it takes everything.
    await dest.getByRole('form', { name: 'Change web eu' }).getByLabel('Weight').fill('900');
    await dest.getByRole('form', { name: 'Change web eu' }).getByRole('button', { name: 'Save' }).click();
    await dest.locator('[data-destination="web eu"] [data-share]').getByText('weight 900 · 100% of requests').waitFor();
    await dest.getByRole('form', { name: 'Change https://origin.example.com' }).getByLabel('Weight').fill('100');
    await dest.getByRole('form', { name: 'Change https://origin.example.com' }).getByRole('button', { name: 'Save' }).click();
    await external.locator('[data-share]').getByText('weight 100', { exact: true }).waitFor();
    await external.locator('[data-status="disabled"]').waitFor();
    const list = expectStatus(await s.get(`/load-balancers/${ids.lb}/destinations`), 200);
    assert.deepEqual(
      list.data.map((d: { id: string }) => d.id),
      before.map((d) => d.id),
      'the same destinations, changed in place',
    );
    const byTarget = Object.fromEntries(
      list.data.map((d: { service_id: string | null; url: string | null; weight: number; is_enabled: boolean }) => [
        d.service_id ?? d.url,
        [d.weight, d.is_enabled],
      ]),
    );
    assert.deepEqual(byTarget, { [app.id]: [900, true], 'https://origin.example.com': [100, false] });
    await a11y('the load balancer page');
    await shots(page, 'load-balancer');
  });

  it('a geographic load balancer: nearest-destination mode, destinations with locations, one moved', async () => {
    ids.geo = await createFromOverview('load balancer', 'Worldwide');
    // The radio follows the saved mode, so it is clicked, not checked.
    await page.getByLabel(/Nearest: each client goes to the closest enabled destination/).click();
    await page.locator('[data-lb-type="GEO"]').waitFor();
    const dest = page.locator('[data-section="destinations"]');
    const add = page.getByRole('form', { name: 'Add destination' });
    for (const [url, lat, lon] of [
      ['https://paris.example.com', '48.85', '2.35'],
      ['https://sydney.example.com', '-33.86', '151.21'],
    ] as const) {
      await add.getByLabel('Kind').selectOption('EXTERNAL');
      await add.getByRole('textbox', { name: 'URL' }).fill(url);
      await add.getByLabel('Latitude').fill(lat);
      await add.getByLabel('Longitude').fill(lon);
      await add.getByRole('button', { name: 'Add destination' }).click();
      await dest.locator(`[data-destination="${url}"]`).waitFor();
    }
    await dest.locator('[data-destination="https://paris.example.com"] [data-location]').getByText('at 48.85° N, 2.35° E').waitFor();
    await dest.locator('[data-destination="https://sydney.example.com"] [data-location]').getByText('at 33.86° S, 151.21° E').waitFor();
    // No weight in this mode: each client goes to the nearest.
    assert.equal(await dest.locator('[data-share]').count(), 0);
    // Sydney's destination moves to New York.
    const change = dest.getByRole('form', { name: 'Change https://sydney.example.com' });
    await change.getByLabel('Latitude').fill('40.71');
    await change.getByLabel('Longitude').fill('-74.01');
    await change.getByRole('button', { name: 'Save' }).click();
    await dest.locator('[data-destination="https://sydney.example.com"] [data-location]').getByText('at 40.71° N, 74.01° W').waitFor();
    expectStatus(await s.get(`/load-balancers/${ids.geo}`), 200);
    assert.equal(expectStatus(await s.get(`/load-balancers/${ids.geo}`), 200).type, 'GEO');
    const list = expectStatus(await s.get(`/load-balancers/${ids.geo}/destinations`), 200);
    assert.deepEqual(
      list.data.map((d: { url: string; latitude: number; longitude: number }) => [d.url, d.latitude, d.longitude]),
      [
        ['https://paris.example.com', 48.85, 2.35],
        ['https://sydney.example.com', 40.71, -74.01],
      ],
    );
    await a11y('the geographic load balancer page');
    await shots(page, 'load-balancer-geo');
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
    // The stages' applications are the API's: a browser that placed nothing lists them too.
    const stages = expectStatus(await s.get(`/pipelines/${ids.pipeline}`), 200).stages as { display_name: string; app_ids: string[] }[];
    assert.deepEqual(
      stages.map((x) => [x.display_name, x.app_ids]),
      [
        ['Dev', [dev.id]],
        ['Production', [prod.id]],
      ],
    );
    const other = await b.open();
    try {
      await signIn(other.page, s.baseUrl, s.token, `/pipelines/${ids.pipeline}`);
      await other.page.locator('[data-stage="Dev"] [data-stage-app="shop dev"]').waitFor();
      await other.page.locator('[data-stage="Production"] [data-stage-app="shop prod"]').waitFor();
    } finally {
      await other.close();
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

  it('removes an application from a stage; turns preview apps on, sets them and creates one from the pipeline page', async () => {
    const git = await createApp(s, { display_name: 'shop web' });
    await page.reload();
    const add = page.getByRole('form', { name: 'Add application to Dev' });
    await add.getByLabel('Application').selectOption({ label: 'shop web' });
    await add.getByRole('button', { name: 'Add to Dev' }).click();
    await page.locator('[data-stage="Dev"] [data-stage-app="shop web"]').waitFor();
    await page.getByRole('button', { name: 'Remove shop dev from Dev' }).click();
    await page.locator('[data-stage="Dev"] [data-stage-app="shop dev"]').waitFor({ state: 'detached' });

    const previews = page.locator('[data-section="previews"]');
    await previews.locator('[data-previews="off"]').waitFor();
    assert.equal(await page.getByRole('form', { name: 'New preview app' }).count(), 0);
    const settings = page.getByRole('form', { name: 'Preview app settings' });
    await settings.getByLabel('Repository URL').fill('https://github.com/example/shop');
    await settings.getByLabel(/Delete preview apps/).check();
    await settings.getByLabel('Days before a preview app is stale').fill('3');
    await settings.getByRole('button', { name: 'Turn preview apps on' }).click();
    await previews.locator('[data-previews="on"]').waitFor();
    await page.locator('[data-stage="Preview"]').getByText('No preview apps yet').waitFor();

    const create = page.getByRole('form', { name: 'New preview app' });
    await create.getByLabel('From').selectOption({ label: 'shop web (Dev)' });
    await create.getByLabel('Branch').fill('feature-x');
    await create.getByLabel(/Pull request/).fill('12');
    // The preview app's deployment takes 3 s: its badge follows it to Deployed without a reload.
    await setProgression(s, 'deployment', { mode: 'duration', ms: 3000 });
    await create.getByRole('button', { name: 'Create preview app' }).click();
    const previewApp = page.locator('[data-stage="Preview"] [data-stage-app="shop web PR #12"]');
    await previewApp.waitFor();
    await previewApp.locator('[data-status="deploymentSuccess"]').waitFor({ timeout: 15_000 });
    await setProgression(s, 'deployment', { mode: 'immediate' });
    // Preview apps cannot be taken out of their stage, nor be a preview app's source.
    assert.equal(await page.getByRole('button', { name: /^Remove shop web PR #12/ }).count(), 0);
    assert.deepEqual(await create.getByLabel('From').locator('option').allTextContents(), [
      'Choose an application',
      'shop web (Dev)',
      'shop prod (Production)',
    ]);

    await settings.getByLabel('Days before a preview app is stale').fill('9');
    // The field says 9 as soon as it is typed: wait for the save's answer, not for the field.
    const saved = page.waitForResponse((r) => r.request().method() === 'PUT' && r.url().endsWith(`/pipelines/${ids.pipeline}/preview`));
    await settings.getByRole('button', { name: 'Save preview settings' }).click();
    assert.equal((await saved).status(), 200);
    const p = expectStatus(await s.get(`/pipelines/${ids.pipeline}`), 200);
    const byName = Object.fromEntries(p.stages.map((x: { display_name: string }) => [x.display_name, x]));
    assert.deepEqual(Object.keys(byName), ['Preview', 'Dev', 'Production']);
    assert.deepEqual([byName.Preview.delete_stale_apps, byName.Preview.stale_app_days, byName.Preview.auto_create_app], [true, 9, false]);
    assert.deepEqual(byName.Dev.app_ids, [git.id]);
    assert.equal(byName.Preview.app_ids.length, 1);
    const made = expectStatus(await s.get(`/applications/${byName.Preview.app_ids[0]}`), 200);
    assert.deepEqual([made.type, made.display_name, made.default_branch], ['previewApp', 'shop web PR #12', 'feature-x']);
    await a11y('the pipeline page with preview apps');
    await shots(page, 'pipeline-previews');
  });

  it('shows a Company Viewer these pages without a write control', async () => {
    const { token } = await s.newKey({ role: 'Company Viewer' });
    await expectReadOnly(b.browser, s.baseUrl, token, [
      [`/buckets/${ids.bucket}`, '[data-section="cors"] [data-cors]', 'bucket-viewer'],
      [`/load-balancers/${ids.lb}`, '[data-destination="web eu"]', 'load-balancer-viewer'],
      [`/load-balancers/${ids.geo}`, '[data-destination="https://paris.example.com"] [data-location]', 'load-balancer-geo-viewer'],
      [`/pipelines/${ids.pipeline}`, '[data-stage="Preview"] [data-stage-app="shop web PR #12"]', 'pipeline-viewer'],
    ]);
  });
});
