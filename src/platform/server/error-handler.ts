import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors, isResponseSerializationError } from 'fastify-type-provider-zod';
import { AppError, Errors, type FieldError, isStorageFull } from './errors.js';

function send(reply: FastifyReply, err: AppError) {
  return reply.code(err.status).type('application/json').send({ detail: err.detail, code: err.code });
}

function zodFields(err: FastifyError): FieldError[] {
  const ctx = (err as FastifyError & { validationContext?: string }).validationContext ?? 'body';
  return (err.validation ?? []).map((v) => {
    const params = (v.params ?? {}) as { issue?: { path?: (string | number)[]; code?: string; keys?: string[] } };
    const issue = params.issue;
    const path = issue?.path ?? String(v.instancePath ?? '').split('/').filter(Boolean);
    const keys = issue?.code === 'unrecognized_keys' && issue.keys ? `: ${issue.keys.join(', ')}` : '';
    return { loc: [ctx, ...path], msg: `${v.message}${keys}`, type: issue?.code ?? String(v.keyword ?? 'invalid') };
  });
}

/** Maps every error to the contract's body; hides internals of 5xx. */
export function installErrorHandler(app: FastifyInstance) {
  let lastStorageLog = 0;
  app.setErrorHandler((err: FastifyError, req: FastifyRequest, reply: FastifyReply) => {
    if (err instanceof AppError) return send(reply, err);
    if (hasZodFastifySchemaValidationErrors(err)) return send(reply, Errors.validation(zodFields(err)));
    if (err.validation) return send(reply, Errors.validation(zodFields(err)));
    if (isResponseSerializationError(err)) {
      req.log.error({ err }, 'response did not match its schema');
      return send(reply, new AppError(500, 'INTERNAL', 'internal server error'));
    }
    switch (err.code) {
      case 'FST_ERR_CTP_BODY_TOO_LARGE':
      case 'FST_REQ_FILE_TOO_LARGE':
      case 'FST_FILES_LIMIT':
      case 'FST_PARTS_LIMIT':
        return send(reply, Errors.tooLarge());
      case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
        return send(reply, new AppError(415, 'UNSUPPORTED_MEDIA_TYPE', err.message));
      // PostgreSQL refused a character (NUL, an unpaired surrogate) a schema let through: the input is at fault.
      case '22021':
      case '22P05':
        req.log.warn({ err }, 'input the database cannot store reached it; its schema should refuse it');
        return send(reply, Errors.invalid(['body'], 'contains characters that cannot be stored (NUL or unpaired surrogates)'));
      case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      case 'FST_ERR_CTP_INVALID_JSON_BODY':
        return send(reply, Errors.badRequest('INVALID_JSON', err.message));
    }
    if (isStorageFull(err)) {
      // Once a minute, not per request: a full disk fails every write at once.
      if (Date.now() - lastStorageLog > 60_000) {
        lastStorageLog = Date.now();
        req.log.error({ err }, 'storage is full: writes fail with 507 until space is freed');
      }
      return send(reply, Errors.storageFull());
    }
    const status = err.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      const code = err instanceof SyntaxError ? 'INVALID_JSON' : (err.code ?? 'BAD_REQUEST');
      return send(reply, new AppError(status, code, err.message));
    }
    req.log.error({ err }, 'unhandled error');
    return send(reply, new AppError(500, 'INTERNAL', 'internal server error'));
  });

  app.setNotFoundHandler((req, reply) => send(reply, new AppError(404, 'NOT_FOUND', `no route ${req.method} ${req.url.split('?')[0]}`)));
}
