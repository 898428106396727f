/**
 * A libp2p node with nothing but TCP on loopback, noise and yamux: for tests of the transport layers,
 * and (given `services`, e.g. identify) a stand-in peer speaking crafted protocol messages.
 */
import { noise } from '@chainsafe/libp2p-noise'
import { yamux } from '@chainsafe/libp2p-yamux'
import { tcp } from '@libp2p/tcp'
import type { ServiceMap } from '@libp2p/interface'
import { createLibp2p, type Libp2p, type Libp2pOptions } from 'libp2p'

export const bareLibp2p = <S extends ServiceMap = ServiceMap>(
  options: Pick<Libp2pOptions<S>, 'privateKey' | 'services' | 'nodeInfo'> = {}
): Promise<Libp2p<S>> =>
  createLibp2p({
    ...options,
    addresses: { listen: ['/ip4/127.0.0.1/tcp/0'] },
    transports: [tcp()],
    connectionEncrypters: [noise()],
    streamMuxers: [yamux()]
  })
