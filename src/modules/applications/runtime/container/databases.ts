// A company's databases as its containers reach them: the databases run on the host (or elsewhere)
// where a container cannot connect, so Slipway listens on the gateway address of each company's
// bridge, on each internal port of that company's databases, and passes every connection to where
// the database's server really listens. Containers resolve the databases' internal hostnames to
// their own bridge's gateway (Placement adds them as extra hosts). A listener accepts connections
// from its company's subnet only: another company's containers reach the host's addresses too
// (the gateway is a host address, outside the engine's isolation between bridges), and are cut
// off. The listeners follow the networks and the databases at each usage sample.
import { connect, createServer, type Server, type Socket } from 'node:net';
import type Docker from 'dockerode';
import type { AppContext } from '../../../../shared/context.js';
import { inList } from '../../../../shared/net.js';
import { internalEndpoints } from '../../../databases/index.js';
import { L } from './engine.js';

interface Forwarder {
  server: Server;
  sockets: Set<Socket>;
  /** Where connections go (`host:port`): a changed target gets a new listener. */
  target: string;
}

/** A company bridge as the engine describes it. */
export interface Bridge {
  companyId: string;
  gateway: string;
  subnet: string;
}

/** The company bridges of this Slipway, with their gateway and subnet (those the engine gives none are left out). */
export async function bridges(docker: Docker, owner: string): Promise<Bridge[]> {
  const networks = await docker.listNetworks({ filters: { label: [`${L.managed}=1`, `${L.owner}=${owner}`] } });
  return networks.flatMap((n) => {
    const config = n.IPAM?.Config?.find((c) => c.Gateway && c.Subnet && !c.Subnet.includes(':'));
    const companyId = n.Labels?.[L.company];
    return config && companyId ? [{ companyId, gateway: config.Gateway!, subnet: config.Subnet! }] : [];
  });
}

function close(f: Forwarder): void {
  f.server.close();
  for (const socket of f.sockets) socket.destroy();
}

export class DatabaseForwarders {
  /** By `gateway:port`. */
  private forwarders = new Map<string, Forwarder>();
  private syncing: Promise<void> | null = null;
  private again = false;

  constructor(
    private app: AppContext,
    private docker: Docker,
    private owner: string,
  ) {}

  /** Opens a listener for each internal port of each company's databases on its bridge, closes the others; resolves once done. */
  sync(): Promise<void> {
    if (this.syncing) {
      // The one running may have listed the networks before the caller's was made: the caller waits for the next.
      this.again = true;
      return this.syncing.then(() => this.syncing ?? undefined);
    }
    this.syncing = this.apply()
      .catch(() => {})
      .finally(() => {
        this.syncing = null;
        if (this.again) {
          this.again = false;
          void this.sync();
        }
      });
    return this.syncing;
  }

  private async apply(): Promise<void> {
    const wanted = new Map<string, { bridge: Bridge; port: number; target: string }>();
    for (const bridge of await bridges(this.docker, this.owner)) {
      for (const e of await internalEndpoints(this.app, this.app.database.db, bridge.companyId)) {
        const key = `${bridge.gateway}:${e.port}`;
        // Several databases on one shared server and port: one listener.
        if (!wanted.has(key)) wanted.set(key, { bridge, port: e.port, target: `${e.listening.host}:${e.listening.port}` });
      }
    }
    for (const [key, w] of wanted) {
      const had = this.forwarders.get(key);
      if (had?.target === w.target) continue;
      if (had) close(had);
      this.forwarders.set(key, this.listen(w.bridge, w.port, w.target));
    }
    for (const [key, f] of this.forwarders)
      if (!wanted.has(key)) {
        close(f);
        this.forwarders.delete(key);
      }
  }

  private listen(bridge: Bridge, port: number, target: string): Forwarder {
    const sockets = new Set<Socket>();
    const at = target.lastIndexOf(':');
    const [host, targetPort] = [target.slice(0, at), Number(target.slice(at + 1))];
    const server = createServer((socket) => {
      socket.on('error', () => {});
      if (!inList(socket.remoteAddress ?? '', [bridge.subnet])) return void socket.destroy();
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      const upstream = connect(targetPort, host);
      upstream.on('error', () => socket.destroy());
      socket.on('close', () => upstream.destroy());
      socket.pipe(upstream).pipe(socket);
    });
    // The address taken (the database's own server listens on every address, so the container
    // reaches it there directly): nothing to forward.
    server.on('error', () => {});
    server.listen(port, bridge.gateway);
    // Slipway's stop does not wait for it; the stop's last sync (no networks left) closes it.
    server.unref();
    return { server, sockets, target };
  }
}
