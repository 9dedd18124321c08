import { Readable } from 'node:stream';
import { SessionFolder } from '../../core/files/confine.js';
import { type ZipStream, zipFolder } from '../../core/files/zip.js';
import { Errors } from '../../platform/server/errors.js';
import type { SessionTaskStore } from '../../core/agent-tools/session-tasks.js';
import type { TurnStore } from '../../core/conversation/turn-store.js';
import type { SessionService } from '../../core/sessions/service.js';
import type { AnnotationStore } from '../annotations/store.js';
import type { MemoryStore } from '../memories/store.js';
import { redactor, type SecretSources, sessionSecrets } from '../sharing/redact.js';
import type { TimeTravelStore } from '../timetravel/store.js';

/** The stores of a session's parts, each read (export) and written (import) through its owner. */
export interface SessionParts {
  sessions: Pick<SessionService, 'archived' | 'settleImported' | 'discardImported' | 'create'> & SecretSources['sessions'];
  turns: Pick<TurnStore, 'archiveSize' | 'archivePage' | 'insertArchived' | 'hasPayload'>;
  timetravel: Pick<TimeTravelStore, 'archivedBranches' | 'archivedCheckpoints' | 'insertArchivedBranch' | 'insertArchivedCheckpoint'>;
  tasks: Pick<SessionTaskStore, 'archived' | 'insertArchived'>;
  memories: Pick<MemoryStore, 'archived' | 'insertArchived'>;
  annotations: Pick<AnnotationStore, 'archived' | 'insertArchived'>;
  buckets: SecretSources['buckets'];
}

/** The format of a session archive (docs/sharing-and-portability.md). */
export const FORMAT = 'agentsvc-session';
export const VERSION = 1;

export interface Manifest {
  format: string;
  version: number;
  exported_at: string;
  session: { intent: string; model: string | null; mode: string; created_at: string; memory_enabled: boolean; is_persistent: boolean; disable_tools: string[]; active_branch: string };
  counts: { turns: number; branches: number; checkpoints: number; tasks: number; memories: number; annotations?: number };
}

/** Turns read at a time for turns.jsonl. */
const TURN_PAGE = 500;

/** turns.jsonl: one masked turn a line, a page of turns at a time. */
async function* turnLines(page: (after: number) => Promise<{ sequence: number }[]>, mask: <T>(v: T) => T): AsyncGenerator<Buffer> {
  for (let after = -(2 ** 31); ; ) { // below any sequence (an integer column)
    const rows = await page(after);
    if (!rows.length) return;
    yield Buffer.from(`${rows.map((r) => JSON.stringify(mask(r))).join('\n')}\n`);
    after = rows[rows.length - 1].sequence;
  }
}
const json = (v: unknown) => Buffer.from(JSON.stringify(v, null, 2));

/**
 * Export: manifest, every branch of turns (with their branch), branches, checkpoints (their
 * position; workspace snapshots stay behind), tasks, the memories this session wrote, and the
 * workspace under `files/` (links that stay inside kept as the file they point at, nothing outside).
 * Streamed: the workspace files are read one at a time as the archive is written. Env values never
 * go, and are masked where the conversation holds them.
 */
export async function exportSession(parts: SessionParts, workspaces: string, userId: string, sessionId: string): Promise<{ stream: ZipStream; intent: string }> {
  const s = await parts.sessions.archived(userId, sessionId);
  if (!s) throw Errors.notFound('session');
  // turns.jsonl is streamed a page at a time (100k turns held at once took the service +641 MiB),
  // up to the last turn there is now: a run going on meanwhile adds none, so counts.turns holds.
  const { n: turnCount, last, size: turnBytes } = await parts.turns.archiveSize(sessionId);
  const turnPage = (after: number) => parts.turns.archivePage(sessionId, after, last ?? -1, TURN_PAGE);
  const branches = await parts.timetravel.archivedBranches(sessionId);
  const checkpoints = await parts.timetravel.archivedCheckpoints(sessionId);
  const tasks = await parts.tasks.archived(sessionId);
  const memories = await parts.memories.archived(userId, sessionId);
  // Annotations on this session's payloads (docs/solutions-and-admin.md), keyed by the payload ids in turns.jsonl.
  const annotations = await parts.annotations.archived(userId, sessionId);
  // Secrets are masked in the values, before they are encoded (docs/sharing-and-portability.md): the files stay as the workspace holds them.
  const mask = redactor(await sessionSecrets({ sessions: parts.sessions, buckets: parts.buckets }, sessionId));
  const manifest: Manifest = {
    format: FORMAT,
    version: VERSION,
    exported_at: new Date().toISOString(),
    session: {
      intent: s.intent,
      model: s.model,
      mode: s.mode,
      created_at: new Date(s.created_at).toISOString(),
      memory_enabled: s.memory_enabled,
      is_persistent: s.is_persistent,
      disable_tools: s.disable_tools,
      active_branch: s.active_branch,
    },
    counts: { turns: Number(turnCount), branches: branches.length, checkpoints: checkpoints.length, tasks: tasks.length, memories: memories.length, annotations: annotations.length },
  };
  const extra = [
    { name: 'manifest.json', data: json(mask(manifest)) },
    { name: 'turns.jsonl', stream: () => Readable.from(turnLines(turnPage, mask)), sizeEstimate: Number(turnBytes ?? 0) },
    { name: 'branches.json', data: json(branches) },
    { name: 'checkpoints.json', data: json(mask(checkpoints)) },
    { name: 'tasks.json', data: json(mask(tasks)) },
    { name: 'memories.json', data: json(mask(memories)) },
    { name: 'annotations.json', data: json(mask(annotations)) },
  ];
  const folder = SessionFolder.of(workspaces, userId, sessionId);
  const open = await folder.open(false);
  if (!open) return { stream: await zipFolder(folder, null, null, { extra }), intent: s.intent };
  try {
    // The listing is made now, through the open folder; each file is opened (and confined) again when written.
    const root = await open.walk('', { follow: false });
    return { stream: await zipFolder(folder, open, root, { prefix: 'files/', extra }), intent: s.intent };
  } finally {
    await open.close();
  }
}
