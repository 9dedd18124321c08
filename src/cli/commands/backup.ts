import { createWriteStream, type WriteStream } from 'node:fs';
import { once } from 'node:events';
import { access, type FileHandle, open, rename, rm } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { finished } from 'node:stream/promises';
import { createGzip, constants as zlib } from 'node:zlib';
import { Flags } from '@oclif/core';
import { BaseCommand } from '../base.js';
import { human, Progress } from '../terminal/progress.js';
import { writeBackup } from '../../features/backup/backup.js';

/** The rename is durable once the folder holding the name is synced. */
async function syncFolder(dir: string): Promise<void> {
  const fh = await open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/** Archive bytes written between two syncs while it is written. */
const SYNC_EVERY = 128 * 1024 * 1024;

/**
 * Syncs the archive while it is still being written, through a descriptor of its own: the disk
 * writes meanwhile, and the fsync at the end (before the rename) waits only for the last part
 * instead of the whole archive (0.3-0.5 s of a GiB).
 */
class SyncBehind {
  private readonly fh: Promise<FileHandle | null>;
  private synced = 0;
  private running: Promise<void> | null = null;

  constructor(
    private readonly out: WriteStream,
    path: string,
  ) {
    this.fh = once(out, 'open').then(
      () => open(path, 'r'),
      () => null,
    );
    this.fh.catch(() => {});
  }

  /** Called as the archive grows: starts a sync when enough was written since the last one. */
  async poke(): Promise<void> {
    if (this.running || this.out.bytesWritten - this.synced < SYNC_EVERY) return;
    const upTo = this.out.bytesWritten;
    this.running = (async () => {
      await (await this.fh.catch(() => null))?.datasync();
      this.synced = upTo;
    })()
      .catch(() => {}) // only a head start: the fsync at the end is the one that counts
      .finally(() => {
        this.running = null;
      });
  }

  async close(): Promise<void> {
    await this.running;
    await (await this.fh.catch(() => null))?.close();
  }
}

const stamp = () => new Date().toISOString().replace(/[-:]/g, '').replace(/\..*/, '').replace('T', '-');

export default class Backup extends BaseCommand<typeof Backup> {
  static summary = 'Back up the whole install (database, workspaces, checkpoints, skills, config) into one archive';
  static description =
    'Works while `up` runs: the rows come from one database snapshot (REPEATABLE READ), then the files follow. The archive is a tar, gzip-compressed when the name ends in .gz or .tgz; it is written as FILE.part and renamed when complete. Restore it with `agentsvc restore`.';
  static examples = ['<%= config.bin %> backup', '<%= config.bin %> backup -o /backups/agentsvc.tar.gz --json', '<%= config.bin %> backup -o agentsvc.tar'];
  static flags = {
    output: Flags.string({ char: 'o', description: 'archive to write (default agentsvc-backup-<UTC time>.tar.gz)' }),
    force: Flags.boolean({ char: 'f', description: 'overwrite the file when it exists' }),
    json: Flags.boolean({ description: 'print the result as JSON' }),
  };

  async run(): Promise<void> {
    const file = this.flags.output ?? `agentsvc-backup-${stamp()}.tar.gz`;
    if (!this.flags.force && (await access(file).then(() => true, () => false))) this.fail(new Error(`${file} exists; pass --force to overwrite, or -o another file`));
    const part = `${file}.part`;
    const progress = new Progress(process.stderr, 'backing up');
    const started = Date.now();
    // flush: the archive is on disk (fsync) before it takes its name.
    const out = createWriteStream(part, { mode: 0o600, flush: true });
    // Level 1: most of an install is already-compressed or random bytes; a higher level costs CPU, not size.
    const gzip = /\.(t?gz)$/.test(file) ? createGzip({ level: 1, memLevel: zlib.Z_DEFAULT_MEMLEVEL }) : null;
    if (gzip) gzip.pipe(out);
    const behind = new SyncBehind(out, part);
    const removePart = () => rm(part, { force: true });
    process.once('SIGINT', () => void removePart().then(() => process.exit(130)));
    let r: Awaited<ReturnType<typeof writeBackup>>;
    try {
      r = await writeBackup(this.cfg, gzip ?? out, (s) => {
        progress.update({ bytes: s.bytes, entries: s.entries, phase: s.phase });
        void behind.poke();
      }).finally(() => behind.close());
      if (!out.closed) await finished(out); // closed only after the flush
      await rename(part, file);
      await syncFolder(dirname(resolve(file)));
    } catch (e) {
      progress.clear();
      await removePart();
      this.fail(e);
    }
    progress.finish();
    const seconds = (Date.now() - started) / 1000;
    const rows = Object.values(r.rows).reduce((a, b) => a + b, 0);
    // The archive holds users' model keys encrypted, never the key that decrypts them.
    if (r.rows.model_credentials) this.logToStderr(`agentsvc: the archive holds ${r.rows.model_credentials} personal model key(s), encrypted; the secret key (AGENTSVC_HOME/secret.key or AGENTSVC_SECRET_KEY) is not in it: keep it apart, a restore cannot decrypt them without it (docs/model-keys.md)`);
    if (this.flags.json) return this.log(JSON.stringify({ file, ...r, seconds }, null, 2));
    this.log(`backed up to ${file}: ${r.tables} tables (${rows} rows), ${r.users} users' files, ${r.entries} entries, ${human(r.bytes)} in ${seconds.toFixed(1)} s`);
  }
}
