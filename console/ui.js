// Helpers every page of the console shares: elements, REST calls (a 401 asks for a token, kept for the tab), the toast,
// timers and sockets that live as long as the page shown, number formats and the colours of rule states.

/** Timers and sockets of the page shown; the router stops them when another page opens. */
export const page = { timers: [], sockets: [] };

/** `h('div', {class: 'x', onclick: f}, child…)`: an element; strings become text nodes. */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'value') el.value = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat())
    if (c !== undefined && c !== null && c !== false) el.append(c instanceof Node ? c : String(c));
  return el;
}

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

let loginOpen = null;
function askToken(reason) {
  if (loginOpen) return loginOpen;
  const dlg = document.getElementById('login');
  document.getElementById('login-reason').textContent = reason;
  loginOpen = new Promise((resolve) => {
    dlg.addEventListener(
      'close',
      () => {
        sessionStorage.setItem('eddy.token', document.getElementById('login-token').value.trim());
        loginOpen = null;
        resolve();
      },
      { once: true },
    );
  });
  dlg.showModal();
  return loginOpen;
}

/** A REST call; JSON bodies parsed. Throws ApiError with the server's message. */
export async function api(method, path, body) {
  for (let attempt = 0; ; attempt++) {
    const headers = {};
    const token = sessionStorage.getItem('eddy.token');
    if (token) headers.Authorization = token;
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const res = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await res.text();
    let data = text;
    try {
      data = text === '' ? '' : JSON.parse(text);
    } catch {
      // text answer
    }
    if (res.status === 401 && attempt < 3) {
      await askToken(`The server asks for a token: ${text.trim()}`);
      continue;
    }
    if (!res.ok)
      throw new ApiError(
        res.status,
        (data && typeof data === 'object' && data.message) || text.trim() || `HTTP ${res.status}`,
      );
    return data;
  }
}

export function toast(text, bad = false) {
  const t = document.getElementById('toast');
  t.textContent = text;
  t.className = bad ? 'bad' : '';
  t.hidden = false;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => (t.hidden = true), bad ? 8000 : 3000);
}

/** Runs an action, reporting its failure (or `done` text) in the toast. */
export async function act(fn, done) {
  try {
    const r = await fn();
    if (done) toast(typeof done === 'function' ? done(r) : done);
    return r;
  } catch (e) {
    toast(e.message, true);
    return undefined;
  }
}

export function every(ms, fn) {
  let stopped = false;
  const tick = async () => {
    if (stopped) return;
    try {
      await fn();
    } catch {
      // the next tick tries again
    }
    if (!stopped) timer.id = setTimeout(tick, ms);
  };
  const timer = { id: 0, stop: () => ((stopped = true), clearTimeout(timer.id)) };
  page.timers.push(timer);
  void tick();
  return timer;
}

export const fmtBytes = (n) =>
  n >= 1 << 30
    ? `${(n / (1 << 30)).toFixed(2)} GiB`
    : n >= 1 << 20
      ? `${(n / (1 << 20)).toFixed(1)} MiB`
      : `${Math.round(n / 1024)} KiB`;
export const fmtNum = (n) => Number(n).toLocaleString('en-US');
/**
 * The badge class of a rule: by its state when the server says it (runtime.md §1.5.1), else by its status text. A
 * manual stop is grey, a stop by an error red, a degraded rule amber.
 */
export function stateClass(state, status) {
  if (state) return state;
  return /^running$/i.test(status) ? 'running' : /^stopped/i.test(status ?? '') ? 'stopped' : '';
}

/** Asks before a destructive action; the text says what will happen. */
export function confirmAction(text) {
  return window.confirm(text);
}
