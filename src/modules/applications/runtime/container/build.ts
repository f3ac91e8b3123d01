// Builds of the container host, each ending in an immutable image tag (`slipway/<app>:<deployment>`)
// recorded as the release: an image source is pulled (with the application's registry credential,
// unsealed only for the pull) and tagged; a repository is built from its Dockerfile
// (`build_type: dockerfile`, `dockerfile_path` in `docker_context`) or from a generated one
// (detect.ts). The engine's output streams into the build log; the layer cache is used unless the
// application turned its build cache off. Build-time variables reach a Dockerfile as the build
// args it declares (`ARG NAME`), and no others (the engine warns of every arg nobody declared).
import { existsSync } from 'node:fs';
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join, relative, resolve, sep } from 'node:path';
import type Docker from 'dockerode';
import type { CallContext } from '../../../../shared/context.js';
import { BuildError } from '../../../../shared/runtime/build.js';
import { registryLogin } from '../../../registry-credentials/index.js';
import type { ApplicationsTable, DeploymentsTable } from '../../storage.js';
import { parseProcfile, releaseDir, writeReleaseInfo } from '../release.js';
import { buildDir, type BuildSpec } from '../source.js';
import { detect } from './detect.js';
import { imageTag, progress, registryOf } from './engine.js';
import type { ContainerSettings } from './settings.js';

const GENERATED = '.slipway.Dockerfile';

/** The engine's progress messages into the build log, in order (a line that cannot be written is dropped). */
function engineLog(spec: BuildSpec) {
  let chain = Promise.resolve();
  return {
    line(message: string) {
      chain = chain.then(() => spec.log([{ message }])).catch(() => {});
    },
    flushed: () => chain,
  };
}

/** The work of the build phase (of the checkout phase for an image source). */
export async function buildPhase(
  docker: Docker,
  settings: ContainerSettings,
  root: string,
  ctx: CallContext,
  d: DeploymentsTable,
  a: ApplicationsTable,
  spec: BuildSpec,
): Promise<() => Promise<void>> {
  const login = a.docker_registry_credential_id ? await registryLogin(ctx, a.docker_registry_credential_id) : undefined;
  const tag = imageTag(a.id, d.id);
  const done = (info: { commitSha: string; commitMessage: string; procfile: Record<string, string> }) =>
    writeReleaseInfo(releaseDir(root, a.id, d.id), { ...info, image: tag });
  // Ends the engine's request when the deployment is cancelled or the build takes too long.
  const abort = () => {
    const c = new AbortController();
    const timer = setTimeout(() => c.abort(), spec.timeoutMs);
    spec.signal.addEventListener('abort', () => c.abort());
    return { signal: c.signal, clear: () => clearTimeout(timer) };
  };
  if (a.source === 'dockerImage') {
    const image = d.docker_image_url ?? a.docker_image;
    return async () => {
      if (!image) throw new BuildError('The application has no Docker image to deploy');
      const server = registryOf(image);
      const auth = login ? { username: login.username, password: login.password, serveraddress: server } : undefined;
      const using = login ? ` with registry credential "${login.name}"` : '';
      await spec.log([{ message: `Pulling ${image}${using}` }]);
      const out = engineLog(spec);
      const a2 = abort();
      try {
        const stream = await docker.pull(image, { ...(auth ? { authconfig: auth } : {}), abortSignal: a2.signal });
        await progress(docker, stream, (e) => e.status && !/^(Downloading|Extracting|Waiting)/.test(e.status) && out.line(e.status));
      } catch (e) {
        throw new BuildError(`Pulling ${image}${using} failed: ${(e as Error).message.trim()}`);
      } finally {
        a2.clear();
        await out.flushed();
      }
      const [repo, version] = tag.split(':') as [string, string];
      await docker.getImage(image).tag({ repo, tag: version });
      await done({ commitSha: '', commitMessage: '', procfile: {} });
      await spec.log([{ message: `Image ${image} tagged ${tag}` }]);
    };
  }
  return async () => {
    const src = join(buildDir(root, d.id), 'src');
    if (!existsSync(src)) throw new BuildError('The checkout is missing; deploy again');
    let context = src;
    let dockerfile: string;
    if (a.build_type === 'dockerfile') {
      context = resolve(src, a.docker_context || '.');
      const file = resolve(src, a.dockerfile_path || 'Dockerfile');
      if (!(context + sep).startsWith(src + sep) && context !== src) throw new BuildError(`docker_context "${a.docker_context}" is outside the repository`);
      if (!file.startsWith(context + sep)) throw new BuildError(`dockerfile_path "${a.dockerfile_path}" is not inside the build context`);
      if (!existsSync(file)) throw new BuildError(`No Dockerfile at ${relative(src, file)}`);
      dockerfile = relative(context, file);
      await spec.log([{ message: `Building ${relative(src, file)} (context ${relative(src, context) || '.'})` }]);
    } else {
      const found = detect(src, settings.images);
      if (!found)
        throw new BuildError(
          'Could not detect how to build: no package.json (Node.js), go.mod (Go), requirements.txt or pyproject.toml (Python) or index.html (static site); use build_type dockerfile',
        );
      await writeFile(join(src, GENERATED), `${found.dockerfile}\n`);
      dockerfile = GENERATED;
      await spec.log([{ message: `${found.kind} project detected; building from ${found.dockerfile.split('\n')[0]!.slice(5)}` }]);
    }
    // The cache is the application's own: only layers of its earlier images are reused (the
    // engine's shared layer cache would build one company's image from another's layers). An
    // application without an image yet names one that does not exist, so nothing is reused.
    const own = a.build_cache_enabled ? await ownImages(docker, a.id) : [];
    await spec.log([
      {
        message: !a.build_cache_enabled
          ? 'Build cache disabled: every layer is built anew'
          : own.length
            ? `Build cache: unchanged layers of this application's ${own.length === 1 ? 'last image' : `last ${own.length} images`} are reused`
            : 'Build cache: no earlier image of this application yet, every layer is built',
      },
    ]);
    const declared = [...(await readFile(join(context, dockerfile), 'utf8')).matchAll(/^\s*ARG\s+([A-Za-z_][A-Za-z0-9_]*)/gim)].map((m) => m[1]!);
    const buildargs = Object.fromEntries(declared.filter((k) => k in spec.env).map((k) => [k, spec.env[k]!]));
    const entries = (await readdir(context)).filter((n) => n !== '.git');
    const server = login ? registryOf(a.docker_image ?? '') : null;
    const out = engineLog(spec);
    const a2 = abort();
    try {
      const stream = await docker.buildImage(
        { context, src: entries },
        {
          t: tag,
          dockerfile,
          nocache: !a.build_cache_enabled,
          ...(a.build_cache_enabled ? { cachefrom: JSON.stringify(own.length ? own : [imageTag(a.id, 'none')]) } : {}),
          buildargs,
          rm: true,
          forcerm: true,
          labels: { 'slipway.app': a.id },
          ...(login && server ? { registryconfig: { [server]: { username: login.username, password: login.password } } } : {}),
          abortSignal: a2.signal,
        },
      );
      await progress(docker, stream, (e) => {
        const text = e.stream?.replace(/\n$/, '');
        if (text?.trim()) out.line(text);
      });
    } catch (e) {
      if (spec.signal.aborted) throw new BuildError('The build was stopped');
      throw new BuildError(`The image build failed: ${(e as Error).message.trim()}`);
    } finally {
      a2.clear();
      await out.flushed();
    }
    const procfile = existsSync(join(src, 'Procfile')) ? parseProcfile(await readFile(join(src, 'Procfile'), 'utf8')) : {};
    if (Object.keys(procfile).length) await spec.log([{ message: `Procfile: ${Object.keys(procfile).join(', ')}` }]);
    await done({ commitSha: d.commit_sha ?? '', commitMessage: d.commit_message ?? '', procfile });
    await rm(buildDir(root, d.id), { recursive: true, force: true });
    await spec.log([{ message: `Image ${tag} ready` }]);
  };
}

/** The application's images on the engine, newest first (at most 5): the sources of its build cache. */
async function ownImages(docker: Docker, appId: string): Promise<string[]> {
  const images = await docker.listImages({ filters: { reference: [imageTag(appId, '*')] } }).catch(() => []);
  return images
    .sort((x, y) => y.Created - x.Created)
    .flatMap((i) => i.RepoTags ?? [])
    .slice(0, 5);
}
