/**
 * A2A JSON-RPC 2.0 at `POST /a2a/v1`, the part the public SDKs call: `message/send` (blocking by
 * default, `configuration.blocking: false` answers the working task at once) and `tasks/get`.
 * Messages are authenticated by their `x-zynd-auth` block (a2a-auth.ts) per the entity's
 * auth_mode; failures are JSON-RPC errors with the SDKs' codes, over HTTP 200 as they answer.
 * The handler gets the message's text parts (data parts as JSON text when there is no text).
 */
import { randomUUID } from 'node:crypto'
import { A2AAuthError, verifyA2AMessage } from './a2a-auth.js'
import type { AuthMode } from './message-auth.js'
import type { ReplayCache } from './replay-cache.js'
import type { WebhookService } from './webhooks.js'
import { RegistryError } from '../errors.js'

export const RPC_PARSE_ERROR = -32700
export const RPC_INVALID_REQUEST = -32600
export const RPC_METHOD_NOT_FOUND = -32601
export const RPC_INVALID_PARAMS = -32602
export const RPC_INTERNAL_ERROR = -32603
export const A2A_TASK_NOT_FOUND = -32001
/** message/send on a priced entity: its calls are paid over x402 at /webhook/sync. */
export const A2A_PAYMENT_REQUIRED = -32002

type Json = Record<string, unknown>
type RpcId = string | number | null

export interface A2ATask {
  kind: 'task'
  id: string
  contextId: string
  status: { state: 'submitted' | 'working' | 'completed' | 'failed'; timestamp: string; message?: Json }
  artifacts: Json[]
  history: Json[]
}

const MAX_TASKS = 10_000

export interface A2AOptions {
  webhooks: WebhookService
  mode: AuthMode
  replays: ReplayCache
  /** The priced endpoint's URL when the entity is priced: message/send is then refused, pointing there. */
  pricedAt?: string | null
}

export class A2AService {
  private readonly tasks = new Map<string, A2ATask>()

  constructor(private readonly o: A2AOptions) {}

  /** One JSON-RPC request; always a JSON-RPC response object. */
  async handle(request: unknown): Promise<Json> {
    if (request === null || typeof request !== 'object' || Array.isArray(request))
      return rpcError(null, RPC_INVALID_REQUEST, 'Not a JSON-RPC 2.0 request.')
    const r = request as Json
    const id: RpcId = typeof r.id === 'string' || typeof r.id === 'number' ? r.id : null
    if (r.jsonrpc !== '2.0' || typeof r.method !== 'string')
      return rpcError(id, RPC_INVALID_REQUEST, 'Not a JSON-RPC 2.0 request.')
    switch (r.method) {
      case 'message/send':
        if (this.o.pricedAt)
          return rpcError(
            id,
            A2A_PAYMENT_REQUIRED,
            `This entity is priced: call ${this.o.pricedAt} with an x402 payment.`,
            { reason: 'payment_required', invoke: this.o.pricedAt }
          )
        return this.send(id, r.params)
      case 'tasks/get':
        return this.get(id, r.params)
      default:
        return rpcError(id, RPC_METHOD_NOT_FOUND, `Method not found: ${r.method}`)
    }
  }

  private async send(id: RpcId, params: unknown): Promise<Json> {
    const p = params as { message?: unknown; configuration?: { blocking?: unknown } } | undefined
    const message = p?.message as Json | undefined
    if (
      !message ||
      typeof message !== 'object' ||
      typeof message.messageId !== 'string' ||
      !Array.isArray(message.parts) ||
      (message.role !== 'user' && message.role !== 'agent')
    ) {
      return rpcError(id, RPC_INVALID_PARAMS, 'params.message must be an A2A Message {messageId, role, parts[]}.')
    }
    if (
      message.metadata !== undefined &&
      (message.metadata === null || typeof message.metadata !== 'object' || Array.isArray(message.metadata))
    ) {
      return rpcError(id, RPC_INVALID_PARAMS, 'params.message.metadata must be an object.')
    }
    let sender: ReturnType<typeof verifyA2AMessage>
    try {
      sender = verifyA2AMessage(message, { mode: this.o.mode, replays: this.o.replays })
    } catch (err) {
      if (err instanceof A2AAuthError) return rpcError(id, err.rpcCode, err.message, { reason: err.reason })
      throw err
    }
    const content = partsText(message.parts as unknown[])
    if (content === '') return rpcError(id, RPC_INVALID_PARAMS, 'The message has no text or data part.')
    const contextId = typeof message.contextId === 'string' ? message.contextId : randomUUID()
    const task: A2ATask = {
      kind: 'task',
      id: typeof message.taskId === 'string' ? message.taskId : randomUUID(),
      contextId,
      status: { state: 'working', timestamp: new Date().toISOString() },
      artifacts: [],
      history: [message]
    }
    this.remember(task)
    this.o.webhooks.requestsTotal++
    const done = this.o.webhooks
      .run({
        message: {
          message_id: message.messageId as string,
          sender_id: sender.entityId ?? 'unknown',
          content,
          message_type: 'query',
          conversation_id: contextId,
          metadata: (message.metadata as Json | undefined) ?? {}
        },
        content,
        signed: sender.signed,
        senderId: sender.entityId,
        via: 'a2a',
        payment: null
      })
      .then(
        text => {
          task.artifacts.push({ artifactId: randomUUID(), name: 'result', parts: [{ kind: 'text', text }] })
          task.status = { state: 'completed', timestamp: new Date().toISOString() }
        },
        (err: unknown) => {
          const text = err instanceof RegistryError ? `${err.code}: ${err.message}` : 'handler_failed'
          task.status = {
            state: 'failed',
            timestamp: new Date().toISOString(),
            message: {
              kind: 'message',
              role: 'agent',
              messageId: randomUUID(),
              contextId,
              taskId: task.id,
              parts: [{ kind: 'text', text }]
            }
          }
        }
      )
    if (p?.configuration?.blocking !== false) await done
    return { jsonrpc: '2.0', id, result: task }
  }

  private get(id: RpcId, params: unknown): Json {
    const taskId = (params as { id?: unknown } | undefined)?.id
    if (typeof taskId !== 'string') return rpcError(id, RPC_INVALID_PARAMS, 'params.id (the task ID) is required.')
    const task = this.tasks.get(taskId)
    return task ? { jsonrpc: '2.0', id, result: task } : rpcError(id, A2A_TASK_NOT_FOUND, `Task not found: ${taskId}`)
  }

  private remember(task: A2ATask): void {
    if (this.tasks.size >= MAX_TASKS) this.tasks.delete(this.tasks.keys().next().value as string)
    this.tasks.set(task.id, task)
  }
}

/** The text the handler gets: text parts joined by newlines, else the data parts as JSON. */
function partsText(parts: unknown[]): string {
  const texts: string[] = []
  const data: unknown[] = []
  for (const part of parts) {
    if (part === null || typeof part !== 'object') continue
    const p = part as Json
    if (p.kind === 'text' && typeof p.text === 'string') texts.push(p.text)
    else if (p.kind === 'data') data.push(p.data)
  }
  if (texts.length > 0) return texts.join('\n')
  return data.length === 0 ? '' : JSON.stringify(data.length === 1 ? data[0] : data)
}

export function rpcError(id: RpcId, code: number, message: string, data?: unknown): Json {
  return { jsonrpc: '2.0', id, error: { code, message, ...(data !== undefined ? { data } : {}) } }
}

/** The reply text of a finished task: its artifacts' text parts (what `call` prints). */
export function taskReplyText(task: unknown): string {
  const t = task as Partial<A2ATask> | null
  const parts = (t?.artifacts ?? []).flatMap(a => (Array.isArray(a.parts) ? a.parts : []))
  return parts
    .map(p => ((p as Json).kind === 'text' ? String((p as Json).text) : JSON.stringify((p as Json).data)))
    .join('\n')
}
