/** Exponential backoff (docs/models-and-usage.md): 0.5 s doubling per retry, capped at 20 s. */
export const BACKOFF_BASE_MS = 500;
export const BACKOFF_CAP_MS = 20_000;

/**
 * The wait before retry `n` (1-based): the exponential step with jitter between half and all of
 * it, so that runs that failed together do not retry together.
 */
export function backoffMs(n: number, random = Math.random): number {
  const step = Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** Math.max(0, n - 1));
  return Math.round(step * (0.5 + random() / 2));
}

/** Wait `ms`, or reject with the signal's reason the moment it aborts (chat:stop ends a backoff at once). */
export function sleepUnlessAborted(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(signal.reason ?? new Error('aborted'));
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason ?? new Error('aborted'));
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
