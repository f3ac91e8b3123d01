// Release images reach the swarm's nodes (docs/scaling.md): built on the manager's engine as the
// container host builds them, then pushed to the registry every node pulls from
// (SLIPWAY_SWARM_REGISTRY, with its login when it asks for one), or, without one, copied into each node's engine that lacks them
// (`docker save | docker load` through the API, which keeps the image id: scripts/start-swarm.sh's
// `load`). A node whose engine does not answer is skipped: it gets the image the next time.
import type { Readable } from 'node:stream';
import type Docker from 'dockerode';
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
