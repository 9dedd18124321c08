import { createWriteStream } from 'node:fs';
import { lchown, mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Transform } from 'node:stream';
import yauzl from 'yauzl';
import type { Database } from '../db/index.js';
import { SessionFolder } from '../files/confine.js';
import { newId, randomToken } from '../lib/ids.js';
import { AppError } from '../server/errors.js';
import { FORMAT, type Manifest, VERSION } from './archive.js';

export interface ImportLimits {
  /** At most this many entries (AGENTSVC_IMPORT_MAX_ENTRIES). */
  entries: number;
  /** At most this many bytes unpacked (AGENTSVC_IMPORT_MAX_BYTES). */
  bytes: number;
}

/**
 * A member over RATIO_FROM bytes unpacked to over MAX_RATIO times its packed size is a bomb, not a
 * session. Smaller members are let through whatever their ratio: deflate reaches ~1000x on
 * repetitive files a workspace really holds (logs, padded data), and our own exports must import.
 */
const MAX_RATIO = 200;
const RATIO_FROM = 16 << 20;
const JSON_NAMES = new Set(['manifest.json', 'turns.jsonl', 'branches.json', 'checkpoints.json', 'tasks.json', 'memories.json', 'annotations.json']);
/** Parts added after version 1 first shipped: absent from older archives, without a warning. */
const OPTIONAL = new Set(['annotations.json']);

const invalid = (why: string) => new AppError(422, 'INVALID_ARCHIVE', `not a session archive this server can import: ${why}`);

export interface Parsed {
  manifest: Manifest;
  docs: Map<string, string>;
  files: number;
  totalBytes: number;
  warnings: string[];
}

function openZip(path: string): Promise<yauzl.ZipFile> {
  return new Promise((resolve, reject) =>
    yauzl.open(path, { lazyEntries: true, autoClose: true, strictFileNames: true, validateEntrySizes: true }, (e, z) => (e ? reject(invalid(e.message)) : resolve(z!))),
  );
}

/** Refuse names that could land outside the folder, and anything but files and folders. */
function checkEntry(e: yauzl.Entry) {
  const name = e.fileName;
  if (!name || name.includes('\0') || name.includes('\\') || name.startsWith('/') || /^[A-Za-z]:/.test(name)) throw invalid(`entry ${JSON.stringify(name)} has an absolute or odd name`);
  if (name.split('/').some((p) => p === '..')) throw invalid(`entry ${JSON.stringify(name)} escapes the archive (..)`);
  const type = (e.externalFileAttributes >>> 16) & 0o170000;
  if (type !== 0 && type !== 0o100000 && type !== 0o040000) throw invalid(`entry ${JSON.stringify(name)} is a link or a device`);
  if (!name.endsWith('/') && !JSON_NAMES.has(name) && !name.startsWith('files/')) throw invalid(`unexpected entry ${JSON.stringify(name)}`);
}

/**
 * Read an uploaded archive as hostile input: entry count, unpacked size (declared and actual) and
 * compression ratio bounded, names and types checked, JSON parts read into memory, `files/`
 * unpacked into `into` (when given) and nowhere else.
 */
export async function readArchive(path: string, limits: ImportLimits, into: string | null): Promise<Parsed> {
  const zip = await openZip(path);
  if (zip.entryCount > limits.entries) {
    zip.close();
    throw invalid(`${zip.entryCount} entries, over ${limits.entries}`);
  }
  const docs = new Map<string, string>();
  let total = 0;
  let files = 0;
  try {
    await new Promise<void>((resolve, reject) => {
      zip.on('error', (e) => reject(e instanceof AppError ? e : invalid(e.message)));
      zip.on('end', () => resolve());
      zip.on('entry', (e: yauzl.Entry) => {
        void (async () => {
          checkEntry(e);
          total += e.uncompressedSize;
          if (total > limits.bytes) throw invalid(`over ${limits.bytes} bytes unpacked`);
          if (e.uncompressedSize > RATIO_FROM && e.uncompressedSize > e.compressedSize * MAX_RATIO) throw invalid(`entry ${JSON.stringify(e.fileName)} expands ${Math.round(e.uncompressedSize / Math.max(1, e.compressedSize))} times`);
          if (e.fileName.endsWith('/')) {
            if (into && e.fileName.startsWith('files/')) await mkdir(join(into, e.fileName), { recursive: true });
            return;
          }
          const read = await new Promise<NodeJS.ReadableStream>((res, rej) => zip.openReadStream(e, (err, s) => (err ? rej(invalid(err.message)) : res(s!))));
          // Counted as it is read: a size field that lies is caught too.
          let seen = 0;
          const counter = new Transform({
            transform(chunk: Buffer, _enc, cb) {
              seen += chunk.length;
              if (seen > e.uncompressedSize) return cb(invalid(`entry ${JSON.stringify(e.fileName)} is larger than it says`));
              cb(null, chunk);
            },
          });
          if (JSON_NAMES.has(e.fileName)) {
            const parts: Buffer[] = [];
            await pipeline(read, counter, async (src: AsyncIterable<Buffer>) => {
              for await (const c of src) parts.push(c);
            });
            docs.set(e.fileName, Buffer.concat(parts).toString('utf8'));
          } else {
            files++;
            if (into) {
              const dest = join(into, e.fileName);
              await mkdir(dirname(dest), { recursive: true });
              await pipeline(read, counter, createWriteStream(dest, { flags: 'wx', mode: 0o644 }));
            } else {
              await pipeline(read, counter, async (src: AsyncIterable<Buffer>) => {
                for await (const _ of src);
              });
            }
          }
        })().then(
          () => zip.readEntry(),
          (err) => {
            zip.close();
            reject(err instanceof AppError ? err : invalid((err as Error).message));
          },
        );
      });
      zip.readEntry();
    });
  } catch (e) {
    zip.close();
    throw e;
  }
  const raw = docs.get('manifest.json');
  if (!raw) throw invalid('no manifest.json');
  let manifest: Manifest;
  try {
    manifest = JSON.parse(raw);
  } catch {
    throw invalid('manifest.json is not JSON');
  }
  if (manifest?.format !== FORMAT) throw invalid(`format ${JSON.stringify(manifest?.format)}, expected ${FORMAT}`);
  if (!Number.isInteger(manifest.version) || Math.floor(manifest.version) !== VERSION) throw invalid(`version ${manifest.version}; this server reads version ${VERSION}`);
  const warnings: string[] = [];
  for (const n of JSON_NAMES) if (!docs.has(n) && !OPTIONAL.has(n)) warnings.push(`${n} missing: imported as empty`);
  return { manifest, docs, files, totalBytes: total, warnings };
}

// biome-ignore lint/suspicious/noExplicitAny: parsed archive JSON; each field is converted where it is used
type Json = any;

const lines = (s: string | undefined) => (s ?? '').split('\n').filter((l) => l.trim());
const arr = (s: string | undefined): Record<string, unknown>[] => {
  const v = s ? JSON.parse(s) : [];
  if (!Array.isArray(v)) throw invalid('a JSON part is not an array');
  return v;
};

export interface ImportDeps {
  db: Database;
  workspaces: string;
  sessions: { create(userId: string, input: { intent: string; model?: string | null; is_persistent: boolean; memory_enabled?: boolean | null }): Promise<string> };
  models: string[];
}

/**
 * Create the imported session: new ids for everything (entries, turns, tool calls, branches,
 * checkpoints), its files moved into place from `staged` (already unpacked and checked).
 * Checkpoints keep their place in the conversation; their workspace snapshots are not exported.
 */
export async function createFromArchive(d: ImportDeps, userId: string, p: Parsed, staged: string | null, name: string): Promise<string> {
  let turns: Json[];
  try {
    turns = lines(p.docs.get('turns.jsonl')).map((l) => JSON.parse(l));
  } catch {
    throw invalid('turns.jsonl is not JSON lines');
  }
  const branches = arr(p.docs.get('branches.json'));
  const checkpoints = arr(p.docs.get('checkpoints.json'));
  const tasks = arr(p.docs.get('tasks.json'));
  const memories = arr(p.docs.get('memories.json'));
  const annotations = arr(p.docs.get('annotations.json'));
  const m = p.manifest.session ?? ({} as Manifest['session']);
  const model = m.model && d.models.includes(m.model) ? m.model : null;
  const sid = await d.sessions.create(userId, { intent: (name || String(m.intent ?? '')).slice(0, 10000), model, is_persistent: !!m.is_persistent, memory_enabled: !!m.memory_enabled });
  const ids = new Map<string, string>();
  const remap = (old: unknown, prefix: 'entry' | 'turn' | 'tc' | 'br' | 'cp') => {
    if (typeof old !== 'string' || !old) return old;
    if (prefix === 'br' && old === 'main') return 'main';
    const key = `${prefix}:${old}`;
    if (!ids.has(key)) ids.set(key, newId(prefix));
    return ids.get(key)!;
  };
  try {
    await d.db.em().transactional(async (em) => {
      const q = (sql: string, params: unknown[]) => em.getConnection().execute(sql, params, 'all', em.getTransactionContext());
      for (const t of turns) {
        const calls = ((t.tool_calls as Json[]) ?? []).map((c) => ({ ...c, id: remap(c.id, 'tc'), pending_question_ref: c.pending_question_ref ? remap(c.pending_question_ref, 'tc') : null }));
        const blocks = ((t.blocks as Json[]) ?? []).map((b) => ({ ...b, tool_call_id: b.tool_call_id ? remap(b.tool_call_id, 'tc') : null }));
        const text = blocks.filter((b) => b.type === 'text').map((b) => b.content).join('\n');
        await q(
          `insert into turns (id, session_id, sequence, turn_id, loop_id, kind, role, status, blocks, tool_calls, content, model, usage, duration_ms, started_at, context_window,
             memory_refs, parent_fork_tool_call_id, text, extra, branch_id)
           values (?, ?, ?, ?, ?, ?, ?, ?, ?::jsonb, ?::jsonb, ?::jsonb, ?, ?::jsonb, ?, ?, ?, null, ?, ?, ?::jsonb, ?)`,
          [
            remap(t.id, 'entry'),
            sid,
            Number(t.sequence),
            remap(t.turn_id, 'turn'),
            String(t.loop_id ?? 'root'),
            String(t.kind ?? 'message'),
            String(t.role),
            t.status === 'streaming' ? 'interrupted' : String(t.status),
            JSON.stringify(blocks),
            JSON.stringify(calls),
            JSON.stringify(t.content ?? null),
            t.model ?? null,
            JSON.stringify(t.usage ?? { input_tokens: 0, output_tokens: 0 }),
            Number(t.duration_ms ?? 0),
            t.started_at ?? new Date().toISOString(),
            Number(t.context_window ?? 0),
            t.parent_fork_tool_call_id ? remap(t.parent_fork_tool_call_id, 'tc') : null,
            text,
            t.extra ? JSON.stringify(t.extra) : null,
            remap(t.branch_id ?? 'main', 'br'),
          ],
        );
      }
      for (const b of branches) {
        await q('insert into session_branches (session_id, id, parent_id, fork_sequence, deprecated) values (?, ?, ?, ?, ?::jsonb)', [
          sid,
          remap(b.id, 'br'),
          b.parent_id == null ? null : remap(b.parent_id, 'br'),
          b.fork_sequence ?? null,
          JSON.stringify(((b.deprecated as string[]) ?? []).map((x) => ids.get(`entry:${x}`) ?? ids.get(`turn:${x}`) ?? x)),
        ]);
      }
      for (const c of checkpoints) {
        await q('insert into checkpoints (id, session_id, turn_id, branch_id, sequence, label, files, tree, skipped) values (?, ?, ?, ?, ?, ?, ?, null, ?::jsonb)', [
          remap(c.id, 'cp'),
          sid,
          remap(c.turn_id, 'turn'),
          remap(c.branch_id ?? 'main', 'br'),
          Number(c.sequence),
          String(c.label ?? ''),
          Number(c.files ?? 0),
          JSON.stringify([{ path: '*', size: 0, reason: 'imported: the snapshot of this checkpoint was not exported' }]),
        ]);
      }
      for (const t of tasks) {
        await q('insert into session_tasks (session_id, id, subject, description, status, loop_id) values (?, ?, ?, ?, ?, ?)', [
          sid,
          Number(t.id),
          String(t.subject ?? ''),
          String(t.description ?? ''),
          String(t.status ?? 'pending'),
          String(t.loop_id ?? 'root'),
        ]);
      }
      for (const mem of memories) {
        await q('insert into memories (user_id, source_session, type, content, skill_name, record_type, scope, owner, topic, ext_memory_id, write_reason) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)', [
          userId,
          sid,
          mem.type === 'experience' ? 'experience' : 'feedback',
          String(mem.content ?? '').slice(0, 500),
          mem.skill_name ?? null,
          mem.record_type ?? null,
          mem.scope ?? null,
          mem.owner ?? null,
          mem.topic ?? null,
          mem.ext_memory_id ?? null,
          mem.write_reason ?? null,
        ]);
      }
      for (const a of annotations) {
        // The payload's new id; an annotation whose payload is not in the archive is dropped.
        const old = String(a.payload_id ?? '');
        const payload = ids.get(`entry:${old}`) ?? ids.get(`turn:${old}`) ?? ids.get(`tc:${old}`);
        if (!payload) continue;
        const data = a.data && typeof a.data === 'object' && !Array.isArray(a.data) ? a.data : {};
        await q('insert into payload_annotations (id, user_id, session_id, payload_id, label, note, data) values (?, ?, ?, ?, ?, ?, ?::jsonb)', [
          `ann_${randomToken(20)}`,
          userId,
          sid,
          payload,
          String(a.label ?? '').slice(0, 128),
          String(a.note ?? '').slice(0, 10_000),
          JSON.stringify(data),
        ]);
      }
      await q(`update sessions set status = ?, active_branch = ? where id = ?`, [turns.length ? 'completed' : 'created', remap(m.active_branch ?? 'main', 'br'), sid]);
    });
    if (staged) await placeFiles(d.workspaces, userId, sid, join(staged, 'files'));
    return sid;
  } catch (e) {
    await d.db.sql('delete from sessions where id = ?', [sid]).catch(() => {});
    throw e instanceof AppError ? e : invalid((e as Error).message);
  }
}

/** Move the unpacked files into the new session's folder, owned like the folder. */
async function placeFiles(workspaces: string, userId: string, sid: string, from: string) {
  const exists = await stat(from).then(
    () => true,
    () => false,
  );
  if (!exists) return;
  const folder = SessionFolder.of(workspaces, userId, sid);
  const s = (await folder.open(true))!;
  try {
    const owner = await s.fh.stat();
    for (const name of await readdir(from)) await rename(join(from, name), join(s.real, name));
    if (process.getuid?.() === 0 && owner.uid !== 0) {
      const walk = async (dir: string): Promise<void> => {
        for (const e of await readdir(dir, { withFileTypes: true })) {
          await lchown(join(dir, e.name), owner.uid, owner.gid).catch(() => {});
          if (e.isDirectory()) await walk(join(dir, e.name));
        }
      };
      await walk(s.real);
    }
  } finally {
    await s.close();
  }
}

export async function cleanup(dir: string) {
  await rm(dir, { recursive: true, force: true });
}
