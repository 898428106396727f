import type { OperationImport } from '../../services/replication/operation-import.js'
import { IMPORT_LIMITS, OperationImportAnswer, OperationImportRequest } from '../../wire/operation-import.js'
import { validate } from '../../wire/validate.js'
import { json, type RouteDefinition } from '../../http/http.js'

export interface AdminOperationRouteComponents {
  imports: OperationImport
  /** Throws admin_unavailable or admin_unauthorized. */
  checkAdmin: (authorization: string | undefined) => void
}

/** The operator's import of signed operations; `registry-node import` sends a file through it a batch at a time. */
export function adminOperationRoutes(c: AdminOperationRouteComponents): RouteDefinition[] {
  return [
    {
      method: 'POST',
      path: '/v1/admin/operations',
      summary:
        'Import signed operations (export lines), each checked and applied as one from a peer, rates aside (admin: Authorization: Bearer <webhook secret>)',
      tag: 'admin',
      limit: 'none',
      bodyLimitBytes: IMPORT_LIMITS.bodyBytes,
      body: OperationImportRequest,
      responses: {
        200: { description: 'what became of each operation, and the counts', schema: OperationImportAnswer }
      },
      errors: [
        'admin_unavailable',
        'admin_unauthorized',
        'invalid_json',
        'validation_failed',
        'body_too_large',
        'storage_full',
        'shutting_down'
      ],
      handler: async ctx => {
        c.checkAdmin(ctx.headers.authorization)
        const body = validate(OperationImportRequest, ctx.json())
        return json(200, await c.imports.applyBatch(body.operations))
      }
    }
  ]
}
