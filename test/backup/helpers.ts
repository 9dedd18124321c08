import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { extract as tarExtract, pack as tarPack, type Headers } from 'tar-stream';
import { EntryDigest, MANIFEST, TRAILER } from '../../src/features/backup/archive.js';
import { cli } from '../appliance/cli-helpers.js';
import { record, subscribe, untilEnd } from '../helpers/chat.js';
import { boot, type Running, tempHome } from '../helpers/nodes.js';
import { request } from '../helpers/socket.js';

/**
 * What the backup round-trip tests share (backup-restore, backup-archives and backup-restore-url
 * .test.ts, split so that each file stays well under a minute): a live install with chats, files,
 * checkpoints and a second user's key, its backup, and what a client sees of it.
 */

/** The fake model: `one` writes a.txt, `two` edits it, anything else is echoed. */
export function script(body: any) {
  const last = body.messages.at(-1);
  if (last.role === 'tool') return { text: ['done'] };
  const user = [...body.messages].reverse().find((m: any) => m.role === 'user').content as string;
  if (user === 'one') return { toolCalls: [{ name: 'Write', args: { file_path: 'a.txt', content: 'v1\n' } }] };
  if (user === 'two') return { toolCalls: [{ name: 'Edit', args: { file_path: 'a.txt', old_string: 'v1', new_string: 'v2' } }] };
  return { text: [`echo ${user}`] };
}

/** The body of a 200 answer, else an error naming the URL and the status. */
export const json = async (r: Response) => {
  if (r.status !== 200) throw new Error(`${r.url}: ${r.status} ${await r.text()}`);
  return r.json() as Promise<any>;
};

/** What a client sees of the install, for comparing before and after. */
export async function served(n: Running, sid: string) {
  const me = await json(await n.api('/api/auth/me'));
  const sessions = (await json(await n.api('/api/sessions'))).items.map((s: any) => [s.id, s.intent, s.created_at]);
  const messages = (await json(await n.api(`/api/sessions/${sid}/messages`))).map((m: any) => [m.id, m.role, JSON.stringify(m.blocks)]);
  const checkpoints = (await json(await n.api(`/api/sessions/${sid}/checkpoints`))).map((c: any) => [c.checkpoint_id, c.label, c.files]);
  const file = await (await n.api(`/api/sessions/${sid}/files/a.txt`)).text();
  return { me: [me.id, me.username], sessions, messages, checkpoints, file };
}

/** sha256 of every regular file below `dir` (links as their targets), by relative path. */
export function tree(dir: string, rel = ''): Record<string, string> {
  const out: Record<string, string> = {};
  for (const e of readdirSync(join(dir, rel), { withFileTypes: true })) {
    const r = rel ? `${rel}/${e.name}` : e.name;
    if (e.isSymbolicLink()) out[r] = `-> ${readlinkSync(join(dir, r))}`;
    else if (e.isDirectory()) Object.assign(out, tree(dir, r));
    else out[r] = createHash('sha256').update(readFileSync(join(dir, r))).digest('hex');
  }
  return out;
}

/**
 * The objects of every snapshot store below `dir` (id, type, size), by store: what a store holds,
 * whether loose or packed (the live install packs its loose objects when a session goes idle,
 * which may be after the backup read them).
 */
export function storeObjects(dir: string): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  const walk = (rel: string) => {
    for (const e of readdirSync(join(dir, rel), { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (!e.isDirectory()) continue;
      if (!e.name.endsWith('.git')) {
        walk(r);
        continue;
      }
      const listed = spawnSync('git', ['--git-dir', join(dir, r), 'cat-file', '--batch-all-objects', '--batch-check'], { encoding: 'utf8' });
      out[r] = listed.stdout.trim().split('\n').sort();
    }
  };
  walk('');
  return out;
}

export type TarEntry = { header: Headers; data: Buffer };

export async function tarEntries(tar: Buffer): Promise<TarEntry[]> {
  const ex = tarExtract();
  const out: TarEntry[] = [];
  const read = (async () => {
    for await (const e of ex as unknown as AsyncIterable<AsyncIterable<Buffer> & { header: Headers }>) {
      const parts: Buffer[] = [];
      for await (const c of e) parts.push(c);
      out.push({ header: e.header, data: Buffer.concat(parts) });
    }
  })();
  ex.end(tar);
  await read;
  return out;
}

/** The entries packed again in the order given, as archive format `version`, the trailer's checksum made anew. */
export async function repack(entries: TarEntry[], version: number): Promise<Buffer> {
  const digest = new EntryDigest();
  const p = tarPack();
  const chunks: Buffer[] = [];
  p.on('data', (c: Buffer) => chunks.push(c));
  const ended = once(p, 'end');
  for (const { header, data: original } of entries) {
    let data = original;
    if (header.name === MANIFEST) data = Buffer.from(JSON.stringify({ ...JSON.parse(data.toString()), version }));
    if (header.name === TRAILER) data = Buffer.from(JSON.stringify({ ...JSON.parse(data.toString()), entries: digest.entries, bytes: digest.bytes, sha256: digest.digest() }));
    else {
      digest.begin(header.name, header.type!, header.linkname ?? '');
      digest.data(data);
    }
    p.entry({ ...header, size: data.length }, data);
  }
  p.finalize();
  await ended;
  return Buffer.concat(chunks);
}

/**
 * A running `up` on `env` with bob's key (made by the CLI), a session of two chats (two
 * checkpoints), 3 MiB of random bytes and a link out of the tree in its folder.
 */
export async function liveInstall(t: any, env: Record<string, string>) {
  const up = await boot(t, env);
  const bob = JSON.parse(cli(['keys', 'create', '--name', 'bob-laptop', '--user', 'bob', '--create-user', '--json'], { AGENTSVC_HOME: env.AGENTSVC_HOME, ...(env.DATABASE_URL ? { DATABASE_URL: env.DATABASE_URL } : {}) }).stdout);
  const { session_id: sid } = await json(await up.api('/api/sessions', { method: 'POST', json: { intent: 'backup me' } }));
  const sock = await up.socket();
  const seen = record(sock);
  await subscribe(sock, sid);
  for (const [i, message] of ['one', 'two'].entries()) {
    t.equal((await request(sock, 'chat:send', { session_id: sid, message })).ok, true, `chat ${message}`);
    await untilEnd(seen, sid, 30_000, i + 1);
  }
  // Bytes no text API would carry, and a link out of the tree that must stay a link.
  const user = (await json(await up.api('/api/auth/me'))).id;
  const folder = join(env.AGENTSVC_HOME, 'workspaces', user, sid);
  writeFileSync(join(folder, 'blob.bin'), randomBytes(3 * 1024 * 1024 + 17));
  symlinkSync('/etc/hostname', join(folder, 'leak'));
  return { up, sid, bob: bob.plaintext as string, user };
}

/**
 * An embedded-database install live with `liveInstall`, backed up while it runs to a .tar.gz in a
 * folder of its own (removed at teardown); `backup` is the CLI's answer.
 */
export async function backedUp(t: any, modelEnv: Record<string, string>) {
  const home = tempHome(t);
  const live = await liveInstall(t, { ...modelEnv, AGENTSVC_HOME: home });
  const out = mkdtempSync(join(tmpdir(), 'agentsvc-backup-'));
  t.teardown(() => rmSync(out, { recursive: true, force: true }));
  const archive = join(out, 'install.tar.gz');
  const backup = cli(['backup', '-o', archive, '--json'], { AGENTSVC_HOME: home });
  return { ...live, home, out, archive, backup };
}
