import { createHmac, randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { lchown, readdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Database, Sql } from '../../platform/db/index.js';
import { at, SessionFolder } from '../../core/files/confine.js';
import { QuotaExceededError, type StorageQuota } from '../../core/files/quota.js';
import { randomToken } from '../../platform/lib/ids.js';
import { AppError } from '../../platform/server/errors.js';
import type { Manifest, SessionParts } from './archive.js';
import { invalidArchive as invalid, jsonArray, jsonLines } from './json-parts.js';
import type { Parsed } from './read-archive.js';

export { type ImportLimits, type Parsed, readArchive } from './read-archive.js';

// biome-ignore lint/suspicious/noExplicitAny: parsed archive JSON; each field is converted where it is used
type Json = any;

export interface ImportDeps {
  db: Pick<Database, 'transaction'>;
  workspaces: string;
  /** The service's storage quota: the archive's files count against it. */
  quota: StorageQuota;
  /** The stores of the session's parts: each row goes in through its owner, all in one transaction. */
  parts: SessionParts;
  models: string[];
}

/**
 * New ids for an archive's old ones, the same old id always giving the same new one: a keyed hash
 * (a fresh key per import) instead of a table of every id seen, which for a large archive held
 * more memory than the rest of the import.
 */
function idMapper() {
  const key = randomBytes(32);
  const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';
  return (old: unknown, prefix: 'entry' | 'turn' | 'tc' | 'br' | 'cp'): unknown => {
    if (typeof old !== 'string' || !old) return old;
    if (prefix === 'br' && old === 'main') return 'main';
    const h = createHmac('sha256', key).update(`${prefix}:${old}`).digest();
    let id = '';
    for (let i = 0; i < 20; i++) id += ALPHABET[h[i] % 62];
    return `${prefix}_${id}`;
  };
}

/** A number field: NaN or Infinity would reach the database as a bare word, not a number. */
function num(v: unknown, what: string): number {
  const n = Number(v);
  if (!Number.isFinite(n)) throw invalid(`${what} is not a number`);
  return n;
}

/** An old id inside a list that may name an entry or a turn: mapped by its prefix, else kept. */
const byPrefix = (remap: ReturnType<typeof idMapper>, x: unknown) =>
  typeof x === 'string' && x.startsWith('entry_') ? remap(x, 'entry') : typeof x === 'string' && x.startsWith('turn_') ? remap(x, 'turn') : x;

/** One archived turn as the values of its row (the turn store's ARCHIVE_COLUMNS' order), with new ids. */
function turnRow(t: Json, sid: string, remap: ReturnType<typeof idMapper>): unknown[] {
  const calls = ((t.tool_calls as Json[]) ?? []).map((c) => ({ ...c, id: remap(c.id, 'tc'), pending_question_ref: pendingRef(c.pending_question_ref, remap) }));
  const blocks = ((t.blocks as Json[]) ?? []).map((b) => ({ ...b, tool_call_id: b.tool_call_id ? remap(b.tool_call_id, 'tc') : null }));
  const text = blocks.filter((b) => b.type === 'text').map((b) => b.content).join('\n');
  return [
    remap(t.id, 'entry'),
    sid,
    num(t.sequence, "a turn's sequence"),
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
    num(t.duration_ms ?? 0, 'duration_ms'),
    t.started_at ?? new Date().toISOString(),
    num(t.context_window ?? 0, 'context_window'),
    t.parent_fork_tool_call_id ? remap(t.parent_fork_tool_call_id, 'tc') : null,
    text,
    t.extra ? JSON.stringify(t.extra) : null,
    remap(t.branch_id ?? 'main', 'br'),
  ];
}

/**
 * `turns` rows written a statement per batch of at most BATCH_ROWS rows or about BATCH_CHARS
 * characters of values. A statement per turn made 100k turns take 47 s; large batches are no
 * better for memory: a batch lives across its round trip, outlives young-generation collections
 * and is promoted, and the old generation grows until the next full collection (200 rows or
 * 1 MiB a batch: +105 MiB RSS for 100k turns, against +26 to +37 a row at a time).
 */
const BATCH_ROWS = 32;
const BATCH_CHARS = 64 << 10;

class TurnBatch {
  private values: unknown[] = [];
  private count = 0;
  private chars = 0;
  /** Rows written so far. */
  rows = 0;

  constructor(
    private readonly q: Sql,
    private readonly turns: SessionParts['turns'],
  ) {}

  async add(row: unknown[]) {
    for (const v of row) {
      this.values.push(v);
      if (typeof v === 'string') this.chars += v.length;
    }
    this.count++;
    if (this.count >= BATCH_ROWS || this.chars >= BATCH_CHARS) await this.flush();
  }

  async flush() {
    if (!this.count) return;
    const values = this.values;
    const count = this.count;
    this.values = [];
    this.count = 0;
    this.chars = 0;
    await this.turns.insertArchived(this.q, count, values);
    this.rows += count;
  }
}

/**
 * Create the imported session: new ids for everything (entries, turns, tool calls, branches,
 * checkpoints), its files moved into place from `staged` (already unpacked and checked), its JSON
 * parts read from there a record at a time. Checkpoints keep their place in the conversation;
 * their workspace snapshots are not exported.
 */
export async function createFromArchive(d: ImportDeps, userId: string, p: Parsed, staged: string | null, name: string): Promise<string> {
  const empty = async function* () {};
  const part = (n: string): AsyncIterable<Buffer> => (staged && p.present.has(n) ? createReadStream(join(staged, n), { highWaterMark: 256 << 10 }) : empty());
  const m = p.manifest.session ?? ({} as Manifest['session']);
  const model = m.model && d.models.includes(m.model) ? m.model : null;
  const parts = d.parts;
  const sid = await parts.sessions.create(userId, { intent: (name || String(m.intent ?? '')).slice(0, 10000), model, is_persistent: !!m.is_persistent, memory_enabled: !!m.memory_enabled });
  const remap = idMapper();
  try {
    await d.db.transaction(async (q) => {
      // Turns go in by small batches, a statement each (TurnBatch).
      const batch = new TurnBatch(q, parts.turns);
      for await (const t of jsonLines(part('turns.jsonl'), 'turns.jsonl') as AsyncIterable<Json>) await batch.add(turnRow(t, sid, remap));
      await batch.flush();
      const turns = batch.rows;
      for await (const b of jsonArray(part('branches.json'), 'branches.json') as AsyncIterable<Json>) {
        await parts.timetravel.insertArchivedBranch(q, {
          session_id: sid,
          id: remap(b.id, 'br'),
          parent_id: b.parent_id == null ? null : remap(b.parent_id, 'br'),
          fork_sequence: b.fork_sequence ?? null,
          deprecated: ((b.deprecated as unknown[]) ?? []).map((x) => byPrefix(remap, x)),
        });
      }
      for await (const c of jsonArray(part('checkpoints.json'), 'checkpoints.json') as AsyncIterable<Json>) {
        await parts.timetravel.insertArchivedCheckpoint(q, {
          id: remap(c.id, 'cp'),
          session_id: sid,
          turn_id: remap(c.turn_id, 'turn'),
          branch_id: remap(c.branch_id ?? 'main', 'br'),
          sequence: num(c.sequence, "a checkpoint's sequence"),
          label: String(c.label ?? ''),
          files: num(c.files ?? 0, "a checkpoint's files"),
          skipped: [{ path: '*', size: 0, reason: 'imported: the snapshot of this checkpoint was not exported' }],
        });
      }
      for await (const t of jsonArray(part('tasks.json'), 'tasks.json') as AsyncIterable<Json>) {
        await parts.tasks.insertArchived(q, {
          session_id: sid,
          id: num(t.id, "a task's id"),
          subject: String(t.subject ?? ''),
          description: String(t.description ?? ''),
          status: String(t.status ?? 'pending'),
          loop_id: String(t.loop_id ?? 'root'),
        });
      }
      for await (const mem of jsonArray(part('memories.json'), 'memories.json') as AsyncIterable<Json>) {
        await parts.memories.insertArchived(q, userId, sid, {
          type: mem.type === 'experience' ? 'experience' : 'feedback',
          content: String(mem.content ?? '').slice(0, 500),
          skill_name: mem.skill_name ?? null,
          record_type: mem.record_type ?? null,
          scope: mem.scope ?? null,
          owner: mem.owner ?? null,
          topic: mem.topic ?? null,
          ext_memory_id: mem.ext_memory_id ?? null,
          write_reason: mem.write_reason ?? null,
        });
      }
      for await (const a of jsonArray(part('annotations.json'), 'annotations.json') as AsyncIterable<Json>) {
        // The payload's new id (its kind from its prefix); one whose payload is not among the
        // imported turns is dropped, which the database tells without a table of every id.
        const old = String(a.payload_id ?? '');
        const kind = old.startsWith('entry_') ? 'entry' : old.startsWith('turn_') ? 'turn' : old.startsWith('tc_') ? 'tc' : null;
        if (!kind) continue;
        const payload = remap(old, kind) as string;
        if (!(await parts.turns.hasPayload(q, sid, kind, payload))) continue;
        const data = a.data && typeof a.data === 'object' && !Array.isArray(a.data) ? a.data : {};
        await parts.annotations.insertArchived(q, {
          id: `ann_${randomToken(20)}`,
          user_id: userId,
          session_id: sid,
          payload_id: payload,
          label: String(a.label ?? '').slice(0, 128),
          note: String(a.note ?? '').slice(0, 10_000),
          data,
        });
      }
      await parts.sessions.settleImported(q, sid, turns ? 'completed' : 'created', remap(m.active_branch ?? 'main', 'br'));
    });
    if (staged) await placeFiles(d, userId, sid, join(staged, 'files'));
    return sid;
  } catch (e) {
    await parts.sessions.discardImported(sid).catch(() => {});
    if (e instanceof AppError || e instanceof QuotaExceededError) throw e;
    // The database's reason, without the statement the driver puts before it (internals).
    const msg = (e as Error).message;
    const at = msg.lastIndexOf(' - ');
    throw invalid(`a record could not be stored: ${(at >= 0 ? msg.slice(at + 3) : msg).slice(0, 300)}`);
  }
}

/**
 * Move the unpacked files into the new session's folder, owned like the folder. Ownership is
 * changed while the files are still in the service's private staging folder; the move into the
 * user's tree goes through the verified session folder's descriptor, never by host path.
 */
async function placeFiles(d: Pick<ImportDeps, 'workspaces' | 'quota'>, userId: string, sid: string, from: string) {
  const exists = await stat(from).then(
    () => true,
    () => false,
  );
  if (!exists) return;
  const folder = SessionFolder.of(d.workspaces, userId, sid, { quota: d.quota });
  // The whole import against the quota before anything moves in (the session is removed on failure).
  const bytes = await stagedBytes(from);
  await d.quota.check(userId, bytes);
  const s = (await folder.open(true))!;
  try {
    const owner = await s.fh.stat();
    if (process.getuid?.() === 0 && owner.uid !== 0) {
      const walk = async (dir: string): Promise<void> => {
        for (const e of await readdir(dir, { withFileTypes: true })) {
          await lchown(join(dir, e.name), owner.uid, owner.gid).catch(() => {});
          if (e.isDirectory()) await walk(join(dir, e.name));
        }
      };
      await walk(from);
    }
    for (const name of await readdir(from)) await rename(join(from, name), at(s.fh, name));
    d.quota.record(userId, bytes);
  } finally {
    await s.close();
  }
}

/** Bytes of the regular files staged below `dir` (the service's private staging folder). */
async function stagedBytes(dir: string): Promise<number> {
  let total = 0;
  for (const e of await readdir(dir, { withFileTypes: true })) {
    if (e.isDirectory()) total += await stagedBytes(join(dir, e.name));
    else if (e.isFile()) total += (await stat(join(dir, e.name))).size;
  }
  return total;
}

export async function cleanup(dir: string) {
  await rm(dir, { recursive: true, force: true });
}

/** A question's ref is its call id; an approval's is an object naming it (docs/policy.md): both get the new id. */
function pendingRef(ref: unknown, remap: (id: unknown, prefix: 'tc') => unknown): unknown {
  if (typeof ref === 'string' && ref) return remap(ref, 'tc');
  if (ref && typeof ref === 'object' && typeof (ref as { tool_call_id?: unknown }).tool_call_id === 'string') return { ...ref, tool_call_id: remap((ref as { tool_call_id: unknown }).tool_call_id, 'tc') };
  return null;
}
