// TCP proxies of the container runtime: Slipway listens on each proxy's external port (on the
// edge's address) and forwards every connection to the process's port on one of its running
// instances, at the instance's address on its company's network. A listener outlives redeploys
// (each connection picks a current instance), so a proxy created or deleted through the API needs
// no new containers; the listeners follow the proxies at each usage sample.
import { createServer, connect, type Server, type Socket } from 'node:net';
import type Docker from 'dockerode';
import type { AppContext } from '../../../../shared/context.js';
import { edgeSettings } from '../../../../shared/edge/settings.js';
import type { Group } from '../host.js';
import { tcpProxiesOf } from './proxies-storage.js';

interface Listener {
  server: Server;
  /** Its open connections: a deleted proxy ends them too. */
  sockets: Set<Socket>;
  /** The proxy's process and private port: a changed row gets a new listener. */
  key: string;
}

function close(l: Listener): void {
  l.server.close();
  for (const socket of l.sockets) socket.destroy();
}

export class TcpProxies {
  private listeners = new Map<string, Listener>();
  private groups = new Map<string, Group>();
  private syncing = false;

  constructor(
    private app: AppContext,
    private docker: Docker,
  ) {}

  /** Opens a listener for each proxy of the serving applications and closes the others. */
  sync(serving: Iterable<Group>): void {
    if (this.syncing) return;
    this.syncing = true;
    this.groups = new Map([...serving].map((g) => [g.appId, g]));
    void tcpProxiesOf(this.app.database.db, [...this.groups.keys()])
      .then((rows) => {
        const wanted = new Set<string>();
        for (const r of rows) {
          const key = `${r.app_id}/${r.process_id}/${r.port}/${r.external_port}`;
          wanted.add(r.id);
          const had = this.listeners.get(r.id);
          if (had?.key === key) continue;
          if (had) close(had);
          this.listeners.set(r.id, { key, ...this.listen(r.app_id, r.process_id, r.port, r.external_port) });
        }
        for (const [id, l] of this.listeners)
          if (!wanted.has(id)) {
            close(l);
            this.listeners.delete(id);
          }
      })
      .catch(() => {})
      .finally(() => (this.syncing = false));
  }

  private listen(appId: string, processId: string, port: number, externalPort: number): Omit<Listener, 'key'> {
    let next = 0;
    const sockets = new Set<Socket>();
    const server = createServer((socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => {});
      const running = (this.groups.get(appId)?.instances ?? []).filter((i) => i.processId === processId && i.container && !i.stopping);
      const target = running[next++ % Math.max(1, running.length)];
      if (!target) return void socket.destroy();
      void this.docker
        .getContainer(target.container!)
        .inspect()
        .then((c) => {
          const address = Object.values(c.NetworkSettings.Networks)[0]?.IPAddress;
          if (!address) return void socket.destroy();
          const upstream = connect(port, address);
          upstream.on('error', () => socket.destroy());
          socket.on('close', () => upstream.destroy());
          socket.pipe(upstream).pipe(socket);
        })
        .catch(() => socket.destroy());
    });
    // Another listener on the port (another Slipway): the proxy does not answer here.
    server.on('error', () => {});
    server.listen(externalPort, edgeSettings(this.app.config).host);
    // Slipway's stop does not wait for it; the next sync without the application closes it.
    server.unref();
    return { server, sockets };
  }
}
