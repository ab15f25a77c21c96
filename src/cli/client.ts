/**
 * The CLI's REST client: one base URL, the token of `EDDY_TOKEN` when set, and failures turned into exit codes
 * scripts can test (`ExitCode`).
 */

/** Exit codes of `eddy` (README "Command line"). */
export const ExitCode = {
  Ok: 0,
  /** the server answered with an error (4xx/5xx) */
  Rejected: 1,
  /** bad command line or unreadable input file */
  Usage: 2,
  /** the server could not be reached */
  Unreachable: 3,
  /** authentication is on and the token is missing or refused */
  Unauthorized: 4,
} as const;

export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
  }
}

export interface Answer {
  status: number;
  text: string;
  /** the body parsed as JSON, or the text when it is not JSON */
  body: unknown;
}

export class RestClient {
  readonly base: string;

  constructor(
    readonly host: string,
    readonly port: number,
    private readonly token: string | undefined,
  ) {
    this.base = `http://${host.includes(':') && !host.startsWith('[') ? `[${host}]` : host}:${port}`;
  }

  /** Sends a request; throws `CliError` unless the server answers 2xx. */
  async call(method: string, path: string, body?: unknown): Promise<Answer> {
    const ans = await this.send(method, path, body);
    if (ans.status === 401)
      throw new CliError(`unauthorized: ${ans.text.trim()} (set EDDY_TOKEN)`, ExitCode.Unauthorized);
    if (ans.status >= 400) throw new CliError(errorText(ans), ExitCode.Rejected);
    return ans;
  }

  /** The `Authorization` header of the token, for connections beside the REST calls (the data server's). */
  authHeaders(): Record<string, string> {
    return this.token ? { Authorization: this.token } : {};
  }

  /** Sends a request and returns whatever the server answered (no status check). */
  async send(method: string, path: string, body?: unknown): Promise<Answer> {
    const headers: Record<string, string> = {};
    if (this.token) headers.Authorization = this.token;
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    let res: Response;
    try {
      res = await fetch(this.base + path, {
        method,
        headers,
        body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
      });
    } catch (e) {
      const cause = (e as { cause?: { code?: string; message?: string } }).cause;
      throw new CliError(
        `cannot reach Eddy at ${this.base}: ${cause?.code ?? cause?.message ?? (e as Error).message}`,
        ExitCode.Unreachable,
      );
    }
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text === '' ? '' : (JSON.parse(text) as unknown);
    } catch {
      // plain text answer
    }
    return { status: res.status, text, body: parsed };
  }
}

/** The message of an error answer: eKuiper's `{"error","message"}` body, or its text. */
export function errorText(ans: Answer): string {
  const b = ans.body;
  if (b && typeof b === 'object' && typeof (b as { message?: unknown }).message === 'string') {
    return (b as { message: string }).message;
  }
  return ans.text.trim() || `HTTP ${ans.status}`;
}
