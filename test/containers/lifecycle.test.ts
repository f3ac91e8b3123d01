// Lifecycles of a container instance through the API and the edge: hibernation stops an idle
// application's container and the next request through the edge starts a new one and is answered
// by it; a container that crashes is restarted by the engine, the restart is in the application's
// runtime log and the application answers again.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { GENEROUS, useServer } from '../helpers/server.js';
import { expectStatus, waitFor } from '../helpers/util.js';
import { engineSkip } from '../support/container-engine.js';
import { createRealApp, deploy, edgeGet } from '../apps-real/support.js';
import { CONTAINER_ENV, containersOf, pythonHandler, repoOf } from './support.js';

// Prints a line when it starts; answers with its container's hostname; /crash exits with code 3 just after answering.
const HANDLE = [
  'import socket, threading',
  "print('server started', flush=True)",
  'def handle(path):',
  "    if path == '/crash':",
  '        threading.Timer(0.2, lambda: os._exit(3)).start()',
  "        return 'crashing'",
  '    return socket.gethostname()',
].join('\n');

describe('container runtime: hibernation and crashes (sqlite)', { skip: await engineSkip() }, () => {
  const s = useServer({ db: 'sqlite', rateLimits: GENEROUS, env: CONTAINER_ENV });
  let port: number;
  before(() => {
    port = s.app.runtimes.edge!.port;
  });
  const logs = async (appId: string) => JSON.stringify(expectStatus(await s.get(`/applications/${appId}/runtime-logs?limit=5000`), 200));

  const start = async (name: string) => {
    const a = await createRealApp(s, repoOf(pythonHandler(HANDLE)).url, name);
    expectStatus(await s.patch(`/applications/${a.id}`, { build_type: 'dockerfile' }), 200);
    assert.equal((await deploy(s, a.id)).status, 'success');
    return a;
  };

  it("an idle application's container stops and the next request through the edge wakes it", async () => {
    const a = await start('box-sleepy');
    const host = `${a.name}.localhost`;
    const first = await edgeGet(port, host);
    assert.equal(first.status, 200);
    const [running] = await containersOf(a.id);
    assert.ok(running && running.Id.startsWith(first.body), `answered by ${first.body}`);

    expectStatus(await s.patch(`/applications/${a.id}`, { hibernation_enabled: true, hibernate_after_seconds: 1 }), 200);
    await waitFor('the idle container to go', async () => (await containersOf(a.id, true)).length === 0 || undefined, 30_000);
    await waitFor('the hibernation log line', async () => /Hibernating: no request for 1 s/.test(await logs(a.id)) || undefined);

    // The request is held until a new container answers it.
    const woken = await edgeGet(port, host);
    assert.equal(woken.status, 200);
    assert.notEqual(woken.body, first.body);
    const [awake] = await containersOf(a.id);
    assert.ok(awake && awake.Id.startsWith(woken.body), `answered by ${woken.body}`);
    assert.match(await logs(a.id), /Waking from hibernation/);
    expectStatus(await s.delete(`/applications/${a.id}`), 200);
  });

  it('a crashed container is restarted by the engine, the restart is logged, and it answers again', async () => {
    const a = await start('box-crashy');
    const host = `${a.name}.localhost`;
    const before = await edgeGet(port, host);
    assert.equal(before.status, 200);
    await waitFor('the start line in the runtime log', async () => /server started/.test(await logs(a.id)) || undefined);
    assert.equal((await edgeGet(port, host, {}, '/crash')).body, 'crashing');

    await waitFor(
      'the restart in the runtime log',
      async () => /exited \(code 3\); the engine restarts it \(restart 1\)/.test(await logs(a.id)) || undefined,
      30_000,
    ).catch(async (e: Error) => {
      // What the log said instead, and the container's state, for the failure's message.
      const [c] = await containersOf(a.id, true);
      throw new Error(`${e.message}; container ${c?.State} (${c?.Status}); runtime log: ${(await logs(a.id)).slice(-3000)}`);
    });
    await waitFor('a second start line', async () => ((await logs(a.id)).match(/server started/g) ?? []).length >= 2 || undefined, 30_000);
    // The line is printed just before the server listens: a moment of 502 may follow it.
    const after = await waitFor('an answer again', async () => {
      const r = await edgeGet(port, host);
      return r.status === 200 ? r : undefined;
    });
    // The same container, restarted in place: the engine counts the restart.
    assert.equal(after.body, before.body);
    const [c] = await containersOf(a.id);
    assert.equal(c?.State, 'running');
    expectStatus(await s.delete(`/applications/${a.id}`), 200);
  });
});
