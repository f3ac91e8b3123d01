// A company's databases from its containers: an application connects to the internal hostname
// and port the API gives its database (the machine's MariaDB, told to clients under a name) and
// gets the server's greeting, passed on by Slipway's listener on the company bridge's gateway.
// Another company's container neither reaches it by the same name nor at that gateway's
// address; once the database is deleted the listener goes.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GENEROUS, useServer, type TestServer } from '../helpers/server.js';
import { expectStatus, waitFor } from '../helpers/util.js';
import { engineSkip } from '../support/container-engine.js';
import { createRealApp, deploy, edgeGet } from '../apps-real/support.js';
import { body, create, MYSQL_ADMIN_URL, mysqlAvailable, removeDatabases } from '../databases-real/support.js';
import { CONTAINER_ENV, containersOf, docker, pythonHandler, repoOf, asCompany } from './support.js';

// GET /connect/<host>:<port>: what the server sends first (its greeting), as text.
const HANDLE = [
  'import socket',
  'def handle(path):',
  "    host, port = path[len('/connect/'):].rsplit(':', 1)",
  '    try:',
  '        s = socket.create_connection((host, int(port)), timeout=3)',
  '        data = s.recv(200)',
  '        s.close()',
  "        return 'greeting ' + data.decode('latin-1') if data else 'closed'",
  '    except Exception as e:',
  "        return 'failed ' + type(e).__name__",
].join('\n');

const NAME = 'mysql.db.internal';

const mysql = await mysqlAvailable();

describe('container runtime: databases by internal hostname (sqlite)', { skip: (await engineSkip()) || (mysql === true ? false : mysql) }, () => {
  const s = useServer(
    {
      db: 'sqlite',
      rateLimits: GENEROUS,
      env: {
        ...CONTAINER_ENV,
        SLIPWAY_DB_MYSQL_URL: MYSQL_ADMIN_URL,
        SLIPWAY_DB_MYSQL_HOST: NAME,
        SLIPWAY_SIM_PROGRESSION: '*=immediate',
        SLIPWAY_APPS_METRICS_INTERVAL_MS: '300',
      },
    },
    {
      beforeClose: async (s) =>
        removeDatabases(
          s,
          ((await s.get('/databases?limit=100')).body as { data: { id: string }[] }).data.map((d) => d.id),
        ),
    },
  );

  it("an application reaches its company's database by internal hostname; another company's does not", async () => {
    const port = s.app.runtimes.edge!.port;
    const repo = repoOf(pythonHandler(HANDLE));
    const other = asCompany(s, (await s.newCompany()).token);
    const d = await create(s, body('mariadb', '10.11'));
    assert.equal(d.status, 'ready');
    assert.equal(d.internal_hostname, NAME);
    assert.equal(d.internal_port, '3306');

    const start = async (api: TestServer, name: string) => {
      const a = await createRealApp(api, repo.url, `box-db-${name}`);
      expectStatus(await api.patch(`/applications/${a.id}`, { build_type: 'dockerfile' }), 200);
      assert.equal((await deploy(api, a.id)).status, 'success');
      return a;
    };
    const [a, b] = await Promise.all([start(s, 'a'), start(other, 'b')]);
    const connect = async (app: { name: string }, target: string) => (await edgeGet(port, `${app.name}.localhost`, {}, `/connect/${target}`)).body;

    assert.match(await connect(a, `${d.internal_hostname}:${d.internal_port}`), /^greeting .*MariaDB/s);

    // The other company's containers resolve the name to their own bridge, where nothing of it listens.
    assert.match(await connect(b, `${NAME}:3306`), /^failed ConnectionRefused/);
    // The company's gateway is a host address the other bridge reaches: the listener cuts it off.
    const [aContainer] = await containersOf(a.id);
    const network = Object.keys((await docker().getContainer(aContainer!.Id).inspect()).NetworkSettings.Networks)[0]!;
    const gateway = ((await docker().getNetwork(network).inspect()) as { IPAM: { Config: { Gateway: string }[] } }).IPAM.Config[0]!.Gateway;
    assert.match(await connect(a, `${gateway}:3306`), /^greeting /, 'the gateway is where the name leads');
    assert.match(await connect(b, `${gateway}:3306`), /^(closed|failed)/);

    await removeDatabases(s, [d.id]);
    await waitFor('the listener to close', async () => /^failed/.test(await connect(a, `${NAME}:3306`)) || undefined, 30_000);
  });
});
