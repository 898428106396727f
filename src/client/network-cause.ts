/**
 * What a failed fetch means to a person: undici reports "fetch failed" and keeps the reason (refused,
 * no such host, reset, timed out) in `cause`; this names it in words.
 */
const MEANINGS: Record<string, string> = {
  ECONNREFUSED: 'connection refused: nothing listens there',
  ENOTFOUND: 'no such host',
  EAI_AGAIN: 'the host name could not be resolved now',
  ECONNRESET: 'the connection was reset',
  ETIMEDOUT: 'the connection timed out',
  EHOSTUNREACH: 'the host is unreachable',
  ENETUNREACH: 'the network is unreachable',
  UND_ERR_SOCKET: 'the connection closed',
  UND_ERR_CONNECT_TIMEOUT: 'the connection timed out'
}

export function networkCause(err: unknown): string {
  const error = err as { name?: string; message?: string; cause?: { code?: string; message?: string } }
  if (error.name === 'TimeoutError' || error.name === 'AbortError') return 'no answer in time'
  const code = error.cause?.code
  if (code) return `${code}, ${MEANINGS[code] ?? error.cause?.message ?? 'network error'}`
  return error.cause?.message ?? error.message ?? String(err)
}
