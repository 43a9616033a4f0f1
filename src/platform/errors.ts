/**
 * Domain errors. Services throw these; the error plugin (http/error.plugin.ts) turns every error into the
 * one envelope `{"error": {code, message, requestId, details}}`. Codes are the seed's Errors table.
 */
export const ERROR_STATUS = {
  API_KEY_INVALID: 401,
  API_KEY_REVOKED: 401,
  API_KEY_EXPIRED: 401,
  INSUFFICIENT_BALANCE: 402,
  FEATURE_NOT_LICENSED: 403,
  API_SCOPE_MISSING: 403,
  IP_NOT_ALLOWED: 403,
  LICENSE_EXPIRED: 403,
  LICENSE_NOT_FOUND: 403,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  CONFLICT: 409,
  IDEMPOTENCY_CONFLICT: 409,
  MEDIA_IN_USE: 409,
  /** DELETE /templates/{id} while a running or scheduled campaign uses the template. */
  TEMPLATE_IN_USE: 409,
  SOCIAL_APPROVAL_REQUIRED: 409,
  SOCIAL_POST_NOT_EDITABLE: 409,
  /** A body over a route's size cap (provider hooks: 5 MB), refused before or while it is read. */
  PAYLOAD_TOO_LARGE: 413,
  VALIDATION_FAILED: 422,
  MESSAGING_WINDOW_CLOSED: 422,
  CHANNEL_ACCOUNT_MISSING: 422,
  CONTACT_BLOCKED: 422,
  STORAGE_LIMIT_REACHED: 422,
  SOCIAL_POST_INVALID: 422,
  SOCIAL_PLATFORM_UNAVAILABLE: 422,
  /** The message type exists but this channel cannot carry it (interactive on TikTok or e-mail). */
  CHANNEL_UNSUPPORTED: 422,
  /** A send or campaign names a template the provider has not approved (pending, rejected, paused, disabled). */
  TEMPLATE_NOT_APPROVED: 422,
  RATE_LIMITED: 429,
  INTERNAL: 500,
  PROVIDER_ERROR: 502,
  STORAGE_UNAVAILABLE: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

/** One offending input. `pointer`: JSON Pointer into the body, or `header:Name` / `query:name` / `path:name`. */
export interface ErrorDetail {
  pointer: string;
  message: string;
  /** CONFLICT on an identity that belongs to another contact: that contact (what POST /contacts/{id}/merge takes). */
  existingContactId?: string;
}

export class AppError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details: ErrorDetail[] = [],
    /** Extra response headers, e.g. Retry-After on RATE_LIMITED. */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.status = ERROR_STATUS[code];
  }
}

export const notFound = (what: string) => new AppError("NOT_FOUND", `${what} not found`);

export const validationFailed = (details: ErrorDetail[], message = "The request is invalid") => new AppError("VALIDATION_FAILED", message, details);

/** Collects every problem of a request before failing, so the caller sees all of them at once. */
export class DetailCollector {
  readonly details: ErrorDetail[] = [];
  add(pointer: string, message: string): this {
    this.details.push({ pointer, message });
    return this;
  }
  get empty(): boolean {
    return this.details.length === 0;
  }
  throwIfAny(message?: string): void {
    if (this.details.length) throw validationFailed(this.details, message);
  }
}
