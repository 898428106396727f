/**
 * Peers an operator banned by PeerId. The set is held in memory for the connection gater (asked on
 * every dial and every secured inbound connection) and written through to the node's store, so a
 * ban outlives restarts. A PeerId, not an address: the peer's key is what noise authenticates, and
 * an address can change hands.
 */
import { peerIdFromString } from '@libp2p/peer-id'
import { invalidField } from '../errors.js'
import type { PeerBan } from '../wire/network.js'

/** Where bans are kept (the node's store). */
export interface BanStore {
  list(): PeerBan[]
  put(ban: PeerBan): Promise<void>
  remove(peerId: string): Promise<boolean>
}

/** An in-memory BanStore: bans of a mesh built without a store (they end with the process). */
export function memoryBanStore(): BanStore {
  const bans = new Map<string, PeerBan>()
  return {
    list: () => [...bans.values()],
    put: async ban => {
      bans.set(ban.peer_id, ban)
    },
    remove: async peerId => bans.delete(peerId)
  }
}

/** The canonical text of a PeerId, or validation_failed on `field`. */
export function checkedPeerId(text: string, field = 'peer_id'): string {
  try {
    return peerIdFromString(text.trim()).toString()
  } catch {
    throw invalidField(field, 'not a libp2p PeerId (12D3KooW… or Qm…)')
  }
}

export class PeerBans {
  private readonly bans = new Map<string, PeerBan>()

  constructor(private readonly store: BanStore) {
    for (const ban of store.list()) this.bans.set(ban.peer_id, ban)
  }

  has(peerId: string): boolean {
    return this.bans.has(peerId)
  }

  get(peerId: string): PeerBan | undefined {
    return this.bans.get(peerId)
  }

  /** Every ban, oldest first. */
  list(): PeerBan[] {
    return [...this.bans.values()].sort((a, b) => (a.banned_at < b.banned_at ? -1 : a.banned_at > b.banned_at ? 1 : 0))
  }

  /**
   * Bans a peer (the gater refuses it from now on) and keeps the ban; banning again replaces the
   * reason and keeps the first time. Whether the peer was not banned before.
   */
  async add(peerId: string, reason: string | null): Promise<{ ban: PeerBan; created: boolean }> {
    const before = this.bans.get(peerId)
    const ban: PeerBan = { peer_id: peerId, banned_at: before?.banned_at ?? new Date().toISOString(), reason }
    // In force at once, kept once durable: a dial in between is refused already.
    this.bans.set(peerId, ban)
    try {
      await this.store.put(ban)
    } catch (err) {
      if (before) this.bans.set(peerId, before)
      else this.bans.delete(peerId)
      throw err
    }
    return { ban, created: before === undefined }
  }

  /** Lifts a ban; whether there was one. */
  async remove(peerId: string): Promise<boolean> {
    const had = this.bans.has(peerId)
    await this.store.remove(peerId)
    this.bans.delete(peerId)
    return had
  }
}
