// A minimal authoritative DNS server over UDP for the real-resolver tests: answers A, CNAME and TXT
// questions from records the test publishes; anything else is an empty NOERROR answer.
import { createSocket, type Socket } from 'node:dgram';

const TYPES = { A: 1, CNAME: 5, TXT: 16 } as const;
type RecordType = keyof typeof TYPES;

function encodeName(name: string): Buffer {
  const parts = name
    .replace(/\.$/, '')
    .split('.')
    .map((l) => {
      const b = Buffer.from(l, 'ascii');
      return Buffer.concat([Buffer.from([b.length]), b]);
    });
  return Buffer.concat([...parts, Buffer.from([0])]);
}

function rdata(type: RecordType, value: string): Buffer {
  if (type === 'A') return Buffer.from(value.split('.').map(Number));
  if (type === 'CNAME') return encodeName(value);
  const b = Buffer.from(value, 'utf8');
  return Buffer.concat([Buffer.from([b.length]), b]);
}

export class DnsServer {
  private socket: Socket = createSocket('udp4');
  private records = new Map<string, string[]>();
  port = 0;

  /** Publishes (or with no values, removes) the records of one name and type. */
  set(type: RecordType, name: string, ...values: string[]): void {
    const key = `${type} ${name.toLowerCase()}`;
    if (values.length) this.records.set(key, values);
    else this.records.delete(key);
  }

  async start(): Promise<void> {
    this.socket.on('message', (msg, rinfo) => {
      const reply = this.answer(msg);
      if (reply) this.socket.send(reply, rinfo.port, rinfo.address);
    });
    await new Promise<void>((resolve) => this.socket.bind(0, '127.0.0.1', resolve));
    this.port = this.socket.address().port;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.socket.close(() => resolve()));
  }

  private answer(msg: Buffer): Buffer | undefined {
    if (msg.length < 12) return undefined;
    let off = 12;
    const labels: string[] = [];
    while (off < msg.length && msg[off] !== 0) {
      const len = msg[off]!;
      labels.push(msg.subarray(off + 1, off + 1 + len).toString('ascii'));
      off += len + 1;
    }
    off += 1;
    const qtype = msg.readUInt16BE(off);
    const question = msg.subarray(12, off + 4);
    const name = labels.join('.').toLowerCase();
    const type = (Object.keys(TYPES) as RecordType[]).find((t) => TYPES[t] === qtype);
    const values = type ? (this.records.get(`${type} ${name}`) ?? []) : [];
    const answers = values.map((v) => {
      const data = rdata(type!, v);
      const head = Buffer.alloc(12);
      head.writeUInt16BE(0xc00c, 0); // pointer to the question's name
      head.writeUInt16BE(qtype, 2);
      head.writeUInt16BE(1, 4); // IN
      head.writeUInt32BE(1, 6); // ttl
      head.writeUInt16BE(data.length, 10);
      return Buffer.concat([head, data]);
    });
    const header = Buffer.alloc(12);
    msg.copy(header, 0, 0, 2); // id
    header.writeUInt16BE(0x8400 | (msg.readUInt16BE(2) & 0x0100), 2); // response, authoritative, RD echoed
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(answers.length, 6);
    return Buffer.concat([header, question, ...answers]);
  }
}
