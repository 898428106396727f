/** Help for the researchers' commands: local testnets and the experiments, real or simulated (cli-help.ts lists them last). */
import type { CommandHelp } from './command-help.js'

export const RESEARCH_COMMANDS: readonly CommandHelp[] = [
  {
    name: 'testnet',
    args: '--nodes N [flags]',
    summary:
      'run N local nodes wired by a topology until Ctrl-C or quit; fault commands on standard input (partition, loss, latency with jitter, per-node bandwidth, stop, pause…; help lists them), run in order (sleep S times a piped script), each output line timestamped',
    flags: [
      ['--nodes N', 'how many nodes'],
      ['--topology full|ring|star|random:D', 'how they are wired (default full)'],
      ['--seed-entities K', 'register K signed entities once the mesh forms'],
      ['--entities K', 'run K echo entities with heartbeats'],
      ['--network auto|netns|process', 'a network namespace per node where allowed, else processes on loopback'],
      ['--private I[,J…]', 'put these nodes behind a stateful filter that refuses inbound connections (netns)'],
      ['--data DIR, --keep', "where the nodes' data goes, and keep it afterwards"],
      ['--seed S, --trace-dir DIR', 'the random seed; write gossip traces'],
      ['--node-arg=--FLAG=V …', 'a flag for every node'],
      [
        '--simulate',
        'the nodes in this process on virtual time over a simulated network; commands typed, or from --scenario'
      ],
      [
        '--scenario FILE, --out DIR',
        'run a file of console commands (at SECONDS COMMAND times one) as a bundle into DIR; reproduce checks it'
      ],
      ['--network-model M, --mesh-degree D', 'as for experiment propagation --simulate']
    ],
    examples: [
      'registry-node testnet --nodes 5 --topology ring --seed-entities 20',
      'registry-node testnet --nodes 3 --private 1,2',
      'registry-node testnet --simulate --nodes 50 --topology random:4 --scenario partition.txt --out results/partition'
    ]
  },
  {
    name: 'experiment propagation',
    args: '--nodes N --messages M [flags]',
    summary: 'gossip latency, delivery, duplicates and bytes per topology (CSV, JSON, SVG)',
    flags: [
      ['--topology T[,T…]', 'one testnet per topology'],
      ['--loss PERCENT, --latency MS', 'faults on every link'],
      ['--bandwidth MBIT', "each node's upload rate to the other nodes, on real packets (netns mode only)"],
      ['--rate PER_SECOND', 'publishing rate (default 10)'],
      ['--out DIR, --network …, --seed S, --node-arg=…', 'as for testnet; results go to DIR'],
      [
        '--simulate',
        'run the nodes in this process on virtual time over a simulated network (no HTTP; results do not depend on the machine)'
      ],
      ['--network-model default|waku|world|FILE', 'simulated latency, jitter, loss and upload bandwidth (--simulate)'],
      [
        '--mesh-degree D, --runs K, --settle-seconds S',
        "gossipsub's D; K runs with means and 95 % intervals; wait after the last publish"
      ]
    ],
    examples: [
      'registry-node experiment propagation --nodes 4 --messages 20 --topology ring,full',
      'registry-node experiment propagation --simulate --nodes 100 --messages 20 --network-model waku --runs 3'
    ]
  },
  {
    name: 'experiment reproduce',
    args: 'DIR [--out DIR2]',
    summary:
      "run a simulated experiment's bundle again (same commit, seed and parameters) and compare every figure; exit 1 when one differs",
    flags: [['--out DIR2', 'where the new run goes (default DIR-again)']],
    examples: ['registry-node experiment reproduce results/propagation-sim-2026-01-01']
  },
  {
    name: 'experiment convergence',
    args: '--nodes N [--topology T[,T…]] [--entities PER_SIDE] [--out DIR] [--network …]',
    summary:
      'time until a healed partition converges: equal sync digests on every node, each timed by its own clock (CSV, JSON, SVG)',
    flags: [
      ['--entities PER_SIDE', 'registered on each side of the partition'],
      ['--simulate', 'run the nodes in this process on virtual time (one topology; the halves stay apart 10 s)'],
      [
        '--network-model M, --mesh-degree D, --runs K, --settle-seconds S',
        'as for propagation (--simulate); S: allowed after the heal (default 120)'
      ]
    ],
    examples: [
      'registry-node experiment convergence --nodes 4 --topology ring --entities 10',
      'registry-node experiment convergence --simulate --nodes 100 --topology random:4 --runs 3'
    ]
  },
  {
    name: 'experiment liveness',
    args: '--nodes N --entities K --kill F [--topology T] [--inactive-after S] [--out DIR] [--network …]',
    summary: 'stop a share F of K echo entities: time until every node shows each inactive, then active again',
    flags: [
      ['--entities K, --kill F', 'entities heartbeating every 2 s (default 20), and the share stopped (default 0.2)'],
      ['--inactive-after S', 'silence before a node calls an entity inactive (default 6; sweeps every 0.5 s)'],
      [
        '--simulate',
        'run the nodes in this process on virtual time, the entities heartbeating on it (no HTTP, no entity processes)'
      ],
      [
        '--network-model M, --mesh-degree D, --runs K, --settle-seconds S',
        'as for propagation (--simulate); S: allowed beyond the threshold, and after the restart (default 60)'
      ]
    ],
    examples: [
      'registry-node experiment liveness --nodes 4 --entities 10 --kill 0.2',
      'registry-node experiment liveness --simulate --nodes 50 --entities 20 --kill 0.2 --runs 3'
    ]
  },
  {
    name: 'experiment trust',
    args: '[--developers N] [--interactions K] [--ring R] [--attack-edges A] [--seed S] [--out DIR]',
    summary: "transitive trust against a Sybil ring: the ring's share of trust, honest rank moves (CSV, JSON, SVG)",
    flags: [
      [
        '--developers N, --interactions K',
        'honest developers (3 entities each, 30 % verified) and attestations per entity'
      ],
      ['--ring R', 'ring identities attesting each other and bad-mouthing the honest top 10 (default 1000)'],
      ['--attack-edges A', 'honest entities duped into attesting a ring member (default 0)']
    ],
    examples: ['registry-node experiment trust --ring 1000 --attack-edges 10']
  }
]
