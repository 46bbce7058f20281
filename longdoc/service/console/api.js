// The console's only way to the server: the public API under /v1, with the
// API key from session storage as `Authorization: Bearer`. Every failure
// becomes an ApiError carrying the API's stable code, its message and the
// Retry-After it sent, and describe() turns one into a sentence for people.

const KEY = "longdoc.key";

export function apiKey() { return sessionStorage.getItem(KEY); }
export function setKey(key) { sessionStorage.setItem(KEY, key); }
export function clearKey() { sessionStorage.removeItem(KEY); }

function authHeaders() {
  const key = apiKey();
  return key ? { Authorization: `Bearer ${key}` } : {};
}

export class ApiError extends Error {
  constructor(status, body, retryAfter) {
    const err = (body && body.error) || {};
    super(err.message || `HTTP ${status}`);
    this.status = status;
    this.code = err.code || (status === 0 ? "network_error" : `http_${status}`);
    this.hint = err.hint || null;
    this.context = err.context || {};
    this.retryAfter = retryAfter != null && retryAfter !== "" ? Number(retryAfter) : null;
  }
}

async function failure(response) {
  let body = null;
  try { body = await response.json(); } catch (_) { /* not JSON */ }
  return new ApiError(response.status, body, response.headers.get("Retry-After"));
}

/** fetch() with the key; resolves to the Response when it is 2xx, throws ApiError otherwise. */
export async function request(path, { method = "GET", signal, headers = {} } = {}) {
  let response;
  try {
    response = await fetch(path, { method, signal, headers: { ...authHeaders(), ...headers } });
  } catch (e) {
    if (e.name === "AbortError") throw e;
    throw new ApiError(0, { error: { code: "network_error", message: "The server cannot be reached." } });
  }
  if (!response.ok) throw await failure(response);
  return response;
}

export async function getJSON(path, options) { return (await request(path, options)).json(); }
export async function getText(path, options) { return (await request(path, options)).text(); }
export async function getBlob(path, options) { return (await request(path, options)).blob(); }

/** POST one file to /v1/jobs with its options, reporting upload progress
 * (0..1) to onProgress. Resolves to the job; rejects with ApiError. */
export function submit(file, options, onProgress) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    const form = new FormData();
    form.append("file", file, file.name);
    form.append("options", JSON.stringify(options));
    xhr.open("POST", "/v1/jobs");
    const key = apiKey();
    if (key) xhr.setRequestHeader("Authorization", `Bearer ${key}`);
    xhr.upload.onprogress = (e) => { if (e.lengthComputable) onProgress(e.loaded / e.total); };
    xhr.onload = () => {
      let body = null;
      try { body = JSON.parse(xhr.responseText); } catch (_) { /* not JSON */ }
      if (xhr.status >= 200 && xhr.status < 300) resolve(body);
      else reject(new ApiError(xhr.status, body, xhr.getResponseHeader("Retry-After")));
    };
    xhr.onerror = () => reject(new ApiError(0, { error: { code: "network_error",
      message: "The upload was cut off: the server closed the connection or cannot be reached." } }));
    xhr.send(form);
  });
}

/** Follow a job's server-sent events (GET /v1/jobs/{id}/events) with the
 * key in the header (EventSource cannot send one). Calls onEvent(name, data)
 * for each event; resolves when the stream ends. */
export async function follow(path, onEvent, signal) {
  const response = await request(path, { signal, headers: { Accept: "text/event-stream" } });
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value.replace(/\r\n/g, "\n");
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const chunk = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      let name = "message";
      const data = [];
      for (const line of chunk.split("\n")) {
        if (line.startsWith("event:")) name = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
      }
      if (data.length) onEvent(name, JSON.parse(data.join("\n")));
    }
  }
}

const TYPES = "PDF or an image (PNG, JPEG, TIFF, BMP, WebP)";

/** A sentence for people about an ApiError, with what to do next. */
export function describe(err) {
  if (!(err instanceof ApiError)) return `Unexpected error: ${err && err.message ? err.message : err}`;
  const ctx = err.context || {};
  const retry = err.retryAfter != null ? ` Try again in ${err.retryAfter} s.` : "";
  switch (err.code) {
    case "unauthorized":
      return "The API key was not accepted: check that it is whole and not revoked.";
    case "key_expired":
      return "This API key has expired: ask your administrator for a new one " +
        "(a rotated key stops working at the end of its grace period).";
    case "upload_too_large":
      return `The file is too large: this server takes uploads up to ${ctx.limit_mb ?? "its limit in"} MB.`;
    case "quota_exceeded":
      return `Your storage quota is full (${ctx.used_mb ?? "?"} MB of ${ctx.quota_mb ?? "?"} MB used): ` +
        "delete finished jobs to make room.";
    case "unsupported_type":
      return `This file type cannot be read: upload a ${TYPES}. (${err.message})`;
    case "rate_limited":
      return `Too many requests for this key.${retry}`;
    case "queue_full":
      return `The server's queue is full.${retry}`;
    case "job_not_found":
      return "Job not found: it does not exist, was deleted, or belongs to another tenant.";
    case "job_expired":
      return "This job expired: its results were deleted after the retention period.";
    case "shutting_down":
      return `The server is restarting and accepts no new work.${retry || " Try again shortly."}`;
    case "network_error":
      return err.message;
    default:
      return `${err.message}${err.hint ? ` ${err.hint}` : ""}${retry}`;
  }
}
