/**
 * Per-request facts set by the first hook and read by the error handler and the access log, which run
 * where derived context may not exist yet (a parse error happens before `derive`).
 */
export interface RequestFacts {
  requestId: string;
  startedAt: number;
  apiKeyId?: string;
}

const facts = new WeakMap<Request, RequestFacts>();

export const setRequestFacts = (request: Request, f: RequestFacts) => facts.set(request, f);
export const requestFacts = (request: Request): RequestFacts | undefined => facts.get(request);
