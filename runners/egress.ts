/**
 * The runners' side of the egress proxy (src/features/egress, docs/policy-network.md). With network
 * allowed, a computer has no route out: its only way to the network is a port on its own loopback
 * that pasta forwards to a listener of the proxy on the host's loopback (`-T`, spliced sockets, the
 * tap interface left down). Each listener is a lease that names who its connections are for.
 */

/** Who a connection is for: the audit's user, session and tool call. */
export interface EgressIdentity {
  userId: string;
  /** The session of the run that started the command; null when none is known. */
  sessionId: string | null;
  /** The Bash call that started it, when known. */
  toolCallId: string | null;
}

export interface EgressLease {
  /** The listener's port on the host's loopback; pasta forwards the same port inside the sandbox. */
  readonly port: number;
  /** Who later connections are for (a docker computer outlives one exec: the newest one's). */
  identify(who: EgressIdentity): void;
  /**
   * A credential for one exec of a shared computer: connections that present it (the proxy URL's
   * user info, sent as Proxy-Authorization) are that exec's; `release` forgets it.
   */
  credential(who: EgressIdentity): { user: string; release(): void };
  /** Stop listening and end the lease's connections. */
  close(): void;
}

export interface EgressPort {
  open(who: EgressIdentity): Promise<EgressLease>;
}

/**
 * The variables that send a sandbox's HTTP clients through the proxy on `port` of its loopback,
 * with `user` (a lease's credential) as the URL's user info when given.
 */
export function proxyEnv(port: number, user?: string): [string, string][] {
  const url = `http://${user ? `${user}@` : ''}127.0.0.1:${port}`;
  // The sandbox's own loopback is its own (servers it starts for itself): never through the proxy.
  const local = 'localhost,127.0.0.1,::1';
  return [
    ['HTTP_PROXY', url],
    ['HTTPS_PROXY', url],
    ['ALL_PROXY', url],
    ['http_proxy', url],
    ['https_proxy', url],
    ['all_proxy', url],
    ['NO_PROXY', local],
    ['no_proxy', local],
  ];
}
