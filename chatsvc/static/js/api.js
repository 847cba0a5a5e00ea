// The JSON API client: bearer token from sessionStorage, Litestar error details.

const TOKEN_KEY = 'chatsvc.token';

export const token = {
  get: () => sessionStorage.getItem(TOKEN_KEY),
  set: (value) => sessionStorage.setItem(TOKEN_KEY, value),
  clear: () => sessionStorage.removeItem(TOKEN_KEY),
};

export class ApiError extends Error {
  constructor(status, detail) {
    super(detail || `HTTP ${status}`);
    this.status = status;
  }
}

function url(path, query) {
  const target = new URL(path, window.location.origin);
  for (const [key, value] of Object.entries(query || {})) {
    if (value !== null && value !== undefined && value !== '') target.searchParams.set(key, value);
  }
  return target;
}

async function errorFrom(response) {
  let detail = '';
  try {
    const body = await response.json();
    detail = body.detail || body.error?.message || '';
  } catch {
    detail = response.statusText;
  }
  if (response.status === 401) window.dispatchEvent(new CustomEvent('chatsvc:unauthorized'));
  return new ApiError(response.status, detail);
}

/** Fetch `path` (`body`: JSON, or FormData for a file upload); resolve with the parsed JSON (null for 204), reject with ApiError. */
export async function request(path, { method = 'GET', query, body, signal, raw = false } = {}) {
  const headers = { Authorization: `Bearer ${token.get()}` };
  // FormData goes as multipart: fetch writes its Content-Type with the boundary.
  const form = body instanceof FormData;
  if (body !== undefined && !form) headers['Content-Type'] = 'application/json';
  const response = await fetch(url(path, query), {
    method, headers, signal, body: body === undefined || form ? body : JSON.stringify(body),
  });
  if (!response.ok) throw await errorFrom(response);
  if (raw) return response;
  return response.status === 204 ? null : response.json();
}

export const get = (path, query, signal) => request(path, { query, signal });
export const post = (path, body, signal) => request(path, { method: 'POST', body, signal });
export const patch = (path, body) => request(path, { method: 'PATCH', body });
export const del = (path) => request(path, { method: 'DELETE' });

/** A message for the user; aborted requests say nothing. */
export function describe(error) {
  if (error?.name === 'AbortError') return '';
  if (error instanceof ApiError) return `${error.message} (HTTP ${error.status})`;
  return `Network error: ${error?.message || error}`;
}
