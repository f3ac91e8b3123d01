// One error type for the whole server. Anything thrown that is not an ApiError becomes a 500
// with a support reference (data.code) that is also written to the log with the stack.
export interface ErrorData {
  code?: string;
  message?: string;
  issues?: { path: string; message: string }[];
}

export class ApiError extends Error {
  constructor(
    public readonly status: number,
    message: string,
    public readonly data?: ErrorData,
    public readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }

  body(): { message: string; status: number; data?: ErrorData } {
    return this.data ? { message: this.message, status: this.status, data: this.data } : { message: this.message, status: this.status };
  }
}

export const badRequest = (message: string, data?: ErrorData) => new ApiError(400, message, data);
export const unauthorized = (message: string) => new ApiError(401, message);
export const forbidden = (message: string) => new ApiError(403, message);
export const notFound = (what = 'Resource') => new ApiError(404, `${what} not found`);
export const conflict = (message: string) => new ApiError(409, message);

export const SCHEMA_MISMATCH = 'The request does not match the schema';
