import { join } from 'node:path';

/**
 * Host folder of a user's computer workspace (local dir, or the docker runner's bind-mount source),
 * in the default layout (AGENTSVC_WORKSPACES unset: <home>/workspaces).
 */
export function userFolderDir(home: string, userId: string): string {
  return join(home, 'workspaces', userId);
}

/** Host folder of one session inside its user's workspace. */
export function sessionHostDir(home: string, userId: string, sessionId: string): string {
  return join(userFolderDir(home, userId), sessionId);
}
