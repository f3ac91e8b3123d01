// Auto-detection of how to build a repository without a Dockerfile (build types other than
// `dockerfile`, in the manner of nixpacks/railpack): Node.js (package.json), Go (go.mod), Python
// (requirements.txt or pyproject.toml) and a static site (index.html without package.json), each
// a generated Dockerfile from a base image the settings name. The image's command is the
// language's default; a Procfile or the process's entrypoint overrides it at run time.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ContainerSettings } from './settings.js';

export interface Detected {
  kind: 'Node.js' | 'Go' | 'Python' | 'static site';
  dockerfile: string;
}

const shellCmd = (command: string) => `CMD ["/bin/sh", "-c", ${JSON.stringify(command)}]`;

export function detect(src: string, images: ContainerSettings['images']): Detected | null {
  const has = (f: string) => existsSync(join(src, f));
  const head = (from: string) => [`FROM ${from}`, 'WORKDIR /app', 'COPY . .'];
  if (has('package.json')) {
    const lock = has('package-lock.json') || has('npm-shrinkwrap.json');
    return {
      kind: 'Node.js',
      dockerfile: [
        ...head(images.node),
        `RUN npm ${lock ? 'ci' : 'install'} --no-audit --no-fund`,
        'RUN npm run build --if-present',
        shellCmd('exec npm start'),
      ].join('\n'),
    };
  }
  if (has('go.mod')) {
    return {
      kind: 'Go',
      // The base image's toolchain builds, whatever go.mod asks for (no download).
      dockerfile: [...head(images.go), 'ENV GOTOOLCHAIN=local CGO_ENABLED=0', 'RUN go build -o /usr/local/bin/app .', 'CMD ["/usr/local/bin/app"]'].join('\n'),
    };
  }
  if (has('requirements.txt') || has('pyproject.toml')) {
    const reqs = has('requirements.txt') ? readFileSync(join(src, 'requirements.txt'), 'utf8') : '';
    const main = has('main.py') ? 'main.py' : 'app.py';
    const command = /^gunicorn\b/im.test(reqs) ? `exec gunicorn --bind 0.0.0.0:$PORT ${main.replace('.py', '')}:app` : `exec python ${main}`;
    return {
      kind: 'Python',
      dockerfile: [
        ...head(images.python),
        has('requirements.txt') ? 'RUN pip install --no-cache-dir -r requirements.txt' : 'RUN pip install --no-cache-dir .',
        shellCmd(command),
      ].join('\n'),
    };
  }
  if (has('index.html')) {
    return { kind: 'static site', dockerfile: [...head(images.static), shellCmd('exec python3 -m http.server "$PORT" --bind 0.0.0.0')].join('\n') };
  }
  return null;
}
