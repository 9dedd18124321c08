import { PassThrough, type Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { MAX_JSON_DEPTH, jsonTextDeeperThan } from '../lib/storable.js';
import { AppError, Errors } from './errors.js';

/** A request body that sends nothing for this long is answered 408 (docs/errors.md: within 10 s). */
export const BODY_IDLE_MS = 8000;

/**
 * Guards of every request body, before anything reads it:
 * - a body that stops arriving (nothing for BODY_IDLE_MS) is answered 408 REQUEST_TIMEOUT, instead
 *   of holding its connection until the request timeout; a slow body that keeps arriving is not
 *   cut (it is the pause that counts, not the total). Multipart bodies are read by their routes at
 *   the pace of their own writes, so their pauses are not the client's: left alone.
 * - a JSON body nested deeper than MAX_JSON_DEPTH is a 422 before it is parsed, so no recursive
 *   walk (a schema, storable(), JSON.stringify) ever meets one.
 */
export function installBodyGuards(app: FastifyInstance) {
  app.addHook('preParsing', async (req, reply, payload) => {
    if (String(req.headers['content-type'] ?? '').startsWith('multipart/')) return payload;
    const guarded = idleLimited(payload, BODY_IDLE_MS);
    // Answered without reading the body (413 on its declared length, an error): nothing to wait for.
    reply.raw.once('close', () => guarded.destroy());
    return guarded;
  });
  const json = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    if (jsonTextDeeperThan(body as string, MAX_JSON_DEPTH)) {
      done(Errors.invalid(['body'], `nested deeper than ${MAX_JSON_DEPTH} levels`), undefined);
      return;
    }
    json(req, body as string, done);
  });
}

function idleLimited(payload: Readable, ms: number): Readable {
  const out = new PassThrough();
  const timer = setTimeout(() => {
    payload.unpipe(out);
    out.destroy(new AppError(408, 'REQUEST_TIMEOUT', `the request body stopped arriving (nothing for ${ms / 1000} s)`));
  }, ms);
  payload.on('data', () => timer.refresh());
  for (const ev of ['end', 'error', 'close']) payload.once(ev, () => clearTimeout(timer));
  out.once('close', () => clearTimeout(timer));
  // Whoever reads the body hears its errors; when nobody does any more, they are nobody's concern.
  out.on('error', () => {});
  payload.once('error', (e) => out.destroy(e));
  return payload.pipe(out);
}
