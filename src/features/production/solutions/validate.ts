/**
 * Validation of production-solution documents (docs/solutions-and-admin.md). Every error carries a `path` into the
 * document (`nodes[2].type`, `edges[0].target`, `steps[1].node_ids[3]`) so a UI can show it next
 * to the node, edge or step it concerns.
 */

export interface DocError {
  path: string;
  message: string;
}

export const NODE_TYPES = ['input', 'output', 'agent', 'tool', 'condition', 'human'] as const;

/** What an agent node may name: a solution role, or an agent the caller owns. */
export interface References {
  roleExists(roleId: string, solutionId?: string): boolean;
  agentExists(agentId: string): boolean;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => !!v && typeof v === 'object' && !Array.isArray(v);
const nonEmpty = (v: unknown): v is string => typeof v === 'string' && v.trim().length > 0;

function arrayOf(doc: Obj, key: string, errors: DocError[]): Obj[] {
  const v = doc[key];
  if (v === undefined) return [];
  if (!Array.isArray(v)) {
    errors.push({ path: key, message: `${key} must be an array` });
    return [];
  }
  return v.map((x, i) => {
    if (!isObj(x)) errors.push({ path: `${key}[${i}]`, message: 'must be an object' });
    return isObj(x) ? x : {};
  });
}

/** Ids of one list: present, strings, unique. Returns id -> index for the valid ones. */
function ids(list: Obj[], key: string, what: string, errors: DocError[]): Map<string, number> {
  const seen = new Map<string, number>();
  list.forEach((x, i) => {
    if (!nonEmpty(x.id)) return void errors.push({ path: `${key}[${i}].id`, message: `${what} id is required (a non-empty string)` });
    if (seen.has(x.id)) return void errors.push({ path: `${key}[${i}].id`, message: `duplicate ${what} id ${JSON.stringify(x.id)} (also ${key}[${seen.get(x.id)}])` });
    seen.set(x.id, i);
  });
  return seen;
}

function nodeData(n: Obj, i: number, refs: References | null, errors: DocError[]): void {
  const at = `nodes[${i}].data`;
  const data = n.data === undefined ? {} : n.data;
  if (!isObj(data)) return void errors.push({ path: at, message: 'data must be an object' });
  switch (n.type) {
    case 'agent': {
      const hasRole = data.role_id !== undefined;
      const hasAgent = data.agent_id !== undefined;
      if (hasRole === hasAgent) errors.push({ path: at, message: 'an agent node names exactly one of role_id (a solution role) or agent_id (a production agent)' });
      if (hasRole && !nonEmpty(data.role_id)) errors.push({ path: `${at}.role_id`, message: 'role_id must be a non-empty string' });
      else if (hasRole && refs && !refs.roleExists(data.role_id as string, typeof data.solution_id === 'string' ? data.solution_id : undefined))
        errors.push({ path: `${at}.role_id`, message: `no solution role ${JSON.stringify(data.role_id)} (GET /api/solutions lists them)` });
      if (hasAgent && !nonEmpty(data.agent_id)) errors.push({ path: `${at}.agent_id`, message: 'agent_id must be a non-empty string' });
      else if (hasAgent && refs && !refs.agentExists(data.agent_id as string)) errors.push({ path: `${at}.agent_id`, message: `no agent ${JSON.stringify(data.agent_id)} of yours` });
      if (data.prompt !== undefined && typeof data.prompt !== 'string') errors.push({ path: `${at}.prompt`, message: 'prompt must be a string' });
      break;
    }
    case 'tool':
      if (!nonEmpty(data.tool)) errors.push({ path: `${at}.tool`, message: 'a tool node names its tool' });
      if (data.arguments !== undefined && !isObj(data.arguments)) errors.push({ path: `${at}.arguments`, message: 'arguments must be an object' });
      break;
    case 'condition':
      if (!nonEmpty(data.expression)) errors.push({ path: `${at}.expression`, message: 'a condition node needs an expression' });
      break;
    case 'human':
      if (data.kind !== undefined && data.kind !== 'approval' && data.kind !== 'question') errors.push({ path: `${at}.kind`, message: 'kind is approval or question' });
      break;
  }
}

/** One cycle of the graph as a list of edge indexes, or null. */
function findCycle(nodeIds: Map<string, number>, edges: { i: number; source: string; target: string }[]): number[] | null {
  const out = new Map<string, { i: number; target: string }[]>();
  for (const e of edges) out.set(e.source, [...(out.get(e.source) ?? []), { i: e.i, target: e.target }]);
  const state = new Map<string, 1 | 2>();
  const stack: { node: string; via: number }[] = [];
  for (const start of nodeIds.keys()) {
    if (state.has(start)) continue;
    // Iterative DFS: a deep chain never overflows the call stack.
    const work: { node: string; via: number; next: number }[] = [{ node: start, via: -1, next: 0 }];
    state.set(start, 1);
    stack.push({ node: start, via: -1 });
    while (work.length) {
      const top = work[work.length - 1];
      const succ = out.get(top.node) ?? [];
      if (top.next >= succ.length) {
        state.set(top.node, 2);
        work.pop();
        stack.pop();
        continue;
      }
      const e = succ[top.next++];
      const s = state.get(e.target);
      if (s === 1) {
        const from = stack.findIndex((x) => x.node === e.target);
        return [...stack.slice(from + 1).map((x) => x.via), e.i];
      }
      if (s === undefined) {
        state.set(e.target, 1);
        stack.push({ node: e.target, via: e.i });
        work.push({ node: e.target, via: e.i, next: 0 });
      }
    }
  }
  return null;
}

export function validateDag(dag: unknown, refs: References | null): DocError[] {
  const errors: DocError[] = [];
  if (!isObj(dag)) return [{ path: '', message: 'the DAG must be an object' }];
  const nodes = arrayOf(dag, 'nodes', errors);
  const edges = arrayOf(dag, 'edges', errors);
  const steps = arrayOf(dag, 'steps', errors);
  if (dag.viewport !== undefined && dag.viewport !== null && !isObj(dag.viewport)) errors.push({ path: 'viewport', message: 'viewport must be an object' });
  const nodeIds = ids(nodes, 'nodes', 'node', errors);
  nodes.forEach((n, i) => {
    if (!(NODE_TYPES as readonly unknown[]).includes(n.type)) errors.push({ path: `nodes[${i}].type`, message: `unknown node type ${JSON.stringify(n.type)}; one of ${NODE_TYPES.join(', ')}` });
    else nodeData(n, i, refs, errors);
    if (n.name !== undefined && typeof n.name !== 'string') errors.push({ path: `nodes[${i}].name`, message: 'name must be a string' });
  });
  ids(edges, 'edges', 'edge', errors);
  const good: { i: number; source: string; target: string }[] = [];
  edges.forEach((e, i) => {
    let ok = true;
    for (const end of ['source', 'target'] as const) {
      if (!nonEmpty(e[end]) || !nodeIds.has(e[end] as string)) {
        errors.push({ path: `edges[${i}].${end}`, message: `${end} ${JSON.stringify(e[end] ?? null)} is not a node of this DAG` });
        ok = false;
      }
    }
    if (e.condition !== undefined && e.condition !== null && typeof e.condition !== 'string') errors.push({ path: `edges[${i}].condition`, message: 'condition must be a string' });
    if (ok) good.push({ i, source: e.source as string, target: e.target as string });
  });
  const cycle = findCycle(nodeIds, good);
  if (cycle) {
    const path = [edges[cycle[0]].source as string, ...cycle.map((i) => edges[i].target as string)];
    errors.push({ path: `edges[${cycle[cycle.length - 1]}]`, message: `this edge closes a cycle: ${path.join(' -> ')}` });
  }
  ids(steps, 'steps', 'step', errors);
  steps.forEach((s, i) => {
    if (s.name !== undefined && typeof s.name !== 'string') errors.push({ path: `steps[${i}].name`, message: 'name must be a string' });
    if (s.node_ids === undefined) return;
    if (!Array.isArray(s.node_ids)) return void errors.push({ path: `steps[${i}].node_ids`, message: 'node_ids must be an array of node ids' });
    s.node_ids.forEach((id, k) => {
      if (typeof id !== 'string' || !nodeIds.has(id)) errors.push({ path: `steps[${i}].node_ids[${k}]`, message: `${JSON.stringify(id)} is not a node of this DAG` });
    });
  });
  return errors;
}

export function validateArchitecture(doc: unknown): DocError[] {
  const errors: DocError[] = [];
  if (!isObj(doc)) return [{ path: '', message: 'the architecture must be an object' }];
  if (!Array.isArray(doc.nodes)) errors.push({ path: 'nodes', message: 'nodes is required (an array)' });
  else ids(arrayOf(doc, 'nodes', errors), 'nodes', 'node', errors);
  if (doc.viewport !== undefined && doc.viewport !== null && !isObj(doc.viewport)) errors.push({ path: 'viewport', message: 'viewport must be an object' });
  return errors;
}
