// The application and database pages' further sections in headless Chromium against a real
// server: a MySQL database created from the menu, external access turned on, IP rules saved, a
// backup target on a company bucket, an external backup taken and restored into another database;
// an application's private port, TCP proxy, volume (created and grown), maintenance mode and
// resource type; a Company Viewer sees both pages without a write control; axe-core finds no
// serious violation; screenshots at laptop and phone widths go to test-artifacts/dashboard/.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, Page } from 'playwright-core';
import { GENEROUS, useServer } from '../helpers/server.js';
import { expectStatus, waitFor } from '../helpers/util.js';
import { createApp } from '../applications/support.js';
import { browserSkip, launch, seriousA11yViolations, shots, signIn } from './browser.js';
import { expectReadOnly } from './viewer.js';

const skip = browserSkip();
const TIMEOUT = 30_000;

describe('dashboard: application and database sections', { skip }, () => {
  const s = useServer({ env: { SLIPWAY_SIM_PROGRESSION: '*=immediate', SLIPWAY_JOB_POLL_MS: '20' }, rateLimits: GENEROUS });
  let browser: Browser;
  let page: Page;
  const ids = { db: '', app: '' };
  before(async () => {
    browser = await launch();
    page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    page.setDefaultTimeout(TIMEOUT);
    page.on('dialog', (d) => void d.accept());
  });
  after(async () => {
    await browser?.close();
  });

  it('creates a MySQL database, opens it to the internet with IP rules and restores an external backup into another database', async () => {
    // The bucket for the backups and the database to restore into exist before the page opens.
    const bucket = expectStatus(await s.post('/object-storage', { display_name: 'dumps' }), 201);
    const [cluster] = expectStatus(await s.get('/resources/clusters'), 200);
    const [size] = expectStatus(await s.get('/resources/database-resource-types'), 200);
    const copy = expectStatus(
      await s.post('/databases', {
        display_name: 'orders copy',
        type: 'mysql',
        version: '8.4',
        cluster_id: cluster.id,
        resource_type_id: size.id,
        db_name: 'appdata',
        db_password: 'Pw_0123456789abcdef',
      }),
      201,
    );
    await waitFor('the copy to be ready', async () => expectStatus(await s.get(`/databases/${copy.id}`), 200).status === 'ready');
    await signIn(page, s.baseUrl, s.token);
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    await page.getByRole('button', { name: 'New database' }).click();
    const form = page.getByRole('form', { name: 'New database' });
    await form.getByLabel('Name').fill('orders');
    await form.getByLabel('Engine').selectOption({ label: 'MySQL' });
    await form.getByLabel('Version').selectOption('8.4');
    await form.getByRole('button', { name: 'Create database' }).click();
    await page.getByRole('heading', { name: 'orders', level: 1 }).waitFor();
    ids.db = page.url().split('/').pop()!;
    const db = expectStatus(await s.get(`/databases/${ids.db}`), 200);
    assert.deepEqual([db.type, db.version], ['mysql', '8.4']);
    await page.locator('.page-head [data-status="ready"]').waitFor();

    await page.getByRole('button', { name: 'Turn external access on' }).click();
    await page.locator('[data-external="on"]').waitFor();
    assert.ok(expectStatus(await s.get(`/databases/${ids.db}`), 200).external_hostname);

    const rules = page.getByRole('form', { name: 'IP rules' });
    await rules.getByLabel('Apply the rules').check();
    await rules.getByLabel(/Addresses or CIDR/).fill('203.0.113.0/24\n198.51.100.7');
    await rules.getByRole('button', { name: 'Save IP rules' }).click();
    await page.locator('[data-ip-rules="allow"]').waitFor();
    assert.deepEqual(expectStatus(await s.get(`/databases/${ids.db}/ip-restriction`), 200), {
      type: 'allow',
      is_enabled: true,
      ip_list: ['203.0.113.0/24', '198.51.100.7'],
    });

    const targets = page.getByRole('form', { name: 'New backup target' });
    await targets.getByLabel('Bucket', { exact: true }).selectOption({ label: 'dumps' });
    await targets.getByRole('button', { name: 'Add backup target' }).click();
    await page.locator('[data-section="backup-targets"] [data-backup-target]').getByText('dumps').waitFor();
    assert.equal(expectStatus(await s.get(`/databases/${ids.db}/backup-targets`), 200)[0].object_storage_id, bucket.id);

    const external = page.locator('[data-section="external-backups"]');
    await external.getByLabel('Name').fill('before-migration');
    await external.getByRole('button', { name: 'Back up now' }).click();
    const row = external.locator('[data-external-backup*="before-migration"]');
    await row.waitFor();
    await external.getByLabel('Restore backups of this database into').selectOption({ label: 'orders copy' });
    const [restore] = await Promise.all([
      page.waitForRequest((r) => r.method() === 'POST' && /\/external-backups\/[^/]+\/restore$/.test(r.url())),
      row.getByRole('button', { name: 'Restore' }).click(),
    ]);
    assert.deepEqual(restore.postDataJSON(), { target_database_id: copy.id });
    assert.equal((await restore.response())?.status(), 202);
    assert.deepEqual(await seriousA11yViolations(page), [], 'accessibility of the database page');
    await shots(page, 'database');
  });

  it('adds a private port, a TCP proxy and a volume, and turns maintenance mode on', async () => {
    const app = await createApp(s, { kind: 'image', display_name: 'api' });
    ids.app = app.id;
    let processes = expectStatus(await s.get(`/applications/${app.id}/processes`), 200).data;
    const types = expectStatus(await s.get('/resources/process-resource-types'), 200);
    if (!processes.length) {
      expectStatus(
        await s.post(`/applications/${app.id}/processes`, {
          display_name: 'web',
          type: 'web',
          port: 8080,
          resource_type_id: types[0].id,
          scaling_strategy: { type: 'manual', config: { instanceCount: 1 } },
        }),
        200,
      );
      processes = expectStatus(await s.get(`/applications/${app.id}/processes`), 200).data;
    }
    await page.goto(`${s.baseUrl}/apps/${app.id}`);
    await page.getByRole('heading', { name: 'api', level: 1 }).waitFor();

    const ports = page.locator('[data-section="ports"]');
    const priv = page.getByRole('form', { name: 'New private port' });
    await priv.getByLabel('Port').fill('9090');
    await priv.getByRole('button', { name: 'Add private port' }).click();
    await ports.locator('[data-private-port="9090"] [data-status="ready"]').waitFor();
    const tcp = page.getByRole('form', { name: 'New TCP proxy' });
    await tcp.getByLabel('Port').fill('5432');
    await tcp.getByRole('button', { name: 'Add TCP proxy' }).click();
    await ports.locator('[data-tcp-proxy="5432"] [data-status="ready"]').waitFor();
    const proxy = expectStatus(await s.get(`/applications/${app.id}/tcp-proxies`), 200).data[0];
    await ports.locator('[data-tcp-proxy="5432"]').getByText(`${proxy.hostname}:${proxy.external_port}`).waitFor();

    const volumes = page.getByRole('form', { name: 'New volume' });
    await volumes.getByLabel('Name').fill('uploads');
    await volumes.getByLabel('Mount path').fill('/data/uploads');
    await volumes.getByLabel('Size (GB)').fill('5');
    await volumes.getByRole('button', { name: 'Add volume' }).click();
    const volume = page.locator('[data-volume="uploads"]');
    await volume.getByRole('button', { name: 'Grow uploads to 10 GB' }).click();
    // The grow button itself says "10 GB" until the volume has grown: wait for the next size's button.
    await volume.getByRole('button', { name: 'Grow uploads to 20 GB' }).waitFor();
    const listed = expectStatus(await s.get(`/applications/${app.id}/volumes`), 200).data;
    assert.deepEqual(
      listed.map((v: { name: string; mount_path: string; size_gb: number }) => [v.name, v.mount_path, v.size_gb]),
      [['uploads', '/data/uploads', 10]],
    );

    await page.getByLabel('Answer every request with the maintenance page').click();
    await page.locator('[data-maintenance="on"]').waitFor();
    assert.equal(expectStatus(await s.get(`/applications/${app.id}/maintenance-mode`), 200).is_enabled, true);

    const other = types.find((t: { id: string }) => t.id !== processes[0].resource_type_id);
    await page.getByLabel(`Resource type of ${processes[0].display_name ?? processes[0].key}`).selectOption(other.id);
    await waitFor(
      'the process to take the new resource type',
      async () => expectStatus(await s.get(`/applications/${app.id}/processes/${processes[0].id}`), 200).resource_type_id === other.id,
    );
    assert.deepEqual(await seriousA11yViolations(page), [], 'accessibility of the application page');
    await shots(page, 'application-sections');
  });

  it('shows a Company Viewer the application and database pages without a write control', async () => {
    const { token } = await s.newKey({ role: 'Company Viewer' });
    await expectReadOnly(browser, s.baseUrl, token, [
      [`/databases/${ids.db}`, '[data-external-backup]', 'database-viewer'],
      [`/apps/${ids.app}`, '[data-volume="uploads"]', 'application-viewer'],
    ]);
  });
});
