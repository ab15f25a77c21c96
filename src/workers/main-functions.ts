/**
 * Functions that live on the main thread and answer asynchronously, called by rules on the workers
 * (docs/runtime.md §1.10): external-service functions (REST, gRPC, msgpack-rpc, whose clients and channels the service
 * manager keeps) and portable-plugin functions (whose plugin process the main thread reaches through its sockets). A
 * worker registers a stand-in for each, with the same call options (time limit, calls in flight); a call of the
 * stand-in crosses to the main thread, runs the function there and crosses back. The rule's asynchronous node
 * (docs/runtime.md §6.3) awaits it as it awaits the function itself on the main thread, so the rule keeps its order,
 * limits and error texts.
 */
import type { AsyncCallOptions, FunctionDef, FunctionRegistry } from '../functions/registry.js';
import { EvalContext } from '../plan/plan.js';
import { decodeValue, encodeValue, type Json } from '../runtime/checkpoint.js';
import { Replies } from '../core/replies.js';

/** A function reached on the main thread: its name and call options. */
export type MainFunction = [name: string, options: AsyncCallOptions];

/** A call of a stand-in, worker → main. */
export interface MainCall {
  ev: 'call';
  id: number;
  name: string;
  ruleId: string;
  args: Json[];
}

/** Its answer, main → worker. */
export interface MainCallAnswer {
  op: 'called';
  id: number;
  value?: Json;
  error?: string;
}

/** Whether a rule calling `def` may run on a worker: the function is defined there, or reached on the main thread. */
export function callableFromWorker(def: FunctionDef): boolean {
  return def.worker === true || (def.async !== undefined && def.execAsync !== undefined);
}

/** {@link mainFunctions} as last derived, with the revisions of the two registries it was derived from. */
const derived = new WeakMap<FunctionRegistry, { of: FunctionRegistry; revisions: string; list: MainFunction[] }>();

/**
 * The functions of the main thread's registry that a worker reaches there (the workers have the built-ins). Asked with
 * every rule sent to a worker: derived again only when a registry changed, not by looking up every function each time.
 */
export function mainFunctions(functions: FunctionRegistry, builtins: FunctionRegistry): MainFunction[] {
  const revisions = `${functions.revision}:${builtins.revision}`;
  const known = derived.get(functions);
  if (known?.of === builtins && known.revisions === revisions) return known.list;
  const list = deriveMainFunctions(functions, builtins);
  derived.set(functions, { of: builtins, revisions, list });
  return list;
}

function deriveMainFunctions(functions: FunctionRegistry, builtins: FunctionRegistry): MainFunction[] {
  const out: MainFunction[] = [];
  for (const name of functions.names()) {
    const def = functions.get(name)!;
    if (def.worker === true || def === builtins.get(name) || !def.async || !def.execAsync) continue;
    // the name as registered: error texts quote it (`call func Fail error: …`)
    out.push([def.name, def.async]);
  }
  return out;
}

/** On the main thread: one call for a worker, answered with the value or the error's text. */
export async function callOnMain(functions: FunctionRegistry, call: MainCall): Promise<MainCallAnswer> {
  try {
    const def = functions.get(call.name);
    if (!def?.execAsync) throw new Error(`function ${call.name} not found`);
    const value = await def.execAsync(
      call.args.map((a) => decodeValue(a)),
      new EvalContext(call.ruleId, Date.now()),
    );
    return { op: 'called', id: call.id, value: encodeValue(value) };
  } catch (err) {
    return { op: 'called', id: call.id, error: err instanceof Error ? err.message : String(err) };
  }
}

/** On a worker: the stand-ins of the main thread's functions in this thread's registry. */
export class MainFunctionStandIns {
  private readonly replies = new Replies<Json | undefined>();
  /** the stand-ins registered, by name */
  private readonly standIns = new Map<string, FunctionDef>();

  constructor(
    private readonly functions: FunctionRegistry,
    private readonly post: (m: MainCall) => void,
  ) {}

  /** Registers a stand-in for each function of `list` not defined here, and drops those no longer listed. */
  sync(list: readonly MainFunction[]): void {
    const listed = new Map(list);
    for (const [name, def] of this.standIns) {
      const options = listed.get(name);
      if (options && sameOptions(options, def.async!)) continue;
      if (this.functions.get(name) === def) this.functions.unregister(name);
      this.standIns.delete(name);
    }
    for (const [name, options] of listed) {
      if (this.standIns.has(name) || this.functions.has(name)) continue;
      const def: FunctionDef = {
        name,
        kind: 'scalar',
        nullCheck: 'none',
        async: options,
        execAsync: async (args, ctx) => {
          // read before the first await: the node reuses `args` and `ctx` for its next call
          const ruleId = ctx.ruleId;
          const encoded = args.map(encodeValue);
          const value = await this.replies.ask((id) => this.post({ ev: 'call', id, name, ruleId, args: encoded }));
          return decodeValue(value ?? null);
        },
      };
      this.functions.register(def);
      this.standIns.set(name, def);
    }
  }

  answer(m: MainCallAnswer): void {
    this.replies.settle(m.id, m.error, m.value);
  }
}

function sameOptions(a: AsyncCallOptions, b: AsyncCallOptions): boolean {
  return a.timeoutMs === b.timeoutMs && a.maxInFlight === b.maxInFlight;
}
