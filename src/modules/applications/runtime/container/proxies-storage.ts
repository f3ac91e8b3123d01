// The TCP proxies the container host forwards (their rows belong to the application's settings).
import type { Tx } from '../../../../shared/db/index.js';

/** The TCP proxies of the applications: each one's process, private port and external port. */
export async function tcpProxiesOf(tx: Tx, appIds: string[]) {
  if (!appIds.length) return [];
  return tx.selectFrom('application_tcp_proxies').select(['id', 'app_id', 'process_id', 'port', 'external_port']).where('app_id', 'in', appIds).execute();
}
