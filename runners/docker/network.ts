/**
 * A container's only way out (docs/policy-network.md): containers never join a Docker network
 * (NetworkMode none); with network allowed, pasta forwards one port of the container's loopback to
 * the egress proxy's listener for that computer on the host (runners/local/net.ts). That needs the
 * daemon on this host (pasta joins the container's namespace) and a root service; else commands
 * get no network at all.
 */
import type { ChildProcess } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import type Dockerode from 'dockerode';
import { addressOnlyEgress } from '../../src/features/egress/proxy.js';
import type { EgressLease, EgressPort } from '../egress.js';
import { attachNetwork } from '../local/net.js';

/** A container with, once attached, its proxy listener and the pasta forwarding it in. */
export interface Forwarded {
  container: Dockerode.Container;
  lease?: EgressLease;
  pasta?: ChildProcess | null;
}

export interface ContainerNetwork {
  /** Why commands get no network although it is allowed; null when they reach the proxy (or network is off). */
  readonly refusal: string | null;
  /**
   * The computer's proxy listener (one per computer; each exec names who its connections are for)
   * forwarded into the running container's namespace by pasta. Done after every start: a
   * restarted container has a new namespace. Nothing without network.
   */
  attach(b: Forwarded, userId: string): Promise<void>;
  /** Stop forwarding (the container stopped: its namespace is gone); the listener stays. */
  unforward(b: Forwarded): void;
  /** Stop forwarding and close the listener (the container is removed). */
  detach(b: Forwarded): void;
  /** Close the proxy this made for itself (none was given). */
  close(): void;
}

export function containerNetwork(o: {
  enabled: boolean;
  docker: Dockerode;
  /** The egress proxy (src/features/egress); default one that applies only the private-address rule. */
  egress?: EgressPort;
  inspect(c: Dockerode.Container): Promise<Dockerode.ContainerInspectInfo>;
}): ContainerNetwork {
  let own: ReturnType<typeof addressOnlyEgress> | null = null;
  const egress = (): EgressPort => o.egress ?? (own ??= addressOnlyEgress());
  const refusal = o.enabled ? networkRefusal(o.docker) : null;
  const unforward = (b: Forwarded) => {
    b.pasta?.kill('SIGKILL');
    b.pasta = null;
  };
  return {
    refusal,
    async attach(b, userId) {
      if (!o.enabled || refusal) return;
      b.lease ??= await egress().open({ userId, sessionId: null, toolCallId: null });
      unforward(b);
      const info = await o.inspect(b.container);
      if (!info.State?.Pid) throw new Error('the container has no process to attach the network to');
      b.pasta = await attachNetwork({ pasta: onPath('pasta') ?? 'pasta' }, info.State.Pid, true, b.lease.port);
    },
    unforward,
    detach(b) {
      unforward(b);
      b.lease?.close();
      b.lease = undefined;
    },
    close: () => own?.close(),
  };
}

function onPath(name: string): string | null {
  for (const dir of ['/usr/local/bin', '/usr/bin', '/bin', '/usr/sbin', '/sbin']) {
    try {
      accessSync(`${dir}/${name}`, constants.X_OK);
      return `${dir}/${name}`;
    } catch {}
  }
  return null;
}

/**
 * Why the proxy cannot be forwarded into containers: pasta must join a container's namespace,
 * which takes a daemon on this host (a unix socket) and a root service. Then no network at all.
 */
function networkRefusal(docker: Dockerode): string | null {
  if (process.getuid?.() !== 0) return 'the egress proxy is forwarded into containers only by a root service';
  if (!(docker.modem as { socketPath?: unknown }).socketPath) return 'the egress proxy needs the docker daemon on this host (a unix socket)';
  if (!onPath('pasta')) return 'the egress proxy needs pasta (package passt)';
  return null;
}
