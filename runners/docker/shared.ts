import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type Dockerode from 'dockerode';

/**
 * `<AGENTSVC_HOME>/shared` in every container, read-only, where the local runner shows it
 * (/opt/agentsvc): what the service fetched on the host for the computers, e.g. the npm shelf of
 * MCP servers launched with `npx` (plugins/mcp/npx.ts, docs/mcp-servers.md). npx in the container
 * runs offline from it, as in the local runner: the container's network stays as the runner's
 * setting says (none, or only the egress proxy), and the registry is reached by the host's fetch
 * alone. The bind is made when the container is; the folder is made first so the bind always has
 * a source, and what is fetched into it later shows through.
 */
export const SHARED_IN_CONTAINER = '/opt/agentsvc';
/** Containers made with the shared mount carry this label; older ones are made again (the workspace stays). */
export const LABEL_SHARED = 'agentsvc.shared';

export async function sharedMount(home: string): Promise<Dockerode.MountSettings> {
  const source = join(home, 'shared');
  await mkdir(source, { recursive: true, mode: 0o755 });
  return { Type: 'bind', Source: source, Target: SHARED_IN_CONTAINER, ReadOnly: true };
}

/** Whether a found container has the shared mount (made by this version). */
export const hasShared = (c: Dockerode.ContainerInfo) => c.Labels?.[LABEL_SHARED] === '1';
