// The simulated runtime's shell: a small fake shell behind the process terminal, so clients can
// test their terminal handling. Input is read as lines (ending in \n or \r); it knows `echo`,
// `env`/`printenv`, `pwd`, `whoami`, `hostname`, `true`, `false` and `exit [status]`, expands
// `$NAME`, `${NAME}` and `$?`, honours single and double quotes, and answers anything else with
// "not found" (status 127). A real runtime driver gives a real shell through the same interface.

export interface ShellSpec {
  /** The requested shell (`sh`, `bash`, ...): it names the shell in messages and picks the prompt. */
  shell: string;
  hostname: string;
  /** The process's resolved runtime environment. */
  env: Record<string, string>;
}

export interface ShellIO {
  /** Output (stdout and stderr) to the client. */
  output(text: string): void;
  /** The shell ended with this status. */
  exit(status: number): void;
}

export interface ShellSession {
  /** Input (stdin) from the client. */
  input(text: string): void;
  /** Ends the shell (the client left or the session timed out). */
  close(): void;
}

const CWD = '/app';

export class SimulatedShell implements ShellSession {
  private pending = '';
  private status = 0;
  private closed = false;

  constructor(
    private spec: ShellSpec,
    private io: ShellIO,
  ) {
    io.output(this.prompt());
  }

  private prompt(): string {
    return `${this.spec.hostname}:${CWD}${['csh', 'tcsh', 'zsh'].includes(this.spec.shell) ? '%' : '$'} `;
  }

  input(text: string): void {
    if (this.closed) return;
    this.pending += text;
    for (let m = /\r\n|\n|\r/.exec(this.pending); m && !this.closed; m = /\r\n|\n|\r/.exec(this.pending)) {
      const line = this.pending.slice(0, m.index);
      this.pending = this.pending.slice(m.index + m[0].length);
      this.run(line);
    }
  }

  close(): void {
    this.closed = true;
  }

  private run(line: string): void {
    let words: string[];
    try {
      words = this.words(line);
    } catch (e) {
      this.status = 2;
      this.io.output(`${this.spec.shell}: ${(e as Error).message}\n${this.prompt()}`);
      return;
    }
    const [cmd, ...args] = words;
    let out = '';
    if (cmd === undefined) {
      // an empty line: just the prompt again
    } else if (cmd === 'exit') {
      const status = args[0] !== undefined && /^\d+$/.test(args[0]) ? Number(args[0]) % 256 : this.status;
      this.closed = true;
      this.io.output('exit\n');
      this.io.exit(status);
      return;
    } else if (cmd === 'echo') {
      const noNewline = args[0] === '-n';
      out = (noNewline ? args.slice(1) : args).join(' ') + (noNewline ? '' : '\n');
      this.status = 0;
    } else if (cmd === 'env' || (cmd === 'printenv' && !args.length)) {
      out = Object.keys(this.spec.env)
        .sort()
        .map((k) => `${k}=${this.spec.env[k]}\n`)
        .join('');
      this.status = 0;
    } else if (cmd === 'printenv') {
      const found = args.filter((k) => k in this.spec.env);
      out = found.map((k) => `${this.spec.env[k]}\n`).join('');
      this.status = found.length === args.length ? 0 : 1;
    } else if (cmd === 'pwd') {
      out = `${CWD}\n`;
      this.status = 0;
    } else if (cmd === 'whoami') {
      out = 'app\n';
      this.status = 0;
    } else if (cmd === 'hostname') {
      out = `${this.spec.hostname}\n`;
      this.status = 0;
    } else if (cmd === 'true' || cmd === 'false') {
      this.status = cmd === 'true' ? 0 : 1;
    } else {
      out = `${this.spec.shell}: ${cmd}: not found\n`;
      this.status = 127;
    }
    this.io.output(out + this.prompt());
  }

  /** Splits a line into words: quotes group, `$NAME`, `${NAME}` and `$?` expand (not inside single quotes). */
  private words(line: string): string[] {
    const words: string[] = [];
    let word = '';
    let started = false;
    let quote: "'" | '"' | null = null;
    for (let i = 0; i < line.length; i++) {
      const ch = line[i]!;
      if (quote === "'") {
        if (ch === "'") quote = null;
        else word += ch;
      } else if (ch === '$') {
        const m = /^\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*)|(\?))/.exec(line.slice(i));
        if (!m) word += ch;
        else {
          word += m[3] ? String(this.status) : (this.spec.env[m[1] ?? m[2]!] ?? '');
          i += m[0].length - 1;
        }
        started = true;
      } else if (quote === '"') {
        if (ch === '"') quote = null;
        else if (ch === '\\' && i + 1 < line.length && '"\\$'.includes(line[i + 1]!)) word += line[++i];
        else word += ch;
      } else if (ch === "'" || ch === '"') {
        quote = ch;
        started = true;
      } else if (ch === '\\' && i + 1 < line.length) {
        word += line[++i];
        started = true;
      } else if (ch === ' ' || ch === '\t') {
        if (started) words.push(word);
        word = '';
        started = false;
      } else {
        word += ch;
        started = true;
      }
    }
    if (quote) throw new Error('unterminated quoted string');
    if (started) words.push(word);
    return words;
  }
}
