// Encryption of secrets at rest (AES-256-GCM). The key comes from SLIPWAY_SECRET_KEY or, when
// unset, from a key file created once in the data directory.
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface SecretBox {
  encrypt(plain: string): string;
  decrypt(sealed: string): string;
  /** Names the key without revealing it: a snapshot carries it, and an import under another key is refused. */
  fingerprint: string;
}

export function loadSecretKey(secret: string | undefined, dataDir: string): Buffer {
  if (secret) return createHash('sha256').update(secret).digest();
  mkdirSync(dataDir, { recursive: true });
  const file = join(dataDir, 'secret.key');
  if (!existsSync(file)) writeFileSync(file, randomBytes(32).toString('hex'), { mode: 0o600, flag: 'wx' });
  return Buffer.from(readFileSync(file, 'utf8').trim(), 'hex');
}

export function createSecretBox(key: Buffer): SecretBox {
  return {
    fingerprint: createHash('sha256').update('slipway secret key fingerprint\0').update(key).digest('hex').slice(0, 16),
    encrypt(plain) {
      const iv = randomBytes(12);
      const c = createCipheriv('aes-256-gcm', key, iv);
      const enc = Buffer.concat([c.update(plain, 'utf8'), c.final()]);
      return `v1:${iv.toString('base64')}:${c.getAuthTag().toString('base64')}:${enc.toString('base64')}`;
    },
    decrypt(sealed) {
      const [v, iv, tag, enc] = sealed.split(':');
      if (v !== 'v1' || !iv || !tag || enc === undefined) throw new Error('unreadable sealed value');
      const d = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64'));
      d.setAuthTag(Buffer.from(tag, 'base64'));
      return Buffer.concat([d.update(Buffer.from(enc, 'base64')), d.final()]).toString('utf8');
    },
  };
}
