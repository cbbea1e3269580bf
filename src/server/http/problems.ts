/**
 * RFC 9457 problem details, as every HTTP surface of Keel answers errors (`keel serve`'s API and the
 * chat endpoint an application mounts): one table of titles, one mapping of Keel's error kinds to
 * statuses, so the two never disagree.
 */
import type { KeelError } from '../../util/errors.js';

export const PROBLEM_TITLES: Record<number, string> = {
  400: 'Bad request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not found',
  409: 'Conflict',
  410: 'Gone',
  413: 'Payload too large',
  415: 'Unsupported media type',
  422: 'Unprocessable',
  500: 'Internal error',
  503: 'Unavailable',
};

/** The HTTP status of each kind of KeelError. */
export const STATUS_OF: Record<KeelError['code'], number> = {
  not_found: 404,
  conflict: 409,
  not_paused: 409,
  expired: 410,
  bad_input: 400,
  config: 422,
  // Issue 27: the store cannot be reached: not the client's mistake; it may try again later.
  unavailable: 503,
  // A9: a card routed to groups the caller is not in.
  forbidden: 403,
};

/** A problem's body. */
export function problemBody(status: number, detail: string, instance?: string, errors?: { field: string; message: string }[]) {
  return {
    type: `https://keel.dev/problems/${status}`,
    title: PROBLEM_TITLES[status] ?? 'Error',
    status,
    detail,
    ...(instance ? { instance } : {}),
    ...(errors?.length ? { errors } : {}),
  };
}
