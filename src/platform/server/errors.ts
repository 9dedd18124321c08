/**
 * The error catalog: every error the API returns has a stable code and a status, and leaves as
 * `{"detail": string | array, "code": string}` (docs/errors.md).
 */
export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly detail: string | unknown[],
  ) {
    super(typeof detail === 'string' ? detail : code);
  }
}

export interface FieldError {
  loc: (string | number)[];
  msg: string;
  type: string;
}

export const Errors = {
  unauthorized: (detail = 'missing or invalid API key') => new AppError(401, 'UNAUTHORIZED', detail),
  forbidden: (detail = 'not allowed') => new AppError(403, 'FORBIDDEN', detail),
  notFound: (what = 'resource') => new AppError(404, 'NOT_FOUND', `${what} not found`),
  validation: (fields: FieldError[]) => new AppError(422, 'VALIDATION_ERROR', fields),
  invalid: (loc: (string | number)[], msg: string) => new AppError(422, 'VALIDATION_ERROR', [{ loc, msg, type: 'value_error' }]),
  conflict: (code: string, detail: string) => new AppError(409, code, detail),
  sessionBusy: () => new AppError(409, 'SESSION_BUSY', 'the session is running; wait for chat:end or send chat:stop'),
  tooLarge: (detail = 'request over the size limit') => new AppError(413, 'PAYLOAD_TOO_LARGE', detail),
  badRequest: (code: string, detail: string) => new AppError(400, code, detail),
  unavailable: (code: string, detail: string) => new AppError(503, code, detail),
  storageFull: () => new AppError(507, 'INSUFFICIENT_STORAGE', 'storage is full: nothing was changed; retry once space is freed'),
  rateLimited: (retryAfterSeconds: number) =>
    new AppError(429, 'RATE_LIMITED', `too many requests for this user; retry after ${retryAfterSeconds}s (AGENTSVC_RATE_LIMIT_PER_MINUTE)`),
};

/** PostgreSQL's insufficient_resources class (disk_full, out_of_memory) and the file system's own. */
const STORAGE_CODES = new Set(['53000', '53100', '53200', 'ENOSPC', 'EDQUOT']);

/** A full disk (or database): not bad input, and not an internal error either (docs/errors.md). */
export function isStorageFull(e: unknown): boolean {
  const err = e as { code?: unknown; message?: unknown };
  return STORAGE_CODES.has(String(err?.code)) || /no space left on device|could not extend file/i.test(String(err?.message ?? ''));
}
