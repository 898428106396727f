/** The child process of readEntityViews (entity-views.ts): every stored entity's view, from one read transaction. */
import { entityViews, type StoredEntityView } from './entity-views.js'
import { serveRead } from './reader-process.js'

await serveRead<StoredEntityView[]>((reader, send) =>
  reader.snapshot(async view => {
    for (const part of entityViews(view.entities(), view.liveness())) await send(part)
  })
)
