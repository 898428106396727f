/**
 * G5: signed heartbeats over WebSocket against a node in its own process: many connections of
 * both kinds, verified heartbeats per second, send-to-ack latency, the node's CPU and memory per
 * connection, then a flood of invalid signatures at 10 × the valid rate while the valid load goes on.
 *
 *   npm run bench:heartbeats -- [--entities 15000] [--rate 5000] [--seconds 30] [--warmup 5]
 *       [--entity-sockets N/7.5] [--mux-sockets ⌈rest/13⌉ | --per-mux 13] [--entity-form deployed|spec]
 *       [--flood a,b|a|b|none] [--flood-seconds 20] [--flood-factor 10] [--flood-a-sockets 10]
 *       [--flood-b-sockets auto] [--flood-batch 10] [--flood-address 127.0.0.2] [--no-reconnect] [--drain 120] [--profile]
 *       [--node-arg=--flag ...] [--node-src DIR] [--workers 2] [--connections 32] [--http-server auto|uws|node]
 *
 * Setup (not measured). A node on a temporary data directory with `--no-rate-limit` (only so the
 * registrations load quickly; heartbeat sockets have their own limits, which stay at the node's
 * defaults: 1 frame/s per entity with bursts of 10, 50 entities per multiplexed connection, 60 s
 * skew; `--node-arg` passes anything else and is printed). N entities are registered over HTTP as
 * spec-form agent registrations with their own keys (signed in worker threads, like
 * search-node.ts), then the node is left to become idle (search indexing and embedding done).
 *
 * Connections. The first `--entity-sockets` entities each get a per-entity socket
 * `/v1/entities/{id}/ws` and send the deployed frame `{timestamp, signature over timestamp}`
 * (`--entity-form spec` sends `{agent_id, timestamp, signature over agent_id + timestamp}`
 * instead, to show what the form costs); the rest are spread round-robin over `--mux-sockets`
 * multiplexed sockets `/v1/heartbeat` (at most 50 each, the node's cap) that send the spec frame,
 * one WebSocket frame per heartbeat. Defaults for 15,000 entities at 5,000/s: 2,000 per-entity
 * sockets + 1,000 multiplexed sockets of 13 entities = 3,000 connections, every entity beating
 * every 3 s.
 *
 * Load. Every heartbeat of a segment (below) is signed before the segment starts (worker threads,
 * while the node is idle), for its planned send time, which is also its timestamp (ms precision, unique per entity and beat),
 * so the client only sends pre-built strings. Each entity has a random phase in the period, so
 * sends are spread evenly; a 1 ms timer sends whatever is due. An ack names the entity and
 * echoes the timestamp, which identifies the beat; latency = ack received − frame sent (client
 * clock). This bounds "receipt to state change" from above: LivenessService.apply() sets
 * last_seen (the state change; for an inactive entity it also commits the status transition)
 * before it returns the ack. With the default 300 s inactivity window every entity stays active,
 * so the state change measured here is the in-memory last-seen update, not a status transition.
 *
 * Segments and phases. The run is split into segments of continuous valid load, each signed for
 * its own timeline and followed by a drain (until every valid heartbeat of the segment has been
 * answered, at most --drain seconds, then until the node is idle), so that a flood's backlog does
 * not spill into what is measured next; a flood segment whose node did not drain gets the next
 * flood a fresh node (registered and connected again, its setup figures prefixed node2_):
 *   baseline: warmup (--warmup s) · steady (--seconds)
 *   flood_a_segment: pre_a (5 s; the flood connections open) · flood_a (--flood-seconds) · recovery_a (15 s)
 *   flood_b_segment: pre_b · flood_b · recovery_b, the same.
 * Beats belong to the phase they were sent in.
 * Per phase: heartbeats sent, acks received per second, latency p50/p95/p99/max over all sent
 * beats (a beat answered with an error frame, e.g. `overloaded`, or not answered at all has no
 * latency: a percentile landing on one prints "not acknowledged"; both are counted, errors by
 * code; an error frame names the entity, not the beat, so it is put on the entity's oldest
 * unanswered beat), the node's CPU
 * (/proc utime+stime of the whole process; 200% = both cores), split by thread (/proc/<pid>/task:
 * the main thread, the busiest other one, which under load is the verification worker, and the
 * rest), CPU per ack, and RSS; the client's CPU, its event-loop delay and how late it sent (so a
 * slow client shows).
 * Headroom: we read "≥ 30% CPU headroom" as node CPU ≤ 70% of the machine (140% of one core);
 * both shares are printed.
 * Memory per connection: the node's VmRSS with no sockets open (idle, after the load) and
 * after all connections are open (idle again), divided by the connections.
 *
 * Flood (in a separate client process, so its CPU is counted apart and its event loop does not
 * delay the valid client): heartbeats for registered entities, with the current timestamp and a
 * well-formed Ed25519 signature by a wrong key (random bytes would often fail the S < L check
 * without a full verify; a real attacker sends a signature that costs one), on multiplexed sockets,
 * `--flood-batch` heartbeats per WebSocket frame (an array, which the node accepts there), from
 * the local address `--flood-address` (127.0.0.2 by default: another host, as an attacker's would
 * be; 127.0.0.1 puts it on the valid clients' address, which shares the node's per-address budget
 * for connections on probation with them). The
 * offered flood rate is `--flood-factor` × `--rate`:
 *   (a) `--flood-a-sockets` connections, each far over its 50 frames/s; a connection the node
 *       closes is reopened at once (an attacker would; `--no-reconnect` to stop) and its share
 *       goes to the others meanwhile, so the offered rate is kept up and each new connection's
 *       burst allowance shows;
 *   (b) enough connections that each stays within its own rate (50 frames/s, under the node's
 *       token bucket), the harder case: every frame has to be verified. These are reopened too
 *       when the node closes them (it closes a connection after 50 rejections in a row).
 * Reported per flood: frames offered, sent (handed to the socket; frames are skipped while a
 * socket has > 1 MiB unsent or is closed), replies by code (signature_invalid, rate_limited, …),
 * frames without a reply (the node drops the rest of an array frame after a rate_limited reply),
 * connections closed by the node by code and reason (1008: rate exceeded, or too many rejected
 * heartbeats in a row), reconnects, and the valid heartbeats' rate and latency during the flood.
 * Finally the node's shutdown time after SIGTERM (it is killed after 30 s).
 *
 * After the run: GET /v1/entities/{id} for 10 entities (5 of each socket kind) must show status
 * active and a last_heartbeat between the send and the ack of the entity's last acknowledged beat.
 *
 * --node-src runs the node from another copy of src/ (e.g. `git archive HEAD src | tar -x -C DIR`,
 * with node_modules linked beside it), to measure a fixed version while src/ is being edited.
 *
 * --profile starts the node with --cpu-prof and prints the main thread's top self-time functions
 * in the steady and flood phases (the signature verification worker is not profiled; the profiler
 * adds its own overhead, so take the other figures from a run without it).
 *
 * One client process (plus the flood process) shares the machine's 2 cores with the node: its
 * CPU is printed, and every figure of the node is measured under that competition.
 * Prints one `name: value unit` line per figure (progress goes to stderr). Always exits 0 once
 * the run completes: benchmarks never fail on timing.
 *
 * The parts, in heartbeats/: options.ts (flags and settings), signing.ts and signer-worker.ts (the
 * signing worker threads), node.ts (the node under test), client.ts (the valid load client),
 * sockets.ts (WebSocket helpers), flood.ts and flood-child.ts (the flood process), phases.ts
 * (phases and segments), measure.ts (/proc samples), run.ts (a run's segments), report.ts (the
 * printed figures), profile.ts (--profile), main.ts (the course of a run).
 */
import { main } from './heartbeats/main.js'

await main()
process.exit(0)
