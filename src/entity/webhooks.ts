/**
 * The entity's message endpoints as a service: `/webhook/sync` runs the handler and answers with
 * its result; `/webhook` accepts at once, runs the handler off the request and keeps the result
 * for one read at `/webhook/response/{message_id}`. A handler that throws or overruns its time
 * limit never takes the entity down: the caller gets `handler_failed` (no stack) or
 * `handler_timeout`, and the handler's late result is dropped.
 */
import type { Logger } from 'pino'
import { RegistryError } from '../errors.js'
import { parseAgentMessage, type AgentMessage } from './agent-message.js'
import type { MessageAuthenticator } from './message-auth.js'
import type { VerifiedPayment } from './x402/paywall.js'

export interface HandlerInput {
  /** The message as received (normalised: content, defaults). */
  message: AgentMessage
  /** Its text: `content`, or `prompt` from older clients. */
  content: string
  /** Whether the message carried a signature that verified. */
  signed: boolean
  /** The verified sender, or null for an unsigned message. */
  senderId: string | null
  /** Which endpoint it came in on. */
  via: 'webhook/sync' | 'webhook' | 'a2a'
  /** On a priced entity's /webhook/sync: the payment, verified (it settles after the handler returns). */
  payment: VerifiedPayment | null
}

/** Returns the reply: a string as is, anything else as its JSON text. */
export type EntityHandler = (input: HandlerInput) => unknown

export interface WebhookOptions {
  handler: EntityHandler
  auth: MessageAuthenticator
  handlerTimeoutMs: number
  logger: Logger
}

interface Pending {
  done: boolean
  response?: string
  error?: RegistryError
  expiresAt: number
}

/** How long an async result waits for its read, and how many may wait. */
const RESULT_TTL_MS = 10 * 60_000
const MAX_PENDING = 10_000

export class WebhookService {
  /** Messages received on /webhook and /webhook/sync (accepted or refused). */
  requestsTotal = 0
  private readonly pending = new Map<string, Pending>()

  constructor(private readonly o: WebhookOptions) {}

  async sync(
    raw: unknown,
    payment: VerifiedPayment | null = null
  ): Promise<{ status: 'success'; message_id: string; response: string }> {
    const input = await this.admit(raw, 'webhook/sync', payment)
    const response = await this.run(input)
    return { status: 'success', message_id: input.message.message_id, response }
  }

  async accept(raw: unknown): Promise<{ status: 'accepted'; message_id: string }> {
    const input = await this.admit(raw, 'webhook')
    const id = input.message.message_id
    this.sweep()
    const entry: Pending = { done: false, expiresAt: Date.now() + RESULT_TTL_MS }
    this.pending.set(id, entry)
    setImmediate(() => {
      this.run(input).then(
        response => {
          entry.done = true
          entry.response = response
        },
        (err: unknown) => {
          entry.done = true
          entry.error = err instanceof RegistryError ? err : new RegistryError('handler_failed')
        }
      )
    })
    return { status: 'accepted', message_id: id }
  }

  /** The result of an async message, once; response_not_ready while pending or unknown. */
  takeResponse(messageId: string): Record<string, unknown> {
    const entry = this.pending.get(messageId)
    if (!entry?.done || entry.expiresAt < Date.now()) {
      throw new RegistryError(
        'response_not_ready',
        `No result for message ${messageId} yet (pending, unknown, or already read).`,
        undefined,
        { message_id: messageId, status: 'pending_or_unknown' }
      )
    }
    this.pending.delete(messageId)
    const timestamp = new Date().toISOString()
    if (entry.error)
      return {
        status: 'error',
        message_id: messageId,
        error: entry.error.code,
        message: entry.error.message,
        timestamp
      }
    return { status: 'success', message_id: messageId, response: entry.response, timestamp }
  }

  /** Runs the handler within the time limit; its reply as text. */
  async run(input: HandlerInput): Promise<string> {
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new RegistryError(
              'handler_timeout',
              `The entity did not answer within ${this.o.handlerTimeoutMs / 1000} s.`,
              undefined,
              { message_id: input.message.message_id }
            )
          ),
        this.o.handlerTimeoutMs
      )
    })
    try {
      const result = await Promise.race([Promise.resolve().then(() => this.o.handler(input)), timeout])
      return replyText(result)
    } catch (err) {
      if (err instanceof RegistryError && err.code === 'handler_timeout') throw err
      this.o.logger.warn({ err, message_id: input.message.message_id }, 'handler failed')
      throw new RegistryError('handler_failed', "The entity's handler failed on this message.", undefined, {
        message_id: input.message.message_id
      })
    } finally {
      clearTimeout(timer)
    }
  }

  private async admit(
    raw: unknown,
    via: HandlerInput['via'],
    payment: VerifiedPayment | null = null
  ): Promise<HandlerInput> {
    this.requestsTotal++
    const message = parseAgentMessage(raw)
    const { signed, senderId } = await this.o.auth.check(raw as Record<string, unknown>, message)
    return { message, content: message.content, signed, senderId, via, payment }
  }

  private sweep(): void {
    const now = Date.now()
    for (const [id, entry] of this.pending) {
      if (entry.expiresAt < now) this.pending.delete(id)
      else break
    }
    while (this.pending.size >= MAX_PENDING) this.pending.delete(this.pending.keys().next().value as string)
  }
}

export function replyText(result: unknown): string {
  if (typeof result === 'string') return result
  if (result === undefined || result === null) return ''
  return JSON.stringify(result)
}
