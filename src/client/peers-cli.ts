/**
 * `registry-node peers`: a running node's peers, administered through its admin routes
 * (Authorization: Bearer <webhook secret>) with the typed client:
 *   peers list [--all]            GET    /v1/network/peers
 *   peers add ADDRESS             POST   /v1/network/peers
 *   peers remove PEER_ID          DELETE /v1/network/peers/{peer_id}
 *   peers ban PEER_ID [--reason]  POST   /v1/network/bans
 *   peers unban PEER_ID           DELETE /v1/network/bans/{peer_id}
 *   peers bans                    GET    /v1/network/bans
 * Answers print as JSON; refusals are the client's RegistryRequestError (one line).
 */
import { envName } from '../config/setting.js'
import { SETTINGS } from '../config/settings.js'
import { CliError, commandFlags } from '../util/argv.js'
import { registryUrl } from './cli.js'
import { RegistryClient } from './registry-client.js'

const usage = (message: string): never => {
  throw new CliError(message)
}

const print = (value: unknown): void => {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`)
}

/** The variable the node itself reads its admin secret from, so one environment serves both. */
const SECRET_ENV = envName(SETTINGS.find(s => s.key === 'onboarding.webhook_secret')!)

export async function peersCommand(argv: string[]): Promise<void> {
  const [sub, ...rest] = argv
  const f = commandFlags(rest, new Set(['all']))
  const client = new RegistryClient(registryUrl(f))
  const secret = (): string =>
    f.get('secret') ??
    (process.env[SECRET_ENV] || usage(`peers ${sub} needs the node's admin secret: --secret SECRET or ${SECRET_ENV}`))
  const peerId = (): string => f.positionals[0] ?? usage(`peers ${sub} needs a PEER_ID (12D3KooW…)`)
  switch (sub) {
    case 'list':
      return print(await client.peers({ all: f.has('all') }))
    case 'add':
      return print(
        await client.addPeer(f.positionals[0] ?? usage('peers add needs an ADDRESS (multiaddr or host:port)'), secret())
      )
    case 'remove':
      return print(await client.removePeer(peerId(), secret()))
    case 'ban': {
      const reason = f.get('reason')
      return print(await client.banPeer(peerId(), secret(), reason !== undefined ? { reason } : {}))
    }
    case 'unban':
      return print(await client.unbanPeer(peerId(), secret()))
    case 'bans':
      return print(await client.peerBans(secret()))
    default:
      usage(`unknown peers subcommand ${sub ?? ''}; see registry-node --help`)
  }
}
