// Release images reach the swarm's nodes (docs/scaling.md): built on the manager's engine as the
// container host builds them, then pushed to the registry every node pulls from
// (SLIPWAY_SWARM_REGISTRY, with its login when it asks for one), or, without one, copied into each node's engine that lacks them
// (`docker save | docker load` through the API, which keeps the image id: scripts/start-swarm.sh's
// `load`). A node whose engine does not answer is skipped: it gets the image the next time.
import type { Readable } from 'node:stream';
import type Docker from 'dockerode';
import { request } from 'undici';
import { BuildError } from '../../../../shared/runtime/build.js';
import { missing, progress } from '../container/engine.js';
import type { RegistryAuth } from './settings.js';

/** The reference services name a release's image by: the registry's copy, or the tag every node holds. */
export const imageRef = (registry: string | null, tag: string) => (registry ? `${registry}/${tag}` : tag);

/** Makes `tag` (on the manager's engine) available to every node; `say` notes what was done. */
export async function distribute(
  manager: Docker,
  registry: string | null,
  auth: RegistryAuth | null,
  nodes: Map<string, Docker>,
  tag: string,
  say: (message: string) => void,
): Promise<void> {
  if (registry) {
    const [repo, version] = imageRef(registry, tag).split(/:(?=[^:/]+$)/) as [string, string];
    await manager.getImage(tag).tag({ repo, tag: version });
    // Without a login an empty one (anonymous): an engine may refuse a push without the X-Registry-Auth header.
    try {
      await progress(manager, await manager.getImage(`${repo}:${version}`).push({ authconfig: auth ?? {} }), () => {});
    } catch (e) {
      throw new BuildError(pushRefused(registry, `${repo}:${version}`, (e as Error).message, auth !== null));
    }
    say(`Image pushed to ${repo}:${version}`);
    return;
  }
  await Promise.all(
    [...nodes].map(async ([name, engine]) => {
      const has = await engine
        .getImage(tag)
        .inspect()
        .then(() => true)
        .catch((e: unknown) => (missing(e) ? false : null));
      if (has !== false) return;
      const saved = (await manager.getImage(tag).get()) as unknown as Readable;
      await progress(engine, await engine.loadImage(saved), () => {});
      say(`Image ${tag} copied to node ${name}`);
    }),
  );
}

/** Why a push failed, with the settings that fix a refused login. */
function pushRefused(registry: string, ref: string, why: string, withLogin: boolean): string {
  const said = `The push of ${ref} to the registry ${registry} failed: ${why}`;
  if (!/auth|credential|login|denied|401/i.test(why)) return said;
  return withLogin
    ? `${said} (the registry refused the login of SLIPWAY_SWARM_REGISTRY_USER and SLIPWAY_SWARM_REGISTRY_PASSWORD)`
    : `${said} (the registry asks for a login: set SLIPWAY_SWARM_REGISTRY_USER and SLIPWAY_SWARM_REGISTRY_PASSWORD)`;
}

/** The manifest types a registry may hold for a pushed image (a HEAD answers the digest of whichever it holds). */
const MANIFESTS = [
  'application/vnd.docker.distribution.manifest.v2+json',
  'application/vnd.docker.distribution.manifest.list.v2+json',
  'application/vnd.oci.image.manifest.v1+json',
  'application/vnd.oci.image.index.v1+json',
].join(', ');

/**
 * Deletes every tag of `repo` from the registry (Registry HTTP API v2: each tag's manifest by its
 * digest), with its login when it has one. The layers' space comes back with the registry's own
 * garbage collection (docs/scaling.md). Over HTTPS, else plain HTTP, as an engine tries an
 * insecure registry. A registry without the repository has nothing to delete.
 */
export async function forgetRepository(registry: string, auth: RegistryAuth | null, repo: string): Promise<void> {
  const headers: Record<string, string> = auth ? { authorization: `Basic ${Buffer.from(`${auth.username}:${auth.password}`).toString('base64')}` } : {};
  const base = await reachable(registry, headers);
  const list = await request(`${base}/v2/${repo}/tags/list`, { headers });
  const body = (await list.body.json().catch(() => null)) as { tags?: string[] | null } | null;
  if (list.statusCode === 404) return;
  if (list.statusCode !== 200) throw new Error(`the registry ${registry} answered ${list.statusCode} to the list of ${repo}'s tags`);
  for (const tag of body?.tags ?? []) {
    const head = await request(`${base}/v2/${repo}/manifests/${encodeURIComponent(tag)}`, { method: 'HEAD', headers: { ...headers, accept: MANIFESTS } });
    await head.body.dump();
    const digest = head.headers['docker-content-digest'];
    if (head.statusCode !== 200 || typeof digest !== 'string') continue;
    const del = await request(`${base}/v2/${repo}/manifests/${digest}`, { method: 'DELETE', headers });
    await del.body.dump();
    // 404: another tag of the same manifest took it already.
    if (del.statusCode !== 202 && del.statusCode !== 404)
      throw new Error(`the registry ${registry} answered ${del.statusCode} to the deletion of ${repo}:${tag}`);
  }
}

/** The registry's base URL: https:// when it answers TLS, else http://. */
async function reachable(registry: string, headers: Record<string, string>): Promise<string> {
  for (const scheme of ['https', 'http']) {
    const r = await request(`${scheme}://${registry}/v2/`, { headers, headersTimeout: 10_000 }).catch(() => null);
    if (!r) continue;
    await r.body.dump();
    return `${scheme}://${registry}`;
  }
  throw new Error(`the registry ${registry} does not answer over HTTPS or HTTP`);
}
