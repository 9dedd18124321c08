/**
 * The service log: JSON lines in AGENTSVC_HOME/logs/agentsvc.log, rotated by size (docs/operations.md)
 * by rotating-file-stream (maintained, no dependencies; classical rotation: agentsvc.log.1 is the
 * newest old file, agentsvc.log.N the oldest, N = `keep`). `agentsvc logs` reads them back.
 */
import { basename, dirname } from 'node:path';
import { createStream, type RotatingFileStream } from 'rotating-file-stream';

export const LOG_FILES_KEPT = 5;

/** The file names of the log, newest last: agentsvc.log.N ... agentsvc.log.1, agentsvc.log. */
export function logFileNames(file: string, keep = LOG_FILES_KEPT): string[] {
  return [...Array.from({ length: keep }, (_, i) => `${file}.${keep - i}`), file];
}

export function openLogStream(file: string, maxBytes: number, keep = LOG_FILES_KEPT): RotatingFileStream {
  // A file name (not a generator) with `rotate`: rfs's classical names, agentsvc.log.1 ... .N.
  const stream = createStream(basename(file), {
    path: dirname(file),
    size: `${maxBytes}B`,
    rotate: keep,
    mode: 0o600,
  });
  // A line that cannot be written (a full disk, a write after close) must not stop the service.
  stream.on('error', () => {});
  return stream;
}
