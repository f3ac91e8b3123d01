// Release images reach the swarm's nodes (docs/scaling.md): built on the manager's engine as the
// container host builds them, then pushed to the registry every node pulls from
// (SLIPWAY_SWARM_REGISTRY), or, without one, copied into each node's engine that lacks them
// (`docker save | docker load` through the API, which keeps the image id: scripts/start-swarm.sh's
// `load`). A node whose engine does not answer is skipped: it gets the image the next time.
import type { Readable } from 'node:stream';
import type Docker from 'dockerode';
import { missing, progress } from '../container/engine.js';

/** The reference services name a release's image by: the registry's copy, or the tag every node holds. */
export const imageRef = (registry: string | null, tag: string) => (registry ? `${registry}/${tag}` : tag);

/** Makes `tag` (on the manager's engine) available to every node; `say` notes what was done. */
export async function distribute(
  manager: Docker,
  registry: string | null,
  nodes: Map<string, Docker>,
  tag: string,
  say: (message: string) => void,
): Promise<void> {
  if (registry) {
    const [repo, version] = imageRef(registry, tag).split(/:(?=[^:/]+$)/) as [string, string];
    await manager.getImage(tag).tag({ repo, tag: version });
    // An empty login (anonymous): an engine may refuse a push without the X-Registry-Auth header.
    await progress(manager, await manager.getImage(`${repo}:${version}`).push({ authconfig: {} }), () => {});
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
