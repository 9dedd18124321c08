/**
 * The Docker daemon's client: dockerode, loaded only when a docker runner is made, pointed at the
 * configured daemon, and what the runner's messages say about where that daemon is.
 */
import { createRequire } from 'node:module';
import type Dockerode from 'dockerode';

/**
 * dockerode, loaded when a docker runner is made: through docker-modem it loads ssh2, whose
 * poly1305 module reserves 16 MiB of WebAssembly memory at load, in every process that imports it,
 * local-runner services and CLI commands included.
 */
let loaded: typeof Dockerode | null = null;
const dockerode = (): typeof Dockerode => (loaded ??= createRequire(import.meta.url)('dockerode') as typeof Dockerode);

/** A client of the daemon at `host` (unix:///path or tcp://host:port); none: DOCKER_HOST, else the local socket. */
export function dockerFrom(host: string | undefined): Dockerode {
  const Client = dockerode();
  if (!host) return new Client();
  if (host.startsWith('unix://')) return new Client({ socketPath: host.slice('unix://'.length) });
  const u = new URL(host.includes('://') ? host : `tcp://${host}`);
  return new Client({ host: u.hostname, port: u.port || 2375, protocol: u.protocol === 'https:' ? 'https' : 'http' });
}

/** Where the daemon is, for messages. */
export function describe(docker: Dockerode): string {
  const m = docker.modem as { socketPath?: unknown; host?: string; port?: string | number; protocol?: string };
  if (typeof m.socketPath === 'string') return `unix://${m.socketPath}`;
  if (m.socketPath) return 'unix:///var/run/docker.sock';
  return `${m.protocol ?? 'http'}://${m.host}:${m.port}`;
}

/** The HTTP status of a daemon API error (404: no such object, 409: conflict, 304: nothing to do). */
export function status(e: unknown): number | undefined {
  return (e as { statusCode?: number } | null)?.statusCode;
}
