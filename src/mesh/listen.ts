import type { Libp2pEvents } from '@libp2p/interface'
import type { MeshLibp2p, MeshServices } from './libp2p-node.js'

/**
 * Adds a listener for one of the mesh node's events and returns the function that removes it, which the
 * mesh's parts keep so that stop() detaches everything start() attached.
 */
export function listenTo<K extends keyof Libp2pEvents<MeshServices>>(
  libp2p: MeshLibp2p,
  type: K,
  listener: (evt: Libp2pEvents<MeshServices>[K]) => void
): () => void {
  libp2p.addEventListener(type, listener)
  return () => libp2p.removeEventListener(type, listener)
}
